"""Typed configs and results of the circuit tools (patching, DLA, attention patterns).

Effects are kept per pair, so every mean comes with its 95% interval over pairs and a
report can resample pairs. Component axes:

* position families (``resid``, ``attn``, ``mlp``): ``[pairs, layers, positions]``;
* ``heads``: ``[pairs, layers, heads]``, or ``[pairs, layers, heads, positions]`` with
  ``per_position``.

An effect is the normalised logit difference of the patched run, 0 = the corrupted
run and 1 = the clean run, whatever the direction: denoising (clean into corrupted)
starts from 0, noising (corrupted into clean) from 1. ``baseline`` is that start; a
component's importance is ``|effect - baseline|``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.display import ci_text, signed, visible_token
from interp.errors import InterpError
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    json_field,
    json_meta,
    non_negative,
    not_empty,
    seed_range,
    setting,
)
from interp.stats.intervals import Z95, mean_ci

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from interp.circuits.patching import Component

Family = Literal["resid", "attn", "mlp", "heads"]
Method = Literal["exact", "atp", "atp-star", "both"]
Direction = Literal["denoise", "noise"]

FAMILIES: tuple[str, ...] = ("resid", "attn", "mlp", "heads")
METHODS: tuple[str, ...] = ("exact", "atp", "atp-star", "both")
DIRECTIONS: tuple[str, ...] = ("denoise", "noise")

#: How DLA treats the final RMSNorm: its scale is frozen at the clean run's value.
DLA_CONVENTION = (
    "final RMSNorm scale frozen at the clean run's value at the final position: each "
    "component's output is divided by that run's rms and dotted with "
    "gamma * (W_U[answer] - W_U[wrong])"
)


def _nested(x: Tensor) -> Any:
    """A float tensor as nested lists (a float for a scalar), NaN as None."""

    def clean(v: Any) -> Any:
        if isinstance(v, list):
            return [clean(u) for u in v]
        return float(v) if math.isfinite(v) else None

    return clean(x.detach().to(torch.float64).cpu().tolist())


def ci95_over_pairs(
    per_pair: Float[Tensor, "pairs ..."],
) -> tuple[Float[Tensor, ...], Float[Tensor, "... 2"]]:
    """Mean over pairs and its normal-approximation 95% interval, element-wise."""
    x = per_pair.to(torch.float64)
    n = x.shape[0]
    mean = x.mean(0)
    if n < 2:
        nan = torch.full_like(mean, math.nan)
        return mean, torch.stack([nan, nan], -1)
    half = Z95 * x.std(0, unbiased=True) / math.sqrt(n)
    return mean, torch.stack([mean - half, mean + half], -1)


def _choice(name: str, choices: tuple[str, ...]) -> Callable[[str], Any]:
    """The CLI's reading of a free-text choice: the value, or the old one-line error."""

    def parse(value: str) -> Any:
        if value not in choices:
            raise InterpError(f"unknown {name} {value!r}: use one of {', '.join(choices)}")
        return value

    return parse


