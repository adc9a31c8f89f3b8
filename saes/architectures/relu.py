"""The ReLU SAE's training settings (the SAE itself is :class:`saes.sae.SparseAutoencoder`).

``f = ReLU(pre)`` trained on ``‖x − x̂‖² + λ · Σ_i f_i ‖W_dec[i]‖`` (the L1 penalty
weighted by decoder norms; see :mod:`saes.sae`). λ sets the sparsity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from interp.errors import InterpError


@dataclass
class ReLUConfig:
    """Training settings of a ReLU + L1 SAE."""

    l1_coefficient: float = 5.0
    name: str = field(default="relu", init=False)

    def validate(self, d_sae: int) -> None:
        v = self.l1_coefficient
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InterpError(f"--l1 must be a positive number, got {v}")

    def coefficient(self) -> float:
        """λ of the L1 penalty (warmed up by the trainer)."""
        return float(self.l1_coefficient)

    def sae_fields(self) -> dict[str, object]:
        return {"architecture": self.name}
