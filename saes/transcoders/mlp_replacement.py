"""What replaces a model's MLPs, as the attribution graph and the evaluation read it:
per-layer transcoders (:class:`~saes.transcoders.files.TranscoderSet`) or one cross-layer
transcoder (:class:`CLTReplacement`), behind one interface, :class:`MLPReplacement`.

Layers are block numbers. A *source* layer has features, which read that layer's input (the
MLP's normalised input, or the residual stream the MLP's norm reads:
:meth:`~saes.transcoders.mlp_replacement.MLPReplacement.reads_normed`) and write to one or
more *output* layers' MLP outputs
(:meth:`~saes.transcoders.mlp_replacement.MLPReplacement.targets`): per-layer transcoders
write to their own layer only; a cross-layer transcoder's features write to their layer and
every later one it covers. Everything is in raw activation units (the training scales
applied).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from saes.transcoders.crosslayer import CrossLayerTranscoder, check_clt_model


class MLPReplacement(ABC):
    """Features that stand in for the MLPs (see the module doc)."""

    source: str = ""
    format: str = "interp"

    # ---- shape --------------------------------------------------------------------------
    @property
    @abstractmethod
    def layers(self) -> list[int]:
        """The source layers (blocks whose features read there), increasing."""

    @property
    def out_layers(self) -> list[int]:
        """The layers whose MLP output it predicts, increasing."""
        return sorted({t for layer in self.layers for t in self.targets(layer)})

    @abstractmethod
    def targets(self, layer: int) -> list[int]:
        """The layers layer ``layer``'s features write to."""

    @abstractmethod
    def d_sae(self, layer: int) -> int:
        """Features at ``layer``."""

    @abstractmethod
    def reads_normed(self, layer: int) -> bool:
        """Whether ``layer``'s features (and its skip path) read the MLP's normalised input
        (``mlp.hook_in``) rather than the residual stream the MLP's norm reads."""

    # ---- encoder ------------------------------------------------------------------------
    @abstractmethod
    def encode(self, layer: int, x: Float[Tensor, "... d"]) -> Float[Tensor, "... m"]:
        """``layer``'s feature activations from its raw input."""

    @abstractmethod
    def encoder(self, layer: int) -> Float[Tensor, "d m"]:
        """``W`` with pre-activation ``x·W + c`` of the raw input ``x``."""

    # ---- decoder ------------------------------------------------------------------------
    @abstractmethod
    def decoder(self, src: int, tgt: int) -> Float[Tensor, "m d"]:
        """What ``src``'s features write into layer ``tgt``'s MLP output, per unit of
        activation."""

    @abstractmethod
    def bias(self, tgt: int) -> Float[Tensor, " d"] | None:
        """The constant it adds to layer ``tgt``'s MLP output (its decoder bias)."""

    @abstractmethod
    def skip_matrix(self, tgt: int) -> Float[Tensor, "d d"] | None:
        """Layer ``tgt``'s skip path as ``x ↦ x·M`` of its raw input (None without one)."""

    def output(self, tgt: int, feats: Mapping[int, Tensor], x: Tensor) -> Tensor:
        """Layer ``tgt``'s predicted MLP output from the features of every source layer
        writing there (``feats``, by layer) and ``tgt``'s own input ``x`` (for the skip
        path)."""
        out: Tensor | None = None
        for src in self.layers:
            if src in feats and tgt in self.targets(src):
                part = feats[src] @ self.decoder(src, tgt)
                out = part if out is None else out + part
        if out is None:
            out = torch.zeros_like(x)
        b = self.bias(tgt)
        if b is not None:
            out = out + b
        m = self.skip_matrix(tgt)
        return out if m is None else out + x @ m

    def input_hook(self, layer: int, parallel: bool = False) -> str:
        """The hook point ``layer``'s features read: ``mlp.hook_in``, or the residual the
        MLP's norm reads (``hook_resid_mid``; ``hook_resid_pre`` where attention and the MLP
        run in ``parallel``)."""
        if self.reads_normed(layer):
            return f"blocks.{layer}.mlp.hook_in"
        return f"blocks.{layer}." + ("hook_resid_pre" if parallel else "hook_resid_mid")

    # ---- controls, provenance -----------------------------------------------------------
    @abstractmethod
    def shuffled(self, generator: torch.Generator) -> MLPReplacement:
        """A copy whose decoder rows are permuted across each source layer's features
        (encoders, biases, thresholds and skip paths kept): the graph's control."""

    @abstractmethod
    def check_model(self, model: Any) -> None:
        """Refuse (one line) features that do not fit ``model``."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Where it came from and its settings (for results.json)."""

    @property
    def kind(self) -> str:
        """"per-layer" or "cross-layer"."""
        return "per-layer"

    def __contains__(self, layer: object) -> bool:
        return layer in self.layers

    def __iter__(self) -> Iterator[int]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)


