"""A cross-layer transcoder (Ameisen et al. 2025): features that read one layer and write
to the MLP outputs of that layer and every later one.

For the layers ``l₀ < l₁ < … < l_{L−1}`` it covers (usually every block), with ``x_i`` what
layer ``i``'s features read and ``y_j`` what layer ``j``'s MLP adds to the residual stream::

    f_i  = σ_i(x_i·W_enc[i] + b_enc[i])                     W_enc [L, d, m], b_enc [L, m]
    ŷ_j  = Σ_{i ≤ j} f_i·W_dec[i][:, j − i] + b_dec[j] (+ x_j·W_skip[j])
                                                             W_dec[i] [m, L − i, d]

so a feature of layer ``i`` has ``L − i`` decoder vectors, one per MLP output it writes.
``m`` (``d_sae``) is the number of features *per layer*; the CLT has ``L·m`` in all.

**Reach.** ``reach = N`` makes a *windowed* CLT: a feature of layer ``i`` writes only to
layers ``i … i + N − 1`` (``W_dec[i]`` is ``[m, min(N, L − i), d]``), as sparsify's
``cross_layer=N`` does. It is not Ameisen et al.'s CLT (``reach`` None, every later layer):
its decoder has about ``L·N`` blocks instead of ``L(L+1)/2``, which is what its training
step costs, and a feature's effect on layers past its reach has to go through features of
later layers. ``reach = 1`` is a set of per-layer transcoders trained together.

**Activations.** ``topk``: each layer's features keep their ``k`` largest pre-activations
(L0 ``k`` per layer, as a per-layer TopK transcoder of the same ``k``), with AuxK for the
dead ones; ``jumprelu``: a learned threshold per feature and an L0 penalty
(:mod:`saes.architectures.jumprelu`'s straight-through estimators); ``relu``: for files
other tools wrote (circuit-tracer's default), not trained here.

**What the features read.** ``reads = "mlp_in"`` (ours, as our per-layer transcoders and
sparsify's): the MLP's input, after the norm before it (``blocks.L.mlp.hook_in``).
``reads = "resid_mid"``: the residual stream before that norm (``hook_resid_mid``),
circuit-tracer's default for CLTs. Both write ``hook_mlp_out``.

**Training** (:mod:`saes.transcoders.crosslayer_train`): one row holds every layer's
``[input | output]`` for one token (the activation store's ``mlp`` site at each layer, from
one forward pass). Each layer's input and output are scaled to ``E‖·‖² = d`` (so each layer
weighs the same in the loss), and the loss is the mean over layers of ``‖y_j − ŷ_j‖²``
(plus AuxK or the L0 penalty). The decoder is read sparsely: a layer's active features
gather their ``L − i`` decoder vectors in one ``embedding_bag``, forward and backward. When
training ends the scales are folded into the weights, so a saved CLT takes and gives raw
activations.

**Where it differs from Anthropic's and circuit-tracer's.** Anthropic trains JumpReLU CLTs
with a tanh sparsity penalty on billions of tokens; here TopK is the default (no penalty to
tune) and the JumpReLU penalty is the L0 of :mod:`saes.architectures.jumprelu`. A CLT's
decoder rows are not normalised (each feature's ``L − i`` vectors are free), unlike our
per-layer TopK transcoders'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own convention
from jaxtyping import Float
from torch import Tensor, nn

from interp.errors import InterpError
from interp.schema import Config, ConfigError, at_least, setting
from saes.architectures.jumprelu import jumprelu, step
from saes.architectures.topk import selected_entries
from saes.transcoders.sharding import Shards

KIND = "clt"
#: What a CLT's features can read at their layer (see the module doc).
READS = {"mlp_in": "mlp.hook_in", "resid_mid": "hook_resid_mid"}
#: The activations a CLT can have; ``TRAINED`` are those this package trains.
ACTIVATIONS = ("topk", "jumprelu", "relu")
TRAINED = ("topk", "jumprelu")


@dataclass(frozen=True)
class CLTConfig(Config):
    """What a cross-layer transcoder is: widths, the layers it covers, its activation and
    what its features read (see the module doc)."""

    d_in: int = setting(help="Width of the activations (d_model).", check=at_least(1))
    d_sae: int = setting(help="Features per layer.", check=at_least(1))
    layers: tuple[int, ...] = setting(help="The blocks it covers, increasing.")
    model_id: str = setting("", help="The model it was trained on.")
    architecture: str = setting("topk", help="topk, jumprelu or relu.")
    k: int | None = setting(None, help="Active features per token and layer (topk).")
    skip: bool = setting(False, help="A linear skip path W_skip[j] from layer j's input.")
    reach: int | None = setting(None, help="How many layers a feature writes, from its own: "
                                           "None for every later one (Ameisen et al.'s CLT), N "
                                           "for its own and the next N − 1 (a windowed CLT).")
    reads: str = setting("mlp_in", help="What the features read: mlp_in (the MLP's "
                                        "normalised input) or resid_mid (the residual before "
                                        "the MLP's norm).")
    input_scales: tuple[float, ...] = setting((), help="Per layer: multiplies raw inputs in "
                                                       "training (empty once folded).")
    output_scales: tuple[float, ...] = setting((), help="Per layer: multiplies raw MLP outputs "
                                                        "in training (empty once folded).")
    # the trainer's dead-latent counters read every SAE's d_sae; hook_point names the first
    # layer's input for the artifact

    def check(self) -> None:
        """Layers increasing and non-empty, a known activation and reading, ``k`` in range
        for TopK, one scale per layer where scales are given."""
        layers = list(self.layers)
        if not layers or any(b <= a for a, b in zip(layers, layers[1:], strict=False)):
            raise ConfigError("CLTConfig", "layers", "must be increasing and non-empty",
                              self.layers)
        if self.architecture not in ACTIVATIONS:
            raise ConfigError("CLTConfig", "architecture",
                              f"must be one of {', '.join(ACTIVATIONS)}", self.architecture)
        if self.reach is not None and (isinstance(self.reach, bool)
                                       or not isinstance(self.reach, int) or self.reach < 1):
            raise ConfigError("CLTConfig", "reach", "must be a positive integer or None",
                              self.reach)
        if self.reads not in READS:
            raise ConfigError("CLTConfig", "reads", f"must be one of {', '.join(READS)}",
                              self.reads)
        if self.architecture == "topk" and (
                isinstance(self.k, bool) or not isinstance(self.k, int)
                or not 1 <= self.k <= self.d_sae):
            raise ConfigError("CLTConfig", "k", f"must be an integer from 1 to d_sae = "
                              f"{self.d_sae} for topk", self.k)
        for name in ("input_scales", "output_scales"):
            scales = getattr(self, name)
            if scales and len(scales) != len(layers):
                raise ConfigError("CLTConfig", name, f"must have one scale per layer "
                                  f"({len(layers)})", scales)

    @property
    def n_layers(self) -> int:
        """How many layers it covers."""
        return len(self.layers)

    def span(self, i: int) -> int:
        """How many layers the features of layer index ``i`` write: ``L − i``, or at most
        ``reach``."""
        return spans(self.n_layers, self.reach)[i]

    @property
    def hook_point(self) -> str:
        """What the first layer's features read (the artifact's hook point)."""
        return self.input_hook(self.layers[0])

    def input_hook(self, layer: int) -> str:
        """The hook point layer ``layer``'s features read."""
        return f"blocks.{layer}.{READS[self.reads]}"

    @staticmethod
    def output_hook(layer: int) -> str:
        """The hook point of what layer ``layer``'s MLP writes."""
        return f"blocks.{layer}.hook_mlp_out"


