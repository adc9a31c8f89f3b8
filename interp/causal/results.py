"""Typed config and result of distributed alignment search (:func:`~interp.causal.das.run_das`).

Every IIA is a proportion of held-out pairs with its Wilson 95% interval (``iia``,
``iia_ci95``, ``iia_n``, as every rate in the project), beside its baselines at the same
layer: a random direction of the same dimension (the control subspace), the full
interchange (every direction: exact patching of the residual stream, the ceiling), no
interchange (the base run, the floor), and DAS trained and scored on the control task
(random counterfactual labels, which must not beat chance: the majority label's share of
the held-out pairs, the best that a subspace which always flips the output, or never
does, can score; a control run that cannot flip anything scores the minority's share).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from interp.display import ci_text
from interp.schema import (
    Config,
    Headline,
    Result,
    at_least,
    fraction,
    not_empty,
    positive,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class DASConfig(Config):
    """What :func:`~interp.causal.das.run_das` searches: where, how, on which pairs."""

    task: str = setting("capitals", check=not_empty, metavar="NAME|FILE",
                        help="A shipped circuit task (capitals, ioi, pronoun) or a JSONL file "
                             "of clean/corrupted pairs: the corrupted prompt is the base, "
                             "the clean one the source.")
    layers: list[int] | str | int | None = setting(
        None, cli_default="all", help="Layers to search: comma-separated (0-based) or 'all'.")
    position: str = setting("END", check=not_empty,
                            help="Where to intervene: a role label of the task (e.g. country) "
                                 "or END, the last token.")
    dim: int = setting(1, check=at_least(1), cli_range=True,
                       help="Dimensions of the learned subspace (k).")
    steps: int = setting(100, check=at_least(1), cli_range=True,
                         help="Training steps per layer and seed.")
    lr: float = setting(1e-2, check=positive, help="Adam's learning rate.")
    batch_size: int = setting(32, cli=False, check=at_least(1),
                              help="Pairs per training step and per scoring pass.")
    limit: int | None = setting(None, check=at_least(4), cli_range=True,
                                help="Use the first N pairs of the task.")
    test_size: float = setting(0.25, check=fraction,
                               help="Share of pairs held out (whole groups when the task "
                                    "has a template column).")
    seeds: int = setting(1, check=at_least(1), cli_range=True,
                         help="Training seeds per layer (the spread is reported).")
    control: bool = setting(True, flag="--no-control",
                            help="Skip the control task (DAS on random counterfactual labels).")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the split, the random directions and the first training.")

    def check(self) -> None:
        """Both sides of the split hold pairs."""
        if not 0 < self.test_size < 1:
            raise self.error("test_size", "must be strictly between 0 and 1", self.test_size)


@dataclass
class Rate:
    """An IIA: a proportion of held-out pairs and its Wilson 95% interval."""

    iia: float
    iia_ci95: list[float | None]
    iia_n: int

    def text(self) -> str:
        """``0.85 [0.78, 0.90]``."""
        lo, hi = self.iia_ci95
        return f"{self.iia:.2f} {ci_text(lo, hi)}" if lo is not None and hi is not None \
            else f"{self.iia:.2f}"


@dataclass
class LayerIIA:
    """One layer's interchange-intervention accuracies on the held-out pairs."""

    layer: int
    das: Rate
    #: the IIA of each training seed (their spread is the seed noise)
    das_seeds: list[float]
    random: Rate
    full: Rate
    none: Rate
    control: Rate | None
    seconds: float
    #: the control task's chance: the majority label's share among the held-out pairs
    #: (a subspace that always flips, or never flips, the output scores exactly this)
    control_chance: float | None = None
    #: binary tasks only: a probe's held-out accuracy at the position (readable?), and
    #: the IIA of its direction and of the class-mean difference (used?)
    probe_accuracy: Rate | None = None
    probe_direction: Rate | None = None
    mean_difference: Rate | None = None


