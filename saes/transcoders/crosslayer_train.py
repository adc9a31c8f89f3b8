"""Training a cross-layer transcoder: the SAE trainer (:mod:`saes.train`) on rows holding
every covered layer's ``[MLP input | MLP output]`` for one token, from one forward pass.

The run folder is ``OUT`` itself (``checkpoint/`` while training, ``clt/`` at the end):
one CLT covers all its layers. The activation store reads each layer's ``mlp`` site
(:class:`saes.store.LayersStore`: one store per layer sharing the model's forward, whose
batches line up token by token), so a run reads the model once per chunk of text, as
per-layer transcoder training does, and resumes to the same weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import Tensor

from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.resume import optimizer_tensors
from interp.schema import setting
from saes.architectures import Architecture, TopKConfig
from saes.store import ActivationStore, LayersStore, SharedForward
from saes.train import SAERun, SAETrainResult, check_text, train_runs
from saes.transcoders.crosslayer import TRAINED, CLTConfig, CrossLayerTranscoder, spans
from saes.transcoders.sharding import Shards
from saes.transcoders.train import TranscoderTrainConfig

CLT_SUBDIR = "clt"
CHECKPOINT_KIND = "clt_checkpoint"


@dataclass(frozen=True)
class CLTTrainConfig(TranscoderTrainConfig):
    """Settings of a cross-layer transcoder run: :class:`TranscoderTrainConfig`'s, with
    ``d_sae`` the features *per layer* and ``layers`` the blocks it covers (``layer`` is set
    to the last of them)."""

    noun: ClassVar[str] = "CLT"

    arch: Architecture = setting(default_factory=TopKConfig, cli=False,
                                 help="The architecture (topk or jumprelu) and its settings.")
    d_sae: int = setting(1024, help="Features per layer.")
    layers: tuple[int, ...] = setting((), cli=False, help="The blocks it covers, increasing "
                                                          "(set by the caller).")
    reach: int | None = setting(None, help="How many layers a feature writes, from its own: "
                                           "none for every later one (Ameisen et al.'s CLT), N "
                                           "for its own and the next N − 1 (a windowed CLT).")
    shard_features: bool = setting(False, help="Under torchrun, split each layer's features "
                                               "across the processes (each reads the same "
                                               "text) instead of a whole CLT on each.")

    def check(self) -> None:
        """:meth:`~saes.transcoders.train.TranscoderTrainConfig.check`; a trained
        architecture (TopK, JumpReLU)."""
        super().check()
        if self.reach is not None and (isinstance(self.reach, bool)
                                       or not isinstance(self.reach, int) or self.reach < 1):
            raise self.error("reach", "must be a positive integer or none", self.reach)
        if self.arch.name not in TRAINED:
            raise self.error("arch", f"cross-layer transcoders train as "
                             f"{' or '.join(TRAINED)}", self.arch.name)

    def sae_config(self, model: Model) -> CLTConfig:  # type: ignore[override]
        """The :class:`CLTConfig` of the CLT this run trains on ``model``."""
        return CLTConfig(d_in=model.d_model, d_sae=self.d_sae, layers=tuple(self.layers),
                         model_id=model.model_id, architecture=self.arch.name,
                         k=getattr(self.arch, "k", None), skip=self.skip, reach=self.reach,
                         reads="mlp_in")

    def build(self, model: Model, shards: Shards | None = None,  # type: ignore[override]
              ) -> CrossLayerTranscoder:
        """The zero-weight CLT this run trains (``shards``: this process's share of it)."""
        return CrossLayerTranscoder(self.sae_config(model), self.arch, shards)


class CLTRun(SAERun):
    """A cross-layer transcoder run (an :class:`~saes.train.SAERun` reading every covered
    layer and writing ``clt/``)."""

    checkpoint_kind = CHECKPOINT_KIND
    final_subdir = CLT_SUBDIR
    what = "a cross-layer transcoder run"
    loss_name = "CLT loss"
    cfg: CLTTrainConfig
    sae: CrossLayerTranscoder

    # ---- features sharded across processes (shard_features under torchrun) ----------------
    @property
    def sharded(self) -> bool:
        """Whether each process holds a slice of every layer's features."""
        return self.cfg.shard_features and self.world > 1

    def build_sae(self) -> CrossLayerTranscoder:  # type: ignore[override]
        """The zero-weight CLT, or this process's slice of it."""
        if self.sharded and self.world > self.cfg.d_sae:
            raise InterpError(f"cannot shard {self.cfg.d_sae} features per layer over "
                              f"{self.world} processes")
        return self.cfg.build(self.model, Shards(self.rank, self.world) if self.sharded
                              else None)

    def clip_gradients(self) -> None:
        """Clip to ``grad_clip`` the norm of the whole CLT's gradient (each slice's squared
        norm summed over processes, the weights every process holds whole counted once),
        as :func:`torch.nn.utils.clip_grad_norm_` does on one process."""
        if not self.sharded:
            return super().clip_gradients()
        grads = [(n, p.grad) for n, p in self.sae.named_parameters() if p.grad is not None]
        sq = torch.zeros(2, dtype=torch.float64)  # [sliced, whole] squared norms
        for n, g in grads:
            sq[int(self.sae.feature_dim(n) is None)] += g.double().pow(2).sum()
        norm = float((self.sae.shards.total(sq[0]) + sq[1]).sqrt())
        coef = self.cfg.grad_clip / (norm + 1e-6)
        if coef < 1:
            for _, g in grads:
                g.mul_(coef)
        return None

    def dead_fraction(self) -> float:
        """Over every process's features."""
        if not self.sharded:
            return super().dead_fraction()
        dead = (self.steps_since >= self.dead_steps).sum().double()
        return float(self.sae.shards.total(dead)) / (self.sae.cfg.n_layers * self.cfg.d_sae)

    def checkpoint_tensors(self) -> dict[str, Tensor]:
        """The whole CLT's state and Adam's, gathered from every process's slice."""
        if not self.sharded:
            return super().checkpoint_tensors()
        names = [n for n, _ in self.sae.named_parameters()]
        nl = self.sae.cfg.n_layers
        out = {k: self.sae.gather(k, v.detach()) for k, v in self.sae.state_dict().items()}
        out["steps_since_fired"] = self.sae.shards.cat(self.steps_since.view(nl, -1),
                                                       1).reshape(-1)
        for key, t in optimizer_tensors(self.optimizer).items():
            out[key] = self.sae.gather(names[int(key.split(".")[1])], t) if t.dim() else t
        return out if self.rank == 0 else {}

    def local_tensors(self, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
        """A checkpoint's whole tensors cut to this process's slice."""
        if not self.sharded:
            return tensors
        names = [n for n, _ in self.sae.named_parameters()]
        nl, sae = self.sae.cfg.n_layers, self.sae
        out = {}
        for key, t in tensors.items():
            if key == "steps_since_fired":
                out[key] = t.view(nl, -1)[:, sae.lo:sae.hi].reshape(-1).clone()
            elif key.startswith("opt."):
                out[key] = sae.shard_of(names[int(key.split(".")[1])], t) if t.dim() else t
            else:
                out[key] = sae.shard_of(key, t)
        return out

    def finish(self, done: int, manifest: dict[str, Any]) -> SAETrainResult:
        """The SAE run's end, on the whole CLT (gathered from the processes' slices)."""
        if self.sharded and done >= self.cfg.steps:
            self.sae = self.sae.gathered()
        return super().finish(done, manifest)

    def store_layers(self) -> list[int]:
        """Every layer the CLT covers."""
        return list(self.cfg.layers)

    @property
    def label(self) -> str:
        """``CLT L0–29 d_sae=1024``."""
        ls = self.cfg.layers
        return f"CLT L{ls[0]}–{ls[-1]} ({len(ls)} layers) d_sae={self.cfg.d_sae}/layer"

    def open_store(self, docs: Sequence[str], shared: SharedForward, *, cache_dir: str | Path
                   | None, data_hash: str) -> LayersStore:
        """One store per covered layer, sharing ``shared``'s forwards."""
        if self.sharded and cache_dir is not None:
            raise InterpError("sharded features read the text on every process: train them "
                              "without an activation cache")
        # sharded: every process reads every batch (as one process would)
        rank, world = (0, 1) if self.sharded else (self.rank, self.world)
        return LayersStore([
            ActivationStore(self.model, docs, replace(self.cfg, layer=layer).store_config(),
                            batch_size=self.cfg.batch_size, rank=rank, world=world,
                            cache_dir=cache_dir, data_hash=data_hash, shared=shared)
            for layer in self.cfg.layers])


def clt_training_bytes(cfg: CLTTrainConfig, d_model: int) -> int:
    """Peak bytes of CLT training beside the model: the weights (encoders, the decoder
    blocks, ``L(L+1)/2`` or fewer with a reach; skip paths) with gradients and Adam's
    moments (4 copies); the batch (every layer's input and output, and its scaled copy);
    each layer's pre-activations (kept for AuxK) and the prediction with its gradient; and
    the activation store's chunk at every layer with its shuffled copy and the forward's."""
    n, d, m = len(cfg.layers), d_model, cfg.d_sae
    f32 = 4
    weights = clt_parameters(cfg, d_model) * f32 * 4
    batch = cfg.batch_size * n * 2 * d * f32 * 2
    work = cfg.batch_size * n * (m + 3 * d) * f32
    chunk = cfg.windows_per_chunk * (cfg.seq_len - 1) * n * 2 * d * f32 * 3
    return weights + batch + work + chunk


def clt_parameters(cfg: CLTTrainConfig, d_model: int) -> int:
    """Trainable parameters of the CLT ``cfg`` trains (Adam keeps two more floats each)."""
    n, d, m = len(cfg.layers), d_model, cfg.d_sae
    return (n * d * m + n * m + sum(spans(n, cfg.reach)) * m * d + n * d
            + (n * d * d if cfg.skip else 0) + (n * m if cfg.arch.name == "jumprelu" else 0))


def check_clt_memory(model: Model, cfg: CLTTrainConfig) -> None:
    """Refuse (one line, before any weight is made) a CLT whose training would not fit."""
    from interp.runs.memory import require

    require(clt_training_bytes(cfg, model.d_model),
            f"training a cross-layer transcoder over {len(cfg.layers)} layers with d_sae="
            f"{cfg.d_sae:,} per layer ({clt_parameters(cfg, model.d_model) / 1e6:,.0f}M "
            f"parameters; batch_size={cfg.batch_size:,}, windows_per_chunk="
            f"{cfg.windows_per_chunk:,} × seq_len={cfg.seq_len})",
            "lower d_sae, the layers, batch_size or windows_per_chunk", device=model.device)


def prepare_clt(model: Model, docs: Sequence[str], layers: Sequence[int] | None,
                cfg: CLTTrainConfig | None) -> CLTTrainConfig:
    """``cfg`` over ``layers`` (default: every block), refused in one line, before any work,
    for no layers, a layer the model has not, settings that would not fit in memory, or too
    little text (an architecture it does not train is refused when ``cfg`` is made)."""
    cfg = cfg or CLTTrainConfig()
    picked = sorted({model.check_layer(layer) for layer in
                     (range(model.n_layers) if layers is None else layers)})
    if not picked:
        raise InterpError("no layers to train a cross-layer transcoder on")
    cfg = replace(cfg, layers=tuple(picked), layer=picked[-1])
    check_clt_memory(model, cfg)
    check_text(model, docs, cfg)
    return cfg


def train_clt(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    layers: Sequence[int] | None = None,
    cfg: CLTTrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
) -> SAETrainResult:
    """Train (or resume) one cross-layer transcoder over ``layers`` (default: every block)
    into ``out_dir`` (``clt/`` when done).

    See :func:`saes.train.train_saes` for ``data``, ``cache_dir``, ``stop_at`` and
    ``on_checkpoint``. Raises :class:`InterpError` (one line) for no layers, settings
    that would not fit in memory, or too little text.
    """
    cfg = prepare_clt(model, docs, layers, cfg)
    return train_runs(model, docs, [(cfg, Path(out_dir).expanduser())], data=data,
                      cache_dir=cache_dir, stop_at=stop_at, manifest=manifest,
                      progress=progress, on_checkpoint=on_checkpoint, run_class=CLTRun)[0]


__all__ = ["CHECKPOINT_KIND", "CLT_SUBDIR", "CLTRun", "CLTTrainConfig", "check_clt_memory",
           "clt_parameters", "clt_training_bytes", "prepare_clt", "train_clt"]
