"""The attention report in headless Chromium (tiny model; unit tests:
tests/unit/interp/test_attention.py)."""

from __future__ import annotations

import pytest

from interp.circuits.attention import run_attention
from interp.circuits.results import AttentionConfig
from reports.attention import attention_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.interp.test_attention import HOSTILE, N_HEADS


@pytest.mark.browser
def test_report_in_browser(tiny_model, tmp_path):
    r = run_attention(tiny_model, AttentionConfig(HOSTILE, layer=1))
    path = attention_report(r).save(tmp_path)

    def check(page):
        return {
            "figures": page.locator("svg.mpl-fig").count(),
            "open_tables": page.locator("details.attn-table[open] table").count(),
            "overflow": page.evaluate(
                "document.documentElement.scrollWidth > document.documentElement.clientWidth"),
        }

    v = visit(path, "attention_report.png", check)
    assert_clean(v)
    assert v.checks == {"figures": N_HEADS, "open_tables": 1, "overflow": False}
    assert (ARTIFACTS / "attention_report.png").stat().st_size > 10_000

