"""Execute the README's Python blocks so the docs cannot rot."""

from __future__ import annotations

import re

from tests.support import ROOT

README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_a_quickstart():
    blocks = python_blocks()
    assert blocks and "interp.load()" in blocks[0]
