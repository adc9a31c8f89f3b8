"""Execute the README's Python blocks on the embedded model, so the docs cannot rot."""

from __future__ import annotations

from tests.unit.project.test_readme import README, python_blocks


def test_readme_python_blocks_run(model, capsys):
    namespace: dict = {}
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    out = capsys.readouterr().out
    assert "torch.Size([2, 576])" in out
    assert "\n Paris\n" in out  # print(result.top1()[29][-1])
    assert "The capital of France is Paris." in out