@dataclass(frozen=True)
class PatchConfig(Config):
    """What :func:`~interp.circuits.patch.run_patch` patches, how, and on which pairs.

    ``layers`` is a list, one layer, ``"3,6"`` or ``"all"`` (``None``: every layer); a
    result's config holds the resolved list.
    """

    task: str = setting("ioi", check=not_empty,
                        help="A shipped task (ioi, capitals, ...) or a JSONL file of "
                        "clean/corrupted pairs.", cli=Cli(metavar="NAME|FILE"))
    family: Family = setting(
        "resid", help="resid | attn | mlp (per layer × position) or heads (per layer × head).",
        cli=Cli(parse=_choice("family", FAMILIES)))
    method: Method = setting(
        "exact",
        help="exact | atp | atp-star (heads only) | both (exact and AtP, and AtP* for "
        "heads, with their agreement).", cli=Cli(parse=_choice("method", METHODS)))
    direction: Direction = setting(
        "denoise", help="denoise: clean into corrupted; noise: corrupted into clean.",
        cli=Cli(parse=_choice("direction", DIRECTIONS)))
    per_position: bool = setting(False, help="heads: one component per head × position.")
    layers: list[int] | str | int | None = setting(
        "all",
        help="Layers to patch: comma-separated (0-based) or 'all'.")
    limit: int | None = setting(None, check=at_least(1), help="Use the first N pairs of the task.",
                                cli=Cli(range=True))
    batch_size: int = setting(32, cli=False, check=at_least(1),
                              help="Patched runs (rows) per forward pass.")
    min_gap: float = setting(
        0.1, check=non_negative,
        help="Leave out pairs whose clean − corrupted logit difference gap is smaller.",
        cli=Cli(range=True))
    n_boot: int = setting(1000, check=at_least(100),
                          help="Bootstrap resamples for the agreement CIs.",
                          cli=Cli(flag="--bootstrap", range=True))
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the bootstrap (recorded in the manifest).")
    dla: bool = setting(True, help="Skip direct logit attribution.", cli=Cli(flag="--no-dla"))
    top_heads: int = setting(4, check=non_negative,
                             help="Attention patterns of this many top heads in the report.",
                             cli=Cli(range=True))
    group_by: str = setting(
        "auto", check=not_empty,
        help="A task-file column whose values group the pairs: each top component's effect "
        "per group, and a warning where the groups differ beyond the noise. auto: "
        "'template' when every pair has it; none: no groups.", cli=Cli(metavar="COLUMN|auto|none"))

    def check(self) -> None:
        """``atp-star`` and ``per_position`` apply to the ``heads`` family only."""
        if self.method == "atp-star" and self.family != "heads":
            raise self.error("method", "atp-star applies to family heads only (its QK fix "
                                       "recomputes a head's own attention softmax)")
        if self.per_position and self.family != "heads":
            raise self.error("per_position", "applies to family heads (the other families "
                                             "are per-position already)")


@dataclass
class TaskSummary:
    """The pairs a run used: how many were read, kept and left out, and why."""

    name: str
    source: str
    sha256: str
    n_read: int
    n_used: int
    n_left_out: int
    left_out_reason: str
    positions: list[str]
    clean_ld: list[float]
    corrupted_ld: list[float]

    def to_dict(self) -> dict[str, Any]:
        """The file keeps each logit difference's mean and 95% CI, not the per-pair values."""
        d = asdict(self)
        for key in ("clean_ld", "corrupted_ld"):
            mean, lo, hi = mean_ci(np.asarray(d.pop(key), dtype=np.float64))
            d[f"{key}_mean"] = mean
            d[f"{key}_ci95"] = [lo, hi]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSummary:
        """Read back from :meth:`to_dict`: the per-pair logit differences are not in the
        file, so they come back empty."""
        keep = {f.name for f in fields(cls)} - {"clean_ld", "corrupted_ld"}
        return cls(**{k: data[k] for k in keep}, clean_ld=[], corrupted_ld=[])


@dataclass
class Effects:
    """One method's effects: the normalised metric of each patched run, per pair.

    ``normalised[pair, layer, ...]`` (see the module docstring for the axes) and
    ``raw[pair, layer, ...]`` the raw logit difference (answer − wrong) of the patched
    run (for AtP, its first-order estimate). ``seconds`` is the wall time of the method.
    """

    method: str
    normalised: Float[Tensor, "pairs layers ..."]
    raw: Float[Tensor, "pairs layers ..."]
    seconds: float

    @property
    def mean(self) -> Float[Tensor, "layers ..."]:
        """Mean normalised effect over pairs, ``[layers, ...]`` (float64)."""
        return self.normalised.to(torch.float64).mean(0)

    @property
    def ci95(self) -> Float[Tensor, "layers ... 2"]:
        """Normal 95% CI of that mean over pairs, ``[layers, ..., 2]``."""
        return ci95_over_pairs(self.normalised)[1]

    @property
    def raw_mean(self) -> Float[Tensor, "layers ..."]:
        """Mean raw logit difference of the patched runs over pairs, ``[layers, ...]`` (float64)."""
        return self.raw.to(torch.float64).mean(0)


