"""TopK (Gao et al. 2024) and BatchTopK (Bussmann et al. 2024) SAEs, with AuxK.

**TopK.** ``f = ReLU(TopK_k(pre))``: each token keeps its ``k`` largest pre-activations,
so L0 is ``k`` by construction and the loss is the reconstruction alone; there is no
sparsity penalty to tune. Decoding reads only the ``k`` active rows of ``W_dec``
(``torch.nn.functional.embedding_bag`` with the activations as weights), so the
decoder's cost is ``k·d_in`` per token instead of ``d_sae·d_in``, forward and backward.
The encoder's backward is sparse too (:class:`_SelectedPre`): only the kept entries of
``pre`` carry a gradient, so ``∂W_enc`` is a sparse matmul and no gradient is formed for
the input. One dense matmul is left per step, the encoder's forward (to choose the k).

**BatchTopK.** The ``k·n`` largest activations of a batch of ``n`` tokens are kept,
wherever they fall: some tokens get more latents than others, ``k`` on average. At
inference there is no batch, so a single threshold ``θ`` stands in for the batch's cut:
during training it is an exponential moving average (``threshold_momentum``) of the
smallest activation the batch kept, and :meth:`BatchTopKSAE.activate` is
``ReLU(pre)·[pre > θ]``, the JumpReLU form (SAELens exports it the same way).
When training ends, :meth:`BatchTopKSAE.calibrate` replaces the moving average by the
mean batch cut of the *final* weights over the last training batches (Bussmann et al.'s
estimator: the average smallest kept activation). The moving average lags the weights:
on a 1M-token run at layer 6 of the embedded model (245 steps, momentum 0.99) it ended at
1.00 while the final weights' cut was 0.76, so a k 32 SAE ran at L0 18 instead of 32
on held-out text; retrained with the calibration, it runs at L0 31.5.

**AuxK** (Gao et al., section A.2). Latents that have not fired for ``dead_window``
tokens are *dead*. The auxiliary loss asks the ``aux_k`` largest pre-activations among
the dead latents (raw, without the ReLU, so that latents whose pre-activations are all
negative still get a gradient) to reconstruct the residual ``e = x − x̂`` (detached):
``α · min(n_dead / aux_k, 1) · ‖e − ê‖²`` per token, in the units of the main MSE, with
``α = 1/32`` and ``aux_k = d_in / 2`` by default. Its gradient reaches only the dead
latents, which it pulls back towards directions the SAE is missing.

Decoder rows are kept at unit norm after every step (Gao et al.), so the size of an
activation is the size of its contribution to ``x̂``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own convention
from jaxtyping import Float, Int
from torch import Tensor
from typing_extensions import override

from interp.errors import InterpError
from interp.mfu import sae_step_flops
from interp.schema import Cli, at_least, in_range, non_negative, setting
from saes.architectures.base import Architecture, arch_name, register
from saes.sae import SAEConfig, SparseAutoencoder, check_k

#: Above this fraction of non-zero entries, the encoder's weight gradient is one dense
#: matmul; below it, a sparse one (measured on the 2-core CPU, d_in 576, d_sae 4,608, batch
#: 4,096: k = 32 of 4,608 took 66 ms sparse vs 318 ms dense; 320 of 4,608 was slower sparse).
SPARSE_GRAD_MAX_DENSITY = 1 / 16


class _SelectedPre(torch.autograd.Function):
    """Pre-activations at selected ``(row, col)`` entries, with a sparse backward.

    ``values`` are ``pre[rows, cols]`` computed without a graph (the dense ``pre`` is only
    needed to choose them); the gradient is the one of ``pre = x·W_enc + c`` at those
    entries: ``∂W_enc = xᵀ·G`` with ``G`` holding the selected gradients (a sparse matmul
    when ``G`` is sparse enough) and ``∂c = Σ_rows G``. Nothing flows to ``x`` (the
    activations are data), so the ``[n, d_sae] × [d_sae, d_in]`` matmul of the dense
    backward is never done.
    """

    @staticmethod
    def forward(ctx, x: Tensor, w_enc: Tensor, c: Tensor, rows: Tensor,  # noqa: ANN001
                cols: Tensor, values: Tensor) -> Tensor:
        ctx.save_for_backward(x, rows, cols)
        ctx.d_sae = w_enc.shape[1]
        return values.clone()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, ...]:  # noqa: ANN001
        x, rows, cols = ctx.saved_tensors
        n, d_sae = x.shape[0], ctx.d_sae
        g = grad.reshape(-1)
        g_c = g.new_zeros(d_sae).index_add_(0, cols, g)
        if cols.numel() <= SPARSE_GRAD_MAX_DENSITY * n * d_sae:
            s = torch.sparse_coo_tensor(torch.stack([cols, rows]), g, (d_sae, n),
                                        check_invariants=False)
            g_w = torch.sparse.mm(s, x).t()
        else:
            dense = g.new_zeros(n, d_sae).index_put_((rows, cols), g, accumulate=True)
            g_w = x.t() @ dense
        return None, g_w, g_c, None, None, None


def selected_pre(sae: SparseAutoencoder, x: Float[Tensor, "n d_in"], pre: Tensor,
                 rows: Int[Tensor, " m"], cols: Int[Tensor, " m"]) -> Float[Tensor, " m"]:
    """``pre[rows, cols]`` of ``sae`` on scaled ``x``, differentiable in the SAE's weights
    through :class:`_SelectedPre` (``pre`` is :meth:`~saes.sae.SparseAutoencoder.pre_acts`,
    computed without a graph)."""
    return selected_entries(x, sae.W_enc, sae.encoder_offset(), pre, rows, cols)


def selected_entries(x: Float[Tensor, "n d_in"], w_enc: Float[Tensor, "d_in d_sae"],
                     c: Float[Tensor, " d_sae"], pre: Tensor, rows: Int[Tensor, " m"],
                     cols: Int[Tensor, " m"]) -> Float[Tensor, " m"]:
    """``pre[rows, cols]`` of ``pre = x·w_enc + c`` (computed without a graph),
    differentiable in ``w_enc`` and ``c`` through :class:`_SelectedPre` (a cross-layer
    transcoder calls it once per layer with that layer's encoder)."""
    return _SelectedPre.apply(x, w_enc, c, rows, cols, pre[rows, cols])  # type: ignore[no-any-return]


def decode_sparse(
    idx: Int[Tensor, "n k"], vals: Float[Tensor, "n k"], w_dec: Float[Tensor, "d_sae d_in"],
) -> Float[Tensor, "n d_in"]:
    """``Σ_j vals[:, j] · W_dec[idx[:, j]]``: only the active rows are read (and, in the
    backward pass, written), through ``embedding_bag``."""
    return F.embedding_bag(idx, w_dec, per_sample_weights=vals, mode="sum")


class TopKSAE(SparseAutoencoder):
    """TopK SAE (see the module doc)."""

    unit_decoder: ClassVar[bool] = True

    def __init__(self, cfg: SAEConfig, train: TopKConfig | None = None) -> None:
        k = check_k(cfg.k, cfg.d_sae)
        super().__init__(cfg, train)
        self.k = k
        self.train_cfg: TopKConfig

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        """Keep each row's ``k`` largest pre-activations (ReLU'd), zero the rest."""
        vals, idx = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter_(-1, idx, torch.relu(vals))

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """MSE of the top-k reconstruction plus ``aux_coefficient`` × AuxK (the dead latents'
        reconstruction of the residual); ``coefficient`` is unused (``k`` sets the sparsity). Parts:
        mse, decoder-norm-weighted l1, aux, l0, the latents that fired."""
        x, y = self.split(x)
        with torch.no_grad():
            pre = self.pre_acts(x)
            idx = pre.topk(self.k, dim=-1).indices
        n = x.shape[0]
        rows = torch.arange(n, device=x.device).repeat_interleave(self.k)
        vals = torch.relu(selected_pre(self, x, pre, rows, idx.reshape(-1))).view(n, self.k)
        y_hat = decode_sparse(idx, vals, self.W_dec) + self.b_dec + self.skip_out(x)
        mse = (y_hat - y).pow(2).sum(-1).mean()
        aux = self._aux_loss(x, pre, y - y_hat.detach(), dead)
        loss = mse + self.train_cfg.aux_coefficient * aux
        active = vals > 0
        fired = torch.zeros(self.cfg.d_sae, dtype=torch.bool, device=x.device)
        fired[idx[active]] = True
        l1 = (vals * self.W_dec.detach().norm(dim=1)[idx]).sum(-1).mean()
        return loss, {"mse": mse.detach(), "l1": l1.detach(), "aux": aux.detach(),
                      "l0": active.float().sum(-1).mean(), "fired": fired,
                      **self._extra_parts(vals)}

    def _extra_parts(self, vals: Tensor) -> dict[str, Tensor]:
        return {}

    @override
    def step_flops(self, tokens: int, n_dead: int = 0) -> float:
        """The dense encoder forward, then k (and AuxK's dead) latents per token
        (:func:`interp.mfu.sae_step_flops`)."""
        return sae_step_flops(self.cfg.d_in, self.cfg.d_sae, tokens, k=self.k,
                              aux_k=self._aux_width(n_dead), skip=self.has_skip)

    def _aux_width(self, n_dead: int) -> int:
        """How many dead latents AuxK trains per token (0: it does not run)."""
        if n_dead == 0 or self.train_cfg.aux_coefficient == 0:
            return 0
        return min(self.train_cfg.aux_k or max(1, self.cfg.d_in // 2), n_dead)

    def _aux_loss(self, x: Tensor, pre: Tensor, residual: Tensor, dead: Tensor | None
                  ) -> Tensor:
        """AuxK: the dead latents' top ``aux_k`` reconstruct the residual (module doc)."""
        n_dead = int(dead.sum()) if dead is not None else 0
        aux_k = self._aux_width(n_dead)
        if aux_k == 0:
            return pre.new_zeros(())
        assert dead is not None
        with torch.no_grad():
            idx = pre.masked_fill(~dead, float("-inf")).topk(aux_k, dim=-1).indices
        n = pre.shape[0]
        rows = torch.arange(n, device=pre.device).repeat_interleave(aux_k)
        # no ReLU here (as in SAELens): a dead latent's pre-activations are often all
        # negative, and only their raw values carry a gradient that can bring it back
        vals = selected_pre(self, x, pre, rows, idx.reshape(-1)).view(n, aux_k)
        e_hat = decode_sparse(idx, vals, self.W_dec)
        scale = min(n_dead / aux_k, 1.0)
        return scale * (e_hat - residual).pow(2).sum(-1).mean()


class BatchTopKSAE(TopKSAE):
    """BatchTopK SAE (see the module doc): batch-level top-k in training, a threshold at
    inference."""

    def __init__(self, cfg: SAEConfig, train: TopKConfig | None = None) -> None:
        super().__init__(cfg, train)
        self.register_buffer("threshold", torch.zeros(cfg.d_sae))
        self.threshold: Tensor

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        """Inference: ReLU, then keep the activations above the learned global threshold θ."""
        return torch.relu(pre) * (pre > self.threshold)

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Like :meth:`TopKSAE.loss`, but the top ``k × n`` activations over the whole batch are
        kept (rows may keep more or fewer than ``k``); also returns the smallest kept activation
        (``threshold_sample``) for θ's moving average."""
        x, y = self.split(x)
        with torch.no_grad():
            pre = self.pre_acts(x)
            n, d_sae = pre.shape
            flat = torch.relu(pre).flatten().topk(min(self.k * n, n * d_sae)).indices
            token, latent = flat // d_sae, flat % d_sae
            order = torch.argsort(token, stable=True)
            token, latent = token[order], latent[order]
        vals = torch.relu(selected_pre(self, x, pre, token, latent))
        offsets = torch.searchsorted(token, torch.arange(n, device=x.device))
        y_hat = F.embedding_bag(latent, self.W_dec, offsets, mode="sum",
                                per_sample_weights=vals) + self.b_dec + self.skip_out(x)
        mse = (y_hat - y).pow(2).sum(-1).mean()
        aux = self._aux_loss(x, pre, y - y_hat.detach(), dead)
        loss = mse + self.train_cfg.aux_coefficient * aux
        active = vals > 0
        fired = torch.zeros(d_sae, dtype=torch.bool, device=x.device)
        fired[latent[active]] = True
        l1 = (vals * self.W_dec.detach().norm(dim=1)[latent]).sum() / n
        kept = vals.detach()[active]
        low = kept.min() if kept.numel() else pre.new_zeros(())
        return loss, {"mse": mse.detach(), "l1": l1.detach(), "aux": aux.detach(),
                      "l0": active.float().sum() / n, "fired": fired,
                      "threshold_sample": low.detach()}

    @torch.no_grad()
    def after_step(self, parts: dict[str, Tensor]) -> None:
        """Unit-norm decoder rows, then the threshold's moving average moves towards the
        smallest activation this batch kept (set outright on the first step)."""
        super().after_step(parts)
        sample = parts.get("threshold_sample")
        if sample is None:
            return
        m = self.train_cfg.threshold_momentum if isinstance(
            self.train_cfg, BatchTopKConfig) else 0.99
        current = self.threshold[0]
        new = sample if float(current) == 0.0 else m * current + (1 - m) * sample
        self.threshold.fill_(float(new))

    calibrates: ClassVar[bool] = True

    @torch.no_grad()
    def batch_cut(self, x: Float[Tensor, "n d_in"]) -> Tensor:
        """The smallest activation batch top-k keeps on ``x`` (a scaled training batch)."""
        act = torch.relu(self.pre_acts(self.split(x)[0])).flatten()
        kept = act.topk(min(self.k * x.shape[0], act.numel())).values
        kept = kept[kept > 0]
        return kept[-1] if kept.numel() else act.new_zeros(())

    @torch.no_grad()
    def calibrate(
        self, batches: Sequence[Float[Tensor, "n d_in"]],
        mean_over_ranks: Callable[[Tensor], Tensor] | None = None,
    ) -> dict[str, float]:
        """Set θ to the mean batch cut of the final weights over ``batches`` (see the
        module doc); returns the moving average it replaces and the new θ."""
        if not batches:
            return {}
        cut = torch.stack([self.batch_cut(x) for x in batches]).double().mean()
        if mean_over_ranks is not None:
            cut = mean_over_ranks(cut)
        ema = float(self.threshold[0])
        self.threshold.fill_(float(cut))
        return {"threshold_moving_average": ema, "threshold": float(cut)}

    @override
    def state_tensors(self) -> dict[str, Tensor]:
        return {"threshold": self.threshold}

    @override
    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        self.threshold.copy_(tensors["threshold"].float())


@register
@dataclass(frozen=True)
class TopKConfig(Architecture):
    """Training settings of a TopK SAE."""

    label: ClassVar[str] = "TopK"
    summary: ClassVar[str] = "TopK, k latents per token"
    sae_class: ClassVar[type[SparseAutoencoder]] = TopKSAE
    uses_k: ClassVar[bool] = True
    saelens: ClassVar[str] = "topk"
    order: ClassVar[int] = 10

    k: int = setting(32, help="active latents per token")
    aux_k: int | None = setting(None, check=at_least(1),
                                help="dead latents AuxK uses per token (default d_model / 2)",
                                cli=Cli(range=False))
    aux_coefficient: float = setting(1 / 32, check=non_negative,
                                     help="weight of the AuxK loss (0 turns it off)")
    name: str = arch_name("topk")

    @classmethod
    def to_saelens(cls, cfg: SAEConfig) -> dict[str, Any]:
        """``{"k": k}``."""
        return {"k": cfg.k}

    @classmethod
    def from_saelens(cls, cfg: Mapping[str, Any], ours: Mapping[str, Any],
                     d_sae: int) -> dict[str, Any]:
        """``k`` from the SAELens config: an int in ``1 … d_sae``, else an
        :class:`~interp.errors.InterpError`."""
        k = cfg.get("k")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d_sae:
            raise InterpError(f"a topk SAE needs k from 1 to d_sae = {d_sae}, got {k!r}")
        return {"k": k}


@register
@dataclass(frozen=True)
class BatchTopKConfig(TopKConfig):
    """Training settings of a BatchTopK SAE.

    Exported for inference as SAELens's ``"jumprelu"`` with its single threshold for every
    latent, as SAELens saves its own BatchTopK SAEs; our provenance entry says it was
    BatchTopK, so importing it back gives a BatchTopK SAE again.
    """

    label: ClassVar[str] = "BatchTopK"
    summary: ClassVar[str] = "BatchTopK, k latents per token on average"
    sae_class: ClassVar[type[SparseAutoencoder]] = BatchTopKSAE
    saelens: ClassVar[str] = "jumprelu"
    saelens_import: ClassVar[bool] = False
    saelens_tensors: ClassVar[tuple[str, ...]] = ("threshold",)
    order: ClassVar[int] = 20

    threshold_momentum: float = setting(
        0.99, cli=False, check=in_range(0, 1, open_high=True),
        help="Momentum of the inference threshold's moving average during training.")
    name: str = arch_name("batchtopk")

    @classmethod
    def to_saelens(cls, cfg: SAEConfig) -> dict[str, Any]:
        """Nothing: a SAELens BatchTopK file is read at inference through its threshold, not
        ``k``."""
        return {}

    @classmethod
    def from_saelens(cls, cfg: Mapping[str, Any], ours: Mapping[str, Any],
                     d_sae: int) -> dict[str, Any]:
        """``k`` from our own export's provenance entry (None for a file SAELens wrote)."""
        return {"k": ours.get("k")}
