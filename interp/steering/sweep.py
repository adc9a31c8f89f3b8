"""Sweep a steering vector over layers × coefficients and measure every cell.

For each layer, one :func:`~interp.generation.engine.generate` call runs every (prompt, α) pair as
rows of the same batches, with a per-request α (see :func:`interp.steering.vectors.steer`). Each
continuation gets:

* **target score**: VADER's compound sentiment of the continuation only (``vader``),
  a lexicon scorer independent of the model;
* **perplexity** of the continuation given the prompt under the *unsteered* model;
* **distinct-2**: share of distinct token bigrams in the continuation (loops → low);
* **collapse**: distinct-2 < 0.5 or perplexity > 10× the layer's α = 0 value;
* **side effect**: KL(unsteered ‖ steered) of the next-token distribution on neutral,
  off-target prompts.

Every cell reports mean and standard deviation over prompts (and sampling seeds).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.display import MISSING, as_float, format_number, signed
from interp.errors import InterpError
from interp.generation.engine import GenerationConfig, generate
from interp.lenses.logit import kl_divergence
from interp.models.loading import Model
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    each,
    finite,
    fraction,
    json_meta,
    non_negative,
    not_empty,
    positive,
    seed_range,
    setting,
)
from interp.schema.convert import from_data
from interp.steering.vectors import (
    ContrastPairs,
    Method,
    Positions,
    SteeringVector,
    distinct_n,
    steer,
    steering_hook,
    train_vectors,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

DEFAULT_ALPHAS = (-4.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
SIDE_EFFECT_PROMPTS = (
    "The capital of France is",
    "Water boils at a temperature of",
    "The largest planet in the solar system is",
    "2 + 2 =",
    "The opposite of up is",
    "A week has seven",
)


def vader_scores(texts: Sequence[str]) -> list[float]:
    """VADER compound score in [-1, 1] of each text."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return [float(analyzer.polarity_scores(t)["compound"]) for t in texts]


