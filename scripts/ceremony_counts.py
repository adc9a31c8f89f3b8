"""How much ceremony the code carries: the figures issue 27 asks for before and after.

Counts, over the four packages (interp, saes, evals, reports):

* ``click.option`` lines (options written by hand; derived ones do not appear);
* hand-written ``to_dict``/``from_dict``/``to_frame``/``_repr_html_`` methods;
* private number formatters (module-level ``_signed``, ``_ci``, ``_ci_text``, ``_pm``, ``_num``,
  ``_f``, ``_fmt``, ``_pct`` and the like);
* the ten longest functions;

and the ``tests/`` tree (folders and test files per folder). Run from the repository root::

    python scripts/ceremony_counts.py            # a text summary
    python scripts/ceremony_counts.py --json     # the same as JSON
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter
from pathlib import Path

PACKAGES = ("interp", "saes", "evals", "reports")
METHODS = ("to_dict", "from_dict", "to_frame", "_repr_html_")
#: Names of private helpers that only format a number or an interval as text.
FORMATTER = re.compile(r"^_(signed|ci|ci_text|ci_list|pm|num|f|fmt|pct|percent|fixed|mean_std|"
                       r"pct_z|rate_text|format\w*)$")


def _python_files(root: Path) -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py"))


def counts(root: Path) -> dict[str, object]:
    option_lines = 0
    methods: Counter[str] = Counter()
    formatters: list[str] = []
    functions: list[tuple[int, str]] = []
    for path in _python_files(root):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        option_lines += sum(1 for line in text.splitlines()
                            if re.match(r"\s*@?click\.option\(", line))
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name in METHODS:
                        methods[item.name] += 1
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                functions.append((length, f"{rel}:{node.lineno} {node.name}"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and FORMATTER.match(node.name):
                formatters.append(f"{rel} {node.name}")
    functions.sort(key=lambda t: (-t[0], t[1]))
    tests: dict[str, int] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        folder = path.parent.relative_to(root).as_posix()
        tests[folder] = tests.get(folder, 0) + 1
    return {
        "click_option_lines": option_lines,
        "hand_written_methods": sum(methods.values()),
        "methods": dict(methods),
        "private_formatters": len(formatters),
        "formatters": formatters,
        "longest_functions": [f"{n} {where}" for n, where in functions[:10]],
        "test_files_per_folder": tests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="Repository root.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    args = parser.parse_args()
    c = counts(Path(args.root))
    if args.json:
        print(json.dumps(c, indent=2))
        return
    print(f"click.option lines: {c['click_option_lines']}")
    print(f"hand-written to_dict/from_dict/to_frame/_repr_html_: {c['hand_written_methods']} "
          f"{c['methods']}")
    print(f"private formatters: {c['private_formatters']}")
    print("ten longest functions:")
    for line in c["longest_functions"]:  # type: ignore[union-attr]
        print(f"  {line}")
    print("tests/ (test files per folder):")
    for folder, n in c["test_files_per_folder"].items():  # type: ignore[union-attr]
        print(f"  {folder}: {n}")


if __name__ == "__main__":
    main()
