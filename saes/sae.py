"""The sparse autoencoder itself: parameters, encode/decode, loss, save and load.

For an activation ``x`` of width ``d_in`` and a dictionary of ``d_sae`` directions::

    f  = ReLU((x − b_dec) · W_enc + b_enc)          W_enc [d_in, d_sae]
    x̂  = f · W_dec + b_dec                          W_dec [d_sae, d_in]
    loss = ‖x − x̂‖² + λ · Σ_i f_i · ‖W_dec[i]‖      (per token, averaged over the batch)

The tensor names and shapes are SAELens's "standard" SAE, so export is a copy.

**Decoder norm.** The decoder rows are *not* constrained to unit norm; instead the L1
penalty is weighted by each row's norm (Anthropic's April 2024 update to *Towards
Monosemanticity*). The penalty is then invariant to rescaling a feature (``f_i → c f_i``,
``W_dec[i] → W_dec[i]/c``), so the optimiser cannot shrink it by inflating decoder rows,
and no projection step is needed after each Adam update. Reported feature activations
``f_i`` are therefore not in "unit-decoder" units: multiply by ``‖W_dec[i]‖`` for the size
of feature i's contribution to ``x̂`` (the browser does).

**Input scaling.** Training divides activations by a constant ``scale`` so that
``E‖x‖² = d_in`` (SAELens's ``expected_average_only_in``): λ then means the same at every
layer and model. When training ends the scale is folded into the weights
(:meth:`SparseAutoencoder.fold_input_scale`), so a saved SAE takes raw activations and
``f`` is unchanged by the fold.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor, nn

from interp.errors import InterpError

KIND = "sae"


@dataclass
class SAEConfig:
    """What an SAE is: its widths and where in which model it reads.

    ``input_scale`` multiplies raw activations before the encoder (1.0 once folded).
    """

    d_in: int
    d_sae: int
    hook_point: str
    layer: int | None = None
    model_id: str = ""
    input_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("d_in", "d_sae"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InterpError(f"{name} must be a positive integer, got {v!r}")
        if not math.isfinite(self.input_scale) or self.input_scale <= 0:
            raise InterpError(f"input scale must be a positive number, got {self.input_scale}")


class SparseAutoencoder(nn.Module):
    """A ReLU SAE with an L1 penalty weighted by decoder-row norms (see module doc)."""

    def __init__(self, cfg: SAEConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d, m = cfg.d_in, cfg.d_sae
        self.W_enc = nn.Parameter(torch.zeros(d, m))
        self.b_enc = nn.Parameter(torch.zeros(m))
        self.W_dec = nn.Parameter(torch.zeros(m, d))
        self.b_dec = nn.Parameter(torch.zeros(d))

    # ---- init ---------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self, generator: torch.Generator, dec_norm: float = 0.1) -> None:
        """Decoder rows in random directions with norm ``dec_norm``; ``W_enc = W_decᵀ``.

        Anthropic's update initialises this way (tied at the start, untied after); the
        biases start at zero. Call :meth:`init_b_dec` with data for the decoder bias.
        """
        w = torch.randn(self.cfg.d_sae, self.cfg.d_in, generator=generator)
        w = w / w.norm(dim=1, keepdim=True) * dec_norm
        self.W_dec.copy_(w)
        self.W_enc.copy_(w.T)
        self.b_enc.zero_()
        self.b_dec.zero_()

    @torch.no_grad()
    def init_b_dec(self, x: Float[Tensor, "n d_in"]) -> None:
        """Set ``b_dec`` to the mean of (scaled) activations ``x``."""
        self.b_dec.copy_(x.mean(0))

    # ---- forward ------------------------------------------------------------------
    def encode(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_sae"]:
        """Feature activations ``f`` of raw activations ``x`` (applies ``input_scale``)."""
        x = x * self.cfg.input_scale if self.cfg.input_scale != 1.0 else x
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def decode(self, f: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_in"]:
        """Reconstruction in raw activation units (undoes ``input_scale``)."""
        x_hat = f @ self.W_dec + self.b_dec
        return x_hat / self.cfg.input_scale if self.cfg.input_scale != 1.0 else x_hat

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_in"]:
        """``decode(encode(x))``."""
        return self.decode(self.encode(x))

    def loss(
        self, x: Float[Tensor, "n d_in"], l1_coefficient: float
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Training loss on already-scaled ``x`` (``input_scale`` is *not* applied here).

        Returns the loss and detached parts: ``mse`` (‖x − x̂‖² per token), ``l1``
        (Σ f·‖W_dec‖ per token), ``l0`` (active features per token) and ``f`` itself.
        """
        f = torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        x_hat = f @ self.W_dec + self.b_dec
        mse = (x_hat - x).pow(2).sum(-1).mean()
        l1 = (f * self.W_dec.norm(dim=1)).sum(-1).mean()
        loss = mse + l1_coefficient * l1
        return loss, {"mse": mse.detach(), "l1": l1.detach(),
                      "l0": (f > 0).float().sum(-1).mean().detach(), "f": f.detach()}

    @torch.no_grad()
    def fold_input_scale(self) -> None:
        """Fold ``input_scale`` c into the weights so the SAE takes raw activations.

        ``W_enc ← c·W_enc``, ``b_dec ← b_dec/c``, ``W_dec ← W_dec/c``: ``f`` is unchanged and
        ``x̂`` comes out in raw units. Afterwards ``input_scale`` is 1.
        """
        c = self.cfg.input_scale
        if c == 1.0:
            return
        self.W_enc.mul_(c)
        self.b_dec.div_(c)
        self.W_dec.div_(c)
        self.cfg.input_scale = 1.0

    # ---- files --------------------------------------------------------------------
    def tensors(self) -> dict[str, Tensor]:
        return {"W_enc": self.W_enc.detach(), "b_enc": self.b_enc.detach(),
                "W_dec": self.W_dec.detach(), "b_dec": self.b_dec.detach()}

    def save(
        self, path: str | Path, *, d_model: int | None = None,
        manifest: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
    ) -> Path:
        """Save as an :mod:`interp.runs.artifacts` folder (kind ``"sae"``): weights + config.

        ``extra`` (training settings, loss history, …) is stored next to the SAE config.
        """
        from interp.runs.artifacts import save_artifact

        config = {"sae": asdict(self.cfg), **(extra or {})}
        return save_artifact(
            path, self.tensors(), kind=KIND, config=config,
            model_id=self.cfg.model_id or "unknown", d_model=d_model or self.cfg.d_in,
            hook_point=self.cfg.hook_point, manifest=manifest,
        )