@dataclass
class CLTReplacement(MLPReplacement):
    """One cross-layer transcoder as the MLPs' replacement."""

    clt: CrossLayerTranscoder
    source: str = ""
    format: str = "interp"
    path: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """"cross-layer"."""
        return "cross-layer"

    @property
    def layers(self) -> list[int]:
        """The blocks the CLT covers."""
        return list(self.clt.cfg.layers)

    def targets(self, layer: int) -> list[int]:
        """``layer`` and every later covered layer (those within its reach)."""
        i = self.clt.index(layer)
        return list(self.clt.cfg.layers[i:i + self.clt.cfg.span(i)])

    def d_sae(self, layer: int) -> int:
        """Features per layer."""
        return self.clt.cfg.d_sae

    def reads_normed(self, layer: int) -> bool:
        """Whether the CLT reads ``mlp.hook_in`` (else the residual before the norm)."""
        return self.clt.cfg.reads == "mlp_in"

    def encode(self, layer: int, x: Tensor) -> Tensor:
        """Layer ``layer``'s activations."""
        return self.clt.encode_layer(self.clt.index(layer), x)

    def encoder(self, layer: int) -> Tensor:
        """``W_enc[i]`` with the input scale applied."""
        i = self.clt.index(layer)
        scaled = bool(self.clt.cfg.input_scales)
        return self.clt.W_enc[i] * self.clt._in_scale()[i] if scaled else self.clt.W_enc[i]

    def decoder(self, src: int, tgt: int) -> Tensor:
        """:meth:`~saes.transcoders.crosslayer.CrossLayerTranscoder.decoder` by block numbers."""
        return self.clt.decoder(self.clt.index(src), self.clt.index(tgt))

    def bias(self, tgt: int) -> Tensor:
        """``b_dec`` at ``tgt`` (raw units)."""
        j = self.clt.index(tgt)
        return self.clt.b_dec[j] / self.clt._out_scale()[j]

    def skip_matrix(self, tgt: int) -> Tensor | None:
        """Layer ``tgt``'s skip path."""
        return self.clt.skip_matrix(self.clt.index(tgt))

    def shuffled(self, generator: torch.Generator) -> CLTReplacement:
        """Each layer's features' decoder blocks permuted across its features."""
        c = copy.deepcopy(self.clt)
        with torch.no_grad():
            for w in c.W_dec:
                w.copy_(w[torch.randperm(w.shape[0], generator=generator)].clone())
        return CLTReplacement(c, self.source, self.format, self.path, self.manifest)

    def check_model(self, model: Any) -> None:
        """:func:`~saes.transcoders.crosslayer.check_clt_model`."""
        check_clt_model(self.clt, model)

    def to_dict(self) -> dict[str, Any]:
        """Source, format, kind, layers and the CLT's settings."""
        return {"source": self.source, "format": self.format, "kind": self.kind,
                "layers": self.layers, "clt": {**self.clt.cfg.to_dict(), "path": self.path}}


__all__ = ["CLTReplacement", "MLPReplacement"]
