"""The automatic-interpretation report, and the feature browser showing explanations, in
headless Chromium (tiny model; unit tests: tests/unit/saes/test_autointerp_run.py)."""

from __future__ import annotations

import pytest

from reports.autointerp import autointerp_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.saes.test_autointerp_run import ai_result, ai_sae, hostile  # noqa: F401


@pytest.mark.browser
def test_autointerp_report_in_browser(ai_result, tmp_path):  # noqa: F811
    res, f = hostile(ai_result)
    path = autointerp_report(res).save(tmp_path / "report")

    def check(page):  # noqa: ANN001, ANN202
        rows = "#ai-features tbody tr"
        out = {"figures": page.locator("svg.mpl-fig").count(),
               "all": page.locator(f"{rows}:visible").count(),
               "overflow": page.evaluate("document.documentElement.scrollWidth > "
                                         "document.documentElement.clientWidth")}
        page.fill("#ai-search", "<script>alert(1)")
        out["found"] = page.locator(f"{rows}:visible").count()
        page.fill("#ai-search", "no such explanation anywhere")
        out["none"] = page.locator(f"{rows}:visible").count()
        return out

    v = visit(path, "autointerp_report.png", check)
    assert_clean(v)
    assert v.checks["figures"] == 2  # the scores against controls, true against shuffled
    assert v.checks["all"] == sum(1 for g in res.features if g.group == "sae")
    assert v.checks["found"] == 1 and v.checks["none"] == 0
    assert not v.checks["overflow"]
    assert (ARTIFACTS / "autointerp_report.png").stat().st_size > 10_000


@pytest.mark.browser
def test_browser_shows_explanations(data, ai_result, tmp_path):  # noqa: F811
    """The feature browser with an explanations.jsonl: each explained card shows its
    explanation and score badge, and the search box finds a card by its explanation."""
    from reports.sae_browser import sae_browser_report
    from saes.autointerp.store import explanations_text, read_explanations

    (tmp_path / "explanations.jsonl").write_text(explanations_text(ai_result))
    ex = read_explanations(tmp_path)
    shown = [c.index for c in data.features if c.index in ex]
    assert shown
    target = ex[shown[0]]
    path = tmp_path / "browser.html"
    path.write_text(sae_browser_report(data, explanations=ex).html)

    def check(page):  # noqa: ANN001, ANN202
        out = {"labels": page.locator(".fb-expl").count()}
        page.fill("#fb-search", target.label)
        out["hits"] = page.eval_on_selector_all(
            "article.fb-feature:visible", "els => els.map(e => e.dataset.index)")
        return out

    v = visit(path, "sae_browser_explanations.png", check)
    assert_clean(v)
    assert v.checks["labels"] == len(shown)
    assert str(target.feature) in v.checks["hits"]
