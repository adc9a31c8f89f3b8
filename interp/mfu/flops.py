"""FLOPs of the work a run does, counted from shapes (no tracing, no hardware counters).

Counting convention: a matmul ``[m, k] @ [k, n]`` is ``2·m·k·n`` FLOPs; element-wise work,
norms and softmaxes are left out (they are memory-bound and a few percent of the total).
These are the matmuls *performed*, as ``torch.utils.flop_counter.FlopCounterMode`` counts
them (``tests/unit/interp/test_mfu.py`` checks the forward count against it exactly), so:

* a forward pass over ``tokens`` tokens in windows of ``context`` is
  ``2·N·tokens + 4·L·H·d_head·context·tokens + 2·d_model·d_vocab·logit_tokens``, with
  ``N`` the parameters of the blocks' weight matrices (embeddings excluded: a lookup is
  not a matmul) and the attention term at the full window (causal masking does not skip
  the masked half of ``QKᵀ`` in the kernels we run). This is PaLM's MFU count (Chowdhery
  et al. 2022, appendix B) split into its parts.
* a backward pass is counted by its matmuls too: ``2×`` the forward for a layer whose
  input needs a gradient, ``1×`` (the weight gradient only) for the first trained layer
  (its input is data), ``1×`` (the input gradient only) for a frozen layer that gradients
  flow through. The usual "backward ≈ 2× forward" is the first case.

:func:`mfu` divides the FLOPs by what the peak would need: the sum of each part's FLOPs
over the peak of the dtype it ran in (a tuned lens runs its unembedding in bfloat16).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interp.models.loading import Model


@dataclass(frozen=True)
class ModelShape:
    """What a FLOP count needs to know of a transformer."""

    n_layers: int
    d_model: int
    n_heads: int
    d_head: int
    d_vocab: int
    layer_params: tuple[int, ...]  # weight-matrix parameters of each block

    @classmethod
    def of(cls, model: Model) -> ModelShape:
        """Read a loaded model: the config's sizes and each block's weight matrices."""
        cfg = model.bridge.cfg
        per_layer = []
        for block in model.bridge.blocks:
            seen: dict[int, int] = {}
            for p in block.parameters():
                if p.dim() == 2:
                    seen[p.data_ptr()] = p.numel()  # a bridge may show a weight twice
            per_layer.append(sum(seen.values()))
        return cls(n_layers=int(cfg.n_layers), d_model=int(cfg.d_model),
                   n_heads=int(cfg.n_heads), d_head=int(cfg.d_head),
                   d_vocab=int(cfg.d_vocab), layer_params=tuple(per_layer))

    @property
    def non_embedding_params(self) -> int:
        """Weight-matrix parameters of all blocks (embedding and unembedding excluded): the N of
        2·N·tokens."""
        return sum(self.layer_params)


def forward_flops(
    shape: ModelShape, tokens: int, context: int, *, layers: int | None = None,
    logit_tokens: int | None = None,
) -> float:
    """FLOPs of a forward pass over ``tokens`` tokens in windows of ``context`` tokens.

    ``layers`` stops after that many blocks (a capture that stops at its hook point);
    ``logit_tokens`` is how many positions are unembedded (default: all of them when every
    layer runs, none otherwise).
    """
    n = shape.n_layers if layers is None else max(0, min(int(layers), shape.n_layers))
    if logit_tokens is None:
        logit_tokens = tokens if n == shape.n_layers else 0
    matrices = 2.0 * sum(shape.layer_params[:n]) * tokens
    attention = 4.0 * n * shape.n_heads * shape.d_head * context * tokens
    unembed = 2.0 * shape.d_model * shape.d_vocab * logit_tokens
    return matrices + attention + unembed


def sae_step_flops(d_in: int, d_sae: int, tokens: int, *, k: int | None = None,
                   aux_k: int = 0, centred: bool = True, skip: bool = False) -> float:
    """One training step of an SAE (or transcoder) on ``tokens`` rows: the FLOPs the step
    needs, counted per matmul of ``2·d_in·width`` per token.

    Dense (``k`` None): encoder and decoder forward, both weight gradients and the decoder's
    input gradient, plus the encoder's input gradient when it reads ``x − b_dec``
    (``centred``: the decoder bias's gradient): six matmuls of width ``d_sae``, five
    without centring. TopK (``k`` latents per token, :mod:`saes.architectures.topk`): the
    encoder's forward stays dense (it chooses the k); the rest touches only the k active
    latents (the encoder's weight gradient, the decoder's forward, weight and input
    gradients: four matmuls of width ``k``), and AuxK, while ``aux_k`` dead latents train,
    four more of width ``aux_k``. Counting a TopK step as dense overstated its work by
    ``d_sae / k`` and printed MFUs above 100%. ``skip``: a transcoder's ``d_in × d_in`` skip
    path, forward and weight gradient.
    """
    per_width = 2.0 * d_in * tokens
    if k is None:
        flops = (6 if centred else 5) * per_width * d_sae
    else:
        flops = per_width * d_sae + 4 * per_width * (k + aux_k)
    return flops + (2 * per_width * d_in if skip else 0.0)


def tuned_lens_step_flops(shape: ModelShape, n_translators: int,
                          positions: int) -> tuple[float, float]:
    """The lens's own FLOPs at ``positions`` sampled positions: ``(translators, unembedding)``.

    Per position and translator: the ``d×d`` translator forward and its weight gradient
    (its input is a detached residual), and the unembedding forward and its input gradient
    (the unembedding is frozen). The model's forward is counted apart
    (:func:`forward_flops`); the two parts are returned apart because the unembedding may
    run in another dtype.
    """
    per = positions * n_translators
    translators = 2 * 2.0 * shape.d_model * shape.d_model * per
    unembed = 2 * 2.0 * shape.d_model * shape.d_vocab * per
    return translators, unembed


@dataclass
class Work:
    """FLOPs by dtype, accumulated over a run (``add``), with the seconds they took."""

    flops: dict[str, float]

    def __init__(self, flops: Mapping[str, float] | None = None) -> None:
        self.flops = dict(flops or {})

    def add(self, dtype: str, flops: float) -> None:
        """Count ``flops`` more FLOPs done in ``dtype``."""
        self.flops[dtype] = self.flops.get(dtype, 0.0) + float(flops)

    @property
    def total(self) -> float:
        """FLOPs over every dtype."""
        return sum(self.flops.values())

    def ideal_seconds(self, peaks: Mapping[str, float]) -> float:
        """Seconds the work would take at the peak of each dtype."""
        return sum(f / peaks[d] for d, f in self.flops.items() if f)

    def effective_peak(self, peaks: Mapping[str, float]) -> float | None:
        """The one peak that gives the same MFU as the per-dtype peaks."""
        ideal = self.ideal_seconds(peaks)
        return self.total / ideal if ideal > 0 else None

    def summary(self, seconds: float, peaks: Mapping[str, float] | None,
                tokens: int) -> dict[str, Any]:
        """``tokens_per_s``, ``flops``, ``peak_flops`` and ``mfu`` for a results file."""
        out: dict[str, Any] = {
            "tokens_per_s": tokens / seconds if seconds > 0 else 0.0,
            "flops": self.total, "flops_by_dtype": dict(self.flops),
            "peak_flops": None, "mfu": None,
        }
        if peaks and all(d in peaks for d in self.flops):
            out["peak_flops"] = self.effective_peak(peaks)
            out["mfu"] = mfu(self.total, seconds, out["peak_flops"])
        return out


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation: achieved FLOP/s over the peak (``None`` without a peak)."""
    if not peak or seconds <= 0:
        return None
    return flops / seconds / peak


def format_rate(summary: Mapping[str, Any]) -> str:
    """``"12.3k tok/s  MFU 4.1%"`` for a progress bar."""
    rate = float(summary.get("tokens_per_s") or 0.0)
    text = f"{rate / 1000:.1f}k tok/s" if rate >= 1000 else f"{rate:.0f} tok/s"
    if summary.get("mfu") is not None:
        text += f"  MFU {100 * float(summary['mfu']):.1f}%"
    return text

