"""Execute the Python blocks of every documentation page on the embedded model, so the
pages cannot rot. (The tutorials are notebooks: the site build executes them.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import ROOT

DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """The Markdown pages that are not notebooks (the build executes those)."""
    out = []
    for p in sorted(DOCS.rglob("*.md")):
        if "_build" in p.parts or "generated" in p.parts:
            continue
        if "file_format: mystnb" not in p.read_text(encoding="utf-8")[:400]:
            out.append(p)
    return out


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def test_pages_are_found():
    names = {p.relative_to(DOCS).as_posix() for p in pages()}
    assert {"index.md", "concepts.md"} <= names


@pytest.mark.parametrize("page", [p for p in pages() if python_blocks(p)],
                         ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_python_blocks_run(page, model, tmp_path, monkeypatch):
    """Each page's blocks run in order in one namespace, from an empty folder (so any
    ``--out`` or file a block writes lands there)."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in python_blocks(page):
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102
