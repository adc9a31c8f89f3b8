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
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from interp.display import result_html
from interp.stats.intervals import Z95, mean_ci

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


@dataclass
class PatchConfig:
    """What :func:`interp.circuits.run_patch` patches, how, and on which pairs."""

    task: str = "ioi"
    family: Family = "resid"
    method: Method = "exact"
    direction: Direction = "denoise"
    per_position: bool = False
    layers: list[int] | None = None
    limit: int | None = None
    batch_size: int = 16
    min_gap: float = 0.1
    n_boot: int = 1000
    seed: int = 0
    dla: bool = True
    top_heads: int = 4

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        d = asdict(self)
        for key in ("clean_ld", "corrupted_ld"):
            mean, lo, hi = mean_ci(np.asarray(d.pop(key), dtype=np.float64))
            d[f"{key}_mean"] = mean
            d[f"{key}_ci95"] = [lo, hi]
        return d


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
        return self.normalised.to(torch.float64).mean(0)

    @property
    def ci95(self) -> Float[Tensor, "layers ... 2"]:
        return ci95_over_pairs(self.normalised)[1]

    @property
    def raw_mean(self) -> Float[Tensor, "layers ..."]:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DLAResult:
    """Direct logit attribution of the clean runs' answer − wrong logit difference.

    Per pair: ``heads[pair, layer, head]``, ``mlp[pair, layer]`` and ``embed[pair]``
    sum to ``total[pair]`` (the model's own logit difference) up to float error;
    ``max_sum_error`` is the largest ``|sum - total|`` over pairs.
    """

    heads: Float[Tensor, "pairs layers heads"]
    mlp: Float[Tensor, "pairs layers"]
    embed: Float[Tensor, " pairs"]
    total: Float[Tensor, " pairs"]
    max_sum_error: float
    convention: str = DLA_CONVENTION

    def to_dict(self) -> dict[str, Any]:
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
            "max_sum_error": self.max_sum_error,
        }


@dataclass
class AttentionConfig:
    """Which attention patterns :func:`interp.circuits.run_attention` reads."""

    prompt: str
    layer: int
    heads: list[int] | None = None
    chat: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AttentionResult:
    """Attention patterns of one prompt at one layer: ``patterns[head, query, key]``."""

    config: AttentionConfig
    tokens: list[str]
    layer: int
    heads: list[int]
    patterns: Float[Tensor, "heads query key"]
    model_id: str
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "model_id": self.model_id,
            "layer": self.layer,
            "heads": self.heads,
            "tokens": self.tokens,
            "patterns": _nested(self.patterns),
        }

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for i, h in enumerate(self.heads):
            for q in range(len(self.tokens)):
                for k in range(q + 1):
                    rows.append({"head": h, "query": q, "key": k,
                                 "query_token": self.tokens[q], "key_token": self.tokens[k],
                                 "weight": float(self.patterns[i, q, k])})
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        return result_html(
            f"Attention patterns, layer {self.layer}",
            [("model", self.model_id), ("heads", ", ".join(map(str, self.heads))),
             ("tokens", len(self.tokens))],
        )


@dataclass
class PatchResult:
    """Everything one patching run measured; ``to_dict()`` is ``results.json``."""

    config: PatchConfig
    task: TaskSummary
    family: str
    layers: list[int]
    positions: list[str] | None
    heads: list[int] | None
    baseline: float
    exact: Effects | None = None
    atp: Effects | None = None
    atp_star: Effects | None = None
    agreement: list[Agreement] = field(default_factory=list)
    embed_effect: Float[Tensor, "pairs positions"] | None = None
    split_half: SplitHalf | None = None
    dla: DLAResult | None = None
    #: why DLA was not computed although asked for (a model it cannot decompose)
    dla_skipped: str | None = None
    attention: list[AttentionResult] = field(default_factory=list)
    model_id: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)

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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "config": self.config.to_dict(),
            "model_id": self.model_id,
            "task": self.task.to_dict(),
            "family": self.family,
            "method": self.config.method,
            "direction": self.config.direction,
            "baseline": self.baseline,
            "layers": self.layers,
        }
        if self.positions is not None:
            out["positions"] = self.positions
        if self.heads is not None:
            out["heads"] = self.heads
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
        out["agreement"] = [a.to_dict() for a in self.agreement]
        if self.split_half is not None:
            out["split_half"] = self.split_half.to_dict()
        if self.dla is not None:
            out["dla"] = self.dla.to_dict()
        if self.dla_skipped is not None:
            out["dla_skipped"] = self.dla_skipped
        out["top_components"] = [{"component": n, "effect": e} for n, e in self.top_components(10)]
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per component: its mean effect and interval for every method run."""
        names = self.component_names()
        df = pd.DataFrame({"component": names})
        for eff in (self.exact, self.atp, self.atp_star):
            if eff is None:
                continue
            df[f"{eff.method}_mean"] = eff.mean.flatten().numpy()
            ci = eff.ci95.reshape(-1, 2).numpy()
            df[f"{eff.method}_lo"], df[f"{eff.method}_hi"] = ci[:, 0], ci[:, 1]
        return df

    def _repr_html_(self) -> str:
        rows: list[tuple[str, object]] = [
            ("task", self.task.name), ("family", self.family),
            ("method", self.config.method), ("direction", self.config.direction),
            ("pairs used", f"{self.task.n_used} of {self.task.n_read}"),
        ]
        for a in self.agreement:
            rows.append((f"{a.method} Spearman vs exact", a.spearman))
            rows.append((f"{a.method} recall@10", a.recall_at_10))
        top = self.top_components(10)
        return result_html("Activation patching", rows, columns=["component", "effect"],
                           table=[[n, e] for n, e in top])
