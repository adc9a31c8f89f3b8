"""The typed results of the saes package, as plain data: evaluation, feature browser, training.

What the tools return is built on these records:

* :class:`EvalRecord` (returned as :class:`saes.metrics.SAEEvalResult` by
  :func:`saes.metrics.evaluate_sae`): reconstruction, sparsity, densities and the SAE spliced
  into the model; :meth:`EvalRecord.to_dict` is ``interp sae eval``'s ``results.json``;
* :class:`BrowserRecord` (returned as :class:`saes.browser.BrowserData` by
  :func:`saes.browser.collect_browser_data`): densities and one :class:`FeatureCard` per
  selected feature; :meth:`BrowserRecord.to_dict` is ``interp sae browse``'s ``features.json``;
* :class:`TrainingRecord`: a training run's settings, per-step history and resampling events
  (as saved with the SAE, and as :func:`saes.train.train_sae` reports them).

This module holds data and its conversions only (JSON, pandas, back from JSON); it draws
nothing. :mod:`saes.figures` draws these records, and the subclasses the tools return add the
notebook view (``_repr_html_``), which needs the figures. ``from_dict`` reads a results file
back, tolerantly: a missing or malformed number becomes NaN (shown as "—" by the reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self

import numpy as np
import pandas as pd

from interp.display import MISSING, as_float, format_number
from interp.errors import InterpError
from interp.stats.intervals import wilson

__all__ = [
    "CI",
    "DEFAULT_TARGETS",
    "DENSITY_BINS",
    "MISSING",
    "BrowserConfig",
    "BrowserRecord",
    "DensityHistogram",
    "EvalConfig",
    "EvalRecord",
    "FeatureCard",
    "FeatureContext",
    "TargetCheck",
    "TrainingRecord",
    "format_count",
    "format_metric",
    "format_percent",
    "format_with_ci",
    "parse_feature_spec",
]

#: A 95% interval (lo, hi); (NaN, NaN) when unknown.
CI = tuple[float, float]
NAN = math.nan
#: log10(density) histogram edges shared by the evaluation and the browser: 10⁻⁷ … 1.
DENSITY_BINS: tuple[float, ...] = tuple(-7.0 + 0.25 * i for i in range(29))
#: The metrics given as fractions (shown as percentages).
FRACTIONS = frozenset({"dead_fraction", "dense_fraction"})
#: The targets ``interp sae eval`` judges an SAE by (see :class:`TargetCheck`).
DEFAULT_TARGETS: dict[str, float] = {"explained_variance": 0.7, "l0_max": 100,
                                     "dead_fraction_max": 0.3, "ce_loss_score": 0.8}
#: Known target keys: key -> (metric, comparison, label). Other keys follow the suffix
#: rule: ``<metric>_max`` is "≤", ``<metric>_min`` and a bare ``<metric>`` are "≥".
TARGET_RULES: dict[str, tuple[str, str, str]] = {
    "explained_variance": ("explained_variance", ">=", "explained variance"),
    "l0_max": ("l0", "<=", "L0"),
    "dead_fraction_max": ("dead_fraction", "<=", "dead features"),
    "ce_loss_score": ("ce_loss_score", ">=", "CE-loss score"),
}


# ----------------------------------------------------------------- tolerant reading


_num = as_float  # None, bools and non-numbers become NaN


def _int(value: Any) -> int | None:
    x = _num(value)
    return int(x) if math.isfinite(x) else None


def _ci(value: Any) -> CI:
    """A (lo, hi) pair of floats; anything else is (NaN, NaN)."""
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return (_num(value[0]), _num(value[1]))
    return (NAN, NAN)


def _floats(value: Any) -> list[float]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [_num(v) for v in value]


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _mapping(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


def _json(value: Any) -> Any:
    """Tuples (CIs) as lists, for ``to_dict``."""
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value


def ci_known(ci: CI) -> bool:
    return math.isfinite(ci[0]) and math.isfinite(ci[1])


# -------------------------------------------------------------------- display formats


def _fixed(x: float, digits: int) -> str:
    """A finite number to ``digits`` decimals (scientific when tiny or huge)."""
    return format_number(float(x), digits)


def format_percent(value: float | None) -> str:
    """A fraction as a percentage to 3 significant digits (``0.0625`` → ``6.25%``)."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{100 * value:.3g}%"


