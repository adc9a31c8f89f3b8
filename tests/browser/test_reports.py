"""The logit-lens report in headless Chromium (unit tests: tests/unit/reports/test_reports.py)."""

from __future__ import annotations

import pytest

from interp.lenses.readout import LensReadout
from interp.runs.atomic import atomic_write_text
from reports.lens import lens_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.reports.test_reports import (
    make_result,
)


@pytest.mark.browser
def test_report_in_headless_chromium(tmp_path, manifest):
    result = LensReadout.from_dict(make_result(12, 8))
    report = atomic_write_text(tmp_path / "lens_report.html", lens_report(result, manifest).html)

    def check(page) -> None:
        grid = page.locator("table.lens-grid")
        assert grid.count() == 1
        assert grid.is_visible()
        box = grid.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
        assert page.locator("table.lens-grid td.lens-cell").count() == 12 * 8
        charts = page.locator("svg.mpl-fig")
        assert charts.count() == 1 and charts.is_visible()
        assert page.locator('svg.mpl-fig g[id^="curves-axes_"]').count() == 2  # KL, entropy
        assert page.locator("script").count() == 0
        assert page.title().startswith("Logit lens")
        # No horizontal page overflow at a laptop width: wide figures scroll in their box.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    v = visit(report, "lens_report.png", check)
    assert_clean(v)
    assert (ARTIFACTS / "lens_report.png").stat().st_size > 10_000