@dataclass
class Agreement:
    """How well an approximation (AtP, AtP*) recovers the exact effects.

    Over every component of the family: Spearman's rank correlation of the mean
    effects, and the recall of the exact top-k components (by ``|effect - baseline|``)
    among the approximation's top-k, for k = 10 and 30. Intervals are percentile
    bootstraps over pairs (the pairs are resampled, both methods' means recomputed).
    ``tied_at_k`` counts the components whose exact importance is within ``TIE`` (0.01)
    of the k-th largest: when it exceeds k, the exact top-k is an arbitrary pick among
    near-equal components and recall@k says little (the residual stream, where every
    layer before the information moves restores the clean run fully).
    """

    method: str
    n_components: int
    spearman: float
    spearman_ci95: list[float]
    recall_at_10: float
    recall_at_10_ci95: list[float]
    recall_at_30: float
    recall_at_30_ci95: list[float]
    seconds_exact: float
    seconds_approx: float
    tied_at_10: int = 0
    tied_at_30: int = 0


@dataclass
class SplitHalf:
    """Are the top components stable? The exact top-``k`` on two disjoint halves of the pairs.

    Halves are the even- and odd-numbered pairs; ``chance`` is the overlap expected of two
    random top-``k`` sets among ``n_components`` (``k² / n``).
    """

    k: int
    top_a: list[str]
    top_b: list[str]
    overlap: int
    chance: float
    n_a: int
    n_b: int


#: Family-wise error rate of the between-group test (:mod:`interp.circuits.groups`).
ALPHA = 0.05


@dataclass
class GroupComparison:
    """One component across the groups: each group's mean effect and 95% CI (``None``
    with fewer than two pairs), the test's p-value and its Holm-adjusted value."""

    component: str
    mean: list[float]
    ci95: list[list[float] | None]
    p_value: float | None
    p_holm: float | None
    differs: bool
    #: ``"sign"``, ``"size"``, or ``""`` when the groups do not differ beyond the noise
    kind: str = ""


@dataclass
class GroupEffects:
    """Per-group effects of the top components of one method (computed by
    :func:`~interp.circuits.groups.group_effects`, whose docstring says how)."""

    column: str
    groups: list[str]
    n_pairs: list[int]
    method: str
    baseline: float
    components: list[GroupComparison] = field(default_factory=list)
    alpha: float = ALPHA
    test: str = ("Welch's one-way ANOVA per component (Kruskal-Wallis where a group is "
                 "constant), Holm-adjusted over the components")

    @property
    def differing(self) -> list[GroupComparison]:
        """The components whose groups differ beyond the noise."""
        return [c for c in self.components if c.differs]

    def describe(self, c: GroupComparison) -> str:
        """``L23H3: +0.61 [+0.55, +0.67] in template 0, -0.52 [...] in template 1``."""
        parts = []
        for g, m, ci in zip(self.groups, c.mean, c.ci95, strict=True):
            interval = f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci is not None else ""
            parts.append(f"{m:+.2f}{interval} in {self.column} {g}")
        return f"{c.component}: " + ", ".join(parts)

    def warnings(self) -> list[str]:
        """One line per component whose effect differs between groups beyond the noise."""
        out = []
        for c in self.differing:
            what = "sign" if c.kind == "sign" else "size"
            out.append(f"{c.component}'s {self.method} effect differs in {what} between "
                       f"{self.column} groups beyond the noise (Holm p = {c.p_holm:.2g}): "
                       + self.describe(c).split(": ", 1)[1])
        return out

    def verdict(self) -> str:
        """One line for the headline."""
        tested = sum(c.p_value is not None for c in self.components)
        if len(self.groups) < 2:
            return f"groups ({self.column}): one group, nothing to compare"
        d = self.differing
        if not tested:
            return (f"groups ({self.column}): {len(self.groups)} groups, too few pairs per "
                    "group to compare")
        names = ", ".join(f"{c.component} ({c.kind})" for c in d[:5])
        more = f" and {len(d) - 5} more" if len(d) > 5 else ""
        return (f"groups ({self.column}): {len(d)} of {tested} top components differ between "
                f"{len(self.groups)} groups beyond the noise (Holm p < {self.alpha:g})"
                + (f": {names}{more}" if d else ""))


