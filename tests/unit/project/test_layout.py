"""The shape of the code: import contracts cover every module, no private names cross
packages, the layout table (docs/development.md) lists every module, and importing interp
changes nothing."""

from __future__ import annotations

import ast
import configparser
import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT

PACKAGES = ("interp", "saes", "evals", "reports")


def _modules(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def test_core_contract_lists_every_part_of_interp_but_the_cli():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".importlinter")
    listed = set(cfg["importlinter:contract:core"]["source_modules"].split())
    parts = {".".join(m.split(".")[:2]) for m in _modules("interp") if m != "interp"}
    assert parts - {"interp.cli"} == listed, (
        "every subpackage and module of interp except interp.cli must be a source module "
        "of the 'core' contract in .importlinter"
    )


def _owner(module: str) -> str:
    """The package that owns a module's private names: its first two dotted parts."""
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_crosses_a_package(package):
    bad = []
    for module in _modules(package):
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / module.replace(".", "/") / "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] not in PACKAGES:
                    continue
                for alias in node.names:
                    name = alias.name
                    private = name.startswith("_") and not name.startswith("__")
                    if private and _owner(node.module) != _owner(module):
                        bad.append(f"{module} imports {node.module}.{name}")
                    if any(p.startswith("_") and not p.startswith("__")
                           for p in node.module.split(".")) and \
                            _owner(node.module) != _owner(module):
                        bad.append(f"{module} imports private module {node.module}")
    assert not bad, bad


@pytest.mark.parametrize("package", ["saes", "evals"])
def test_tools_built_on_interp_have_no_click_code(package):
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                assert not any(n.split(".")[0] == "click" for n in names), path


def test_layout_table_lists_every_module():
    readme = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.name == "__init__.py":
                continue
            if f"`{rel}`" not in readme:
                missing.append(rel)
    assert not missing, f"the layout table in docs/development.md misses {missing}"


_PROBE = """
import json, os, sys
import importlib
from pathlib import Path
# third-party libraries first: what they set is theirs
import torch, transformers, transformer_lens, datasets, matplotlib, sklearn, pandas  # noqa
import scipy.stats, statsmodels.api, jinja2, safetensors  # noqa
before = dict(os.environ)
import interp
for pkg in ("interp", "saes", "evals"):
    for path in sorted(Path(pkg).rglob("*.py")):
        name = ".".join(path.with_suffix("").parts).removesuffix(".__init__")
        if not name.startswith("interp.cli"):
            importlib.import_module(name)
after = dict(os.environ)
print(json.dumps({k: [before.get(k), after.get(k)] for k in set(before) | set(after)
                  if before.get(k) != after.get(k)}))
"""


def test_importing_interp_sets_no_environment_variable():
    env = {k: v for k, v in os.environ.items()
           if k not in {"WANDB_MODE", "TRANSFORMERS_VERBOSITY", "HF_HUB_DISABLE_PROGRESS_BARS",
                        "TOKENIZERS_PARALLELISM"}}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    changed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert changed == {}, changed


def test_cli_start_does_not_import_the_heavy_tools():
    # `interp --help` and every verb pay for what `import interp.cli` loads: scikit-learn
    # (about 1 s here), VADER and matplotlib load only when a verb or attribute needs them.
    code = ("import sys, interp, interp.cli; "
            "print(sorted(m for m in ('sklearn', 'vaderSentiment', 'matplotlib') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_every_public_name_of_interp_resolves():
    # the eager imports and the lazy map of interp/__init__.py together give __all__
    import interp

    missing = [name for name in interp.__all__ if getattr(interp, name, None) is None]
    assert not missing, missing
    assert set(interp.__all__) <= set(dir(interp))
