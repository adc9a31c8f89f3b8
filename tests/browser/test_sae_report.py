"""The SAE evaluation report in headless Chromium (unit tests:
tests/unit/reports/test_sae_report.py)."""

from __future__ import annotations

import pytest

from reports.sae import sae_report
from saes.metrics import SAEEvalResult
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.reports.test_sae_report import (
    FIGURES,
    SCRIPT,
    fake_manifest,
    fake_result,
)


@pytest.mark.browser
def test_sae_report_in_headless_chromium(tmp_path):
    res = fake_result(d_sae=512, steps=480)
    res["model"] = SCRIPT
    path = tmp_path / "sae_report.html"
    path.write_text(sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html,
                    encoding="utf-8")

    def check(page) -> dict:
        counts = {name: page.locator(f'svg.mpl-fig[data-figure="{name}"]').count()
                  for name in FIGURES}
        for name in counts:
            first = page.locator(f'svg.mpl-fig[data-figure="{name}"]').first
            box = first.bounding_box()
            assert first.is_visible() and box and box["width"] > 300 and box["height"] > 80, name
        assert page.locator("script").count() == 0
        assert page.title() == f"SAE evaluation — {SCRIPT}"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        return counts

    v = visit(path, "sae_report.png", check)
    assert_clean(v)
    assert v.checks == dict.fromkeys(FIGURES, 1)
    assert (ARTIFACTS / "sae_report.png").stat().st_size > 10_000