def format_count(value: float | None) -> str:
    """A whole number with thousands separators (``123456`` → ``123,456``)."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{round(value):,}" if float(value).is_integer() else _fixed(value, 3)


def format_metric(metric: str, value: float | None) -> str:
    """A metric in its display format: fractions as %, L0 to 0.1, MSE to 4 decimals."""
    if value is None or not math.isfinite(value):
        return MISSING
    if metric in FRACTIONS:
        return format_percent(value)
    return _fixed(value, {"l0": 1, "mse": 4}.get(metric, 3))


def format_with_ci(metric: str, value: float, ci: CI) -> str:
    """``"23.5 [22.9, 24.0]"``: the value, and its CI when both are known."""
    text = format_metric(metric, value)
    if math.isfinite(value) and ci_known(ci):
        lo, hi = min(ci), max(ci)
        text += f" [{format_metric(metric, lo)}, {format_metric(metric, hi)}]"
    return text


# ----------------------------------------------------------------------- densities


@dataclass
class DensityHistogram:
    """Alive features per ``log10(density)`` bin (clipped to the edges); dead ones apart."""

    edges: list[float]
    counts: list[int]
    n_dead: int

    @classmethod
    def of(cls, densities: Sequence[float] | np.ndarray,
           edges: Sequence[float] = DENSITY_BINS) -> DensityHistogram:
        """The histogram of per-feature densities (non-finite ones left out)."""
        d = np.asarray(densities, dtype=np.float64)
        d = d[np.isfinite(d)]
        alive = d[d > 0]
        e = np.asarray(edges, dtype=np.float64)
        counts, _ = np.histogram(np.clip(np.log10(alive), e[0], e[-1]), bins=e)
        return cls([float(x) for x in e], [int(c) for c in counts], int((d <= 0).sum()))

    @property
    def valid(self) -> bool:
        e = self.edges
        return (len(e) >= 2 and len(self.counts) == len(e) - 1 and all(map(math.isfinite, e))
                and all(b > a for a, b in zip(e[:-1], e[1:], strict=False)))

    @property
    def total(self) -> int:
        """Every feature counted: the alive ones in the bins and the dead ones."""
        return sum(self.counts) + self.n_dead

    def to_dict(self, with_dead: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"edges": list(self.edges), "counts": list(self.counts)}
        if with_dead:
            out["n_dead"] = self.n_dead
        return out


# ------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class TargetCheck:
    """One target (``results.json``'s ``targets``) judged on a metric's point estimate."""

    key: str
    metric: str
    label: str
    op: str  # ">=" or "<="
    target: float
    value: float

    @property
    def passed(self) -> bool | None:
        """True/False, or None when the value or the target is unknown."""
        if not (math.isfinite(self.value) and math.isfinite(self.target)):
            return None
        return self.value >= self.target if self.op == ">=" else self.value <= self.target

    @property
    def target_text(self) -> str:
        """``"≥ 0.7"``, ``"≤ 30%"``."""
        if not math.isfinite(self.target):
            shown = MISSING
        elif self.metric in FRACTIONS:
            shown = format_percent(self.target)
        else:
            shown = f"{self.target:g}"
        return f"{'≥' if self.op == '>=' else '≤'} {shown}"


def _rule(key: str) -> tuple[str, str, str]:
    if key in TARGET_RULES:
        return TARGET_RULES[key]
    if key.endswith("_max"):
        return key[:-4], "<=", key[:-4].replace("_", " ")
    if key.endswith("_min"):
        return key[:-4], ">=", key[:-4].replace("_", " ")
    return key, ">=", key.replace("_", " ")


# ------------------------------------------------------------------------ training


TRAINING_KEYS = ("train", "history", "resampled", "elapsed_s", "tokens_per_s", "mfu",
                 "peak_flops", "calibration")


@dataclass
class TrainingRecord:
    """A training run as saved with the SAE: settings, per-step history, resampling events.

    ``history`` maps a quantity (``loss``, ``mse``, ``l1``, ``l0``, ``dead_fraction``,
    ``explained_variance``, ``lr``, ``sparsity_coef``) to one value per step; ``resampled`` lists
    ``[step, n_features]`` events. Any part may be missing (an SAE trained elsewhere).
    """

    train: dict[str, Any] | None = None
    history: dict[str, list[float]] | None = None
    resampled: list[list[int]] | None = None
    elapsed_s: float | None = None
    tokens_per_s: float | None = None
    mfu: float | None = None  # model FLOPs utilisation of the run (interp.mfu)
    peak_flops: float | None = None
    #: inference state set from the final weights when training ended (BatchTopK: the
    #: ``threshold``, the ``threshold_moving_average`` it replaced, ``tokens`` used)
    calibration: dict[str, float] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainingRecord:
        """From an SAE's saved config (or ``results.json``'s ``training``)."""
        hist = d.get("history")
        res = d.get("resampled")
        return cls(
            train=_mapping(d.get("train")),
            history=({str(k): v for k, v in hist.items()} if isinstance(hist, Mapping)
                     else None),
            resampled=list(res) if isinstance(res, list) else None,
            elapsed_s=d.get("elapsed_s"), tokens_per_s=d.get("tokens_per_s"),
            mfu=d.get("mfu"), peak_flops=d.get("peak_flops"),
            calibration=(dict(d["calibration"]) if isinstance(d.get("calibration"), Mapping)
                         else None),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in TRAINING_KEYS}
        for k in ("mfu", "peak_flops", "calibration"):  # absent: older records, no calibration
            if out[k] is None:
                del out[k]
        return out

    @property
    def is_empty(self) -> bool:
        """No history and no settings: nothing to show."""
        return not self.history and not self.train

    def curve(self, key: str) -> list[float]:
        """One history quantity as floats (NaN for a missing value)."""
        return _floats((self.history or {}).get(key))

    @property
    def events(self) -> list[tuple[float, float]]:
        """The resampling events as (step, features) pairs of floats."""
        out = []
        for ev in self.resampled or []:
            if isinstance(ev, Sequence) and not isinstance(ev, str) and len(ev) >= 2:
                out.append((_num(ev[0]), _num(ev[1])))
        return out

    @property
    def n_steps(self) -> int:
        return max((len(v) for v in (self.history or {}).values()
                    if isinstance(v, Sequence)), default=0)

    def to_frame(self) -> pd.DataFrame:
        """One row per step (``step`` from 1), one column per history quantity."""
        cols = {k: self.curve(k) for k in (self.history or {})}
        n = self.n_steps
        frame = pd.DataFrame({k: v + [NAN] * (n - len(v)) for k, v in cols.items()})
        frame.insert(0, "step", range(1, n + 1))
        return frame


# ----------------------------------------------------------------------- evaluation


@dataclass
class EvalConfig:
    """How much held-out text :func:`saes.metrics.evaluate_sae` uses and how it cuts it."""

    tokens: int = 102_400
    ce_tokens: int | None = None
    seq_len: int = 128
    batch_size: int = 8
    seed: int = 0
    dense_threshold: float = 0.1
    n_bootstrap: int = 1000
    #: read/write the zero- and mean-ablation passes in ``$INTERP_CACHE`` (saes.baselines)
    cache_baselines: bool = True

    def __post_init__(self) -> None:
        if self.ce_tokens is None:
            self.ce_tokens = self.tokens
        if self.seq_len < 3:
            raise InterpError(f"sequence length must be ≥ 3, got {self.seq_len}")
        if self.tokens < 1 or self.ce_tokens < 0:
            raise InterpError(f"--tokens must be ≥ 1, got {self.tokens}")
        if self.batch_size < 1:
            raise InterpError(f"batch size must be ≥ 1, got {self.batch_size}")
        if not (math.isfinite(self.dense_threshold) and 0 < self.dense_threshold < 1):
            raise InterpError(f"dense threshold must be in (0, 1), got {self.dense_threshold}")

    @property
    def n_windows(self) -> int:
        return max(1, math.ceil(self.tokens / (self.seq_len - 1)))

    @property
    def n_ce_windows(self) -> int:
        assert self.ce_tokens is not None
        return 0 if self.ce_tokens == 0 else max(1, math.ceil(self.ce_tokens / (self.seq_len - 2)))


#: The spliced-CE fields of :class:`EvalRecord` (absent from ``results.json`` with
#: ``--ce-tokens 0``).
SPLICE_FIELDS = ("n_ce_tokens", "ce_clean", "ce_sae", "ce_zero_ablation", "ce_mean_ablation",
                 "ce_loss_score", "ce_loss_score_ci95", "ce_loss_score_mean_ablation",
                 "ce_loss_score_mean_ablation_ci95", "delta_ce", "delta_ce_ci95", "kl_sae",
                 "kl_sae_ci95", "kl_zero_ablation", "kl_mean_ablation", "baselines_cached")
#: Provenance the CLI adds; each is left out of ``to_dict`` while None.
EXTRA_FIELDS = ("sae_path", "data", "targets", "training", "manifest")


@dataclass
class EvalRecord:
    """The metrics of :mod:`saes.metrics` on held-out text (every field a ``results.json`` key).

    Reconstruction and sparsity over ``n_tokens`` tokens; the SAE spliced into the model over
    ``n_ce_tokens`` (None, and NaN metrics, when not measured). Each ``*_ci95`` is a 95%
    bootstrap interval over windows. ``sae_path``, ``data``, ``targets``, ``training`` and
    ``manifest`` are provenance that ``interp sae eval`` adds.
    """

    model: str | None = None
    hook_point: str | None = None
    layer: int | None = None
    d_in: int | None = None
    d_sae: int | None = None
    architecture: str | None = None
    k: int | None = None
    eval: EvalConfig | None = None
    n_tokens: int | None = None
    l0: float = NAN
    l0_ci95: CI = (NAN, NAN)
    l0_std: float = NAN
    explained_variance: float = NAN
    explained_variance_ci95: CI = (NAN, NAN)
    mse: float = NAN
    mse_ci95: CI = (NAN, NAN)
    cosine_similarity: float = NAN
    cosine_similarity_ci95: CI = (NAN, NAN)
    feature_density: list[float] = field(default_factory=list)
    dead_fraction: float = NAN
    dead_fraction_n: int | None = None
    dense_fraction: float = NAN
    dense_threshold: float = NAN
    density_histogram: DensityHistogram = field(
        default_factory=lambda: DensityHistogram(list(DENSITY_BINS), [0] * 28, 0))
    n_ce_tokens: int | None = None
    ce_clean: float = NAN
    ce_sae: float = NAN
    ce_zero_ablation: float = NAN
    ce_mean_ablation: float = NAN
    ce_loss_score: float = NAN
    ce_loss_score_ci95: CI = (NAN, NAN)
    ce_loss_score_mean_ablation: float = NAN
    ce_loss_score_mean_ablation_ci95: CI = (NAN, NAN)
    delta_ce: float = NAN
    delta_ce_ci95: CI = (NAN, NAN)
    kl_sae: float = NAN
    kl_sae_ci95: CI = (NAN, NAN)
    kl_zero_ablation: float = NAN
    kl_mean_ablation: float = NAN
    #: zero/mean ablation read from $INTERP_CACHE (saes.baselines), not recomputed
    baselines_cached: bool | None = None
    sae_path: str | None = None
    data: dict[str, Any] | None = None
    targets: dict[str, float] | None = None
    training: TrainingRecord | None = None
    manifest: dict[str, Any] | None = None

    # ------------------------------------------------------------- conversions

    def to_dict(self) -> dict[str, Any]:
        """Exactly ``results.json`` (NaN stays NaN: the CLI writes it through ``json_safe``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in SPLICE_FIELDS and self.n_ce_tokens is None:
                continue
            if f.name in ("architecture", "k", "baselines_cached") and value is None:
                continue  # records made before these fields round-trip unchanged
            if f.name in EXTRA_FIELDS or f.name == "eval":
                if value is None:
                    continue
                value = value.to_dict() if isinstance(value, TrainingRecord) else value
                value = asdict(value) if isinstance(value, EvalConfig) else value
            elif isinstance(value, DensityHistogram):
                value = value.to_dict()
            out[f.name] = _json(value)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """A ``results.json`` read back; missing or malformed numbers become NaN."""
        if not isinstance(d, Mapping):
            raise InterpError(f"SAE results must be a dict, not {type(d).__name__}")
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            v = d[f.name]
            if f.name in ("model", "hook_point", "sae_path", "architecture"):
                kw[f.name] = _str(v)
            elif f.name in ("layer", "d_in", "d_sae", "k", "n_tokens", "dead_fraction_n",
                            "n_ce_tokens"):
                kw[f.name] = _int(v)
            elif f.name.endswith("_ci95"):
                kw[f.name] = _ci(v)
            elif f.name == "feature_density":
                kw[f.name] = _floats(v)
            elif f.name == "eval":
                try:
                    kw[f.name] = EvalConfig(**v) if isinstance(v, Mapping) else None
                except (TypeError, InterpError):
                    kw[f.name] = None
            elif f.name == "training":
                kw[f.name] = TrainingRecord.from_dict(v) if isinstance(v, Mapping) else None
            elif f.name in ("data", "manifest", "targets"):
                kw[f.name] = _mapping(v)
            elif f.name == "baselines_cached":
                kw[f.name] = v if isinstance(v, bool) else None
            elif f.name != "density_histogram":
                kw[f.name] = _num(v)
        if "n_ce_tokens" not in kw and any(k in d for k in SPLICE_FIELDS):
            kw["n_ce_tokens"] = None  # splice metrics without a count: shown, not counted
        rec = cls(**kw)
        rec.density_histogram = _histogram(d.get("density_histogram"), rec)
        return rec

    # ------------------------------------------------------------------ derived

    @property
    def architecture_text(self) -> str:
        """``"TopK (k 32)"``, ``"ReLU"``: what the report names the SAE (ReLU when a
        record predates the architectures)."""
        names = {"relu": "ReLU", "topk": "TopK", "batchtopk": "BatchTopK",
                 "jumprelu": "JumpReLU"}
        arch = self.architecture or "relu"
        text = names.get(arch, arch)
        return f"{text} (k {self.k})" if self.k is not None else text

    @property
    def has_splice(self) -> bool:
        """Whether any spliced-CE metric is known."""
        return self.n_ce_tokens is not None or any(
            math.isfinite(getattr(self, k)) for k in ("ce_clean", "ce_sae", "ce_loss_score"))

    @property
    def n_dead(self) -> float:
        """Dead features (NaN when unknown)."""
        n = self.dead_fraction_n if self.dead_fraction_n is not None else self.d_sae
        return self.dead_fraction * n if n is not None else NAN

    @property
    def histogram(self) -> DensityHistogram:
        return self.density_histogram

    def value(self, metric: str) -> float:
        """A metric by name as a float (NaN when unknown or not a number)."""
        v = getattr(self, metric, None)
        return _num(v) if isinstance(v, int | float) else NAN

    def checks(self) -> list[TargetCheck]:
        """The targets judged on the point estimates, in the order of ``targets``."""
        out = []
        for key, target in (self.targets or {}).items():
            metric, op, label = _rule(str(key))
            out.append(TargetCheck(str(key), metric, label, op, _num(target), self.value(metric)))
        return out

    def check(self, metric: str) -> TargetCheck | None:
        """The first target on ``metric``, if any."""
        return next((c for c in self.checks() if c.metric == metric), None)

    def to_frame(self) -> pd.DataFrame:
        """One row per headline metric: value, 95% CI and the tokens it is measured on."""
        rows = []
        for metric in ("l0", "explained_variance", "mse", "cosine_similarity", "dead_fraction",
                       "dense_fraction", "ce_clean", "ce_sae", "ce_mean_ablation",
                       "ce_zero_ablation", "ce_loss_score", "ce_loss_score_mean_ablation",
                       "delta_ce", "kl_sae", "kl_mean_ablation", "kl_zero_ablation"):
            if metric in SPLICE_FIELDS and not self.has_splice:
                continue
            lo, hi = getattr(self, f"{metric}_ci95", (NAN, NAN))
            n = self.n_ce_tokens if metric in SPLICE_FIELDS else self.n_tokens
            rows.append({"metric": metric, "value": self.value(metric), "ci95_lo": lo,
                         "ci95_hi": hi, "n_tokens": n})
        return pd.DataFrame(rows, columns=["metric", "value", "ci95_lo", "ci95_hi", "n_tokens"])


def _histogram(value: Any, rec: EvalRecord) -> DensityHistogram:
    """``density_histogram`` as given when it is well formed, else rebuilt from the densities."""
    h = value if isinstance(value, Mapping) else {}
    dens = [v for v in rec.feature_density if math.isfinite(v)]
    n_dead = _int(h.get("n_dead"))
    if n_dead is None:
        n_dead = (sum(1 for v in dens if v <= 0) if dens else
                  round(rec.n_dead) if math.isfinite(rec.n_dead) else 0)
    counts = _floats(h.get("counts"))
    given = DensityHistogram(_floats(h.get("edges")),
                             [int(c) if math.isfinite(c) else 0 for c in counts], n_dead)
    if given.valid:
        return given
    rebuilt = DensityHistogram.of(dens)
    rebuilt.n_dead = n_dead
    return rebuilt


# ---------------------------------------------------------------------- the browser


def _pos_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InterpError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return value


def parse_feature_spec(spec: str) -> tuple[str, int | list[int] | None]:
    """Parse ``cfg.features``: ``"all"`` → ``("all", None)``, ``"alive:N"`` → ``("alive", N)``,
    ``"3,17"`` → ``("list", [3, 17])``.

    Duplicates in a list are dropped (first occurrence kept). Raises :class:`InterpError`.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InterpError(
            f"features must be 'all', 'alive:N' or a comma list of indices, got {spec!r}"
        )
    s = spec.strip().lower()
    if s == "all":
        return "all", None
    if s.startswith("alive:"):
        n = s.split(":", 1)[1].strip()
        if not n.isdigit() or int(n) < 1:
            raise InterpError(f"features 'alive:N' needs a positive integer N, got {spec!r}")
        return "alive", int(n)
    out: list[int] = []
    for part in s.split(","):
        part = part.strip()
        if not part.isdigit():
            raise InterpError(
                f"features must be 'all', 'alive:N' or a comma list of indices like '3,17,99'; "
                f"{part!r} in {spec!r} is not a non-negative integer"
            )
        if int(part) not in out:
            out.append(int(part))
    return "list", out


@dataclass
class BrowserConfig:
    """How much held-out text the browser scans and what it shows per feature."""

    tokens: int = 65536
    seq_len: int = 128
    batch_size: int = 8
    top_k: int = 12
    context: int = 12
    n_logits: int = 10
    features: str = "alive:300"
    seed: int = 0

    def __post_init__(self) -> None:
        _pos_int("tokens", self.tokens)
        _pos_int("sequence length", self.seq_len, 2)
        _pos_int("batch size", self.batch_size)
        _pos_int("top_k (contexts per feature)", self.top_k)
        _pos_int("context (tokens left of the activating one)", self.context, 0)
        _pos_int("n_logits (promoted/suppressed tokens)", self.n_logits)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InterpError(f"seed must be an integer, got {self.seed!r}")
        parse_feature_spec(self.features)

    @property
    def n_windows(self) -> int:
        """Windows scanned: ``ceil(tokens / seq_len)``."""
        return math.ceil(self.tokens / self.seq_len)


@dataclass
class FeatureContext:
    """One top activation: the tokens of window ``window`` around ``position``.

    ``tokens[j]`` and ``acts[j]`` are the token text and the feature's activation at
    position ``position - max_at + j``; ``tokens[max_at]`` is the activating token.
    """

    tokens: list[str]
    acts: list[float]
    max_at: int
    window: int
    position: int

    @property
    def peak(self) -> float:
        """The activation on the activating token."""
        return self.acts[self.max_at] if 0 <= self.max_at < len(self.acts) else NAN


@dataclass
class FeatureCard:
    """Everything the browser shows for one feature."""

    index: int
    density: float
    n_fires: int
    max_act: float
    dec_norm: float
    contexts: list[FeatureContext]
    promoted: list[tuple[str, float]]
    suppressed: list[tuple[str, float]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "density": self.density, "n_fires": self.n_fires,
            "max_act": self.max_act, "dec_norm": self.dec_norm,
            "contexts": [asdict(c) for c in self.contexts],
            "promoted": [[t, v] for t, v in self.promoted],
            "suppressed": [[t, v] for t, v in self.suppressed],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeatureCard:
        def pairs(v: Any) -> list[tuple[str, float]]:
            return [(str(p[0]), _num(p[1])) for p in v or []
                    if isinstance(p, Sequence) and not isinstance(p, str) and len(p) == 2]

        return cls(
            index=int(d["index"]), density=_num(d.get("density")),
            n_fires=_int(d.get("n_fires")) or 0, max_act=_num(d.get("max_act")),
            dec_norm=_num(d.get("dec_norm")),
            contexts=[FeatureContext(tokens=[str(t) for t in c.get("tokens") or []],
                                     acts=_floats(c.get("acts")), max_at=int(c.get("max_at", 0)),
                                     window=int(c.get("window", 0)),
                                     position=int(c.get("position", 0)))
                      for c in d.get("contexts") or []],
            promoted=pairs(d.get("promoted")), suppressed=pairs(d.get("suppressed")),
        )


@dataclass
class BrowserRecord:
    """The feature browser's data; :meth:`to_dict` is ``features.json`` (JSON-safe)."""

    model_id: str
    hook_point: str
    layer: int | None
    d_sae: int
    n_windows: int
    seq_len: int
    n_tokens: int
    fires: list[int]
    features: list[FeatureCard]
    config: BrowserConfig
    selected: list[int] = field(default_factory=list)
    sae_path: str | None = None
    data: dict[str, Any] | None = None

    @property
    def densities(self) -> list[float]:
        """Per feature (all ``d_sae``): fraction of scanned tokens it fires on."""
        return [k / self.n_tokens for k in self.fires]

    @property
    def n_dead(self) -> int:
        return sum(1 for k in self.fires if k == 0)

    @property
    def dead_fraction(self) -> float:
        return self.n_dead / self.d_sae

    @property
    def dead_fraction_ci95(self) -> CI:
        return wilson(self.n_dead, self.d_sae)

    @property
    def histogram(self) -> DensityHistogram:
        """Alive features per ``log10(density)`` bin, and the dead ones."""
        return DensityHistogram.of(self.densities)

    def density_histogram(self) -> dict[str, Any]:
        """:attr:`histogram` as in ``features.json`` (edges and counts)."""
        return self.histogram.to_dict(with_dead=False)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.dead_fraction_ci95
        out: dict[str, Any] = {
            "model_id": self.model_id,
            "hook_point": self.hook_point,
            "layer": self.layer,
            "d_sae": self.d_sae,
            "n_windows": self.n_windows,
            "seq_len": self.seq_len,
            "n_tokens": self.n_tokens,
            "config": asdict(self.config),
            "densities": self.densities,
            "density_histogram": self.density_histogram(),
            "n_dead": self.n_dead,
            "dead_fraction": self.dead_fraction,
            "dead_fraction_ci95": [lo, hi],
            "dead_fraction_n": self.d_sae,
            "selected": list(self.selected),
            "features": [f.to_dict() for f in self.features],
        }
        if self.sae_path is not None:
            out["sae_path"] = self.sae_path
        if self.data is not None:
            out["data"] = self.data
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """A ``features.json`` read back."""
        if not isinstance(d, Mapping):
            raise InterpError(f"browser data must be a dict, not {type(d).__name__}")
        try:
            n_tokens = int(d["n_tokens"])
            return cls(
                model_id=str(d["model_id"]), hook_point=str(d["hook_point"]),
                layer=_int(d.get("layer")), d_sae=int(d["d_sae"]),
                n_windows=int(d["n_windows"]), seq_len=int(d["seq_len"]), n_tokens=n_tokens,
                fires=[round(_num(x) * n_tokens) for x in d["densities"]],
                features=[FeatureCard.from_dict(f) for f in d["features"]],
                config=BrowserConfig(**d["config"]), selected=[int(i) for i in d["selected"]],
                sae_path=_str(d.get("sae_path")), data=_mapping(d.get("data")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise InterpError(f"malformed browser data: {e!r}") from e

    def to_frame(self) -> pd.DataFrame:
        """One row per shown feature: density, largest activation, top token, top logit."""
        rows = []
        for f in self.features:
            top = f.contexts[0] if f.contexts else None
            rows.append({
                "index": f.index, "density": f.density, "n_fires": f.n_fires,
                "max_act": f.max_act, "dec_norm": f.dec_norm,
                "top_token": top.tokens[top.max_at] if top else None,
                "promoted": f.promoted[0][0] if f.promoted else None,
                "suppressed": f.suppressed[0][0] if f.suppressed else None,
            })
        return pd.DataFrame(rows, columns=["index", "density", "n_fires", "max_act", "dec_norm",
                                           "top_token", "promoted", "suppressed"])
