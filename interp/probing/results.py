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
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

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
@dataclass
class ProbeConfig:
    """Settings of one probe run (recorded in ``results.json`` and artifacts).

    ``layers`` is a list, an int or ``"all"``; a result's config holds the resolved
    list. ``dataset``, ``dataset_hash`` and ``split`` are filled in by ``run_probe``.
    ``solver`` fits the probes: ``"torch"`` (batched, :mod:`interp.probing.logistic`)
    or ``"sklearn"`` (one scikit-learn fit per probe, the reference). ``seed`` keys every
    random choice: the ``seeds`` train/test splits (seed ``1000·seed + s`` for split
    ``s``, so ``seed=0`` gives splits 0…seeds−1), their label shuffles, the control
    task's labels and the random-weights model.
    """

    layers: Sequence[int] | str | int = "all"
    position: ProbePosition = "last"
    seeds: int = 5
    test_size: float = 0.25
    C: float = 0.1
    batch_size: int = 16
    random_weights: bool = True
    dataset: str = ""
    dataset_hash: str = ""
    split: str = "group"
    solver: ProbeSolver = "torch"
    seed: int = 0


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
        v = [x for x in self.values[key] if not math.isnan(x)]
        return float(np.mean(v)) if v else math.nan

    def std(self, key: str) -> float:
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
    return f"{x:.3f}"


def _signed(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "") + _num(abs(x))