@torch.no_grad()
def continuation_perplexity(
    model: Model, prompts: Sequence[str], token_ids: Sequence[Sequence[int]], chat: bool = False,
    batch_size: int = 16,
) -> list[float]:
    """exp(mean NLL) of each continuation's tokens given its prompt, unsteered model."""
    tok = model.tokenizer
    out: list[float] = []
    for s in range(0, len(prompts), batch_size):
        seqs, spans = [], []
        for p, cont in zip(prompts[s : s + batch_size], token_ids[s : s + batch_size],
                           strict=True):
            pid = model.encode(model.format_prompt(p, chat))
            seqs.append(list(pid) + list(cont))
            spans.append((len(pid), len(cont)))
        width = max(len(x) for x in seqs)
        ids = torch.full((len(seqs), width), int(tok.pad_token_id), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, x in enumerate(seqs):  # right padding: positions stay 0..n-1
            ids[i, : len(x)] = torch.tensor(x)
            mask[i, : len(x)] = 1
        lp = torch.log_softmax(
            model.logits(ids.to(model.device), mask.to(model.device)).float(), -1).cpu()
        for i, (p_len, c_len) in enumerate(spans):
            if c_len == 0:
                out.append(math.nan)
                continue
            targets = ids[i, p_len : p_len + c_len]
            preds = lp[i, p_len - 1 : p_len + c_len - 1]
            nll = -preds.gather(1, targets.unsqueeze(1)).mean()
            out.append(float(torch.exp(nll)))
    return out


@torch.no_grad()
def side_effect_kl(
    model: Model,
    vector: SteeringVector,
    layer: int,
    alphas: Sequence[float],
    ids: Int[Tensor, "prompts pos"],
    mask: Int[Tensor, "prompts pos"],
    clean: Float[Tensor, "prompts vocab"],
    *,
    max_rows: int = 32,
) -> list[list[float]]:
    """KL(unsteered ‖ steered) of each prompt's next-token distribution, for every α
    (``[len(alphas)][prompts]``); ``clean`` is the unsteered log-softmax at the last
    position (every position of the prompts is steered).

    α = 0 runs alone, in the shape of the ``clean`` pass (so it is exactly 0 when α = 0
    leaves the model unchanged). The other coefficients share passes: the prompts are
    repeated once per α, with a per-row α, up to ``max_rows`` rows a pass (with the
    defaults one or two passes per layer instead of one per α; their KLs match one pass
    per α up to float rounding).
    """
    n = int(ids.shape[0])
    out: dict[float, list[float]] = {}
    with steer(model, vector, layer=layer, alpha=0.0):  # also checks the vector's model
        if 0.0 in alphas:
            lp = torch.log_softmax(model.logits(ids, mask)[:, -1].float(), -1)
            out[0.0] = kl_divergence(clean, lp).tolist()
    rest = list(dict.fromkeys(float(a) for a in alphas if a != 0.0))
    per_pass = max(1, max_rows // max(n, 1))
    v = vector.vector.to(device=model.device, dtype=torch.float32)
    for s in range(0, len(rest), per_pass):
        group = rest[s : s + per_pass]
        coef = torch.tensor(group, dtype=torch.float32, device=model.device).repeat_interleave(n)
        rows = torch.arange(len(coef), device=model.device)
        hook = steering_hook(v, coef, "all", rows=lambda rows=rows: rows)
        with model.bridge.hooks(fwd_hooks=[(model.resid_hook(layer), hook)]):
            logits = model.logits(ids.repeat(len(group), 1), mask.repeat(len(group), 1))
        lp = torch.log_softmax(logits[:, -1].float(), -1).view(len(group), n, -1)
        for k, a in enumerate(group):
            out[a] = kl_divergence(clean, lp[k]).tolist()
    return [out[float(a)] for a in alphas]


def parse_numbers(text: str) -> list[float]:
    """``"-4,0,2.5"`` → ``[-4.0, 0.0, 2.5]`` (a CLI list; the field's checks judge the
    values)."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError("use comma-separated numbers") from None
    if not values:
        raise ValueError("use comma-separated numbers")
    return values


def parse_ints(text: str) -> list[int]:
    """``"0,1,2"`` → ``[0, 1, 2]`` (numbers are truncated to integers)."""
    values = parse_numbers(text)
    if not all(math.isfinite(v) for v in values):
        raise ValueError("use comma-separated finite numbers")
    return [int(v) for v in values]


def _as_list(value: Any, kind: type) -> Any:
    """A tuple or list of numbers as a list of ``kind`` (other values are left for the
    checks to judge)."""
    if not isinstance(value, list | tuple):
        return value
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        return list(value)
    if kind is int and not all(float(v).is_integer() for v in value):
        return list(value)
    return [kind(v) for v in value]


@dataclass(frozen=True)
class SweepConfig(Config):
    """What a sweep steers and how it scores (``results.json["config"]``).

    ``vector_source`` is filled in by :func:`run_sweep` from the pairs or vector it is
    given; ``layers`` and ``alphas`` come back checked, with α = 0 added when missing.
    ``interp steer sweep`` derives its options from these fields (``--layers`` is parsed
    against the model, ``batch_size`` comes from the model options).
    """

    layers: list[int] = setting(cli=False, check=each(at_least(0)),
                                help="Layers to steer at (0-based, the residual stream "
                                     "after the block).")
    alphas: list[float] = setting(
        default_factory=lambda: list(DEFAULT_ALPHAS), check=each(finite),
        help="Comma-separated coefficients (0 is always added).",
        cli=Cli(parse=parse_numbers, default=",".join(f"{a:g}" for a in DEFAULT_ALPHAS)))
    max_new_tokens: int = setting(24, check=at_least(1),
                                  help="New tokens generated per continuation.",
                                  cli=Cli(range=True))
    temperature: float = setting(0.0, check=non_negative,
                                 help="0 = greedy; otherwise sampling, once per seed.")
    seeds: list[int] = setting(default_factory=lambda: [0], check=[not_empty, each(seed_range)],
                               help="Sampling seeds, comma list.",
                               cli=Cli(parse=parse_ints, default="0"))
    chat: bool = setting(False, help="Wrap prompts in the model's chat template.")
    batch_size: int = setting(32, cli=False, check=at_least(1),
                              help="Generated rows (prompt, α) per batch.")
    vector_source: str = setting("", cli=False,
                                 help="Where the vector came from (set by run_sweep).")
    method: Method = setting("mean_diff", help="How a vector is built from contrast pairs: "
                                               "the mean difference, or the first principal "
                                               "component of the paired differences.")
    collapse_distinct2: float = setting(0.5, cli=False, check=fraction,
                                        help="A text whose distinct-2 is below this counts "
                                             "as collapsed.")
    collapse_ppl_factor: float = setting(10.0, cli=False, check=positive,
                                         help="A text whose perplexity is above this × the "
                                              "layer's α = 0 mean counts as collapsed.")
    coherence_ppl_factor: float = setting(2.0, cli=False, check=positive,
                                          help="The sweet spot's mean perplexity stays "
                                               "within this × α = 0.")
    positions: Positions = setting("all", help="Which tokens the vector is added to.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="The run's seed as its manifest records it (the CLI's --seed); "
                             "the sampling streams are keyed by seeds.")

    #: ``seed`` is provenance, not a setting of the sweep: ``results.json["config"]``
    #: leaves it out (the manifest has it).
    transient: ClassVar[tuple[str, ...]] = ("seed",)

    def __post_init__(self) -> None:
        # the keyword form takes tuples and numpy numbers; the file keeps plain lists
        object.__setattr__(self, "layers", _as_list(self.layers, int))
        object.__setattr__(self, "alphas", _as_list(self.alphas, float))
        object.__setattr__(self, "seeds", _as_list(self.seeds, int))
        super().__post_init__()

    def generation(self, seed: int) -> GenerationConfig:
        """The generation settings of one sampling seed's pass."""
        return GenerationConfig(max_new_tokens=self.max_new_tokens,
                                temperature=self.temperature, seed=seed, chat=self.chat,
                                batch_size=self.batch_size)


#: Per-cell metrics of a sweep, each a ``[len(layers)][len(alphas)]`` grid (plus ``_std``).
GRID_METRICS = ("target_score", "perplexity", "distinct2", "collapse", "side_kl")
#: The sweet spot may have at most this share of collapsed texts.
COLLAPSE_TOLERANCE = 0.25

Grid = list[list[float]]


#: The stages :class:`SweepStats` times, in the order a sweep runs them.
#: The target score's range (VADER's compound score) and the share of it within which an
#: α = 0 baseline counts as near the ceiling or floor.
TARGET_RANGE = (-1.0, 1.0)
BOUND_MARGIN = 0.1

SWEEP_STAGES = ("vector", "generate", "perplexity", "vader", "distinct2", "side_kl")
#: The metric stages among :data:`SWEEP_STAGES`.
METRIC_STAGES = ("perplexity", "vader", "distinct2", "side_kl")


@dataclass
class SweepStats:
    """Where :func:`run_sweep` spent its time (``result.stats``; not in ``results.json``).

    ``seconds`` per stage (:data:`SWEEP_STAGES`): ``vector`` (the vectors of every layer,
    one capture pass over the pairs),
    ``generate`` (the steered generation calls), ``perplexity`` (the unsteered pass over
    every continuation), ``vader``, ``distinct2``, ``side_kl`` (the steered passes over
    the side-effect prompts and their KL); ``total`` is the whole call.
    """

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SWEEP_STAGES, 0.0))
    total: float = 0.0
    rows: int = 0  # generated continuations
    new_tokens: int = 0  # tokens generated over all of them

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of the ``generate`` stage."""
        t = self.seconds.get("generate", 0.0)
        return self.new_tokens / t if t > 0 else 0.0

    @property
    def metric_seconds(self) -> float:
        """Seconds of the metric stages (:data:`METRIC_STAGES`) together."""
        return sum(self.seconds.get(k, 0.0) for k in METRIC_STAGES)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the enclosed block's wall time to ``seconds[stage]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t0


@dataclass
class SweetSpot:
    """The largest target-score change vs α = 0 within the coherence tolerance."""

    layer: int
    alpha: float
    effect: float
    effect_spread: float
    tolerance: str


@dataclass
class SweepText:
    """One scored continuation (``results.json["texts"]``)."""

    layer: int
    alpha: float
    seed: int
    prompt: str
    text: str
    target_score: float
    perplexity: float
    distinct2: float


def _fit(values: Sequence[Any] | None, n: int, fill: Any) -> list[Any]:
    out = list(values or [])[:n]
    return out + [fill() if callable(fill) else fill for _ in range(n - len(out))]


@dataclass
class SweepResult(Result):
    """Every (layer, α) cell of a sweep: grids are ``[len(layers)][len(alphas)]``.

    Grids are made whole on construction (missing rows or cells become NaN, ``None``
    becomes NaN), so ``result.perplexity[i][j]`` always exists for a layer index ``i``
    and an α index ``j``. ``warnings`` gets the sweep's traps on construction
    (:meth:`traps`).
    """

    model: str
    config: SweepConfig
    layers: list[int]
    alphas: list[float]
    target_score: Grid = field(default_factory=list)
    target_score_std: Grid = field(default_factory=list)
    perplexity: Grid = field(default_factory=list)
    perplexity_std: Grid = field(default_factory=list)
    distinct2: Grid = field(default_factory=list)
    distinct2_std: Grid = field(default_factory=list)
    collapse: Grid = field(default_factory=list)
    collapse_std: Grid = field(default_factory=list)
    side_kl: Grid = field(default_factory=list)
    side_kl_std: Grid = field(default_factory=list)
    vector_norms: list[float] = field(default_factory=list)
    samples: list[list[list[str]]] = field(default_factory=list)
    n_prompts: int = 0
    sweet_spot: SweetSpot | None = None
    texts: list[SweepText] = field(default_factory=list)
    side_effect_prompts: list[str] = field(default_factory=list)
    #: run time of the call that made this result (not part of ``results.json``)
    stats: SweepStats = field(default_factory=SweepStats, init=False, compare=False,
                              repr=False, metadata=json_meta(skip=True))

    json_order: ClassVar[tuple[Any, ...]] = (
        "model", "config", "layers", "alphas",
        *(f"{k}{s}" for k in GRID_METRICS for s in ("", "_std")),
        "vector_norms", "samples", "n_prompts", "sweet_spot", "target_delta_ci95", "texts",
        "side_effect_prompts", "warnings")

    def __post_init__(self) -> None:
        self.layers = [int(x) for x in self.layers]
        self.alphas = [float(a) for a in self.alphas]
        n_l, n_a = len(self.layers), len(self.alphas)
        for key in self.grid_names():
            rows = _fit(getattr(self, key), n_l, list)
            setattr(self, key, [[as_float(v) for v in _fit(row, n_a, math.nan)]
                                for row in rows])
        self.vector_norms = [as_float(v) for v in _fit(self.vector_norms, n_l, math.nan)]
        self.samples = [[[str(t) for t in cell] for cell in _fit(row, n_a, list)]
                        for row in _fit(self.samples, n_l, list)]
        for text in self.traps():
            self.warn(text)

    # ------------------------------------------------------------------ derived

    @staticmethod
    def grid_names() -> list[str]:
        """The grid fields, means then standard deviations of each metric."""
        return [f"{k}{s}" for k in GRID_METRICS for s in ("", "_std")]

    def grid(self, name: str) -> Grid:
        """The grid called ``name`` (e.g. ``"perplexity"`` or ``"side_kl_std"``)."""
        if name not in self.grid_names():
            raise InterpError(f"unknown sweep grid {name!r}: use {', '.join(self.grid_names())}")
        return getattr(self, name)

    @property
    def base_index(self) -> int | None:
        """The column of α = 0 (the unsteered baseline of every layer)."""
        return self.alphas.index(0.0) if 0.0 in self.alphas else None

    @property
    def target_delta(self) -> Grid:
        """Mean target score minus the same layer's α = 0 mean."""
        b = self.base_index
        return [[v - row[b] if b is not None else math.nan for v in row]
                for row in self.target_score]

    def target_delta_ci(self) -> list[list[tuple[float, float]]]:
        """95% Student-t interval of each cell's target-score change vs α = 0, paired by
        (prompt, seed): the same prompt and sampling seed with and without the vector.
        NaN ends where fewer than two pairs were scored (or for the α = 0 column)."""
        from collections import defaultdict

        from interp.stats import mean_t_ci

        scores: dict[tuple[int, float], dict[tuple[str, int], list[float]]] = defaultdict(
            lambda: defaultdict(list))
        for t in self.texts:
            scores[(t.layer, t.alpha)][(t.prompt, t.seed)].append(t.target_score)
        b = self.base_index
        out = []
        for layer in self.layers:
            row = []
            for j, alpha in enumerate(self.alphas):
                base = scores.get((layer, self.alphas[b])) if b is not None else None
                cell = scores.get((layer, alpha))
                if j == b or not base or not cell:
                    row.append((math.nan, math.nan))
                    continue
                diffs = [float(np.mean(v)) - float(np.mean(base[k]))
                         for k, v in cell.items() if k in base]
                _, lo, hi = mean_t_ci(diffs)
                row.append((lo, hi))
            out.append(row)
        return out

    @property
    def perplexity_ratio(self) -> Grid:
        """Mean perplexity ÷ the same layer's α = 0 mean (NaN without a positive base)."""
        b = self.base_index
        out = []
        for row in self.perplexity:
            base = row[b] if b is not None else math.nan
            ok = math.isfinite(base) and base > 0
            out.append([v / base if ok else math.nan for v in row])
        return out

    def coherent(self, i: int, j: int) -> bool | None:
        """The sweet-spot rule for cell (i, j): perplexity ratio within
        ``coherence_ppl_factor`` and collapse rate ≤ :data:`COLLAPSE_TOLERANCE`
        (None when either is unknown)."""
        ratio, collapse = self.perplexity_ratio[i][j], self.collapse[i][j]
        if math.isnan(ratio) or math.isnan(collapse):
            return None
        return ratio <= self.config.coherence_ppl_factor and collapse <= COLLAPSE_TOLERANCE

    def traps(self) -> list[str]:
        """Traps of this sweep: an α = 0 baseline already near the target's ceiling or
        floor (VADER's compound score lives in [-1, 1]), where effects are compressed."""
        b = self.base_index
        if b is None:
            return []
        base = [row[b] for row in self.target_score if math.isfinite(row[b])]
        if not base:
            return []
        mean = sum(base) / len(base)
        for bound, name in ((TARGET_RANGE[1], "ceiling"), (TARGET_RANGE[0], "floor")):
            room = abs(bound - mean)
            if room < BOUND_MARGIN * (TARGET_RANGE[1] - TARGET_RANGE[0]):
                return [f"near the {name}: the α = 0 target score is {mean:+.2f}, within "
                        f"{room:.2f} of the metric's {name} ({bound:+g}); steering toward "
                        f"it has little room and its effects look smaller than they are"]
        return []

    @property
    def sweet_cell(self) -> tuple[int, int] | None:
        """(layer index, α index) of the sweet spot, when it is one of the swept cells."""
        s = self.sweet_spot
        if s is None or s.layer not in self.layers or float(s.alpha) not in self.alphas:
            return None
        return self.layers.index(s.layer), self.alphas.index(float(s.alpha))

    @property
    def decoding(self) -> str:
        """``"greedy"`` or ``"sampling, T = 0.700"``."""
        t = self.config.temperature
        return "greedy" if t == 0 else f"sampling, T = {format_number(t)}"

    def verdict(self) -> tuple[str, str]:
        """The sweep's one-sentence judgement and its kind: ``"none"`` (no coherent
        setting moved the target), ``"noise"`` (the sweet spot's paired interval contains
        0), ``"ok"`` (it does not) or ``"unknown"`` (too few pairs for an interval)."""
        from interp.steering.figures import fmt_alpha

        s, factor = self.sweet_spot, self.config.coherence_ppl_factor
        if s is None:
            tol = (f"mean perplexity ≤ {factor:g}× the layer's α = 0 value and at most "
                   f"{100 * COLLAPSE_TOLERANCE:.0f}% of texts collapsed")
            return ("No coherent setting moved the target score: no steered cell stayed "
                    f"within the coherence tolerance ({tol}).", "none")
        text = (f"Sweet spot: layer {s.layer}, α = {fmt_alpha(s.alpha)} changes the target "
                f"score by {signed(s.effect, 3)} vs α = 0 (spread over prompts ± "
                f"{format_number(s.effect_spread, 3)}), the largest change within the "
                f"coherence tolerance ({s.tolerance}).")
        cell = self.sweet_cell
        lo, hi = self.target_delta_ci()[cell[0]][cell[1]] if cell else (math.nan, math.nan)
        interval = f"[{signed(lo, 3)}, {signed(hi, 3)}]"
        if math.isfinite(lo) and lo <= 0 <= hi:
            return (text + f" Its 95% interval over paired prompts, {interval}, contains 0: "
                    "within noise, not a result.", "noise")
        if math.isfinite(lo):
            return text + f" 95% interval over paired prompts: {interval}.", "ok"
        return text + " Too few paired prompts for an interval: no noise estimate.", "unknown"

    # ------------------------------------------------------------------ views

    def extra_data(self) -> dict[str, Any]:
        """The paired 95% interval of each cell's target-score change
        (``target_delta_ci95``, derived from ``texts``)."""
        return {"target_delta_ci95": [[list(ci) for ci in row]
                                      for row in self.target_delta_ci()]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepResult:
        """A result from its ``results.json`` dict (extra keys such as the manifest are
        ignored; absent grids and lists become NaN and empty).

        Kept by hand for one thing the generic reader cannot know: a partial or older
        file may lack its config, or give ``layers``/``alphas`` only at the top level or
        only in the config; each fills in the other before the generic read.
        """
        d = dict(data)
        raw_cfg = dict(d.get("config") or {})
        d["layers"] = list(d.get("layers") or raw_cfg.get("layers") or [])
        d["alphas"] = list(d.get("alphas") or raw_cfg.get("alphas") or [])
        d["config"] = {"layers": d["layers"], "alphas": d["alphas"], **raw_cfg}
        d["model"] = str(d.get("model") or "")
        return from_data(cls, d)

    def to_frame(self) -> pd.DataFrame:
        """One row per (layer, α): every metric's mean and std, the change of the target
        score and the perplexity ratio vs α = 0, collapse and coherence flags.

        Written out rather than the headline's table: the headline is the layer × α grid
        of display strings the CLI prints, this is the long numeric form for analysis.
        """
        import pandas as pd

        delta, ratio, sweet = self.target_delta, self.perplexity_ratio, self.sweet_cell
        rows = []
        for i, layer in enumerate(self.layers):
            for j, alpha in enumerate(self.alphas):
                row: dict[str, Any] = {"layer": layer, "alpha": alpha}
                row.update({k: getattr(self, k)[i][j] for k in self.grid_names()})
                row.update({
                    "target_delta": delta[i][j], "perplexity_ratio": ratio[i][j],
                    "vector_norm": self.vector_norms[i], "coherent": self.coherent(i, j),
                    "sweet_spot": (i, j) == sweet,
                })
                rows.append(row)
        columns = ["layer", "alpha", *self.grid_names(), "target_delta", "perplexity_ratio",
                   "vector_norm", "coherent", "sweet_spot"]
        return pd.DataFrame(rows, columns=columns)

    def texts_frame(self) -> pd.DataFrame:
        """One row per scored continuation (``results.json["texts"]``)."""
        import pandas as pd

        return pd.DataFrame([asdict(t) for t in self.texts],
                            columns=[f.name for f in fields(SweepText)])

    def headline(self) -> Headline:
        """The layer × α grid of target-score change vs α = 0 with the perplexity ratio
        (⚠: more than :data:`COLLAPSE_TOLERANCE` of the texts collapsed), the sweep's
        facts (the report's lead) and its verdict."""
        from interp.steering.figures import fmt_alpha, fmt_ratio, fmt_signed

        delta, ratio = self.target_delta, self.perplexity_ratio
        table = []
        for li, layer in enumerate(self.layers):
            cells: list[Any] = [layer]
            for ai in range(len(self.alphas)):
                flag = " ⚠" if self.collapse[li][ai] > COLLAPSE_TOLERANCE else ""
                cells.append(f"{fmt_signed(delta[li][ai])} ({fmt_ratio(ratio[li][ai])}){flag}")
            table.append(cells)
        cfg = self.config
        prompts = format_number(self.n_prompts)
        if len(cfg.seeds) > 1:
            prompts += f" × {len(cfg.seeds)} seeds"
        rows: list[tuple[str, Any]] = [
            ("model", self.model or "unknown"),
            ("vector source", cfg.vector_source or "unknown"),
            ("method", cfg.method or "unknown"),
            ("layers", ", ".join(str(x) for x in self.layers) or MISSING),
            ("coefficients", ", ".join(fmt_alpha(a) for a in self.alphas) or MISSING),
            ("prompts", prompts),
            ("decoding", f"{self.decoding}, {format_number(cfg.max_new_tokens)} new tokens"),
        ]
        cell = self.sweet_cell
        return Headline(
            title="Steering sweep", rows=rows, verdict=self.verdict()[0],
            columns=["layer", *(f"α={fmt_alpha(a)}" for a in self.alphas)], table=table,
            emphasis=cell[0] if cell is not None else None,
            table_title=f"steering sweep · {self.model} · VADER of the continuation "
                        "(Δ vs α=0, perplexity ratio)")

    def figure(self) -> Figure | None:
        """:func:`~interp.steering.figures.heatmap_figure` of the target-score change (None: nothing
        swept)."""
        from interp.steering.figures import heatmap_figure

        return heatmap_figure(self, "target_delta") if self.layers and self.alphas else None


def _nan_mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation of the values that are not NaN."""
    v = np.array([x for x in values if x == x], dtype=float)
    if len(v) == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def sweep_prompts(path: str | Path | None = None, n: int | None = None) -> list[str]:
    """The prompts a sweep continues: the first ``n`` of ``path`` (``.txt``: one per line;
    JSONL/CSV: the ``prompt`` column), or of the shipped neutral prompts without a path."""
    from interp.data.readers import read_prompts
    from interp.runs.paths import shipped_dataset

    if path is None:
        texts = read_prompts(shipped_dataset("steering/neutral_prompts.jsonl"), "prompt")
    elif str(path).endswith(".txt"):
        texts = read_prompts(path, "text")
    else:
        texts = read_prompts(path, "prompt")
    return texts if n is None else texts[:n]


def run_sweep(
    model: Model,
    prompts: Sequence[str],
    config: SweepConfig | None = None,
    *,
    pairs: ContrastPairs | None = None,
    vector: SteeringVector | None = None,
    side_effect_prompts: Sequence[str] = SIDE_EFFECT_PROMPTS,
    progress: bool | None = None,
    **settings: Any,
) -> SweepResult:
    """Steer at every layer × α and score every continuation (see the module doc).

    Give ``pairs`` (a vector is trained at each swept layer) or ``vector`` (applied as it
    is at every swept layer). ``settings`` are :class:`SweepConfig` fields: without a
    ``config`` they make one (``run_sweep(model, prompts, layers=[6], pairs=pairs)``),
    with one they override it. ``result.to_dict()`` is the ``results.json`` content, and
    ``result.manifest`` the run's provenance.
    """
    if config is None and "layers" not in settings:
        raise InterpError("give the layers to sweep (a SweepConfig or layers=...)")
    config = SweepConfig.resolve(config, settings, override=True)
    if (pairs is None) == (vector is None):
        raise InterpError("give contrast pairs or a vector, not both and not neither")
    if not prompts:
        raise InterpError("no prompts to steer")
    alphas = list(config.alphas)
    if 0.0 not in alphas:
        alphas = [0.0, *alphas]  # the unsteered baseline of every layer
    layer_list = [model.check_layer(int(x)) for x in config.layers]
    source = pairs.source if pairs is not None else vector.source if vector is not None else ""
    cfg = config.replace(layers=layer_list, alphas=alphas, vector_source=source)
    method, positions, seeds = cfg.method, cfg.positions, cfg.seeds
    n_a = len(alphas)
    rows_prompts = [p for p in prompts for _ in alphas]
    rows_alpha = [a for _ in prompts for a in alphas]
    grids: dict[str, Any] = {k: [] for k in SweepResult.grid_names()}  # name → Grid
    samples: list[list[list[str]]] = []
    norms: list[float] = []
    per_text: list[SweepText] = []
    stats = SweepStats()
    start = time.perf_counter()
    with stats.timed("side_kl"):
        side_ids, side_mask = model.tokenize(list(side_effect_prompts))
        with torch.no_grad():
            clean_side = torch.log_softmax(model.logits(side_ids, side_mask)[:, -1].float(), -1)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("steering sweep", total=len(layer_list) * len(seeds), info="")
        with stats.timed("vector"):  # one capture pass for every swept layer
            trained = train_vectors(model, pairs, layer_list, method=method, progress=False) \
                if pairs is not None else {}
        for layer in layer_list:
            vec = trained[layer] if pairs is not None else vector
            assert vec is not None
            norms.append(vec.norm)
            cell: dict[tuple[int, str], list[float]] = {}
            cell_samples: list[list[str]] = [[] for _ in alphas]
            for seed in seeds:
                with stats.timed("generate"), \
                        steer(model, vec, layer=layer, alpha=rows_alpha, positions=positions):
                    res = generate(model, rows_prompts, cfg.generation(seed), progress=False)
                stats.rows += len(res.generations)
                stats.new_tokens += res.stats.new_tokens
                texts = res.texts
                with stats.timed("perplexity"):
                    ppl = continuation_perplexity(model, rows_prompts,
                                                  [g.token_ids for g in res.generations],
                                                  cfg.chat)
                with stats.timed("vader"):
                    vader = vader_scores(texts)
                with stats.timed("distinct2"):
                    d2 = [distinct_n(g.token_ids, 2) for g in res.generations]
                for i in range(len(texts)):
                    a_idx = i % n_a
                    cell.setdefault((a_idx, "target_score"), []).append(vader[i])
                    cell.setdefault((a_idx, "perplexity"), []).append(ppl[i])
                    cell.setdefault((a_idx, "distinct2"), []).append(d2[i])
                    if len(cell_samples[a_idx]) < 3:
                        cell_samples[a_idx].append(texts[i])
                    per_text.append(SweepText(layer, rows_alpha[i], seed, rows_prompts[i],
                                              texts[i], vader[i], ppl[i], d2[i]))
                bar.update(task, advance=1, info=f"layer {layer}")
            base_idx = alphas.index(0.0)
            base_ppl = _nan_mean_std(cell[(base_idx, "perplexity")])[0]
            for a_idx in range(n_a):
                collapse = [
                    float((d == d and d < cfg.collapse_distinct2)
                          or (p == p and p > cfg.collapse_ppl_factor * base_ppl))
                    for d, p in zip(cell[(a_idx, "distinct2")], cell[(a_idx, "perplexity")],
                                    strict=True)
                ]
                cell[(a_idx, "collapse")] = collapse
            # a plain forward has no generated tokens: with positions="generated" the
            # side effect is measured steering every position (an upper bound)
            with stats.timed("side_kl"):
                side = side_effect_kl(model, vec, layer, alphas, side_ids, side_mask,
                                      clean_side, max_rows=cfg.batch_size)
            for a_idx, kl in enumerate(side):
                cell[(a_idx, "side_kl")] = kl
            for k in GRID_METRICS:
                stats_k = [_nan_mean_std(cell[(a_idx, k)]) for a_idx in range(n_a)]
                grids[k].append([m for m, _ in stats_k])
                grids[f"{k}_std"].append([s for _, s in stats_k])
            samples.append(cell_samples)
    stats.total = time.perf_counter() - start
    result = SweepResult(
        model=model.model_id, config=cfg, layers=layer_list, alphas=alphas, **grids,
        vector_norms=norms, samples=samples, n_prompts=len(prompts),
        sweet_spot=sweet_spot(layer_list, alphas, grids, cfg), texts=per_text,
        side_effect_prompts=list(side_effect_prompts),
    )
    result.stats = stats
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(),
                                     texts=list(prompts))
    return result


def sweet_spot(layers: Sequence[int], alphas: Sequence[float], g: Mapping[str, Grid],
               cfg: SweepConfig) -> SweetSpot | None:
    """The largest target-score change vs α = 0 whose coherence stays within tolerance:
    mean perplexity ≤ ``coherence_ppl_factor`` × the α = 0 value and at most
    :data:`COLLAPSE_TOLERANCE` of the texts collapsed."""
    base = list(alphas).index(0.0)
    best: SweetSpot | None = None
    for li, layer in enumerate(layers):
        for ai, alpha in enumerate(alphas):
            if ai == base:
                continue
            ppl_ok = g["perplexity"][li][ai] <= cfg.coherence_ppl_factor * \
                g["perplexity"][li][base]
            if not ppl_ok or g["collapse"][li][ai] > COLLAPSE_TOLERANCE:
                continue
            effect = g["target_score"][li][ai] - g["target_score"][li][base]
            if best is None or abs(effect) > abs(best.effect):
                best = SweetSpot(layer, alpha, effect, g["target_score_std"][li][ai],
                                 f"perplexity ≤ {cfg.coherence_ppl_factor}× α=0, collapse ≤ "
                                 f"{100 * COLLAPSE_TOLERANCE:.0f}% of texts")
    return best
