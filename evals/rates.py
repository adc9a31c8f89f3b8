"""Typed estimates shared by the evaluations: a rate with its Wilson interval, a correlation.

Both evaluations report every number with its 95% interval and its ``n``. These small
value types carry the three together, so a report or a figure reads ``rate.lo`` instead
of ``results["x_ci95"][0]``; each result's ``to_dict`` writes them back in the
``results.json`` layout (``key``, ``key_ci95``, ``key_n``, and for sycophancy ``key_k``).
The intervals come from :mod:`interp.stats` (imported when first needed: it brings
scipy and statsmodels, which the command line should not load to parse its options).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Correlation", "Rate"]


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` (``k`` may count ties as halves) with its 95% Wilson interval.

    ``value``, ``lo`` and ``hi`` are NaN when ``n = 0``.
    """

    k: float
    n: int
    lo: float = math.nan
    hi: float = math.nan

    @classmethod
    def of(cls, k: float, n: int) -> Rate:
        """The rate ``k / n`` and its Wilson interval (:func:`~interp.stats.intervals.wilson`)."""
        from interp.stats import wilson

        lo, hi = wilson(k, n)
        return cls(k, n, lo, hi)

    @classmethod
    def count(cls, values: Sequence[float]) -> Rate:
        """The mean of 0/1 (or 0.5 for a tie) outcomes as a rate."""
        return cls.of(float(sum(values)), len(values))

    @property
    def value(self) -> float:
        """``k / n`` (NaN for ``n = 0``)."""
        return self.k / self.n if self.n else math.nan

    @property
    def ci(self) -> list[float]:
        """``[lo, hi]`` (NaN ends for ``n = 0``)."""
        return [self.lo, self.hi]

    def put(self, out: dict[str, Any], key: str, *, with_k: bool = True) -> None:
        """The sycophancy layout: NaN when empty, with ``key_k``."""
        out[key] = self.value
        out[f"{key}_ci95"] = self.ci
        out[f"{key}_n"] = self.n
        if with_k:
            out[f"{key}_k"] = self.k

    def put_or_none(self, out: dict[str, Any], key: str) -> None:
        """The constitutional layout: ``None`` and ``[None, None]`` when empty, no ``key_k``."""
        out[key] = self.value if self.n else None
        out[f"{key}_ci95"] = self.ci if self.n else [None, None]
        out[f"{key}_n"] = self.n


@dataclass(frozen=True)
class Correlation:
    """Pearson's r and its Fisher-z 95% interval (NaN where undefined: < 4 points, no spread)."""

    r: float | None
    lo: float | None
    hi: float | None
    n: int

    @classmethod
    def of(cls, xs: Sequence[float], ys: Sequence[float]) -> Correlation:
        """:func:`~interp.stats.intervals.pearson_ci` of two equally long sequences."""
        from interp.stats import pearson_ci

        r, (lo, hi) = pearson_ci(xs, ys)
        return cls(r, lo, hi, len(xs))

    @property
    def value(self) -> float:
        """``r``, NaN where undefined."""
        return math.nan if self.r is None else self.r

    def put(self, out: dict[str, Any], key: str) -> None:
        """Write ``key`` (r, None where undefined), ``key_ci95`` and ``key_n`` into ``out``."""
        out[key] = self.r
        out[f"{key}_ci95"] = [self.lo, self.hi]
        out[f"{key}_n"] = self.n
