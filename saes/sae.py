"""The sparse autoencoder itself: parameters, encode/decode, loss, save and load.

For an activation ``x`` of width ``d_in`` and a dictionary of ``d_sae`` directions::

    f  = ReLU((x − b_dec) · W_enc + b_enc)          W_enc [d_in, d_sae]
    x̂  = f · W_dec + b_dec                          W_dec [d_sae, d_in]
    loss = ‖x − x̂‖² + λ · Σ_i f_i · ‖W_dec[i]‖      (per token, averaged over the batch)

The tensor names and shapes are SAELens's "standard" SAE, so export is a copy.

**Architectures.** This class is the ReLU SAE and the base of the others
(:mod:`saes.architectures`): TopK and BatchTopK (a different activation, no penalty,
AuxK against dead latents) and JumpReLU (a learned threshold per latent, an L0
penalty). They share ``W_enc``, ``b_enc``, ``W_dec``, ``b_dec`` and override
:meth:`~SparseAutoencoder.activate` (inference), :meth:`~SparseAutoencoder.loss`
(training) and :meth:`~SparseAutoencoder.after_step`; ``SAEConfig.architecture``
names the class, and :func:`saes.loading.load_sae` builds the right one.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from jaxtyping import Float
from torch import Tensor, nn

from interp.mfu import sae_step_flops
from interp.schema import Config, ConfigError, at_least, positive, setting

KIND = "sae"


@dataclass(frozen=True)
class SAEConfig(Config):
    """What an SAE is: its widths and where in which model it reads.

    ``input_scale`` multiplies raw activations before the encoder (1.0 once folded).
    ``architecture`` names a registered architecture (:mod:`saes.architectures`); ``k``
    (TopK, BatchTopK) is the number of active latents per token (per token on average for
    BatchTopK).
    """

    d_in: int = setting(help="Width of the activations the SAE reads.", check=at_least(1))
    d_sae: int = setting(help="Dictionary size (latents).", check=at_least(1))
    hook_point: str = setting(help="The hook point the SAE reads.")
    layer: int | None = setting(None, help="The block whose residual stream it reads.")
    model_id: str = setting("", help="The model it was trained on.")
    input_scale: float = setting(1.0, check=positive,
                                 help="Multiplies raw activations before the encoder.")
    architecture: str = setting("relu", help="A registered architecture's name.")
    k: int | None = setting(None, help="Active latents per token (TopK, BatchTopK).")

    def check(self) -> None:
        """The architecture's own rules for the SAE's settings (e.g. TopK's ``k`` within
        ``d_sae``)."""
        from saes.registry import architecture

        architecture(self.architecture).check_sae(self)

    def model_class(self) -> type[SparseAutoencoder]:
        """The class that builds a model of these settings (the architecture's SAE class)."""
        from saes.registry import architecture

        return architecture(self.architecture).sae_class


def check_k(k: object, d_sae: int, config: str = "SAEConfig") -> int:
    """``k`` as the number of active latents: an integer in ``1 … d_sae``."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d_sae:
        raise ConfigError(config, "k", f"must be an integer from 1 to d_sae = {d_sae}", k)
    return k


class SparseAutoencoder(nn.Module):
    """A ReLU SAE with an L1 penalty weighted by decoder-row norms (see module doc), and
    the base class of the other architectures.

    ``cfg`` gives the widths and the architecture; ``train`` is that architecture's training
    settings (default: its defaults, with the SAE's ``k``). The weights start at zero.
    """

    #: Decoder rows kept at unit norm after every step (TopK, BatchTopK, JumpReLU).
    unit_decoder: ClassVar[bool] = False
    #: The artifact's kind, and the key of these settings in its ``config.json``.
    artifact_kind: ClassVar[str] = KIND

    def __init__(self, cfg: SAEConfig, train: Any = None) -> None:
        super().__init__()
        if train is None:  # the architecture's default settings (with the SAE's k)
            from saes.registry import architecture

            spec = architecture(cfg.architecture)
            train = spec(k=cfg.k) if spec.uses_k else spec()  # type: ignore[call-arg]
        self.cfg = cfg
        self.train_cfg = train  # the architecture's training settings
        d, m = cfg.d_in, cfg.d_sae
        self.W_enc = nn.Parameter(torch.zeros(d, m))
        self.b_enc = nn.Parameter(torch.zeros(m))
        self.W_dec = nn.Parameter(torch.zeros(m, d))
        self.b_dec = nn.Parameter(torch.zeros(d))

    @property
    def architecture(self) -> str:
        """The registered architecture's name (``cfg.architecture``)."""
        return self.cfg.architecture

    @property
    def n_latents(self) -> int:
        """Latents in all (``d_sae``; a cross-layer transcoder has ``d_sae`` per layer)."""
        return self.cfg.d_sae

    # ---- init ---------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self, generator: torch.Generator, dec_norm: float = 0.1) -> None:
        """Decoder rows in random directions with norm ``dec_norm``; ``W_enc = W_decᵀ``.

        Anthropic's update initialises this way (tied at the start, untied after); the
        biases start at zero. Architectures with unit-norm decoders start at norm 1.
        Call :meth:`init_b_dec` with data for the decoder bias.
        """
        w = torch.randn(self.cfg.d_sae, self.cfg.d_in, generator=generator)
        w = w / w.norm(dim=1, keepdim=True) * (1.0 if self.unit_decoder else dec_norm)
        self.W_dec.copy_(w)
        self.W_enc.copy_(w.T)
        self.b_enc.zero_()
        self.b_dec.zero_()

    @torch.no_grad()
    def init_b_dec(self, x: Float[Tensor, "n d_in"]) -> None:
        """Set ``b_dec`` to the mean of (scaled) activations ``x``."""
        self.b_dec.copy_(x.mean(0))

    # ---- forward ------------------------------------------------------------------
    def pre_acts(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_sae"]:
        """``(x − b_dec)·W_enc + b_enc`` of already-scaled ``x``."""
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    def encoder_offset(self) -> Float[Tensor, " d_sae"]:
        """``c`` in ``pre_acts(x) = x·W_enc + c`` (``b_enc − b_dec·W_enc`` here)."""
        return self.b_enc - self.b_dec @ self.W_enc

    # What a training batch holds. An SAE reconstructs its input; a transcoder
    # (:mod:`saes.transcoders`) reads a batch of [input | target] rows and adds a skip path.
    def split(self, x: Float[Tensor, "n width"]) -> tuple[Tensor, Tensor]:
        """A scaled training batch as (encoder input, reconstruction target): ``(x, x)``."""
        return x, x

    def skip_out(self, x: Float[Tensor, "n d_in"]) -> Tensor | float:
        """The skip path's contribution to the scaled reconstruction (none here)."""
        return 0.0

    @property
    def has_skip(self) -> bool:
        """Whether :meth:`skip_out` is a linear map of the input (a skip transcoder)."""
        return False

    #: Whether :meth:`pre_acts` centres its input (``x − b_dec``).
    centred_encoder: ClassVar[bool] = True

    def step_flops(self, tokens: int, n_dead: int = 0) -> float:
        """The FLOPs one training step on ``tokens`` rows needs, for MFU
        (:func:`interp.mfu.sae_step_flops`; ``n_dead``: latents AuxK would train)."""
        return sae_step_flops(self.cfg.d_in, self.cfg.d_sae, tokens,
                              centred=self.centred_encoder, skip=self.has_skip)

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        """The inference activation of pre-activations (ReLU here)."""
        return torch.relu(pre)

    def encode(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_sae"]:
        """Feature activations ``f`` of raw activations ``x`` (applies ``input_scale``)."""
        x = x * self.cfg.input_scale if self.cfg.input_scale != 1.0 else x
        return self.activate(self.pre_acts(x))

    def decode(self, f: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_in"]:
        """Reconstruction in raw activation units (undoes ``input_scale``)."""
        x_hat = f @ self.W_dec + self.b_dec
        return x_hat / self.cfg.input_scale if self.cfg.input_scale != 1.0 else x_hat

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_in"]:
        """``decode(encode(x))``."""
        return self.decode(self.encode(x))

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Training loss on already-scaled ``x`` (``input_scale`` is *not* applied here).

        ``coefficient`` is the scheduled sparsity coefficient (here λ of the L1 penalty);
        ``dead`` marks the latents counted as dead (used by AuxK; ignored here).
        Returns the loss and detached parts: ``mse`` (‖x − x̂‖² per token), ``l1``
        (Σ f·‖W_dec‖ per token), ``l0`` (active features per token) and ``fired`` (which
        latents fired on any token of the batch). Every architecture returns these.
        """
        x, y = self.split(x)
        f = torch.relu(self.pre_acts(x))
        y_hat = f @ self.W_dec + self.b_dec + self.skip_out(x)
        mse = (y_hat - y).pow(2).sum(-1).mean()
        l1 = (f * self.W_dec.norm(dim=1)).sum(-1).mean()
        loss = mse + coefficient * l1
        return loss, {"mse": mse.detach(), "l1": l1.detach(),
                      "l0": (f > 0).float().sum(-1).mean().detach(), "fired": (f > 0).any(0)}

    @torch.no_grad()
    def after_step(self, parts: dict[str, Tensor]) -> None:
        """After each optimiser step: unit-norm decoder rows where the architecture
        wants them (its ``parts`` were all-reduced across processes already)."""
        if self.unit_decoder:
            self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))

    #: True where :meth:`calibrate` sets inference state from the final weights, so the
    #: trainer hands it the last batches when training ends.
    calibrates: ClassVar[bool] = False

    @torch.no_grad()
    def calibrate(
        self, batches: Sequence[Float[Tensor, "n d_in"]],
        mean_over_ranks: Callable[[Tensor], Tensor] | None = None,
    ) -> dict[str, float]:
        """After training, with the final weights: set state used only at inference from
        already-scaled training ``batches`` (``mean_over_ranks`` averages a statistic
        across DDP processes). Returns what changed, for the artifact; here nothing."""
        return {}

    def state_tensors(self) -> dict[str, Tensor]:
        """Tensors beyond the four weights (thresholds): saved, checked and loaded."""
        return {}

    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        """Set the :meth:`state_tensors` from saved values (shapes already checked)."""

    def set_scales(self, scale: float | list[float]) -> None:
        """Record the scale(s) training multiplied activations by (then
        :meth:`fold_input_scale` folds them into the weights)."""
        self.cfg = self.cfg.replace(input_scale=float(scale))  # type: ignore[arg-type]

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
        self.cfg = self.cfg.replace(input_scale=1.0)

    # ---- files --------------------------------------------------------------------
    def tensors(self) -> dict[str, Tensor]:
        """What the artifact saves: the four weights and the :meth:`state_tensors` (detached)."""
        return {"W_enc": self.W_enc.detach(), "b_enc": self.b_enc.detach(),
                "W_dec": self.W_dec.detach(), "b_dec": self.b_dec.detach(),
                **{k: v.detach() for k, v in self.state_tensors().items()}}

    def save(
        self, path: str | Path, *, d_model: int | None = None,
        manifest: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
    ) -> Path:
        """Save as an :mod:`interp.runs.artifacts` folder (kind ``"sae"``): weights + config.

        ``extra`` (training settings, loss history, …) is stored next to the SAE config.
        """
        from interp.runs.artifacts import save_artifact

        config = {self.artifact_kind: self.cfg.to_dict(), **(extra or {})}
        return save_artifact(
            path, self.tensors(), kind=self.artifact_kind, config=config,
            model_id=self.cfg.model_id or "unknown", d_model=d_model or self.cfg.d_in,
            hook_point=self.cfg.hook_point, manifest=manifest,
        )