@dataclass
class DLAResult:
    """Direct logit attribution of the clean runs' answer − wrong logit difference.

    Per pair: ``heads[pair, layer, head]``, ``mlp[pair, layer]``, ``embed[pair]`` and the
    constant terms ``attn_bias[pair, layer]`` (attention output biases) and
    ``norm_bias[pair]`` (a LayerNorm's bias; both zero in families without them) sum to
    ``total[pair]`` (the model's own logit difference) up to float error;
    ``max_sum_error`` is the largest ``|sum - total|`` over pairs.
    """

    heads: Float[Tensor, "pairs layers heads"]
    mlp: Float[Tensor, "pairs layers"]
    embed: Float[Tensor, " pairs"]
    total: Float[Tensor, " pairs"]
    max_sum_error: float
    convention: str = DLA_CONVENTION
    attn_bias: Float[Tensor, "pairs layers"] | None = None
    norm_bias: Float[Tensor, " pairs"] | None = None

    @property
    def constant(self) -> Float[Tensor, " pairs"]:
        """The terms no component carries: attention output biases and the final norm's
        bias (zero where the family has neither)."""
        out = torch.zeros_like(self.total)
        if self.attn_bias is not None:
            out = out + self.attn_bias.sum(1)
        if self.norm_bias is not None:
            out = out + self.norm_bias
        return out

    @property
    def has_constant(self) -> bool:
        """Whether any pair has a nonzero :attr:`constant` (a family with biases)."""
        return len(self.total) > 0 and bool(self.constant.abs().max() > 0)

    def to_dict(self) -> dict[str, Any]:
        """The file keeps means and 95% CIs over pairs, not the per-pair tensors."""
        hm, hci = ci95_over_pairs(self.heads)
        mm, mci = ci95_over_pairs(self.mlp)
        em, eci = ci95_over_pairs(self.embed)
        tm, tci = ci95_over_pairs(self.total)
        return {
            "convention": self.convention,
            "heads_mean": _nested(hm), "heads_ci95": _nested(hci),
            "mlp_mean": _nested(mm), "mlp_ci95": _nested(mci),
            "embed_mean": float(em), "embed_ci95": _nested(eci),
            "total_mean": float(tm), "total_ci95": _nested(tci),
            **self._constants(),
            "max_sum_error": self.max_sum_error,
        }

    def _constants(self) -> dict[str, Any]:
        """The bias terms' means and CIs, where the family has any (else no keys)."""
        if not self.has_constant:
            return {}
        out: dict[str, Any] = {}
        if self.attn_bias is not None:
            am, aci = ci95_over_pairs(self.attn_bias)
            out |= {"attn_bias_mean": _nested(am), "attn_bias_ci95": _nested(aci)}
        if self.norm_bias is not None:
            nm, nci = ci95_over_pairs(self.norm_bias)
            out |= {"norm_bias_mean": float(nm), "norm_bias_ci95": _nested(nci)}
        return out


def parse_heads(spec: str | None) -> list[int] | None:
    """``"3"`` or ``"1,4"`` → ``[1, 4]``; none or ``"all"`` → every head (``None``)."""
    if spec is None or spec.strip().lower() == "all":
        return None
    try:
        return [int(s.strip()) for s in spec.split(",")]
    except ValueError:
        raise InterpError(f"bad --head {spec!r}: use integers separated by commas, or 'all'"
                          ) from None