@dataclass
class ProbeResult:
    """A probe sweep: per-layer stats over seeds, the final probes' weights, and
    optionally the ablation check of the best layer's direction."""

    config: ProbeConfig
    model_id: str
    n_examples: int
    n_train: int
    n_test: int
    layers: list[LayerStats]
    directions: dict[int, np.ndarray] = field(repr=False, default_factory=dict)
    biases: dict[int, float] = field(repr=False, default_factory=dict)
    scaler_mean: dict[int, np.ndarray] = field(repr=False, default_factory=dict)
    scaler_scale: dict[int, np.ndarray] = field(repr=False, default_factory=dict)
    mean_differences: dict[int, np.ndarray] = field(repr=False, default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    dataset: DatasetSummary | None = None
    ablation: AblationResult | None = None

    # -------------------------------------------------------------- per layer
    @property
    def layer_numbers(self) -> list[int]:
        return [s.layer for s in self.layers]

    def best_layer(self) -> int:
        return max(self.layers, key=lambda s: s.mean("test_accuracy")).layer

    def stats(self, layer: int) -> LayerStats:
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
            text = (f"Layer {layer} does not clearly beat its controls: margin {_signed(margin)} "
                    f"over the best control ({ctrl}), {spread}; a clear win needs ≥ "
                    f"{MIN_MARGIN:g} and > {SIGMAS:g} seed-std.")
        return Verdict(layer, test, std, control, name, margin, sigmas, clear, text)

    # ---------------------------------------------------------------- exports
    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` schema: lists per layer, in ``layers`` order."""
        out: dict[str, Any] = {
            "model": self.model_id,
            "config": asdict(self.config),
            "n_examples": self.n_examples,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "layers": self.layer_numbers,
            "best_layer": self.best_layer(),
            "warnings": self.warnings,
        }
        for key in METRICS:
            out[f"{key}_mean"] = self.means(key)
            out[f"{key}_std"] = self.stds(key)
        out["control_accuracy_mean"] = self.control_accuracy()
        out["selectivity"] = self.selectivity()
        out["selectivity_ci95"] = [list(ci) for ci in self.selectivity_ci()]
        out["per_seed"] = {str(s.layer): s.values for s in self.layers}
        if self.dataset is not None:
            out["dataset"] = asdict(self.dataset)
        if self.ablation is not None:
            out["ablation"] = self.ablation.to_dict()
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: every metric's mean and std, control accuracy, selectivity."""
        import pandas as pd

        d = self.to_dict()
        cols = [k for k in d if k.endswith("_mean") or k.endswith("_std") or k == "selectivity"]
        return pd.DataFrame({"layer": d["layers"], **{k: d[k] for k in cols}})

    def _repr_html_(self) -> str:
        from interp.display import result_html
        from interp.probing.figures import accuracy_figure

        v = self.verdict()
        rows: list[tuple[str, object]] = [("model", self.model_id)]
        if self.dataset is not None:
            rows.append(("dataset", f"{self.dataset.path} ({self.dataset.n} examples, "
                                    f"split by {self.dataset.split})"))
        rows += [("best layer", v.layer), ("held-out accuracy", f"{_num(v.test)} ± {_num(v.std)}"),
                 ("best control", f"{v.control_name}, {_num(v.control)}"), ("verdict", v.text)]
        if self.ablation is not None:
            for name, d in self.ablation.directions.items():
                rows.append((f"ablating {name}: KL percentile / z",
                             f"{d.kl_percentile:.0f} / {d.kl_z:.1f}"))
        sel, ctrl = self.selectivity(), self.control_accuracy()
        table = [[s.layer, s.mean("test_accuracy"), s.std("test_accuracy"), ctrl[i],
                  s.mean("control_task_accuracy"), sel[i]] for i, s in enumerate(self.layers)]
        cols = ["layer", "test acc", "± std", "best control", "control task", "selectivity"]
        return result_html(f"Linear probe · {self.model_id}", rows,
                           accuracy_figure(self) if self.layers else None,
                           columns=cols, table=table)


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
class AblationResult:
    """Clean reference numbers and every tested direction."""

    layer: int
    later_layer: int
    n_examples: int
    clean_logit_diff: float | None
    clean_later_probe_accuracy: float | None
    directions: dict[str, DirectionReport] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "later_layer": self.later_layer,
            "n_examples": self.n_examples,
            "clean_logit_diff": self.clean_logit_diff,
            "clean_later_probe_accuracy": self.clean_later_probe_accuracy,
            **{name: d.to_dict() for name, d in self.directions.items()},
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per tested direction: its effects, and the random directions' means."""
        import pandas as pd

        def mean(values: Sequence[float | None]) -> float:
            vals = [v for v in values if v is not None and not math.isnan(v)]
            return float(np.mean(vals)) if vals else math.nan

        rows = []
        for name, d in self.directions.items():
            e = d.effect
            rows.append({
                "direction": name, "kl": e.kl, "kl_percentile": d.kl_percentile, "kl_z": d.kl_z,
                "logit_diff_change": e.logit_diff_change,
                "logit_diff_removed_fraction": e.logit_diff_removed_fraction,
                "logit_diff_percentile": d.logit_diff_percentile, "logit_diff_z": d.logit_diff_z,
                "later_probe_accuracy": e.later_probe_accuracy, "variance": e.variance,
                "random_n": len(d.random), "random_kl_mean": mean([r.kl for r in d.random]),
                "random_logit_diff_change_mean": mean([r.logit_diff_change for r in d.random]),
                "random_later_probe_accuracy_mean":
                    mean([r.later_probe_accuracy for r in d.random]),
            })
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        from interp.display import result_html
        from interp.probing.figures import ablation_figure

        rows: list[tuple[str, object]] = [
            ("layer", self.layer), ("examples", self.n_examples),
            ("clean logit-gap separation", self.clean_logit_diff),
            (f"clean probe accuracy at layer {self.later_layer}",
             self.clean_later_probe_accuracy),
        ]
        frame = self.to_frame()
        cols = ["direction", "kl", "kl_percentile", "kl_z", "logit_diff_change",
                "later_probe_accuracy", "random_kl_mean"]
        table = frame[cols].values.tolist() if len(frame) else []
        first = next(iter(self.directions), None)
        fig = ablation_figure(self, first) if first is not None else None
        return result_html(f"Directional ablation at layer {self.layer}", rows, fig,
                           columns=cols, table=table)


__all__ = [
    "CONTROLS", "METRICS", "MIN_MARGIN", "SIGMAS", "AblationEffect", "AblationResult",
    "DatasetSummary", "DirectionReport", "LayerStats", "ProbeConfig", "ProbePosition",
    "ProbeResult", "Verdict",
]