def spans(n_layers: int, reach: int | None) -> list[int]:
    """Per source layer index, how many layers its features write (``L − i``, or at most
    ``reach``): the decoder blocks of each ``W_dec[i]``."""
    return [n_layers - i if reach is None else min(reach, n_layers - i)
            for i in range(n_layers)]


def _scales(scales: tuple[float, ...], n: int) -> Tensor:
    return torch.tensor(scales if scales else [1.0] * n, dtype=torch.float32)


class _AddBlock(torch.autograd.Function):
    """``out[:, i:i+s] += w.view(n, s, d)`` in place, differentiable in both: the gradient
    passes to ``out`` as it is and to ``w`` as its slice. Adding a zero-padded copy of each
    block instead wrote the whole ``[n, L, d]`` prediction twice per source layer, which
    was most of a short-reach CLT's step (measured: bench/clt.py)."""

    @staticmethod
    def forward(ctx: Any, out: Tensor, w: Tensor, i: int, s: int) -> Tensor:
        ctx.i, ctx.s = i, s
        out[:, i:i + s] += w.view(out.shape[0], s, out.shape[2])
        ctx.mark_dirty(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor, None, None]:
        return grad, grad[:, ctx.i:ctx.i + ctx.s].reshape(grad.shape[0], -1), None, None


