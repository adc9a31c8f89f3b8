"""The anatomy of a transformer block, per architecture family, read in one place.

A tool that reads weights or intervenes needs to know how a family builds its blocks:
which norm (RMS or Layer, with or without a bias, Gemma's ``(1 + w)`` gain) and where it
sits (before each sublayer, after it, or both), whether attention and the MLP read the
same residual (GPT-NeoX's parallel residual), whether q, k and v are one fused projection,
whether the MLP is gated, how positions enter (rotary, or learned and added to the
embeddings) and which logit caps apply. Each supported family is one registered
:class:`Family` naming those facts; the values that vary within a family (grouped KV
heads, the rotary share, softcaps, sliding windows) are read from the checkpoint's
config by :func:`anatomy`.

The facts are checked against each family's Hugging Face modules on a tiny random
checkpoint (``tests/unit/interp/test_families.py``), so a registration that says
"separate q, k, v" over a fused projection fails there.

Where this differs from TransformerLens: its bridge adapters map each family's modules to
hook names (used here through the bridge, unchanged); they do not expose the facts a
weight reader needs (norm placement, parallel residual, fused projections) as data, so
these are declared here, once, and tested against the modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from interp.errors import InterpError

#: A norm's kind: root-mean-square, Gemma's RMS with a ``(1 + w)`` gain, or LayerNorm.
NormKind = Literal["rms", "rms_1p", "layer"]
#: Where a block's norms sit: before each sublayer (``pre``), after it inside the residual
#: branch (``post``, OLMo-2), or both (``sandwich``, Gemma-2 and Gemma-3).
Placement = Literal["pre", "post", "sandwich"]


@dataclass(frozen=True)
class Family:
    """One architecture family: how its blocks are built (the facts tools read)."""

    #: Hugging Face's ``config.model_type``.
    model_type: str
    #: The family's usual name.
    label: str
    #: Models of the family that interpretability papers use.
    examples: str
    norm: NormKind
    #: The norms carry a bias (LayerNorm's ``β``).
    norm_bias: bool
    placement: Placement
    #: Attention and the MLP both read the block's input residual and add to it together.
    parallel: bool
    #: q, k and v come from one fused projection.
    fused_qkv: bool
    #: The attention projections carry biases.
    attn_bias: bool
    #: Per-head RMS norms on the queries and keys.
    qk_norm: bool
    #: How positions enter: rotary on q and k, or a learned table added to the embeddings.
    positions: Literal["rotary", "learned"]
    #: The MLP is gated (``act(gate) * up``).
    gated_mlp: bool
    #: The gate and up projections are one fused matrix.
    fused_gate_up: bool
    #: The direct path's hook points see the bridge's values to the bit. False where the
    #: bridge computes a piece itself instead of calling the Hugging Face module (GPT-2's
    #: LayerNorm: within 1e-6), so the direct path equals Hugging Face and the bridge is
    #: the one that differs.
    bridge_exact: bool = True


#: Every supported family, by ``model_type``.
FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` to :data:`FAMILIES` (one registration per ``model_type``)."""
    if family.model_type in FAMILIES:
        raise ValueError(f"family {family.model_type!r} is registered twice")
    FAMILIES[family.model_type] = family
    return family


_LLAMA_LIKE: dict[str, Any] = dict(
    norm="rms", norm_bias=False, placement="pre", parallel=False, fused_qkv=False,
    attn_bias=False, qk_norm=False, positions="rotary", gated_mlp=True, fused_gate_up=False)

register(Family("llama", "Llama", "Llama-3, SmolLM2 (circuit-tracer)", **_LLAMA_LIKE))
register(Family("mistral", "Mistral", "Mistral-7B (sliding-window attention)",
                **_LLAMA_LIKE))
register(Family("qwen2", "Qwen2", "Qwen2, Qwen2.5", **{**_LLAMA_LIKE, "attn_bias": True}))
register(Family("qwen3", "Qwen3", "Qwen3 (circuit-tracer)", **{**_LLAMA_LIKE, "qk_norm": True}))
register(Family("gemma2", "Gemma-2", "Gemma-2 (Gemma Scope, circuit-tracer)",
                **{**_LLAMA_LIKE, "norm": "rms_1p", "placement": "sandwich"}))