@dataclass
class LoadedSAE:
    """An SAE read from disk with its saved config and manifest."""

    sae: SparseAutoencoder
    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]


def sae_from_tensors(cfg: SAEConfig, tensors: dict[str, Tensor]) -> SparseAutoencoder:
    """Build an SAE from named tensors, checking every shape against ``cfg``."""
    want = {"W_enc": (cfg.d_in, cfg.d_sae), "b_enc": (cfg.d_sae,),
            "W_dec": (cfg.d_sae, cfg.d_in), "b_dec": (cfg.d_in,)}
    missing = sorted(set(want) - set(tensors))
    if missing:
        raise InterpError(f"SAE weights lack {', '.join(missing)}")
    for name, shape in want.items():
        if tuple(tensors[name].shape) != shape:
            raise InterpError(
                f"SAE tensor {name} has shape {list(tensors[name].shape)}, expected {list(shape)} "
                f"for d_in={cfg.d_in}, d_sae={cfg.d_sae}"
            )
    sae = SparseAutoencoder(cfg)
    with torch.no_grad():
        for name in want:
            getattr(sae, name).copy_(tensors[name].float())
    return sae


def load_sae(path: str | Path, model: Any | None = None, device: str = "cpu") -> LoadedSAE:
    """Load an SAE artifact; with ``model``, refuse one made for another model or width.

    Raises :class:`InterpError` in one line for a missing, corrupt or truncated file, a
    shape mismatch, or an SAE whose ``d_model``/model id differ from ``model``'s.
    """
    from interp.runs.artifacts import load_artifact

    art = load_artifact(path, kind=KIND)
    sae_cfg = art.config.get("sae")
    if not isinstance(sae_cfg, dict):
        raise InterpError(f"SAE {path}: config.json has no 'sae' settings")
    try:
        cfg = SAEConfig(**sae_cfg)
    except TypeError as exc:
        raise InterpError(f"SAE {path}: bad 'sae' settings in config.json ({exc})") from None
    if model is not None:
        if cfg.d_in != model.d_model:
            raise InterpError(
                f"SAE {path} reads activations of width d_in={cfg.d_in}, but model "
                f"{model.model_id} has d_model={model.d_model}"
            )
        if art.model_id != model.model_id:
            raise InterpError(
                f"SAE {path} was trained on model {art.model_id!r} but the loaded model is "
                f"{model.model_id!r}"
            )
    sae = sae_from_tensors(cfg, art.tensors).to(device)
    return LoadedSAE(sae, art.path, art.config, art.manifest)
