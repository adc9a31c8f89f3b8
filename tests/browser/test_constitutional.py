"""The constitutional-AI report in headless Chromium (unit tests:
tests/unit/evals/test_constitutional.py)."""

from __future__ import annotations

import pytest

from reports.constitutional import constitutional_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.evals.test_constitutional import make_manifest, make_result


@pytest.mark.browser
def test_report_in_headless_chromium(tmp_path):
    path = constitutional_report(make_result(False), make_manifest()).save(tmp_path)

    def check(page) -> None:
        assert page.locator("script").count() == 0
        assert page.title().startswith("Constitutional AI")
        charts = page.locator("svg.mpl-fig")
        assert charts.count() == 3 and all(charts.nth(i).is_visible() for i in range(3))
        assert page.locator("details.chain").count() == 2
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    v = visit(path, "constitutional_report.png", check)
    assert_clean(v)
    assert (ARTIFACTS / "constitutional_report.png").stat().st_size > 10_000

