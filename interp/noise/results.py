"""Config and result types of seed-noise runs (`interp seeds`) and `interp compare`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from interp.display import short
from interp.schema import Headline, Result, json_field, json_meta

if TYPE_CHECKING:
    import pandas as pd

#: What a comparison concludes about one metric.
LARGER = "larger than noise"
#: The verdict when the interval holds 0.
WITHIN = "within noise: not a result"
#: The verdict when nothing estimates the noise.
NO_NOISE = "no noise estimate"

#: Rows the CLI tables show unless asked for all.
SHOWN_VARYING = 15
SHOWN_COMPARED = 30


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
        """The number of seeds the metric was read from."""
        return len(self.values)


@dataclass
class SeedsResult(Result):
    """A verb run under seeds 0…K−1 (``DIR/seed-N/``) and every numeric metric's spread."""

    verb: str
    args: list[str]
    seeds: list[int]
    runs: list[str]
    #: ``results.json`` keys them by name (:meth:`extra_data`).
    metrics: list[MetricSummary] = field(metadata=json_meta(skip=True))

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = ("kind", "verb", "args", "seeds", "runs", "metrics")

    def metric(self, name: str) -> MetricSummary:
        """The summary of the metric named ``name`` (KeyError when no run had it)."""
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def varying(self) -> list[MetricSummary]:
        """The metrics that move with the seed, the noisiest (relative to its mean) first."""
        return sorted((m for m in self.metrics if m.std > 0),
                      key=lambda m: m.std / max(abs(m.mean), 1e-12), reverse=True)

    def extra_data(self) -> dict[str, Any]:
        """Adds ``kind: "seeds"`` and every metric's mean, std, min, max, n and values."""
        return {"kind": "seeds",
                "metrics": {m.name: {"mean": m.mean, "std": m.std, "min": m.min, "max": m.max,
                                     "n": m.n, "values": m.values} for m in self.metrics}}

    def headline(self) -> Headline:
        """The metrics that vary with the seed, noisiest first (the first 15)."""
        varying = self.varying()
        return Headline(
            title=f"Seed noise of interp {self.verb}",
            table_title=(f"{len(self.metrics)} metrics over {len(self.seeds)} seeds; "
                         f"{len(varying)} vary:"),
            rows=[("seeds", len(self.seeds)), ("metrics", len(self.metrics)),
                  ("metrics that vary with the seed", len(varying))],
            columns=["metric", "mean", "std", "min", "max"],
            table=[[m.name, short(m.mean), short(m.std), short(m.min), short(m.max)]
                   for m in varying[:SHOWN_VARYING]])

    def to_frame(self) -> pd.DataFrame:
        """Every metric (the headline lists the varying ones): mean, std, min, max, n."""
        import pandas as pd

        return pd.DataFrame([{"metric": m.name, "mean": m.mean, "std": m.std, "min": m.min,
                              "max": m.max, "n": m.n} for m in self.metrics])


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
class CompareResult(Result):
    """Every metric two results share, each with a verdict against its noise."""

    a: str
    b: str
    verb: str
    kind: str = field(metadata=json_meta(key="compared"))  # "seed groups" or "single runs"
    rows: list[MetricComparison] = field(metadata=json_meta(key="metrics"))
    only_a: list[str] = json_field(key="only_in_a", default_factory=list)
    only_b: list[str] = json_field(key="only_in_b", default_factory=list)

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = ("kind", "a", "b", "verb", "compared", "counts",
                                             "metrics", "only_in_a", "only_in_b")

    def counts(self) -> dict[str, int]:
        """How many metrics fell under each verdict (larger than the noise, within it, no noise
        measured)."""
        out = {LARGER: 0, WITHIN: 0, NO_NOISE: 0}
        for r in self.rows:
            out[r.verdict] = out.get(r.verdict, 0) + 1
        return out

    def extra_data(self) -> dict[str, Any]:
        """Adds ``kind: "compare"`` and the :meth:`counts`."""
        return {"kind": "compare", "counts": self.counts()}

    def headline(self, limit: int | None = SHOWN_COMPARED) -> Headline:
        """Each shared metric's A → B, B − A with its 95% interval, and the verdict:
        those larger than the noise first (``limit`` rows; ``None``: every metric, in order)."""
        rows = self.rows if limit is None else sorted(
            self.rows, key=lambda r: (r.verdict != LARGER, r.name))[:limit]
        c = self.counts()
        return Headline(
            title=f"interp {self.verb}: B − A over {len(self.rows)} shared metrics "
                  f"({self.kind})",
            table_title=f"interp {self.verb}: B − A over {len(self.rows)} shared metrics "
                        f"({self.kind})",
            rows=[("compared", self.kind), (LARGER, c[LARGER]), (WITHIN, c[WITHIN]),
                  (NO_NOISE, c[NO_NOISE])],
            columns=["metric", "A", "B", "B − A", "95% CI", "verdict"],
            table=[[r.name, short(r.a), short(r.b), f"{r.diff:+.3g}",
                    "—" if r.ci95 is None else f"[{r.ci95[0]:+.3g}, {r.ci95[1]:+.3g}]",
                    r.verdict] for r in rows],
            verdict="; ".join(f"{v}: {n}" for v, n in c.items()))

    def to_frame(self) -> pd.DataFrame:
        """Every compared metric, one row each (the headline shows the first 30)."""
        import pandas as pd

        return pd.DataFrame([vars(r) for r in self.rows])