@dataclass
class DASResult(Result):
    """Per layer: DAS's held-out IIA beside its controls; ``to_dict()`` is ``results.json``."""

    config: DASConfig
    task: str
    task_sha256: str
    position: str
    n_train: int
    n_test: int
    split: str
    layers: list[LayerIIA] = field(default_factory=list)
    model_id: str = ""

    warnings_always: ClassVar[bool] = False

    def illusions(self) -> list[LayerIIA]:
        """Layers where DAS does more than the full interchange beyond the noise (its
        interval wholly above the full interchange's): not a variable the model uses,
        but a direction that opens a dormant path (Makelov et al. 2023)."""
        out = []
        for r in self.layers:
            lo, hi = r.das.iia_ci95[0], r.full.iia_ci95[1]
            if lo is not None and hi is not None and lo > hi:
                out.append(r)
        return out

    def add_warnings(self) -> None:
        """One warning per layer of :meth:`illusions`."""
        for r in self.illusions():
            self.warn(f"layer {r.layer}: DAS's IIA {r.das.text()} exceeds the full "
                      f"interchange's {r.full.text()} beyond the noise: the direction opens "
                      "a path the model does not use (a subspace illusion), not a causal "
                      "variable")

    def best(self) -> LayerIIA | None:
        """The layer with the highest DAS IIA (the first of ties)."""
        return max(self.layers, key=lambda r: r.das.iia, default=None)

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: every IIA with its interval."""
        import pandas as pd

        rows = []
        for r in self.layers:
            row: dict[str, Any] = {"layer": r.layer}
            for name in ("das", "random", "full", "none", "control", "probe_accuracy",
                         "probe_direction", "mean_difference"):
                rate = getattr(r, name)
                if rate is not None:
                    row[name] = rate.iia
                    row[f"{name}_lo"], row[f"{name}_hi"] = rate.iia_ci95
            row["das_seed_min"] = min(r.das_seeds)
            row["das_seed_max"] = max(r.das_seeds)
            rows.append(row)
        return pd.DataFrame(rows)

    def headline(self) -> Headline:
        """IIA per layer: DAS, the random direction, the full interchange, the control task."""
        def text(x: Rate | None) -> str:
            return x.text() if x is not None else "—"

        table = [[r.layer, r.das.text(), text(r.probe_direction), text(r.mean_difference),
                  r.random.text(), r.full.text(), r.none.text(), text(r.control),
                  text(r.probe_accuracy)] for r in self.layers]
        b = self.best()
        verdict = None
        if b is not None:
            verdict = (f"best layer {b.layer}: DAS IIA {b.das.text()} against a random "
                       f"direction's {b.random.text()} and the full interchange's "
                       f"{b.full.text()}")
            if b.probe_direction is not None and b.probe_accuracy is not None:
                verdict += (f"; the probe's direction {b.probe_direction.text()}, the probe "
                            f"reads the label at {b.probe_accuracy.text()}")
            if b.control is not None:
                verdict += (f"; control task {b.control.text()} (chance "
                            f"{b.control_chance:.2f})")
        k = self.config.dim
        return Headline(
            title="Distributed alignment search",
            rows=[("model", self.model_id or "unknown"), ("task", self.task),
                  ("position", self.position), ("subspace", f"{k} dimension{'s' * (k > 1)}"),
                  ("pairs", f"{self.n_train} train, {self.n_test} held out ({self.split})"),
                  ("seeds", self.config.seeds)],
            table_title="held-out IIA by layer (95% Wilson CI)",
            columns=["layer", "DAS", "probe direction", "mean difference", "random direction",
                     "full interchange", "none", "control task", "probe accuracy"],
            table=table, verdict=verdict)

    def figure(self) -> Figure | None:
        """:func:`~interp.causal.figures.iia_by_layer`."""
        from interp.causal.figures import iia_by_layer

        return iia_by_layer(self) if self.layers else None
