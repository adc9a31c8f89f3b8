"""The linear-probe report in headless Chromium (unit tests:
tests/unit/reports/test_probe_report.py)."""

from __future__ import annotations

import pytest

from reports.probe import write_probe_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.reports.test_probe_report import (
    make_manifest,
    make_result,
)


@pytest.mark.browser
def test_probe_report_in_headless_chromium(tmp_path):
    report = write_probe_report(tmp_path / "probe_report.html", make_result(30), make_manifest())

    def check(page) -> None:
        assert page.locator("script").count() == 0
        assert page.title().startswith("Linear probe")
        chart = page.locator('svg.mpl-fig[data-figure="accuracy"]')
        assert chart.count() == 1 and chart.is_visible()
        hists = page.locator('svg.mpl-fig g[id$="-hist"]')
        assert hists.count() == 4
        assert all(hists.nth(i).is_visible() for i in range(4))
        assert page.locator("tr.best-layer").count() == 1
        # No horizontal page overflow at a laptop width.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    v = visit(report, "probe_report.png", check)
    assert_clean(v)
    assert (ARTIFACTS / "probe_report.png").stat().st_size > 10_000

