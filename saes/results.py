"""The typed results of the saes package: evaluation, feature browser, training.

* :class:`SAEEvalResult` (:func:`saes.metrics.evaluate_sae`): reconstruction, sparsity,
  densities and the SAE spliced into the model; its ``to_dict()`` is ``interp sae eval``'s
  ``results.json``;
* :class:`BrowserData` (:func:`saes.features.browser.collect_browser_data`): densities and one
  :class:`FeatureCard` per selected feature; its ``to_dict()`` is ``interp sae browse``'s
  ``features.json``;
* :class:`TrainingRecord`: a training run's settings, per-step history and resampling events
  (as saved with the SAE, and as :func:`saes.train.train_sae` reports them).

Each is a :class:`~interp.schema.result.Result` (or a plain dataclass nested in one): the files come
from the fields' type hints and JSON metadata, the CLI table and notebook view from one
:meth:`~interp.schema.result.Result.headline`. This module draws nothing; :mod:`saes.figures` does,
and :meth:`~interp.schema.result.Result.figure` imports it when a notebook asks. ``from_dict`` reads
a results file back, tolerantly (:func:`read_lenient`): a missing or malformed value takes the
field's default, so a bad number becomes NaN (shown as "—" by the reports).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import numpy as np
import pandas as pd

from interp.display import MISSING, as_float, count, percent
from interp.errors import InterpError
from interp.schema import (
    Check,
    Config,
    Headline,
    Result,
    at_least,
    from_data,
    in_range,
    json_field,
    json_meta,
    seed_range,
    setting,
)
from interp.schema.convert import json_info, structure
from interp.schema.settings import Cli, type_hints
from interp.stats.intervals import wilson
from saes.metric_format import (
    CI,
    FRACTIONS,
    NAN,
    format_ci,
    format_metric,
    format_with_ci,
)
from saes.registry import ARCHITECTURES

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from torch import Tensor

__all__ = [
    "CI",
    "DEFAULT_TARGETS",
    "DENSITY_BINS",
    "MISSING",
    "BrowserConfig",
    "BrowserData",
    "DensityHistogram",
    "FeatureCard",
    "FeatureContext",
    "SAEEvalConfig",
    "SAEEvalResult",
    "TargetCheck",
    "TrainingRecord",
    "format_ci",
    "format_metric",
    "format_with_ci",
    "parse_feature_spec",
    "select_features",
    "read_lenient",
]

#: log10(density) histogram edges shared by the evaluation and the browser: 10⁻⁷ … 1.
DENSITY_BINS: tuple[float, ...] = tuple(-7.0 + 0.25 * i for i in range(29))
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

T = TypeVar("T")


# ----------------------------------------------------------------- tolerant reading


def read_lenient(cls: type[T], data: Any, what: str) -> T:
    """:func:`~interp.schema.convert.from_data`, tolerantly: a key whose value cannot be read as its
    field's type is dropped, so the field keeps its default (NaN, None, empty). Older or
    hand-edited files still render; only a non-object is refused."""
    if not isinstance(data, Mapping):
        raise InterpError(f"{what} must be a dict, not {type(data).__name__}")
    hints = type_hints(cls)
    kept: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        info = json_info(f)
        key = info.key or f.name
        if not f.init or info.skip or key not in data:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        try:
            structure(hints.get(f.name, Any), data[key])
        except (InterpError, TypeError, ValueError, KeyError, AttributeError):
            if not required:
                continue
        kept[key] = data[key]
    return from_data(cls, kept)


def _floats(value: Any) -> list[float]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [as_float(v) for v in value]


def _int(value: Any) -> int | None:
    x = as_float(value)
    return int(x) if math.isfinite(x) else None


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
        """Whether the edges rise strictly and finitely with one count per bin (a file read back may
        not)."""
        e = self.edges
        return (len(e) >= 2 and len(self.counts) == len(e) - 1 and all(map(math.isfinite, e))
                and all(b > a for a, b in zip(e[:-1], e[1:], strict=False)))

    @property
    def total(self) -> int:
        """Every feature counted: the alive ones in the bins and the dead ones."""
        return sum(self.counts) + self.n_dead




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
            shown = percent(self.target)
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
    #: model FLOPs utilisation of the run (interp.mfu); left out while unknown, as in
    #: records made before it
    mfu: float | None = json_field(None, omit_none=True)
    peak_flops: float | None = json_field(None, omit_none=True)
    #: inference state set from the final weights when training ended (BatchTopK: the
    #: ``threshold``, the ``threshold_moving_average`` it replaced, ``tokens`` used)
    calibration: dict[str, float] | None = json_field(None, omit_none=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingRecord:
        """From an SAE's saved config (or ``results.json``'s ``training``), tolerantly."""
        return read_lenient(cls, data, "a training record")

    @classmethod
    def of_artifact(cls, config: Mapping[str, Any]) -> TrainingRecord:
        """The record an SAE artifact's ``config.json`` carries (all None for an SAE that
        was not trained here)."""
        return cls.from_dict({f.name: config.get(f.name) for f in dataclasses.fields(cls)})

    @property
    def is_empty(self) -> bool:
        """No history and no settings: nothing to show."""
        return not self.history and not self.train

    def curve(self, key: str) -> list[float]:
        """One history quantity as floats (NaN for a missing value)."""
        return [as_float(v) for v in (self.history or {}).get(key) or []]

    @property
    def events(self) -> list[tuple[float, float]]:
        """The resampling events as (step, features) pairs of floats."""
        return [(as_float(ev[0]), as_float(ev[1])) for ev in self.resampled or []
                if isinstance(ev, Sequence) and len(ev) >= 2]

    @property
    def n_steps(self) -> int:
        """Steps recorded: the longest history curve."""
        return max((len(v) for v in (self.history or {}).values()), default=0)

    def to_frame(self) -> pd.DataFrame:
        """One row per step (``step`` from 1), one column per history quantity."""
        cols = {k: self.curve(k) for k in (self.history or {})}
        n = self.n_steps
        frame = pd.DataFrame({k: v + [NAN] * (n - len(v)) for k, v in cols.items()})
        frame.insert(0, "step", range(1, n + 1))
        return frame


# ----------------------------------------------------------------------- evaluation


#: The spliced CE's default token count. The CE metrics cost four suffix passes per window
#: (23 of 30 blocks and the unembedding at layer 6) where the reconstruction metrics cost
#: one prefix, so they set the evaluation's time: at 102,400 CE tokens a layer-6 TopK SAE
#: took 843 s here (cold), at 24,576 241 s, with the CE-loss score 0.751 ± 0.004 and
#: 0.756 ± 0.008 (95% CIs overlapping; bench/README.md, issue 30). Ask for more with
#: ``ce_tokens`` when a difference of 0.01 matters.
CE_TOKENS = 24_576


@dataclass(frozen=True)
class SAEEvalConfig(Config):
    """How much held-out text :func:`saes.metrics.evaluate_sae` uses and how it cuts it.

    ``ce_tokens`` None means the smaller of ``tokens`` and :data:`CE_TOKENS` (it is
    resolved when the config is built).
    """

    tokens: int = setting(102_400, check=at_least(1),
                          help="Held-out tokens for L0, explained variance and densities.",
                          cli=Cli(range=True))
    ce_tokens: int | None = setting(None, check=at_least(0),
                                    help="Held-out tokens for the spliced CE metrics "
                                    "[default: the smaller of --tokens and 24,576].",
                                    cli=Cli(range=True))
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.",
                           cli=Cli(range=True))
    batch_size: int = setting(8, cli=False, check=at_least(1),
                              help="Text windows per forward pass.")
    seed: int = setting(0, check=seed_range, cli=False, help="Seeds the windows and the bootstrap.")
    dense_threshold: float = setting(0.1, cli=False, check=in_range(0, 1, open_low=True,
                                                                    open_high=True),
                                     help="A feature firing on more than this fraction of "
                                          "tokens is dense.")
    n_bootstrap: int = setting(1000, cli=False, check=at_least(1),
                               help="Bootstrap resamples of each 95% interval.")
    cache_baselines: bool = setting(
        True,
        help="Keep the zero- and mean-ablation passes (they do not depend on the SAE) in "
        "$INTERP_CACHE/sae-eval-baselines and reuse them: later evaluations at the same "
        "layer on the same text run two spliced passes, not four.",
        cli=Cli(flag="--baseline-cache/--no-baseline-cache"))

    def __post_init__(self) -> None:
        if self.ce_tokens is None:
            object.__setattr__(self, "ce_tokens", min(self.tokens, CE_TOKENS))
        super().__post_init__()

    @property
    def n_windows(self) -> int:
        """Text windows for the reconstruction metrics (``seq_len − 1`` tokens each: position 0 is
        left out), at least 1."""
        return max(1, math.ceil(self.tokens / (self.seq_len - 1)))

    @property
    def n_ce_windows(self) -> int:
        """Text windows for the spliced cross-entropy (``seq_len − 2`` scored tokens each); 0 with
        ``ce_tokens = 0``."""
        assert self.ce_tokens is not None
        return 0 if self.ce_tokens == 0 else max(1, math.ceil(self.ce_tokens / (self.seq_len - 2)))


#: The spliced-CE fields of :class:`SAEEvalResult` (absent from ``results.json`` with
#: ``--ce-tokens 0``).
SPLICE_FIELDS = ("n_ce_tokens", "ce_clean", "ce_sae", "ce_zero_ablation", "ce_mean_ablation",
                 "ce_loss_score", "ce_loss_score_ci95", "ce_loss_score_mean_ablation",
                 "ce_loss_score_mean_ablation_ci95", "delta_ce", "delta_ce_ci95", "kl_sae",
                 "kl_sae_ci95", "kl_zero_ablation", "kl_mean_ablation", "baselines_cached")
def _omit() -> Any:
    """A field left out of its file while unknown (None): records made before it
    round-trip unchanged, and provenance only a loaded SAE gives stays out."""
    return json_field(None, omit_none=True)


@dataclass
class SAEEvalResult(Result):
    """The metrics of :mod:`saes.metrics` on held-out text (every field a ``results.json`` key).

    Reconstruction and sparsity over ``n_tokens`` tokens; the SAE spliced into the model over
    ``n_ce_tokens`` (None, and NaN metrics, when not measured). Each ``*_ci95`` is a 95%
    bootstrap interval over windows. ``sae_path``, ``training`` (from the artifact),
    ``data`` (the text's source) and ``targets`` are set by :func:`~saes.metrics.evaluate_sae`
    when it knows them. ``to_frame()`` is one row per metric; in a notebook
    it shows its headline metrics and the reconstruction figure.
    """

    model: str | None = None
    hook_point: str | None = None
    layer: int | None = None
    d_in: int | None = None
    d_sae: int | None = None
    architecture: str | None = _omit()
    k: int | None = _omit()
    eval: SAEEvalConfig | None = _omit()
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
    baselines_cached: bool | None = _omit()
    sae_path: str | None = _omit()
    data: dict[str, Any] | None = _omit()
    targets: dict[str, float] | None = _omit()
    training: TrainingRecord | None = _omit()

    warnings_always: ClassVar[bool] = False

    # ------------------------------------------------------------- conversions

    def to_dict(self) -> dict[str, Any]:
        """Exactly ``results.json`` (NaN stays NaN: the CLI writes it through ``json_safe``).

        Written here only to leave the spliced-CE keys out when they were not measured
        (``--ce-tokens 0``): a rule between fields that field metadata cannot say.
        """
        out = super().to_dict()
        if self.n_ce_tokens is None:
            for key in SPLICE_FIELDS:
                out.pop(key, None)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A ``results.json`` read back (:func:`read_lenient`); a malformed density
        histogram is rebuilt from the densities."""
        rec = read_lenient(cls, data, "SAE results")
        rec.density_histogram = _histogram(data.get("density_histogram"), rec)
        return rec

    # ------------------------------------------------------------------ derived

    @property
    def architecture_text(self) -> str:
        """``"TopK (k 32)"``, ``"ReLU"``: what the report names the SAE (ReLU when a
        record predates the architectures)."""
        spec = ARCHITECTURES.get(self.architecture or "relu")
        if spec is not None:
            return spec.text(self.k)
        return f"{self.architecture} (k {self.k})" if self.k is not None else str(
            self.architecture)

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
        """The density histogram (the ``density_histogram`` field)."""
        return self.density_histogram

    def value(self, metric: str) -> float:
        """A metric by name as a float (NaN when unknown or not a number)."""
        v = getattr(self, metric, None)
        return as_float(v) if isinstance(v, int | float) else NAN

    def checks(self) -> list[TargetCheck]:
        """The targets judged on the point estimates, in the order of ``targets``."""
        out = []
        for key, target in (self.targets or {}).items():
            metric, op, label = _rule(str(key))
            out.append(TargetCheck(str(key), metric, label, op, as_float(target),
                                   self.value(metric)))
        return out

    def check(self, metric: str) -> TargetCheck | None:
        """The first target on ``metric``, if any."""
        return next((c for c in self.checks() if c.metric == metric), None)

    def ci_text(self, metric: str) -> str:
        """``metric``'s value with its 95% interval (:func:`~saes.metric_format.format_with_ci`)."""
        return format_with_ci(metric, self.value(metric),
                              getattr(self, f"{metric}_ci95", (NAN, NAN)))

    def headline(self) -> Headline:
        """What the SAE is, then each headline metric with its 95% interval: the CLI's
        table and the notebook view."""
        table = [["L0", self.ci_text("l0")],
                 ["explained variance", self.ci_text("explained_variance")],
                 ["cosine similarity", self.ci_text("cosine_similarity")],
                 ["dead / dense fraction", " / ".join(
                     format_metric(k, self.value(k)) for k in ("dead_fraction", "dense_fraction"))]]
        if self.has_splice:
            cached = "; ablations from the baseline cache" if self.baselines_cached else ""
            table += [
                ["CE clean / SAE / mean-abl / zero-abl",
                 " / ".join(format_metric("ce", self.value(k)) for k in (
                     "ce_clean", "ce_sae", "ce_mean_ablation", "ce_zero_ablation"))
                 + f" nats ({count(self.n_ce_tokens)} tokens{cached})"],
                ["CE-loss score (zero ablation)", self.ci_text("ce_loss_score")],
                ["CE-loss score (mean ablation)", self.ci_text("ce_loss_score_mean_ablation")],
                ["ΔCE (nats/token)", self.ci_text("delta_ce")],
                ["KL(clean ‖ SAE) (nats/token)", self.ci_text("kl_sae")],
            ]
        rows: list[tuple[str, Any]] = [
            ("hook point", self.hook_point or "?"), ("architecture", self.architecture_text),
            ("features (d_sae)", self.d_sae if self.d_sae is not None else "?"),
            ("tokens", self.n_tokens if self.n_tokens is not None else "?")]
        return Headline(
            title=f"SAE evaluation — {self.model or 'unknown model'}", rows=rows,
            columns=["metric", "value [95% CI]"], table=table,
            table_title=f"SAE {self.hook_point} d_sae={self.d_sae} on {self.n_tokens} "
                        "held-out tokens")

    def figure(self) -> Figure | None:
        """:func:`~saes.figures.reconstruction_figure`."""
        from saes.figures import reconstruction_figure

        return reconstruction_figure(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per headline metric: value, 95% CI and the tokens it is measured on
        (numbers, where the headline's table holds text)."""
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


def _histogram(value: Any, rec: SAEEvalResult) -> DensityHistogram:
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


def select_features(spec: str, fires: Sequence[int] | Tensor, seed: int = 0) -> list[int]:
    """The feature indices ``spec`` names, given per-feature fire counts ``fires [d_sae]``.

    ``"all"``: every index. ``"alive:N"``: a seeded random sample of N features that fired
    at least once (all of them when fewer), ascending. A list: as given, each checked
    against ``d_sae``.
    """
    import torch

    counts = torch.as_tensor(fires)
    d_sae = int(counts.numel())
    kind, arg = parse_feature_spec(spec)
    if kind == "all":
        return list(range(d_sae))
    if kind == "alive":
        alive = torch.nonzero(counts > 0).flatten()
        g = torch.Generator().manual_seed(int(seed))
        pick = alive[torch.randperm(int(alive.numel()), generator=g)[: int(arg)]]  # type: ignore[arg-type]
        return sorted(int(i) for i in pick)
    bad = [i for i in arg if i >= d_sae]  # type: ignore[union-attr]
    if bad:
        raise InterpError(f"feature index {bad[0]} is out of range: the SAE has d_sae={d_sae}")
    return list(arg)  # type: ignore[arg-type]


def _feature_spec_ok(spec: str) -> bool:
    parse_feature_spec(spec)  # raises its own one-line InterpError
    return True


@dataclass(frozen=True)
class BrowserConfig(Config):
    """How much held-out text the browser scans and what it shows per feature."""

    tokens: int = setting(65536, check=at_least(1),
                          help="Held-out tokens scanned for top activations.", cli=Cli(range=True))
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.",
                           cli=Cli(range=True))
    batch_size: int = setting(8, cli=False, check=at_least(1),
                              help="Text windows per forward pass.")
    top_k: int = setting(12, check=at_least(1), help="Top-activating contexts per feature.",
                         cli=Cli(range=True))
    context: int = setting(12, cli=False, check=at_least(0),
                           help="Tokens shown left of the activating one.")
    n_logits: int = setting(10, cli=False, check=at_least(1),
                            help="Promoted and suppressed tokens shown per feature.")
    features: str = setting(
        "alive:300", check=Check(_feature_spec_ok, "must be 'all', 'alive:N' or a comma "
                                                   "list of indices"),
        help="Feature cards: 'all', 'alive:N' (a seeded sample of live ones) or '3,17,99'.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the windows and the 'alive:N' sample.")

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
    max_at: int = 0
    window: int = 0
    position: int = 0

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


#: ``features.json``'s keys in their order (the derived ones among the fields).
_BROWSER_ORDER = ("model_id", "hook_point", "layer", "d_sae", "n_windows", "seq_len",
                  "n_tokens", "config", "densities", "density_histogram", "n_dead",
                  "dead_fraction", "dead_fraction_ci95", "dead_fraction_n", "selected",
                  "features", ...)


@dataclass
class BrowserData(Result):
    """The feature browser's data (:func:`saes.features.browser.collect_browser_data`).

    ``to_dict()`` is ``features.json`` (JSON-safe; the per-feature ``fires`` are written as
    ``densities``), ``to_frame()`` one row per shown feature; in a notebook it shows its
    summary, the first features and the density histogram. The manifest goes to the
    report, not into ``features.json``.
    """

    model_id: str
    hook_point: str
    layer: int | None
    d_sae: int
    n_windows: int
    seq_len: int
    n_tokens: int
    features: list[FeatureCard]
    config: BrowserConfig
    selected: list[int] = field(default_factory=list)
    #: Tokens each feature fired on (all ``d_sae``); the file has them as ``densities``.
    fires: list[int] = field(default_factory=list, metadata=json_meta(skip=True))
    sae_path: str | None = _omit()
    data: dict[str, Any] | None = _omit()
    #: The run's provenance, for the report; ``features.json`` has never carried it.
    manifest: dict[str, Any] | None = field(default=None, kw_only=True, repr=False,
                                            metadata=json_meta(skip=True))

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = _BROWSER_ORDER

    @property
    def densities(self) -> list[float]:
        """Per feature (all ``d_sae``): fraction of scanned tokens it fires on."""
        return [k / self.n_tokens for k in self.fires]

    @property
    def n_dead(self) -> int:
        """Features that never fired on the scanned tokens."""
        return sum(1 for k in self.fires if k == 0)

    @property
    def dead_fraction(self) -> float:
        """Dead features over ``d_sae``."""
        return self.n_dead / self.d_sae

    @property
    def dead_fraction_ci95(self) -> CI:
        """Wilson 95% interval of the dead fraction."""
        return wilson(self.n_dead, self.d_sae)

    @property
    def histogram(self) -> DensityHistogram:
        """Alive features per ``log10(density)`` bin, and the dead ones."""
        return DensityHistogram.of(self.densities)

    def density_histogram(self) -> dict[str, Any]:
        """:attr:`histogram` as in ``features.json`` (edges and counts)."""
        h = self.histogram
        return {"edges": h.edges, "counts": h.counts}

    def extra_data(self) -> dict[str, Any]:
        """Adds the per-feature densities, their histogram and the dead count and fraction with its
        CI and n."""
        return {"densities": self.densities, "density_histogram": self.density_histogram(),
                "n_dead": self.n_dead, "dead_fraction": self.dead_fraction,
                "dead_fraction_ci95": list(self.dead_fraction_ci95),
                "dead_fraction_n": self.d_sae}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A ``features.json`` read back (``fires`` from ``densities`` × ``n_tokens``)."""
        if not isinstance(data, Mapping):
            raise InterpError(f"browser data must be a dict, not {type(data).__name__}")
        try:
            n_tokens = int(data["n_tokens"])
            fires = [round(as_float(x) * n_tokens) for x in data["densities"]]
            out = from_data(cls, data)
        except (KeyError, TypeError, ValueError) as e:
            raise InterpError(f"malformed browser data: {e!r}") from e
        out.fires = fires
        return out

    def headline(self) -> Headline:
        """The summary and the first 20 features (the notebook view)."""
        frame = self.to_frame().head(20)
        rows: list[tuple[str, Any]] = [
            ("hook point", self.hook_point), ("features (d_sae)", self.d_sae),
            ("tokens scanned", self.n_tokens),
            ("dead features", f"{self.n_dead} ({percent(self.dead_fraction)})"),
            ("features shown", len(self.features)),
        ]
        return Headline(f"SAE feature browser — {self.model_id}", rows=rows,
                        columns=list(frame.columns),
                        table=[list(r) for r in frame.itertuples(index=False, name=None)])

    def figure(self) -> Figure | None:
        """:func:`~saes.figures.density_figure`: features per log10(density) bin."""
        from saes.figures import density_figure

        return density_figure(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per shown feature: density, largest activation, top token, top logit
        (every feature, where the headline shows the first 20)."""
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
