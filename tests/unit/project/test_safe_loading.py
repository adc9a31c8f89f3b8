"""No pickle anywhere: scan the shipped code for unsafe deserialisation and code execution.

Flags, in every Python file of the packages, scripts and benchmarks:
* importing ``pickle``/``cPickle``/``dill``/``shelve``/``marshal``, or ``joblib.load``;
* ``torch.load`` without ``weights_only=True``;
* ``numpy.load(..., allow_pickle=True)`` and ``pandas.read_pickle``;
* calls to the builtins ``eval``/``exec``/``compile`` (``module.eval()`` is fine).
The scanner itself is tested on a snippet holding each pattern.
"""

from __future__ import annotations

import ast

from tests.support import ROOT

SCANNED = ["interp", "saes", "evals", "reports", "scripts", "bench"]
BANNED_MODULES = {"pickle", "cPickle", "_pickle", "dill", "shelve", "marshal", "cloudpickle"}


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def problems(source: str, filename: str = "<string>") -> list[str]:
    """Every unsafe pattern in ``source`` as ``file:line: what``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in BANNED_MODULES:
                    found.append(f"{where}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in BANNED_MODULES:
                found.append(f"{where}: imports from {node.module}")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in {"eval", "exec", "compile", "__import__"}:
                found.append(f"{where}: calls {f.id}()")
            elif isinstance(f, ast.Attribute):
                owner = f.value.id if isinstance(f.value, ast.Name) else None
                safe = _is_true(_kw(node, "weights_only"))
                if f.attr == "load" and owner == "torch" and not safe:
                    found.append(f"{where}: torch.load without weights_only=True")
                if f.attr == "load" and owner in {"np", "numpy"} and _is_true(
                        _kw(node, "allow_pickle")):
                    found.append(f"{where}: numpy.load with allow_pickle=True")
                if f.attr == "read_pickle":
                    found.append(f"{where}: read_pickle")
                if f.attr == "load" and owner == "joblib":
                    found.append(f"{where}: joblib.load")
    return found


def test_scanner_catches_each_pattern():
    snippet = (
        "import pickle\nfrom dill import loads\nimport torch, numpy as np, pandas as pd\n"
        "torch.load('x')\ntorch.load('x', weights_only=False)\nnp.load('x', allow_pickle=True)\n"
        "pd.read_pickle('x')\neval('1')\nexec('x=1')\n"
        "torch.load('x', weights_only=True)\nmodel.eval()\n"
    )
    found = problems(snippet)
    assert len(found) == 8, found
    assert not any(":10:" in f or ":11:" in f for f in found)


def test_shipped_code_never_unpickles_or_evals():
    files = [p for d in SCANNED for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 30
    found = [x for p in files for x in problems(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)
