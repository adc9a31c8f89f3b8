"""A transcoder: the MLP's input (the normalised residual that feeds it) → the MLP's output.

For an MLP input ``x`` and output ``y`` (both of width ``d_model``)::

    f  = σ(x·W_enc + b_enc)                      W_enc [d_in, d_sae]
    ŷ  = f·W_dec + b_dec  (+ x·W_skip)           W_dec [d_sae, d_in], W_skip [d_in, d_in]

σ is any SAE architecture's activation (:mod:`saes.architectures`: ReLU + L1, TopK,
BatchTopK, JumpReLU), and so is the training loss, with the MLP output as the target in
place of the input. A *skip transcoder* (Paulo et al. 2025) adds the linear path
``W_skip`` from the input (zero at the start of training).

**Why in** :mod:`saes`. A transcoder is an SAE whose reconstruction target is another
activation: the architectures, the training loop (resume, dead latents, several layers from
one pass), the artifact format and the metrics are the SAE family's, so the class is the
architecture's SAE class with :class:`TranscoderMixin` in front (:func:`transcoder_class`),
not a parallel hierarchy. Unlike an SAE's, the encoder does not subtract ``b_dec`` (it lives
in the output space): ``pre = x·W_enc + b_enc``, as in circuit-tracer and sparsify.

**Scales.** Training multiplies the input by ``input_scale`` and the output by
``output_scale`` (each making ``E‖·‖² = d_model``); when training ends both are folded into
the weights (:meth:`TranscoderMixin.fold_input_scale`), so a saved transcoder takes and
gives raw activations.

**Files.** An :mod:`interp.runs.artifacts` folder of kind ``"transcoder"``: tensors
``W_enc``, ``b_enc``, ``W_dec``, ``b_dec``, the architecture's own (``threshold``) and
``W_skip`` for a skip transcoder; ``config.json``'s ``"transcoder"`` entry is
:class:`TranscoderConfig`. See ``docs/tools/transcoders.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, cast

import torch
from jaxtyping import Float
from torch import Tensor, nn

from interp.schema import positive, setting
from saes.sae import SAEConfig, SparseAutoencoder

KIND = "transcoder"


@dataclass(frozen=True)
class TranscoderConfig(SAEConfig):
    """What a transcoder is: :class:`~saes.sae.SAEConfig` (``hook_point`` is the MLP's input,
    ``blocks.L.mlp.hook_in``) plus where its output goes and whether it has a skip path."""

    output_hook: str = setting("", help="The hook point whose activation it reconstructs "
                                        "(blocks.L.hook_mlp_out).")
    output_scale: float = setting(1.0, check=positive,
                                  help="Multiplies raw MLP outputs in training (1.0 once "
                                       "folded).")
    skip: bool = setting(False, help="A linear skip path W_skip from the input (a skip "
                                     "transcoder).")

    def model_class(self) -> type[SparseAutoencoder]:
        """The architecture's SAE class as a transcoder (:func:`transcoder_class`)."""
        return transcoder_class(super().model_class())