register(Family("gemma3_text", "Gemma-3", "Gemma-3 (Gemma Scope 2)",
                **{**_LLAMA_LIKE, "norm": "rms_1p", "placement": "sandwich",
                   "qk_norm": True}))
register(Family("gpt2", "GPT-2", "GPT-2 small (IOI)", norm="layer", norm_bias=True,
                placement="pre", parallel=False, fused_qkv=True, attn_bias=True,
                qk_norm=False, positions="learned", gated_mlp=False, fused_gate_up=False,
                bridge_exact=False))
register(Family("gpt_neox", "GPT-NeoX", "Pythia (SAEBench)", norm="layer", norm_bias=True,
                placement="pre", parallel=True, fused_qkv=True, attn_bias=True,
                qk_norm=False, positions="rotary", gated_mlp=False, fused_gate_up=False))
register(Family("phi3", "Phi-3", "Phi-3", **{**_LLAMA_LIKE, "fused_qkv": True,
                                              "fused_gate_up": True}))
register(Family("olmo2", "OLMo-2", "OLMo-2", **{**_LLAMA_LIKE, "placement": "post",
                                                "qk_norm": True}))


def family_of(config: Any) -> Family:
    """The registered family of a Hugging Face config; an unknown one is refused in one line
    naming the supported families."""
    model_type = getattr(config, "model_type", None)
    family = FAMILIES.get(str(model_type))
    if family is None:
        raise InterpError(f"architecture {model_type!r} is not supported; supported: "
                          f"{', '.join(sorted(FAMILIES))}")
    return family


@dataclass(frozen=True)
class Anatomy:
    """A checkpoint's blocks: its :class:`Family` and the values its config sets."""

    family: Family
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    #: The share of each head's dimensions that rotary embeddings turn (0 without rotary).
    rotary_share: float
    #: The attention window of each layer (None: the whole context).
    windows: tuple[int | None, ...]
    #: ``cap · tanh(x / cap)`` on the attention scores and on the final logits (None: none).
    attn_softcap: float | None
    logit_softcap: float | None
    #: The unembedding is the embedding matrix.
    tied_embeddings: bool


def _get(config: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def _rotary_share(config: Any, family: Family) -> float:
    if family.positions != "rotary":
        return 0.0
    rope = _get(config, "rope_parameters", "rope_scaling", default={}) or {}
    share = rope.get("partial_rotary_factor") if isinstance(rope, dict) else None
    share = _get(config, "partial_rotary_factor", "rotary_pct", default=share)
    return 1.0 if share is None else float(share)


def _windows(config: Any, n_layers: int) -> tuple[int | None, ...]:
    window = _get(config, "sliding_window")
    if window is None or getattr(config, "use_sliding_window", True) is False:
        return (None,) * n_layers
    types = getattr(config, "layer_types", None)
    if types is None:
        return (int(window),) * n_layers
    return tuple(int(window) if t == "sliding_attention" else None for t in types)


def anatomy(config: Any) -> Anatomy:
    """The :class:`Anatomy` of a checkpoint from its Hugging Face config."""
    family = family_of(config)
    n_layers = int(_get(config, "num_hidden_layers", "n_layer"))
    d_model = int(_get(config, "hidden_size", "n_embd"))
    n_heads = int(_get(config, "num_attention_heads", "n_head"))
    return Anatomy(
        family=family, n_layers=n_layers, d_model=d_model, n_heads=n_heads,
        n_kv_heads=int(_get(config, "num_key_value_heads", default=n_heads)),
        d_head=int(_get(config, "head_dim", default=d_model // n_heads)),
        rotary_share=_rotary_share(config, family), windows=_windows(config, n_layers),
        attn_softcap=_get(config, "attn_logit_softcapping"),
        logit_softcap=_get(config, "final_logit_softcapping"),
        tied_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
    )


__all__ = ["FAMILIES", "Anatomy", "Family", "NormKind", "Placement", "anatomy", "family_of",
           "register"]
