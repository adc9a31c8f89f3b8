"""ReLU + L1: the default architecture (the SAE itself is :class:`saes.sae.SparseAutoencoder`).

``f = ReLU(pre)`` trained on ``‖x − x̂‖² + λ · Σ_i f_i ‖W_dec[i]‖`` (the L1 penalty
weighted by decoder norms; see :mod:`saes.sae`). λ sets the sparsity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from interp.schema import Cli, positive, setting
from saes.architectures.base import Architecture, arch_name, register
from saes.sae import SparseAutoencoder


@register
@dataclass(frozen=True)
class ReLUConfig(Architecture):
    """Training settings of a ReLU + L1 SAE."""

    label: ClassVar[str] = "ReLU"
    summary: ClassVar[str] = "ReLU + L1"
    sae_class: ClassVar[type[SparseAutoencoder]] = SparseAutoencoder
    saelens: ClassVar[str] = "standard"
    order: ClassVar[int] = 0

    l1_coefficient: float = setting(5.0, check=positive,
                                    help="L1 coefficient λ (on inputs scaled to E‖x‖² = d)",
                                    cli=Cli(flag="--l1"))
    name: str = arch_name("relu")

    def coefficient(self) -> float:
        """λ of the L1 penalty (warmed up by the trainer)."""
        return float(self.l1_coefficient)
