"""The DAS report in headless Chromium (unit tests: tests/unit/interp/test_causal.py)."""

from __future__ import annotations

import pytest

from interp.causal import DASConfig, run_das
from reports.causal import das_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.interp.test_causal import _tiny_task_file


@pytest.mark.browser
def test_das_report_in_browser(tiny_model, tmp_path):
    res = run_das(tiny_model, DASConfig(task=_tiny_task_file(tmp_path), layers=[0, 1, 2],
                                        position="animal", steps=3, test_size=0.34),
                  progress=False)
    path = das_report(res).save(tmp_path / "report")

    def check(page):
        return {
            "figures": page.locator('svg.mpl-fig[data-figure="iia"]').count(),
            "rows": page.locator("table.data tbody tr").count(),
            "overflow": page.evaluate(
                "document.documentElement.scrollWidth > document.documentElement.clientWidth"),
        }

    v = visit(path, "das_report.png", check)
    assert_clean(v)
    assert v.checks["figures"] == 1
    assert v.checks["rows"] == 3
    assert not v.checks["overflow"]
    assert (ARTIFACTS / "das_report.png").stat().st_size > 10_000