def _add_block(out: Tensor, w: Tensor, i: int, s: int) -> Tensor:
    return _AddBlock.apply(out, w, i, s)  # type: ignore[no-any-return]


class CrossLayerTranscoder(nn.Module):
    """A cross-layer transcoder (see the module doc). Weights start at zero;
    :meth:`init_weights` draws them. Indices ``i, j`` below are positions in
    ``cfg.layers``, not block numbers (:meth:`index` maps one to the other)."""

    artifact_kind: ClassVar[str] = KIND
    #: The trainer hands :meth:`calibrate` nothing (no inference state to fit).
    calibrates: ClassVar[bool] = False

    def __init__(self, cfg: CLTConfig, train: Any = None, shards: Shards | None = None,
                 ) -> None:
        super().__init__()
        self.cfg = cfg
        self.train_cfg = train  # the architecture's training settings (AuxK, JumpReLU's)
        #: features split over processes (:mod:`saes.transcoders.sharding`): this module
        #: holds features ``lo … hi − 1`` of every layer, ``m`` of them (all, unsharded)
        self.shards = shards or Shards()
        self.lo, self.hi = self.shards.span(cfg.d_sae)
        self.m = self.hi - self.lo
        n, d, m = cfg.n_layers, cfg.d_in, self.m
        self.W_enc = nn.Parameter(torch.zeros(n, d, m))
        self.b_enc = nn.Parameter(torch.zeros(n, m))
        self.W_dec = nn.ParameterList([nn.Parameter(torch.zeros(m, s, d))
                                       for s in spans(n, cfg.reach)])
        self.b_dec = nn.Parameter(torch.zeros(n, d))
        self.W_skip: nn.Parameter | None = (nn.Parameter(torch.zeros(n, d, d))
                                            if cfg.skip else None)
        self.log_threshold: nn.Parameter | None = None
        if cfg.architecture == "jumprelu":
            init = float(getattr(train, "threshold_init", 1e-3))
            self.log_threshold = nn.Parameter(torch.full((n, m), math.log(init)))

    # ---- identity ---------------------------------------------------------------------
    @property
    def architecture(self) -> str:
        """``cfg.architecture``."""
        return self.cfg.architecture

    @property
    def n_latents(self) -> int:
        """Features in all, ``n_layers × d_sae`` (this process's share when sharded): the
        trainer's dead-latent counters."""
        return self.cfg.n_layers * self.m

    @property
    def layers(self) -> list[int]:
        """The blocks it covers."""
        return list(self.cfg.layers)

    def index(self, layer: int) -> int:
        """The position of block ``layer`` in :attr:`layers`."""
        try:
            return self.cfg.layers.index(layer)
        except ValueError:
            raise InterpError(f"the cross-layer transcoder covers layers "
                              f"{', '.join(map(str, self.cfg.layers))}, not {layer}") from None

    @property
    def has_skip(self) -> bool:
        """Whether it has skip paths."""
        return self.W_skip is not None

    @property
    def threshold(self) -> Tensor:
        """JumpReLU's thresholds ``[L, m]`` (``exp(log_threshold)``)."""
        assert self.log_threshold is not None
        return self.log_threshold.exp()

    # ---- init ---------------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self, generator: torch.Generator, dec_norm: float = 0.1) -> None:
        """Each layer starts as a per-layer transcoder: random unit decoder directions for
        its own layer, the encoder their transpose; the cross-layer decoder vectors, the
        biases and the skip paths start at zero (``dec_norm`` is unused: TopK and JumpReLU
        start at norm 1, as their per-layer forms do)."""
        n, d, m = self.cfg.n_layers, self.cfg.d_in, self.cfg.d_sae
        for i in range(n):
            w = torch.randn(m, d, generator=generator)[self.lo:self.hi]  # a shard: its slice
            w = w / w.norm(dim=1, keepdim=True)
            self.W_dec[i].zero_()
            self.W_dec[i][:, 0] = w
            self.W_enc[i] = w.T
        self.b_enc.zero_()
        self.b_dec.zero_()
        if self.W_skip is not None:
            self.W_skip.zero_()

    # ---- a training row -----------------------------------------------------------------
    def split(self, x: Float[Tensor, "n width"]) -> tuple[Tensor, Tensor]:
        """Rows of ``[in_0 | out_0 | in_1 | out_1 | …]`` as (inputs, targets), each
        ``[n, L, d]``."""
        v = x.view(x.shape[0], self.cfg.n_layers, 2, self.cfg.d_in)
        return v[:, :, 0], v[:, :, 1]

    # ---- inference ----------------------------------------------------------------------
    def pre_acts(self, x: Float[Tensor, "... L d"]) -> Float[Tensor, "... L m"]:
        """``x_i·W_enc[i] + b_enc[i]`` at every layer of already-scaled ``x``."""
        lead = x.shape[:-2]
        flat = x.reshape(-1, self.cfg.n_layers, self.cfg.d_in).transpose(0, 1)  # [L, n, d]
        pre = torch.baddbmm(self.b_enc[:, None], flat, self.W_enc)             # [L, n, m]
        return pre.transpose(0, 1).reshape(*lead, self.cfg.n_layers, self.m)

    def pre_acts_layer(self, i: int, x: Float[Tensor, "... d"]) -> Float[Tensor, "... m"]:
        """Layer ``i``'s (an index into :attr:`layers`) pre-activations of its raw input."""
        if self.cfg.input_scales:
            x = x * self._in_scale()[i]
        return x @ self.W_enc[i] + self.b_enc[i]

    def activate_layer(self, i: int, pre: Float[Tensor, "... m"]) -> Float[Tensor, "... m"]:
        """Layer ``i``'s activation of its pre-activations."""
        arch = self.cfg.architecture
        if arch == "topk":
            assert self.cfg.k is not None
            vals, idx = pre.topk(self.cfg.k, dim=-1)
            return torch.zeros_like(pre).scatter_(-1, idx, torch.relu(vals))
        if arch == "jumprelu":
            return pre * (pre > self.threshold[i])
        return torch.relu(pre)

    def encode_layer(self, i: int, x: Float[Tensor, "... d"]) -> Float[Tensor, "... m"]:
        """Layer ``i``'s feature activations from its raw input ``x``."""
        return self.activate_layer(i, self.pre_acts_layer(i, x))

    def encode(self, x: Float[Tensor, "... L d"]) -> Float[Tensor, "... L m"]:
        """Every layer's feature activations from raw inputs ``x`` (``[..., L, d]``)."""
        return torch.stack([self.encode_layer(i, x[..., i, :])
                            for i in range(self.cfg.n_layers)], dim=-2)

    def decoder(self, i: int, j: int) -> Float[Tensor, "m d"]:
        """What layer ``i``'s features write into layer ``j``'s MLP output (raw units),
        ``i ≤ j < i + span(i)``."""
        if not 0 <= j - i < self.cfg.span(i):
            raise InterpError(f"a feature of layer index {i} writes only to layer indices "
                              f"{i}–{i + self.cfg.span(i) - 1}, not {j}")
        block = self.W_dec[i][:, j - i]
        return block / self._out_scale()[j] if self.cfg.output_scales else block

    def decode(self, f: Float[Tensor, "... L m"]) -> Float[Tensor, "... L d"]:
        """The MLP outputs the features predict (raw units, without the skip paths)."""
        n = self.cfg.n_layers
        lead = f.shape[:-2]
        flat = f.reshape(-1, n, self.m)
        out = self.b_dec.expand(flat.shape[0], n, self.cfg.d_in).clone()
        for i in range(n):
            s = self.cfg.span(i)
            out[:, i:i + s] += (flat[:, i] @ self.W_dec[i].flatten(1)).view(-1, s, self.cfg.d_in)
        out = out / self._out_scale()[:, None]
        return out.reshape(*lead, n, self.cfg.d_in)

    def skip(self, x: Float[Tensor, "... L d"]) -> Float[Tensor, "... L d"] | float:
        """The skip paths' output for raw inputs ``x`` (0 without skip paths)."""
        if self.W_skip is None:
            return 0.0
        ratio = (self._in_scale() / self._out_scale())[:, None]
        return torch.einsum("...ld,lde->...le", x, self.W_skip) * ratio

    def skip_matrix(self, j: int) -> Float[Tensor, "d d"] | None:
        """Layer ``j``'s skip path as ``x ↦ x·M`` in raw units (None without one)."""
        if self.W_skip is None:
            return None
        return self.W_skip[j] * (self._in_scale()[j] / self._out_scale()[j])

    def forward(self, x: Float[Tensor, "... L d"]) -> Float[Tensor, "... L d"]:
        """The MLP outputs it predicts from raw inputs: decode(encode(x)) + skip(x)."""
        return self.decode(self.encode(x)) + self.skip(x)

    def _in_scale(self) -> Tensor:
        return _scales(self.cfg.input_scales, self.cfg.n_layers).to(self.b_enc.device)

    def _out_scale(self) -> Tensor:
        return _scales(self.cfg.output_scales, self.cfg.n_layers).to(self.b_enc.device)

    # ---- training -----------------------------------------------------------------------
    def loss(self, x: Float[Tensor, "n width"], coefficient: float, dead: Tensor | None = None,
             ) -> tuple[Tensor, dict[str, Tensor]]:
        """Training loss on an already-scaled row batch (``[in_0 | out_0 | …]``): the mean
        over layers of ``‖y_j − ŷ_j‖²`` per token, plus AuxK (TopK; ``dead`` marks the dead
        features, ``[L·m]``) or ``coefficient`` × the L0 (JumpReLU). Parts as every SAE's:
        ``mse`` (per token and layer), ``l1``, ``l0`` (per token and layer), ``fired``
        ``[L·m]`` (this process's features when they are sharded; the rest are totals over
        every process, the same on each)."""
        xs, ys = self.split(x)
        n, nl, d = ys.shape
        m, sh = self.m, self.shards
        partial = x.new_zeros(n, nl, d)  # what this process's features write
        fired = torch.zeros(nl, m, dtype=torch.bool, device=x.device)
        l0 = x.new_zeros(())
        l1 = x.new_zeros(())
        sparsity = x.new_zeros(())
        selected: list[Tensor] = []  # each layer's pre-activations, for AuxK
        # one view per layer, made once: indexing W_enc[i] on each use made its backward
        # zero-fill and add a whole [L, d, m] gradient per use
        w_enc, b_enc = self.W_enc.unbind(0), self.b_enc.unbind(0)
        for i in range(nl):
            x_i = xs[:, i]
            with torch.no_grad():
                norms = self.W_dec[i].norm(dim=(1, 2))
            if self.cfg.architecture == "topk":
                assert self.cfg.k is not None
                with torch.no_grad():
                    pre = torch.addmm(b_enc[i], x_i, w_enc[i])
                idx, keep = self._top(pre, self.cfg.k)
                kk = idx.shape[1]
                rows = torch.arange(n, device=x.device).repeat_interleave(kk)
                vals = torch.relu(selected_entries(x_i, w_enc[i], b_enc[i], pre,
                                                   rows, idx.reshape(-1))).view(n, kk)
                if keep is not None:
                    vals = vals * keep
                selected.append(pre)
                active = vals > 0
                fired[i, idx[active]] = True
                l1 = l1 + (vals.detach() * norms[idx]).sum(-1).mean()
                w = F.embedding_bag(idx, self.W_dec[i].flatten(1), per_sample_weights=vals,
                                    mode="sum")
            else:
                pre = torch.addmm(b_enc[i], x_i, w_enc[i])
                if self.cfg.architecture == "jumprelu":
                    eps = float(getattr(self.train_cfg, "bandwidth", 1e-3))
                    theta = self.threshold[i]
                    f = jumprelu(pre, theta, eps)
                    sparsity = sparsity + step(pre, theta, eps).sum(-1).mean()
                else:
                    f = torch.relu(pre)
                active = f.detach() > 0
                fired[i] = active.any(0)
                l1 = l1 + (f.detach() * norms).sum(-1).mean()
                r, c = active.nonzero(as_tuple=True)
                offsets = torch.searchsorted(r, torch.arange(n, device=x.device))
                w = F.embedding_bag(c, self.W_dec[i].flatten(1), offsets, mode="sum",
                                    per_sample_weights=f[r, c])
            l0 = l0 + active.float().sum(-1).mean()
            # what layer i's features write into layers i…i+s−1, added in place: the
            # [n, s, d] block is freed before the next layer's is made
            partial = _add_block(partial, w, i, self.cfg.span(i))
        y_hat = sh.sum(partial) + self.b_dec
        if self.W_skip is not None:
            y_hat = y_hat + torch.einsum("nld,lde->nle", xs, self.W_skip)
        mse = (y_hat - ys).pow(2).sum(-1).mean()
        loss = mse
        parts: dict[str, Tensor] = {}
        if self.cfg.architecture == "topk":
            aux = self._aux_loss(xs, selected, (ys - y_hat.detach()), dead, w_enc, b_enc)
            loss = loss + float(getattr(self.train_cfg, "aux_coefficient", 1 / 32)) * aux
            parts["aux"] = aux.detach()
        elif self.cfg.architecture == "jumprelu":
            loss = loss + coefficient * sh.sum(sparsity) / nl
        return loss, {"mse": mse.detach(), "l1": (sh.total(l1) / nl).detach(),
                      "l0": (sh.total(l0) / nl).detach(), "fired": fired.reshape(-1), **parts}

    def _top(self, pre: Tensor, k: int) -> tuple[Tensor, Tensor | None]:
        """The indices of each row's ``k`` largest entries of ``pre`` (this process's
        features); when the features are sharded, this process's ``min(k, m)`` largest and a
        mask of those among the ``k`` largest over every process (None: all are)."""
        with torch.no_grad():
            top, idx = pre.topk(min(k, self.m), dim=-1)
            if not self.shards.on:
                return idx, None
            kth = self.shards.cat(top, 1).topk(k, dim=-1).values[:, -1:]
            return idx, top >= kth

    def _aux_loss(self, xs: Tensor, selected: list[Tensor], residual: Tensor,
                  dead: Tensor | None, w_enc: Sequence[Tensor], b_enc: Sequence[Tensor],
                  ) -> Tensor:
        """AuxK per layer (:mod:`saes.architectures.topk`): the ``aux_k`` largest raw
        pre-activations among a layer's dead features reconstruct that layer's residual
        through their own-layer decoder vectors; averaged over layers."""
        sh = self.shards
        if dead is None or not int(sh.total(dead.sum())):
            return xs.new_zeros(())
        coef = float(getattr(self.train_cfg, "aux_coefficient", 1 / 32))
        if coef == 0:
            return xs.new_zeros(())
        nl = self.cfg.n_layers
        dead = dead.view(nl, self.m)
        aux_k_max = getattr(self.train_cfg, "aux_k", None) or max(1, self.cfg.d_in // 2)
        total = xs.new_zeros(())
        n = xs.shape[0]
        for i, pre in enumerate(selected):
            n_dead = int(sh.total(dead[i].sum()))  # over every process
            if n_dead == 0:
                continue
            aux_k = min(aux_k_max, n_dead)
            idx, keep = self._top(pre.masked_fill(~dead[i], float("-inf")), aux_k)
            kk = idx.shape[1]
            rows = torch.arange(n, device=xs.device).repeat_interleave(kk)
            vals = selected_entries(xs[:, i], w_enc[i], b_enc[i], pre, rows,
                                    idx.reshape(-1)).view(n, kk)
            if keep is not None:  # and a shard with fewer dead features than kk masks the rest
                vals = vals * (keep & dead[i][idx])
            e_hat = sh.sum(F.embedding_bag(idx, self.W_dec[i][:, 0], per_sample_weights=vals,
                                           mode="sum"))
            total = total + min(n_dead / aux_k, 1.0) * (e_hat - residual[:, i]).pow(2).sum(
                -1).mean()
        return total / nl

    @torch.no_grad()
    def after_step(self, parts: dict[str, Tensor]) -> None:
        """Nothing to do after a step (the decoders are not normalised)."""

    def step_flops(self, tokens: int, n_dead: int = 0) -> float:
        """The FLOPs of one training step on ``tokens`` rows (for MFU): each layer's dense
        encoder forward, then per active feature its encoder gradient and its ``L − i``
        decoder vectors forward and backward (TopK: ``k`` per token; JumpReLU's encoder is
        dense forward and backward and its L0 is counted as ``k`` when unknown, ``d_sae/8``)."""
        nl, d, m = self.cfg.n_layers, self.cfg.d_in, self.m
        per = 2.0 * d * tokens
        k = self.cfg.k if self.cfg.architecture == "topk" and self.cfg.k else max(1, m // 8)
        enc = nl * per * m * (1 if self.cfg.architecture == "topk" else 3)
        writes = sum(spans(nl, self.cfg.reach))
        dec = 3 * per * k * writes + (nl * per * k if self.cfg.architecture == "topk" else 0)
        skip = 2 * nl * per * d if self.has_skip else 0.0
        return enc + dec + skip

    def calibrate(self, batches: Sequence[Tensor],
                  mean_over_ranks: Callable[[Tensor], Tensor] | None = None,
                  ) -> dict[str, float]:
        """Nothing to calibrate."""
        return {}

    def set_scales(self, scale: float | list[float]) -> None:
        """Record the per-block scales training used: a list ``[in_0, out_0, in_1, …]``."""
        if not isinstance(scale, list) or len(scale) != 2 * self.cfg.n_layers:
            raise InterpError(f"a cross-layer transcoder needs an input and an output scale per "
                              f"layer ({2 * self.cfg.n_layers}), got {scale!r}")
        self.cfg = self.cfg.replace(input_scales=tuple(float(c) for c in scale[0::2]),
                                    output_scales=tuple(float(c) for c in scale[1::2]))

    @torch.no_grad()
    def fold_input_scale(self) -> None:
        """Fold the scales into the weights: ``W_enc[i] ← c_in[i]·W_enc[i]``, each decoder
        vector into layer ``j`` and ``b_dec[j]`` ← ``/c_out[j]``, ``W_skip[j] ←
        (c_in[j]/c_out[j])·W_skip[j]``; outputs unchanged, no scales left."""
        c_in, c_out = self._in_scale(), self._out_scale()
        self.W_enc.mul_(c_in[:, None, None])
        for i, w in enumerate(self.W_dec):
            w.div_(c_out[i:i + w.shape[1], None])
        self.b_dec.div_(c_out[:, None])
        if self.W_skip is not None:
            self.W_skip.mul_((c_in / c_out)[:, None, None])
        self.cfg = self.cfg.replace(input_scales=(), output_scales=())

    # ---- files --------------------------------------------------------------------------
    def tensors(self) -> dict[str, Tensor]:
        """What the artifact saves: ``W_enc``, ``b_enc``, ``b_dec``, ``W_dec_i`` per layer
        index, ``log_threshold`` (JumpReLU: the trained parameter itself, so a saved CLT
        loads back to the bit) and ``W_skip`` (skip paths), detached."""
        out = {"W_enc": self.W_enc.detach(), "b_enc": self.b_enc.detach(),
               "b_dec": self.b_dec.detach(),
               **{f"W_dec_{i}": w.detach() for i, w in enumerate(self.W_dec)}}
        if self.log_threshold is not None:
            out["log_threshold"] = self.log_threshold.detach()
        if self.W_skip is not None:
            out["W_skip"] = self.W_skip.detach()
        return out

    @torch.no_grad()
    def load_tensors(self, tensors: dict[str, Tensor], what: str = "cross-layer transcoder"
                     ) -> None:
        """Set every weight from :meth:`tensors`' names, checking names, shapes and that
        thresholds are finite; one :class:`InterpError` line otherwise."""
        want = {k: tuple(v.shape) for k, v in self.tensors().items()}
        missing = sorted(set(want) - set(tensors))
        if missing:
            raise InterpError(f"{what} lacks {', '.join(missing)}")
        for name, shape in want.items():
            if tuple(tensors[name].shape) != shape:
                raise InterpError(f"{what} tensor {name} has shape "
                                  f"{list(tensors[name].shape)}, expected {list(shape)}")
        self.W_enc.copy_(tensors["W_enc"])
        self.b_enc.copy_(tensors["b_enc"])
        self.b_dec.copy_(tensors["b_dec"])
        for i, w in enumerate(self.W_dec):
            w.copy_(tensors[f"W_dec_{i}"])
        if self.W_skip is not None:
            self.W_skip.copy_(tensors["W_skip"])
        if self.log_threshold is not None:
            t = tensors["log_threshold"]
            if not bool(torch.isfinite(t).all()):
                raise InterpError(f"{what}: JumpReLU thresholds must be finite and positive")
            self.log_threshold.copy_(t)

    def state_tensors(self) -> dict[str, Tensor]:
        """Nothing beyond the parameters (the trainer's checkpoints use ``state_dict``)."""
        return {}

    # ---- sharded features -------------------------------------------------------------
    @staticmethod
    def feature_dim(name: str) -> int | None:
        """The dimension that indexes features in the weight ``name`` (``state_dict`` or
        :meth:`tensors` names); None for the weights every shard holds whole (``b_dec``,
        ``W_skip``)."""
        if name.startswith(("W_dec.", "W_dec_")):
            return 0
        return {"W_enc": 2, "b_enc": 1, "log_threshold": 1}.get(name)

    def gather(self, name: str, t: Tensor) -> Tensor:
        """The whole of weight (or weight-shaped state) ``t`` of ``name``: every process's
        slice side by side (collective: every process calls it)."""
        dim = self.feature_dim(name)
        return t if dim is None else self.shards.cat(t, dim)

    def shard_of(self, name: str, t: Tensor) -> Tensor:
        """This process's slice of the whole weight (or weight-shaped state) ``t``."""
        dim = self.feature_dim(name)
        return t if dim is None else t.narrow(dim, self.lo, self.m).clone()

    def gathered(self) -> CrossLayerTranscoder:
        """The whole CLT on every process (collective); itself when unsharded."""
        if not self.shards.on:
            return self
        whole = CrossLayerTranscoder(self.cfg, self.train_cfg)
        whole.load_tensors({k: self.gather(k, v) for k, v in self.tensors().items()})
        return whole

    def save(self, path: str | Path, *, d_model: int | None = None,
             manifest: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
             ) -> Path:
        """Save as an :mod:`interp.runs.artifacts` folder of kind ``"clt"``."""
        from interp.runs.artifacts import save_artifact

        config = {KIND: self.cfg.to_dict(), **(extra or {})}
        return save_artifact(path, {k: v.contiguous() for k, v in self.tensors().items()},
                             kind=KIND, config=config, model_id=self.cfg.model_id or "unknown",
                             d_model=d_model or self.cfg.d_in, hook_point=self.cfg.hook_point,
                             manifest=manifest)


def clt_from_tensors(cfg: CLTConfig, tensors: dict[str, Tensor], what: str = "cross-layer "
                     "transcoder") -> CrossLayerTranscoder:
    """A CLT of ``cfg`` with the weights in ``tensors`` (:meth:`CrossLayerTranscoder.tensors`'
    names), every shape checked."""
    clt = CrossLayerTranscoder(cfg)
    clt.load_tensors({k: v.float() for k, v in tensors.items()}, what)
    return clt


@dataclass
class LoadedCLT:
    """A CLT read from disk with its saved config and manifest."""

    clt: CrossLayerTranscoder
    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]


def load_clt(path: str | Path, model: Any | None = None, device: str = "cpu") -> LoadedCLT:
    """A CLT artifact (a run folder's ``clt/`` or the artifact itself); with ``model``,
    refused in one line when made for another model, width or depth."""
    from interp.runs.artifacts import load_artifact

    p = Path(path).expanduser()
    if (p / "clt" / "config.json").is_file():
        p = p / "clt"
    art = load_artifact(p, kind=KIND)
    raw = art.config.get(KIND)
    if not isinstance(raw, dict):
        raise InterpError(f"cross-layer transcoder {p}: config.json has no {KIND!r} settings")
    try:
        cfg = CLTConfig(**{**raw, "layers": tuple(raw.get("layers", ())),
                           "input_scales": tuple(raw.get("input_scales", ())),
                           "output_scales": tuple(raw.get("output_scales", ()))})
    except (TypeError, ConfigError) as exc:
        raise InterpError(f"cross-layer transcoder {p}: bad settings in config.json "
                          f"({str(exc).splitlines()[0]})") from None
    clt = clt_from_tensors(cfg, art.tensors, f"cross-layer transcoder {p}").to(device)
    if model is not None:
        check_clt_model(clt, model, art.model_id)
    return LoadedCLT(clt, art.path, art.config, art.manifest)


def check_clt_model(clt: CrossLayerTranscoder, model: Any, model_id: str | None = None) -> None:
    """Refuse (one line) a CLT of another width, depth or model than ``model``."""
    if clt.cfg.d_in != model.d_model:
        raise InterpError(f"the cross-layer transcoder reads width {clt.cfg.d_in}, but "
                          f"{model.model_id} has d_model={model.d_model}")
    if clt.cfg.layers[-1] >= model.n_layers:
        raise InterpError(f"the cross-layer transcoder covers layers up to {clt.cfg.layers[-1]}, "
                          f"but {model.model_id} has layers 0–{model.n_layers - 1}")
    made_for = model_id if model_id is not None else clt.cfg.model_id
    if made_for and made_for not in ("unknown",) and made_for != model.model_id:
        raise InterpError(f"the cross-layer transcoder was trained on model {made_for!r} but "
                          f"the loaded model is {model.model_id!r}")


__all__ = ["ACTIVATIONS", "KIND", "READS", "TRAINED", "CLTConfig", "CrossLayerTranscoder",
           "LoadedCLT", "check_clt_model", "clt_from_tensors", "load_clt", "spans"]
