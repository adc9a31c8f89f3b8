"""Statistics shared by every tool: confidence intervals and paired tests."""

from __future__ import annotations

from interp.stats.intervals import Z95, wilson

__all__ = ["Z95", "wilson"]
