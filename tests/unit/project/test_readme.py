"""Execute the README's Python blocks so the docs cannot rot."""

from __future__ import annotations

import re

import pytest

from tests.support import ROOT

README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_a_quickstart():
    blocks = python_blocks()
    assert blocks and "interp.load()" in blocks[0]


@pytest.mark.slow
def test_readme_python_blocks_run(model, capsys):
    namespace: dict = {}
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    out = capsys.readouterr().out
    assert "torch.Size([2, 576])" in out
    assert "\n Paris\n" in out  # print(result.top1()[29][-1])
    assert "The capital of France is Paris." in out