@dataclass(frozen=True)
class AttentionConfig(Config):
    """Which attention patterns :func:`~interp.circuits.attention.run_attention` reads.

    ``prompt`` is the input (the command's argument); ``seed`` is only recorded in the
    manifest (reading patterns draws nothing at random) and stays out of
    :meth:`~interp.schema.settings.Config.to_dict`.
    """

    prompt: str = setting(cli=False, help="The prompt whose attention patterns are read.")
    layer: int = setting(help="0-based layer (negative counts from the end).")
    heads: list[int] | None = setting(
        None, help="Heads to show, comma-separated (default: every head of the layer).",
        cli=Cli(flag="--head", parse=parse_heads, metavar="H[,H...]"))
    chat: bool = setting(False, help="Wrap the prompt in the model's chat template.")
    seed: int | None = setting(0, check=seed_range, cli=False, help="Recorded in the manifest.")

    transient: ClassVar[tuple[str, ...]] = ("seed",)


def top_keys(result: AttentionResult, index: int, query: int,
             k: int = 3) -> list[tuple[int, float]]:
    """The ``k`` keys query ``query`` of head ``result.heads[index]`` attends to most:
    ``(key position, weight)``, largest first (ties: the earlier key first)."""
    row = result.patterns[index, query, : query + 1].to(torch.float64)
    row = torch.nan_to_num(row, nan=-1.0)
    order = torch.argsort(row, descending=True, stable=True)[:k]
    return [(int(i), float(row[int(i)])) for i in order]


@dataclass
class AttentionResult(Result):
    """Attention patterns of one prompt at one layer: ``patterns[head, query, key]``."""

    config: AttentionConfig
    tokens: list[str]
    layer: int
    heads: list[int]
    patterns: Float[Tensor, "heads query key"]
    model_id: str

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = ("config", "model_id", "layer", "heads", "tokens",
                                             "patterns")

    def to_frame(self) -> pd.DataFrame:
        """Every weight, one row per (head, query, key) (the headline shows the last query's
        top keys only)."""
        import pandas as pd

        rows = []
        for i, h in enumerate(self.heads):
            for q in range(len(self.tokens)):
                for k in range(q + 1):
                    rows.append({"head": h, "query": q, "key": k,
                                 "query_token": self.tokens[q], "key_token": self.tokens[k],
                                 "weight": float(self.patterns[i, q, k])})
        return pd.DataFrame(rows)

    def headline(self) -> Headline:
        """Where the last token looks: each head's three most attended keys."""
        last = len(self.tokens) - 1
        table = []
        for i, h in enumerate(self.heads):
            cells: list[Any] = [h]
            for pos, w in top_keys(self, i, last, 3):
                cells += [f"{pos}:{visible_token(self.tokens[pos])}", w]
            table.append(cells + [""] * (7 - len(cells)))
        title = (f"attention · {self.model_id} · layer {self.layer} · where the last token "
                 f"{visible_token(self.tokens[last])!r} looks") if self.tokens else \
            f"attention · {self.model_id} · layer {self.layer}"
        return Headline(
            title=title, table_title=title,
            rows=[("model", self.model_id or "unknown"), ("layer", self.layer),
                  ("heads", ", ".join(map(str, self.heads))), ("tokens", len(self.tokens)),
                  ("chat template", "yes" if self.config.chat else "no")],
            columns=["head", "key 1", "weight", "key 2", "weight", "key 3", "weight"],
            table=table)

    def figure(self) -> Figure | None:
        """:func:`~interp.circuits.figures.attention_heatmap` of the first head (None: no heads)."""
        from interp.circuits.figures import attention_heatmap

        return attention_heatmap(self, 0) if self.heads else None


