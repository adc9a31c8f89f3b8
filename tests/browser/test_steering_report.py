"""The steering-sweep report in headless Chromium (unit tests:
tests/unit/reports/test_steering_report.py)."""

from __future__ import annotations

import pytest

from interp.steering.figures import (
    HEATMAPS as FIGURES,
)
from reports.steering import steering_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.reports.test_steering_report import (
    ALPHAS,
    make_manifest,
    make_result,
    typed,
)


@pytest.mark.browser
def test_report_in_browser(tmp_path):
    path = steering_report(typed(make_result()), make_manifest()).save(tmp_path / "steering")
    cell_selector = ", ".join(f'svg.mpl-fig[data-figure="{n}"] g[id^="{n}-cell-"]'
                              f':not([id$="-t"])' for n in FIGURES)

    def check(page):
        return {
            "heatmap_cells": page.locator(cell_selector).count(),
            "lines": page.locator(
                'svg.mpl-fig[data-figure="target_by_alpha"] g[id^="target_by_alpha-line-"]'
            ).count(),
            "open_samples": page.locator("details.layer-samples[open] .sample").count(),
            "overflow": page.evaluate(
                "document.documentElement.scrollWidth > document.documentElement.clientWidth"
            ),
            "title": page.title(),
        }

    v = visit(path, "steering_report.png", check)
    assert_clean(v)
    assert v.checks["heatmap_cells"] == 5 * 5 * len(ALPHAS)
    assert v.checks["lines"] == 5
    assert v.checks["open_samples"] == len(ALPHAS) * 2
    assert not v.checks["overflow"]
    assert v.checks["title"] == "Steering sweep — tiny/<b>model</b>"
    assert (ARTIFACTS / "steering_report.png").stat().st_size > 10_000

