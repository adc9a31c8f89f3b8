"""The value types every tool reports a rate or a correlation with, in one JSON layout.

A :class:`Rate` is ``k`` of ``n`` with its 95% interval: Wilson's over independent units,
or a bootstrap over clusters (the templates pairs come from) widened to at least Wilson's.
Wherever it is written, a rate named ``key`` is the keys ``key`` (``k / n``),
``key_ci95`` (``[lo, hi]``), ``key_n``, ``key_k`` and, for a clustered interval,
``key_clusters``; with ``n = 0`` the value and the ends are null. A rate inside a result
(a DAS layer's IIA) is an object with those keys; a result that lists rates side by side
(the sycophancy flip rates) writes them as siblings with :meth:`Rate.put`.

The intervals come from :mod:`interp.stats.intervals` (imported when first needed: it
brings scipy and statsmodels, which the command line should not load to parse options).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interp.display import ci_text

__all__ = ["Correlation", "Rate"]


def _end(x: float | None) -> float | None:
    return None if x is None or x != x else float(x)


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` (``k`` may count ties as halves) with its 95% interval."""

    k: float
    n: int
    lo: float = math.nan
    hi: float = math.nan
    #: The number of clusters a bootstrap interval resampled (None: Wilson's, over units).
    clusters: int | None = None
    #: The key the rate is written under when it stands alone (its :meth:`to_dict`).
    name: str = "rate"

    @classmethod
    def of(cls, k: float, n: int, *, name: str = "rate") -> Rate:
        """The rate ``k / n`` and its Wilson interval (:func:`~interp.stats.intervals.wilson`)."""
        from interp.stats.intervals import wilson

        lo, hi = wilson(k, n)
        return cls(k, n, lo, hi, name=name)

    @classmethod
    def count(cls, values: Sequence[float], *, name: str = "rate") -> Rate:
        """The mean of 0/1 (or 0.5 for a tie) outcomes as a rate."""
        return cls.of(float(sum(values)), len(values), name=name)

    @property
    def value(self) -> float:
        """``k / n`` (NaN for ``n = 0``)."""
        return self.k / self.n if self.n else math.nan

    @property
    def ci95(self) -> list[float | None]:
        """``[lo, hi]``; None for an end that is not known (``n = 0``)."""
        return [_end(self.lo), _end(self.hi)]

    def text(self, digits: int = 2) -> str:
        """``0.85 [0.78, 0.90]`` (the value alone when the interval is unknown)."""
        if not self.n:
            return "—"
        lo, hi = self.ci95

        def fmt(x: float) -> str:
            return f"{x:.{digits}f}"

        shown = fmt(self.value)
        return f"{shown} {ci_text(lo, hi, fmt=fmt)}" if lo is not None and hi is not None \
            else shown

    def put(self, out: dict[str, Any], key: str) -> None:
        """Write the rate into ``out`` under ``key`` (the layout above)."""
        out[key] = self.value if self.n else None
        out[f"{key}_ci95"] = self.ci95
        out[f"{key}_n"] = self.n
        out[f"{key}_k"] = self.k
        if self.clusters is not None:
            out[f"{key}_clusters"] = self.clusters

    def to_dict(self) -> dict[str, Any]:
        """The rate as an object: :meth:`put` under its :attr:`name`."""
        out: dict[str, Any] = {}
        self.put(out, self.name)
        return out

    @classmethod
    def read(cls, data: Mapping[str, Any], key: str) -> Rate:
        """The rate :meth:`put` wrote under ``key`` in ``data`` (files without ``key_k``,
        written before it was kept, give ``k`` from the value)."""
        n = int(data.get(f"{key}_n") or 0)
        value = data.get(key)
        k = data.get(f"{key}_k")
        if k is None:
            k = float(value) * n if value is not None and n else 0.0
        lo, hi = (list(data.get(f"{key}_ci95") or [None, None]) + [None, None])[:2]
        return cls(float(k), n, math.nan if lo is None else float(lo),
                   math.nan if hi is None else float(hi), data.get(f"{key}_clusters"), key)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rate:
        """The rate :meth:`to_dict` wrote (its name is the key ``*_n`` is beside)."""
        key = next((k[:-2] for k in data if k.endswith("_n") and k[:-2] in data), "rate")
        return cls.read(data, key)


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
        from interp.stats.intervals import pearson_ci

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
