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
                                        position="animal", steps=3, folds=3),
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


@pytest.mark.browser
def test_edges_report_in_browser(tiny_model, tmp_path):
    from interp.causal.edges import run_edges
    from interp.causal.results import EdgeConfig
    from reports.causal import edges_report

    res = run_edges(tiny_model, EdgeConfig(task=_tiny_task_file(tmp_path), sample=40, top=8,
                                           n_boot=100, min_gap=0, max_edges=100,
                                           circuit_edges=20, ig_steps=4), progress=False)
    res.n_layers, res.n_heads, res.n_kv = 3, 4, 2
    path = edges_report(res).save(tmp_path / "report")

    def check(page):
        return {
            "figures": page.locator("svg.mpl-fig").count(),
            "cards": page.locator("section.card").count(),
            "overflow": page.evaluate(
                "document.documentElement.scrollWidth > document.documentElement.clientWidth"),
        }

    v = visit(path, "edges_report.png", check)
    assert_clean(v)
    assert v.checks["figures"] == 4  # agreement, faithfulness, circuit, groups
    assert v.checks["cards"] >= 5
    assert not v.checks["overflow"]
    assert (ARTIFACTS / "edges_report.png").stat().st_size > 10_000
