"""`interp lens` end to end on the embedded model, report opened in headless Chromium."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run
from tests.unit.interp.test_cli import REQUIRED


@pytest.mark.browser
def test_real_model_lens_end_to_end(model, tmp_path, capsys):
    """`interp lens "The capital of France is" --out d` on the embedded model."""
    out = tmp_path / "d"
    code, stdout, _ = run(["lens", "The capital of France is", "--out", str(out)], capsys)
    assert code == 0
    assert "Paris" in stdout
    data = json.loads((out / "results.json").read_text())
    assert REQUIRED <= set(data)
    assert data["model"] == "smollm2-135m-instruct"
    assert data["tokens"] == ["The", " capital", " of", " France", " is"]
    assert data["layers"] == list(range(30))
    assert data["top1"][29][-1] == " Paris"
    assert data["kl"][29][-1] == pytest.approx(0.0, abs=1e-4)
    assert all(not t.startswith("Ġ") for row in data["top1"] for t in row)

    def check(page) -> int:
        assert page.locator("table.lens-grid").is_visible()
        return page.locator("table.lens-grid td.lens-cell").count()

    v = visit(out / "report.html", "lens_report_real.png", check)
    assert_clean(v)
    assert v.checks == 30 * 5

