"""The SAE feature browser in headless Chromium (tiny model; unit tests:
tests/unit/saes/test_sae_browser.py)."""

from __future__ import annotations

import pytest

from reports.sae_browser import sae_browser_report
from saes.features.browser import BrowserData
from tests.unit.saes.test_sae_browser import (
    D_SAE,
    MANIFEST,
    PAYLOADS,
    _hostile,
)


@pytest.mark.browser
def test_browser_in_headless_chromium(data, tmp_path):
    from tests.support.browser import assert_clean, visit

    path = tmp_path / "browser.html"
    path.write_text(sae_browser_report(BrowserData.from_dict(_hostile(data)), MANIFEST).html)
    cards = "article.fb-feature"

    def check(page):  # noqa: ANN001, ANN202
        out = {
            "scripts": page.eval_on_selector_all("script", "els => els.map(e => e.id)"),
            "bad": page.locator("img, iframe, object, embed").count(),
            "text": page.text_content("body"),
            "all": page.locator(f"{cards}:visible").count(),
        }
        page.fill("#fb-search", "17")
        out["by_index"] = page.eval_on_selector_all(
            f"{cards}:visible", "els => els.map(e => e.dataset.index)")
        out["status"] = page.text_content("#fb-status")
        page.fill("#fb-search", "#3")
        out["by_hash"] = page.eval_on_selector_all(
            f"{cards}:visible", "els => els.map(e => e.dataset.index)")
        page.fill("#fb-search", "<SCRIPT>alert(1)")
        out["by_token"] = page.locator(f"{cards}:visible").count()
        page.fill("#fb-search", "no such token anywhere")
        out["none"] = page.locator(f"{cards}:visible").count()
        page.fill("#fb-search", "")
        out["cleared"] = page.locator(f"{cards}:visible").count()
        page.fill("#fb-search", "17")
        return out

    v = visit(path, "sae_browser.png", check)
    assert_clean(v)
    c = v.checks
    assert c["scripts"] == ["interp-report-js"]
    assert c["bad"] == 0
    assert PAYLOADS[0] in c["text"]
    assert PAYLOADS[1].replace(" ", "␣") in c["text"]
    assert c["all"] == c["cleared"] == D_SAE
    assert c["by_index"] == ["17"] and c["status"] == f"1 of {D_SAE} features match"
    assert c["by_hash"] == ["3"]
    assert c["by_token"] == sum(1 for f in data.features if f.contexts)
    assert c["none"] == 0

