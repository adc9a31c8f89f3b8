"""Config and result types of seed-noise runs (`interp seeds`) and `interp compare`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from interp.display import result_html

#: What a comparison concludes about one metric.
LARGER = "larger than noise"
WITHIN = "within noise: not a result"
NO_NOISE = "no noise estimate"


@dataclass
class MetricSummary:
    """One numeric metric over the seeds of a group: its values and their spread."""

    name: str
    values: list[float]
    mean: float
    std: float
    min: float
    max: float

    @property
    def n(self) -> int:
        return len(self.values)


@dataclass
class SeedsResult:
    """A verb run under seeds 0…K−1 (``DIR/seed-N/``) and every numeric metric's spread."""

    verb: str
    args: list[str]
    seeds: list[int]
    runs: list[str]
    metrics: list[MetricSummary]
    manifest: dict[str, Any] = field(default_factory=dict)

    def metric(self, name: str) -> MetricSummary:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "seeds",
            "verb": self.verb,
            "args": self.args,
            "seeds": self.seeds,
            "runs": self.runs,
            "metrics": {m.name: {"mean": m.mean, "std": m.std, "min": m.min, "max": m.max,
                                 "n": m.n, "values": m.values} for m in self.metrics},
        }

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"metric": m.name, "mean": m.mean, "std": m.std, "min": m.min,
                              "max": m.max, "n": m.n} for m in self.metrics])

    def _repr_html_(self) -> str:
        varying = sum(m.std > 0 for m in self.metrics)
        return result_html(f"Seed noise of interp {self.verb}", [
            ("seeds", len(self.seeds)), ("metrics", len(self.metrics)),
            ("metrics that vary with the seed", varying)])


@dataclass
class MetricComparison:
    """One metric of A against B: the difference B − A, its 95% interval and the verdict."""

    name: str
    a: float
    b: float
    diff: float
    ci95: tuple[float, float] | None
    method: str
    verdict: str


@dataclass
class CompareResult:
    """Every metric two results share, each with a verdict against its noise."""

    a: str
    b: str
    verb: str
    kind: str  # "seed groups" or "single runs"
    rows: list[MetricComparison]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {LARGER: 0, WITHIN: 0, NO_NOISE: 0}
        for r in self.rows:
            out[r.verdict] = out.get(r.verdict, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "compare", "a": self.a, "b": self.b, "verb": self.verb,
                "compared": self.kind, "counts": self.counts(),
                "metrics": [asdict(r) for r in self.rows],
                "only_in_a": self.only_a, "only_in_b": self.only_b}

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(r) for r in self.rows])

    def _repr_html_(self) -> str:
        c = self.counts()
        return result_html(f"interp {self.verb}: B − A", [
            ("compared", self.kind), (LARGER, c[LARGER]), (WITHIN, c[WITHIN]),
            (NO_NOISE, c[NO_NOISE])])
