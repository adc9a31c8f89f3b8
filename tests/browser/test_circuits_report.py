"""The activation-patching report in headless Chromium (unit tests:
tests/unit/reports/test_circuits_report.py)."""

from __future__ import annotations

import pytest

from reports.patching import patching_report
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.unit.reports.test_circuits_report import (
    HEADS,
    LAYERS,
    heads_result,
)


@pytest.mark.browser
def test_report_in_browser(tmp_path):
    path = patching_report(heads_result()).save(tmp_path)

    def check(page):
        page.click('a[href="#attn-L5H2"]')
        return {
            "cells": page.locator('svg.mpl-fig[data-figure="effect-exact"] '
                                  'g[id^="effect-exact-cell-"]').count(),
            "targeted": page.evaluate("location.hash"),
            "attn_figures": page.locator(".attn-head svg.mpl-fig").count(),
            "group_dots": page.locator('svg.mpl-fig[data-figure="groups"] '
                                       'g[id^="groups-dot-"]').count(),
            "overflow": page.evaluate(
                "document.documentElement.scrollWidth > document.documentElement.clientWidth"),
            "title": page.title(),
        }

    v = visit(path, "patching_report.png", check)
    assert_clean(v)
    assert v.checks["cells"] == len(LAYERS) * len(HEADS)
    assert v.checks["targeted"] == "#attn-L5H2"
    assert v.checks["attn_figures"] == 2
    groups = heads_result().groups
    assert groups is not None
    assert v.checks["group_dots"] == 2 * len(groups.components)
    assert not v.checks["overflow"]
    assert v.checks["title"] == "Activation patching — ioi · heads · tiny/<b>model</b>"
    assert (ARTIFACTS / "patching_report.png").stat().st_size > 10_000

