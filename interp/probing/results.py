"""What probing returns: the probe settings and the typed results of a run.

:class:`ProbeResult` (from :func:`interp.probing.probes.run_probe`) holds per-layer,
per-seed numbers and the final probes' weights; :class:`AblationResult` (from
:func:`interp.probing.ablation.ablate_probe`) holds the ablation check of a direction
against variance-matched random directions. ``ProbeResult.ablation`` carries the
latter, so one object is a whole ``interp probe --ablate`` run: its ``to_dict()`` is
the run's ``results.json`` (less the manifest and the artifact name), ``to_frame()``
its per-layer table, and in a notebook it shows its headline numbers and figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from interp.display import format_number, plus_minus, signed
from interp.errors import InterpError
from interp.runs.paths import shown_path
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_field,
    json_meta,
    positive,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

METRICS = (
    "test_accuracy", "test_auroc", "train_accuracy", "shuffled_accuracy",
    "random_weights_accuracy", "bow_accuracy", "control_task_accuracy",
    "control_task_train_accuracy", "majority_rate",
)  # fmt: skip

#: The controls whose best is a layer's ``control_accuracy``, with their names.
CONTROLS = {
    "shuffled_accuracy": "shuffled labels",
    "random_weights_accuracy": "random weights",
    "bow_accuracy": "bag of words",
}

#: The verdict rule: the best layer beats its best control clearly when the margin is
#: at least MIN_MARGIN accuracy and more than SIGMAS seed standard deviations.
MIN_MARGIN = 0.05
SIGMAS = 3.0


#: The token a probe reads: the last, the mean over tokens, or an index (0 = first).
ProbePosition = Literal["last", "mean"] | int

#: Who fits the probes: batched Newton in torch (all layers and seeds at once) or
#: scikit-learn, one fit at a time (the reference; same optimum).
ProbeSolver = Literal["torch", "sklearn"]
SOLVERS: tuple[str, ...] = ("torch", "sklearn")


def _nanmax(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else math.nan


# ------------------------------------------------------------------------- probes
def parse_position(text: str | int) -> ProbePosition:
    """``"last"``, ``"mean"`` or an integer index from its text form."""
    if isinstance(text, int) or text in ("last", "mean"):
        return text  # type: ignore[return-value]
    try:
        return int(text)
    except (TypeError, ValueError):
        raise InterpError(f"bad --position {text!r}: use last, mean or an integer") from None


#: Seeds are keyed ``SEED_STRIDE · seed + s`` (split ``s``): see :class:`ProbeConfig`.
SEED_STRIDE = 1000


@dataclass(frozen=True)
class ProbeData(Config):
    """A labelled probe set: its file and the columns holding the text, the label and the
    group (:func:`interp.probing.probes.load_probe_dataset`)."""

    dataset: str | None = setting(
        None, cli=Cli(path="file"),
        help="JSONL/JSON/CSV/TSV (default: shipped probes/capitals_truefalse.jsonl).")
    text_column: str = setting("text", help="Column holding the text.")
    label_column: str = setting("label", help="Column holding the label (two classes).")
    group_column: str = setting("group", help="Column naming each example's group.")


@dataclass(frozen=True)
class ProbeConfig(Config):
    """Settings of one probe run (recorded in ``results.json`` and artifacts).

    ``layers`` is a list, an int or ``"all"``; a result's config holds the resolved
    list. ``dataset``, ``dataset_hash`` and ``split`` are filled in by ``run_probe``.
    ``seed`` keys every random choice: the ``seeds`` train/test splits (seed
    ``1000·seed + s`` for split ``s``, so ``seed=0`` gives splits 0…seeds−1), their label
    shuffles, the control task's labels and the random-weights model.
    """

    layers: Sequence[int] | str | int = setting(
        "all", cli=False, help="Layers to probe: a list, one layer, or 'all'.")
    position: ProbePosition = setting(
        "last", help="Token read: last, mean, or an index (0 = first, -1 = last).",
        cli=Cli(parse=parse_position, metavar="last|mean|INDEX"))
    seeds: int = setting(5, check=in_range(1, SEED_STRIDE),
                         help="Train/test splits (and label shuffles), each a seed.")
    test_size: float = setting(0.25, cli=False, check=in_range(0, 1, open_low=True,
                                                                open_high=True),
                               help="Held-out fraction of each split.")
    C: float = setting(0.1, check=positive,
                       help="Inverse L2 strength of the logistic regression "
                       "(on standardised inputs).", cli=Cli(flag="--C"))
    batch_size: int = setting(16, cli=False, check=at_least(1),
                              help="Prompts per forward pass.")
    random_weights: bool = setting(True,
                                   help="Skip the random-weights control "
                                   "(saves one capture pass).", cli=Cli(flag="--no-random-weights"))
    dataset: str = setting("", cli=False, help="The probe set's source (set by run_probe).")
    dataset_hash: str = setting("", cli=False, help="The probe set's hash (set by run_probe).")
    split: str = setting("group", cli=False,
                         help="How examples were split: group or stratified (set by "
                              "run_probe).")
    solver: ProbeSolver = setting(
        "torch", help="Probe fits: batched in torch, or scikit-learn one at a time "
                      "(reference).")
    seed: int = setting(0, cli=False, check=in_range(0, 2**31 // SEED_STRIDE - 1),
                        help="Keys every random choice (recorded in the manifest).")


@dataclass(frozen=True)
class AblationConfig(Config):
    """Settings of the ablation check of a probe (``interp probe --ablate``; run by
    :func:`interp.probing.ablation.ablate_probe`).

    ``layer`` defaults to the probe's best layer, ``later_layer`` to 4 layers later,
    ``batch_size`` to the probe's. ``n_examples`` caps the prompts (a balanced,
    seeded subsample); ``leace`` adds LEACE erasure as a second method.
    """

    n_random: int = setting(10, check=at_least(1), help="Variance-matched random directions.",
                            cli=Cli(flag="--random-directions"))
    n_examples: int = setting(256, check=at_least(10), help="Examples used by the ablation check.",
                              cli=Cli(flag="--ablate-examples"))
    leace: bool = setting(False, help="With --ablate: also erase with LEACE "
                                      "(concept-erasure), a second method.")
    seed: int = setting(0, cli=False, check=seed_range, help="Keys the subsample and the "
                                                              "random directions.")
    layer: int | None = setting(None, cli=False, check=at_least(0),
                                help="Layer to ablate (default: the probe's best).")
    later_layer: int | None = setting(None, cli=False, check=at_least(0),
                                      help="Where the probe is read again (default: 4 "
                                           "layers later).")
    batch_size: int | None = setting(None, cli=False, check=at_least(1),
                                     help="Prompts per forward pass (default: the probe's).")


@dataclass
class DatasetSummary:
    """The probe set a result was measured on (``results.json``'s ``dataset``)."""

    path: str
    n: int
    label_names: list[str]
    split: str
    n_groups: int | None


@dataclass
class LayerStats:
    """Every metric at one layer, one value per seed."""

    layer: int
    values: dict[str, list[float]]

    def mean(self, key: str) -> float:
        """Mean over seeds of metric ``key``, NaN values left out (NaN when every value is)."""
        v = [x for x in self.values[key] if not math.isnan(x)]
        return float(np.mean(v)) if v else math.nan

    def std(self, key: str) -> float:
        """Sample standard deviation (ddof=1) over seeds of metric ``key``, NaN values left out (0
        with fewer than two values)."""
        v = [x for x in self.values[key] if not math.isnan(x)]
        return float(np.std(v, ddof=1)) if len(v) > 1 else 0.0


@dataclass(frozen=True)
class Verdict:
    """Does the best layer clearly beat its best control? (See :data:`MIN_MARGIN`.)"""

    layer: int | None
    test: float
    std: float
    control: float
    control_name: str
    margin: float
    sigmas: float
    clear: bool
    text: str


def _num(x: float) -> str:
    return format_number(x)


@dataclass
class ProbeResult(Result):
    """A probe sweep: per-layer stats over seeds, the final probes' weights, and
    optionally the ablation check of the best layer's direction."""

    config: ProbeConfig
    model_id: str = field(metadata=json_meta(key="model"))
    n_examples: int
    n_train: int
    n_test: int
    #: Per-layer stats; ``results.json`` spreads them into per-metric lists
    #: (:meth:`extra_data`).
    layers: list[LayerStats] = field(metadata=json_meta(skip=True))
    directions: dict[int, np.ndarray] = json_field(skip=True, repr=False, default_factory=dict)
    biases: dict[int, float] = json_field(skip=True, repr=False, default_factory=dict)
    scaler_mean: dict[int, np.ndarray] = json_field(skip=True, repr=False, default_factory=dict)
    scaler_scale: dict[int, np.ndarray] = json_field(skip=True, repr=False,
                                                     default_factory=dict)
    mean_differences: dict[int, np.ndarray] = json_field(skip=True, repr=False,
                                                         default_factory=dict)
    dataset: DatasetSummary | None = json_field(None, omit_none=True)
    ablation: AblationResult | None = json_field(None, omit_none=True)

    json_order: ClassVar[tuple[Any, ...]] = (
        "model", "config", "n_examples", "n_train", "n_test", "layers", "best_layer",
        "warnings", ..., "per_seed", "dataset", "ablation")

    # -------------------------------------------------------------- per layer
    @property
    def layer_numbers(self) -> list[int]:
        """The probed layers, in order."""
        return [s.layer for s in self.layers]

    def best_layer(self) -> int:
        """The layer with the highest mean held-out accuracy (before any control: see ``verdict``
        for whether it beats them)."""
        return max(self.layers, key=lambda s: s.mean("test_accuracy")).layer

    def stats(self, layer: int) -> LayerStats:
        """The :class:`LayerStats` of ``layer`` (StopIteration when that layer was not probed)."""
        return next(s for s in self.layers if s.layer == layer)

    def means(self, metric: str) -> list[float]:
        """``metric``'s mean over seeds, per layer."""
        return [s.mean(metric) for s in self.layers]

    def stds(self, metric: str) -> list[float]:
        """``metric``'s standard deviation over seeds, per layer."""
        return [s.std(metric) for s in self.layers]

    def control_accuracy(self) -> list[float]:
        """Per layer, the best of shuffled labels, random weights and bag of words."""
        return [_nanmax([s.mean(k) for k in CONTROLS]) for s in self.layers]

    def selectivity(self) -> list[float]:
        """Per layer, held-out accuracy − control-task accuracy (Hewitt & Liang)."""
        return [s.mean("test_accuracy") - s.mean("control_task_accuracy") for s in self.layers]

    def selectivity_ci(self) -> list[tuple[float, float]]:
        """Per layer, the 95% Student-t interval of the selectivity over seeds (the
        per-seed differences held-out − control task; NaN ends with one seed)."""
        from interp.stats import mean_t_ci

        out = []
        for s in self.layers:
            diffs = np.asarray(s.values["test_accuracy"], dtype=np.float64) - np.asarray(
                s.values["control_task_accuracy"], dtype=np.float64)
            _, lo, hi = mean_t_ci(diffs)
            out.append((lo, hi))
        return out

    def verdict(self) -> Verdict:
        """The headline judgement at the best layer: ``margin`` = held-out accuracy −
        best control; ``clear`` when margin ≥ 0.05 and > 3 × the seed std."""
        if not self.layers:
            return Verdict(None, math.nan, math.nan, math.nan, "best control", math.nan,
                           math.nan, False, "No layer was probed.")
        st = self.stats(self.best_layer())
        layer, test, std = st.layer, st.mean("test_accuracy"), st.std("test_accuracy")
        control = _nanmax([st.mean(k) for k in CONTROLS])
        named = [name for k, name in CONTROLS.items() if abs(st.mean(k) - control) < 1e-9]
        name = named[0] if named else "best control"
        if not math.isfinite(test):
            return Verdict(layer, test, std, control, name, math.nan, math.nan, False,
                           f"Layer {layer} has no held-out accuracy: nothing to judge.")
        if not math.isfinite(control):
            return Verdict(layer, test, std, control, name, math.nan, math.nan, False,
                           f"Layer {layer} reaches {_num(test)} held-out accuracy, but there "
                           "is no control baseline to compare it with.")
        margin = test - control
        sigmas = margin / std if math.isfinite(std) and std > 0 else math.nan
        clear = margin >= MIN_MARGIN and (margin > SIGMAS * std if math.isfinite(std) else False)
        if math.isfinite(sigmas):
            spread = f"{sigmas:.1f} seed-std".replace("-", "−", 1 if sigmas < 0 else 0)
        elif math.isfinite(std):
            spread = "no seed-to-seed spread"
        else:
            spread = "seed spread unknown"
        ctrl = f"{name}, {_num(control)}"
        if clear:
            text = f"Layer {layer} beats the best control ({ctrl}) by {_num(margin)} ({spread})."
        else:
            text = (f"Layer {layer} does not clearly beat its controls: margin {signed(margin)} "
                    f"over the best control ({ctrl}), {spread}; a clear win needs ≥ "
                    f"{MIN_MARGIN:g} and > {SIGMAS:g} seed-std.")
        return Verdict(layer, test, std, control, name, margin, sigmas, clear, text)

    # ---------------------------------------------------------------- exports
    def extra_data(self) -> dict[str, Any]:
        """``results.json``'s lists per layer, in ``layers`` order."""
        out: dict[str, Any] = {"layers": self.layer_numbers,
                               "best_layer": self.best_layer() if self.layers else None}
        for key in METRICS:
            out[f"{key}_mean"] = self.means(key)
            out[f"{key}_std"] = self.stds(key)
        out["control_accuracy_mean"] = self.control_accuracy()
        out["selectivity"] = self.selectivity()
        out["selectivity_ci95"] = [list(ci) for ci in self.selectivity_ci()]
        out["per_seed"] = {str(s.layer): s.values for s in self.layers}
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: every metric's mean and std, control accuracy, selectivity."""
        import pandas as pd

        d = self.extra_data()
        cols = [k for k in d if k.endswith("_mean") or k.endswith("_std") or k == "selectivity"]
        return pd.DataFrame({"layer": d["layers"], **{k: d[k] for k in cols}})

    def headline(self) -> Headline:
        """The per-layer table (the CLI's, the notebook's) and the verdict."""
        v = self.verdict()
        ds = self.dataset
        rows: list[tuple[str, object]] = [("model", self.model_id)]
        if ds is not None:
            rows.append(("dataset",
                         f"{shown_path(ds.path)} ({ds.n} examples, split by {ds.split})"))
        rows += [("best layer", v.layer),
                 ("held-out accuracy", plus_minus(v.test, v.std)),
                 ("best control", f"{v.control_name}, {_num(v.control)}")]
        if self.ablation is not None:
            for name, d in self.ablation.directions.items():
                rows.append((f"ablating {name}: KL percentile / z",
                             f"{d.kl_percentile:.0f} / {d.kl_z:.1f}"))
        sel, ctrl = self.selectivity(), self.control_accuracy()
        table = [[s.layer, s.mean("test_accuracy"), s.std("test_accuracy"),
                  s.mean("test_auroc"), ctrl[i], s.mean("control_task_accuracy"), sel[i],
                  s.mean("shuffled_accuracy"), s.mean("majority_rate"),
                  s.mean("train_accuracy")] for i, s in enumerate(self.layers)]
        best = self.layer_numbers.index(v.layer) if v.layer is not None else None
        title = f"probe · {self.model_id}"
        if ds is not None:
            title += f" · {ds.path} ({self.n_examples} examples, split by {ds.split})"
        return Headline(
            title=f"Linear probe · {self.model_id}", rows=rows, verdict=v.text,
            columns=["layer", "test acc", "± std", "AUROC", "control", "ctrl task", "select.",
                     "shuffled", "majority", "train"],
            table=table, emphasis=best, table_title=title)

    def figure(self) -> Figure | None:
        """:func:`~interp.probing.figures.accuracy_figure`: held-out accuracy by layer with its
        baselines (None: no layers)."""
        from interp.probing.figures import accuracy_figure

        return accuracy_figure(self) if self.layers else None


# ----------------------------------------------------------------------- ablation
@dataclass
class AblationEffect:
    """The measured effect of removing one direction."""

    kl: float
    logit_diff_change: float | None
    logit_diff_removed_fraction: float | None
    later_probe_accuracy: float | None
    variance: float


@dataclass
class DirectionReport:
    """One tested direction's effect against its variance-matched random directions."""

    name: str
    effect: AblationEffect
    random: list[AblationEffect]
    kl_percentile: float
    kl_z: float
    logit_diff_percentile: float | None
    logit_diff_z: float | None

    def to_dict(self) -> dict[str, Any]:
        """The direction's effects, its random directions' values, and its percentiles and z-scores
        among them (``percentile`` repeats ``kl_percentile``)."""
        rnd = self.random
        return {
            "kl": self.effect.kl,
            "logit_diff_change": self.effect.logit_diff_change,
            "logit_diff_removed_fraction": self.effect.logit_diff_removed_fraction,
            "later_probe_accuracy": self.effect.later_probe_accuracy,
            "variance": self.effect.variance,
            "random": {
                "kl": [r.kl for r in rnd],
                "logit_diff_change": [r.logit_diff_change for r in rnd],
                "later_probe_accuracy": [r.later_probe_accuracy for r in rnd],
                "variance": [r.variance for r in rnd],
            },
            "percentile": self.kl_percentile,
            "kl_percentile": self.kl_percentile,
            "kl_z": self.kl_z,
            "logit_diff_percentile": self.logit_diff_percentile,
            "logit_diff_z": self.logit_diff_z,
        }


@dataclass
class AblationResult(Result):
    """Clean reference numbers and every tested direction."""

    layer: int
    later_layer: int
    n_examples: int
    clean_logit_diff: float | None
    clean_later_probe_accuracy: float | None
    #: Each tested direction; ``results.json`` has one key per direction.
    directions: dict[str, DirectionReport] = json_field(skip=True, default_factory=dict)

    warnings_always: ClassVar[bool] = False

    def extra_data(self) -> dict[str, Any]:
        """One key per tested direction: :meth:`DirectionReport.to_dict`."""
        return {name: d.to_dict() for name, d in self.directions.items()}

    def to_frame(self) -> pd.DataFrame:
        """One row per tested direction: its effects, and the random directions' means."""
        import pandas as pd

        return pd.DataFrame([_direction_row(name, d) for name, d in self.directions.items()])

    def headline(self) -> Headline:
        """The layer, the example count and the clean baselines, then one row per direction: KL with
        its percentile and z among the random directions, the logit-gap change, the later probe's
        accuracy and the random directions' mean KL."""
        cols = ["direction", "kl", "kl_percentile", "kl_z", "logit_diff_change",
                "later_probe_accuracy", "random_kl_mean"]
        rows: list[tuple[str, object]] = [
            ("layer", self.layer), ("examples", self.n_examples),
            ("clean logit-gap separation", self.clean_logit_diff),
            (f"clean probe accuracy at layer {self.later_layer}",
             self.clean_later_probe_accuracy),
        ]
        table = [[r[c] for c in cols] for r in
                 (_direction_row(n, d) for n, d in self.directions.items())]
        return Headline(f"Directional ablation at layer {self.layer}", rows=rows,
                        columns=cols, table=table)

    def figure(self) -> Figure | None:
        """:func:`~interp.probing.figures.ablation_figure` of the first tested direction (None: none
        tested)."""
        from interp.probing.figures import ablation_figure

        first = next(iter(self.directions), None)
        return ablation_figure(self, first) if first is not None else None


def _direction_row(name: str, d: DirectionReport) -> dict[str, Any]:
    def mean(values: Sequence[float | None]) -> float:
        vals = [v for v in values if v is not None and not math.isnan(v)]
        return float(np.mean(vals)) if vals else math.nan

    e = d.effect
    return {
        "direction": name, "kl": e.kl, "kl_percentile": d.kl_percentile, "kl_z": d.kl_z,
        "logit_diff_change": e.logit_diff_change,
        "logit_diff_removed_fraction": e.logit_diff_removed_fraction,
        "logit_diff_percentile": d.logit_diff_percentile, "logit_diff_z": d.logit_diff_z,
        "later_probe_accuracy": e.later_probe_accuracy, "variance": e.variance,
        "random_n": len(d.random), "random_kl_mean": mean([r.kl for r in d.random]),
        "random_logit_diff_change_mean": mean([r.logit_diff_change for r in d.random]),
        "random_later_probe_accuracy_mean": mean([r.later_probe_accuracy for r in d.random]),
    }


__all__ = [
    "CONTROLS", "METRICS", "MIN_MARGIN", "SIGMAS", "AblationConfig", "AblationEffect",
    "AblationResult",
    "DatasetSummary", "DirectionReport", "LayerStats", "ProbeConfig", "ProbePosition",
    "ProbeResult", "Verdict",
]