@dataclass
class PatchResult(Result):
    """Everything one patching run measured; ``to_dict()`` is ``results.json``."""

    config: PatchConfig
    task: TaskSummary
    family: str
    layers: list[int]
    positions: list[str] | None = field(metadata=json_meta(omit_none=True))
    heads: list[int] | None = field(metadata=json_meta(omit_none=True))
    baseline: float
    #: The methods' per-pair effects; the file holds their means (:meth:`extra_data`).
    exact: Effects | None = json_field(None, skip=True)
    atp: Effects | None = json_field(None, skip=True)
    atp_star: Effects | None = json_field(None, skip=True)
    agreement: list[Agreement] = field(default_factory=list)
    embed_effect: Float[Tensor, "pairs positions"] | None = json_field(None, skip=True)
    split_half: SplitHalf | None = json_field(None, omit_none=True)
    dla: DLAResult | None = json_field(None, omit_none=True)
    #: why DLA was not computed although asked for (a model it cannot decompose)
    dla_skipped: str | None = json_field(None, omit_none=True)
    #: The top heads' patterns, for the report (not in ``results.json``).
    attention: list[AttentionResult] = json_field(skip=True, default_factory=list)
    model_id: str = ""
    #: the primary method's top components per group of pairs (``config.group_by``)
    groups: GroupEffects | None = json_field(None, omit_none=True)

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (
        "config", "model_id", "task", "family", "method", "direction", "baseline", "layers",
        "positions", "heads", "effect_mean", "effect_ci95", "raw_effect_mean", "effect_method",
        "embed_effect", "embed_effect_ci95", ..., "agreement", "split_half", "groups", "dla",
        "dla_skipped", "top_components")

    @property
    def primary(self) -> Effects:
        """The exact effects when they were computed, else the approximation's."""
        for eff in (self.exact, self.atp, self.atp_star):
            if eff is not None:
                return eff
        raise ValueError("a PatchResult holds no effects")

    def component_names(self) -> list[str]:
        """Flat names of the components, in ``primary.mean.flatten()`` order."""
        names = []
        for layer in self.layers:
            if self.family == "heads":
                for h in self.heads or []:
                    if self.config.per_position:
                        names += [f"L{layer}H{h}@{p}" for p in self.positions or []]
                    else:
                        names.append(f"L{layer}H{h}")
            else:
                names += [f"{self.family}{layer}@{p}" for p in self.positions or []]
        return names

    def component(self, name: str) -> Component:
        """The component one of :meth:`component_names` (or ``to_frame()``'s ``component``)
        stands for: ``"L23H3"`` is layer 23, head 3; ``"resid6@END"`` is layer 6 at the
        position labelled ``END``. A name this result does not hold is an
        :class:`~interp.errors.InterpError`."""
        from interp.circuits.patching import components

        names = self.component_names()
        if name not in names:
            raise InterpError(f"{name!r} is not a component of this result (its names look "
                              f"like {names[0]!r})" if names else "this result has no components")
        return components(self.family, self.layers, len(self.heads or []),
                          len(self.positions or []), self.config.per_position)[names.index(name)]

    def top_components(
        self, k: int = 10, effects: Effects | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` components with the largest ``|effect - baseline|``, with their effect."""
        eff = (effects or self.primary).mean.flatten()
        order = torch.argsort((eff - self.baseline).abs(), descending=True)[:k]
        names = self.component_names()
        return [(names[int(i)], float(eff[int(i)])) for i in order]

    def top_heads(self, k: int = 4) -> list[tuple[int, int]]:
        """``(layer, head)`` of the ``k`` most important heads (``heads`` family only)."""
        if self.family != "heads":
            return []
        eff = self.primary.mean
        if eff.ndim == 3:  # per position: importance summed over positions
            score = (eff - self.baseline).abs().sum(-1)
        else:
            score = (eff - self.baseline).abs()
        order = torch.argsort(score.flatten(), descending=True)[:k]
        n_heads = score.shape[1]
        return [(self.layers[int(i) // n_heads], (self.heads or [])[int(i) % n_heads])
                for i in order]

    def extra_data(self) -> dict[str, Any]:
        """The effects' means and intervals, each method's time, the agreement with exact
        patching flattened to top-level keys, and the top components."""
        out: dict[str, Any] = {"method": self.config.method,
                               "direction": self.config.direction}
        main = self.primary
        out["effect_mean"] = _nested(main.mean)
        out["effect_ci95"] = _nested(main.ci95)
        out["raw_effect_mean"] = _nested(main.raw_mean)
        out["effect_method"] = main.method
        if self.embed_effect is not None:
            em, eci = ci95_over_pairs(self.embed_effect)
            out["embed_effect"] = _nested(em)
            out["embed_effect_ci95"] = _nested(eci)
        for name, eff in (("exact", self.exact), ("atp", self.atp), ("atp_star", self.atp_star)):
            if eff is not None:
                out[f"seconds_{name}"] = eff.seconds
                if eff is not main:
                    out[f"{name}_effect_mean"] = _nested(eff.mean)
        for agr in self.agreement:
            prefix = "" if agr.method == "atp" else "atp_star_"
            for key in ("spearman", "recall_at_10", "recall_at_30"):
                out[prefix + key] = getattr(agr, key)
                out[prefix + key + "_ci95"] = getattr(agr, key + "_ci95")
        out["top_components"] = [{"component": n, "effect": e}
                                 for n, e in self.top_components(10)]
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per component (all of them, not the headline's top 10): its mean effect
        and interval for every method run."""
        import pandas as pd

        names = self.component_names()
        df = pd.DataFrame({"component": names})
        for eff in (self.exact, self.atp, self.atp_star):
            if eff is None:
                continue
            df[f"{eff.method}_mean"] = eff.mean.flatten().numpy()
            ci = eff.ci95.reshape(-1, 2).numpy()
            df[f"{eff.method}_lo"], df[f"{eff.method}_hi"] = ci[:, 0], ci[:, 1]
        return df

    def headline(self) -> Headline:
        """The top 10 components by ``|effect − baseline|`` with their 95% CIs; the verdict
        is how well each approximation recovered exact patching, and DLA's closure."""
        main = self.primary
        names = self.component_names()
        index = {n: i for i, n in enumerate(names)}
        ci = main.ci95.reshape(-1, 2)
        table = []
        for name, effect in self.top_components(10):
            lo, hi = (float(x) for x in ci[index[name]])
            table.append([name, signed(effect), ci_text(lo, hi)])
        verdict = []
        for a in self.agreement:
            verdict.append(
                f"{a.method} vs exact: Spearman {a.spearman:.3f}, recall@10 "
                f"{a.recall_at_10:.2f}, recall@30 {a.recall_at_30:.2f}; "
                f"{a.seconds_exact:.1f} s exact, {a.seconds_approx:.1f} s {a.method}")
        if self.groups is not None:
            verdict.append(self.groups.verdict())
        if self.dla is not None:
            verdict.append(f"DLA: contributions sum to the logit difference within "
                           f"{self.dla.max_sum_error:.1e}")
        rows = self._facts()
        return Headline(
            title="Activation patching", rows=rows,
            table_title=(f"top components ({main.method}, {self.family}, "
                         f"{self.config.direction}; baseline {self.baseline:g}):"),
            columns=["component", "effect", "95% CI"], table=table,
            verdict="\n".join(verdict) or None)

    def _facts(self) -> list[tuple[str, object]]:
        """The run at a glance: model, task, what was patched and how, the pairs used and
        the clean and corrupted logit differences (95% CIs over pairs)."""
        from interp.circuits.figures import METHOD_LABELS, effect_ci, fmt_effect

        def ld(values: list[float]) -> str:
            mean, lo, hi = mean_ci(values)
            return f"{fmt_effect(mean)} {effect_ci(lo, hi)}"

        t = self.task
        methods = [e for e in (self.exact, self.atp, self.atp_star) if e is not None]
        per_position = self.config.per_position and self.family == "heads"
        return [
            ("model", self.model_id or "unknown"),
            ("task", t.name),
            ("family", self.family + (", per position" if per_position else "")),
            ("method", ", ".join(METHOD_LABELS.get(e.method, e.method) for e in methods)
             or "—"),
            ("direction", self.config.direction),
            ("pairs used", f"{t.n_used} of {t.n_read}"),
            ("left out", f"{t.n_left_out}" + (f" ({t.left_out_reason})" if t.n_left_out
                                              else "")),
            ("clean LD", ld(t.clean_ld)),
            ("corrupted LD", ld(t.corrupted_ld)),
        ]

    def figure(self) -> Figure | None:
        """:func:`~interp.circuits.figures.effect_heatmap` of the primary method."""
        from interp.circuits.figures import effect_heatmap

        return effect_heatmap(self)