class TranscoderMixin:
    """Put in front of an architecture's SAE class (:func:`transcoder_class`): a training
    row is ``[input | target]``, the encoder reads the input without centring, the decoder
    writes the target, plus the skip path."""

    artifact_kind: ClassVar[str] = KIND
    #: The encoder reads the input uncentred (:meth:`pre_acts`).
    centred_encoder: ClassVar[bool] = False
    cfg: TranscoderConfig
    W_enc: nn.Parameter
    b_enc: nn.Parameter
    W_dec: nn.Parameter
    b_dec: nn.Parameter

    def __init__(self, cfg: TranscoderConfig, train: Any = None) -> None:
        super().__init__(cfg, train)  # type: ignore[call-arg]
        d = cfg.d_in
        self.W_skip: nn.Parameter | None = (
            nn.Parameter(torch.zeros(d, d)) if cfg.skip else None)

    # ---- training batch -----------------------------------------------------------
    def split(self, x: Float[Tensor, "n two_d"]) -> tuple[Tensor, Tensor]:
        """``[input | target]`` rows as (input, target)."""
        d = self.cfg.d_in
        return x[:, :d], x[:, d:]

    def pre_acts(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_sae"]:
        """``x·W_enc + b_enc`` of already-scaled ``x`` (no centring: ``b_dec`` is an output)."""
        return x @ self.W_enc + self.b_enc

    def encoder_offset(self) -> Float[Tensor, " d_sae"]:
        """``b_enc``."""
        return self.b_enc

    @property
    def has_skip(self) -> bool:
        """Whether it has the skip path ``W_skip``."""
        return self.W_skip is not None

    def skip_out(self, x: Float[Tensor, "n d_in"]) -> Tensor | float:
        """``x·W_skip`` (scaled units), or nothing without a skip path."""
        return 0.0 if self.W_skip is None else x @ self.W_skip

    # ---- inference ------------------------------------------------------------------
    def decode(self, f: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_in"]:
        """``f·W_dec + b_dec`` in raw output units (without the skip path)."""
        y = f @ self.W_dec + self.b_dec
        return y / self.cfg.output_scale if self.cfg.output_scale != 1.0 else y

    def skip(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_in"] | float:
        """The skip path's output for raw input ``x`` (0 without one)."""
        if self.W_skip is None:
            return 0.0
        return x * (self.cfg.input_scale / self.cfg.output_scale) @ self.W_skip

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_in"]:
        """The MLP output it predicts from raw MLP input ``x``: decode(encode(x)) + skip."""
        encode = cast(Any, self).encode
        return self.decode(encode(x)) + self.skip(x)

    # ---- scales, files ------------------------------------------------------------------
    def set_scales(self, scale: float | list[float]) -> None:
        """Record the input and output scales training used."""
        c_in, c_out = (scale if isinstance(scale, list) else [scale, scale])
        self.cfg = self.cfg.replace(input_scale=float(c_in), output_scale=float(c_out))

    @torch.no_grad()
    def fold_input_scale(self) -> None:
        """Fold both scales into the weights: ``W_enc ← c_in·W_enc``, ``W_dec, b_dec ← ·/c_out``,
        ``W_skip ← (c_in/c_out)·W_skip``; the outputs are unchanged and both scales are 1."""
        c_in, c_out = self.cfg.input_scale, self.cfg.output_scale
        self.W_enc.mul_(c_in)
        self.W_dec.div_(c_out)
        self.b_dec.div_(c_out)
        if self.W_skip is not None:
            self.W_skip.mul_(c_in / c_out)
        self.cfg = self.cfg.replace(input_scale=1.0, output_scale=1.0)

    def state_tensors(self) -> dict[str, Tensor]:
        """The architecture's state tensors and ``W_skip``."""
        own = cast(Any, super()).state_tensors()
        return {**own, **({"W_skip": self.W_skip} if self.W_skip is not None else {})}

    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        """Set the architecture's state tensors and ``W_skip``."""
        cast(Any, super()).load_state_tensors(
            {k: v for k, v in tensors.items() if k != "W_skip"})
        if self.W_skip is not None:
            with torch.no_grad():
                self.W_skip.copy_(tensors["W_skip"].float())


@cache
def transcoder_class(sae_class: type[SparseAutoencoder]) -> type[SparseAutoencoder]:
    """``sae_class`` (an architecture's SAE class) as a transcoder: the same activation and
    loss, with :class:`TranscoderMixin`'s input, target, skip path and files."""
    name = sae_class.__name__.replace("SAE", "") + "Transcoder"
    return cast(type[SparseAutoencoder], type(name, (TranscoderMixin, sae_class), {
        "__doc__": f"A {sae_class.__name__} as a transcoder (see :mod:`saes.transcoders.model`).",
        "__module__": __name__}))


def is_transcoder(model: object) -> bool:
    """Whether ``model`` is a transcoder (any architecture)."""
    return isinstance(model, TranscoderMixin)


__all__ = ["KIND", "TranscoderConfig", "TranscoderMixin", "is_transcoder",
           "transcoder_class"]
