"""Fixtures the browser tests share with the unit tests of the same report."""

from __future__ import annotations

from tests.unit.reports.test_reports import manifest  # noqa: F401
from tests.unit.saes.test_sae_browser import data, sae  # noqa: F401
