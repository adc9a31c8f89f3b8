"""Training an SAE: Adam with schedules, dead-feature tracking, resampling, resume, DDP.

Each step takes a global batch of ``batch_size`` activations from the
:class:`~saes.store.ActivationStore`, scaled so that ``E‖x‖² = d_in``, and minimises the
architecture's loss (``SAETrainConfig.arch``, :mod:`saes.architectures`): for the default
ReLU SAE ``‖x − x̂‖² + λ_t · Σ f_i‖W_dec[i]‖`` (see :mod:`saes.sae`); for TopK and
BatchTopK the reconstruction plus AuxK on the dead latents; for JumpReLU the
reconstruction plus λ_t · L0. With Adam:

* **learning rate:** linear warm-up over the first ``lr_warmup_fraction`` of steps, constant,
  then linear decay to 0 over the last ``lr_decay_fraction`` (Anthropic's schedule);
* **sparsity coefficient** (L1 for ReLU, L0 for JumpReLU): λ_t rises linearly from 0 to λ
  over the first ``sparsity_warmup_fraction`` of steps, so features get to move before
  the penalty kills them;
* gradients are clipped to norm 1.

**Dead features.** A feature is *dead* when it has not fired on any of the last
``dead_window`` training tokens. The progress bar and the history show the dead fraction.
With ``resample_every`` > 0 (Towards Monosemanticity's *neuron resampling*), every that many
steps, up to ``resample_until`` of the run, each dead feature is re-initialised on an input
the SAE reconstructs badly (sampled ∝ loss² from the current batch): its decoder row
becomes that input's direction (scaled to the mean live decoder norm), its encoder column
the same direction at 0.2× the mean live encoder norm, its bias 0, and its Adam moments
are reset. Resampling lowers the dead fraction and usually raises explained variance at
the same L0; it costs a brief loss spike after each resample.

**Resume.** Every ``checkpoint_every`` steps the SAE, the Adam state, the dead-feature
counters and the history are written atomically to ``out/checkpoint``; rerunning with the
same settings continues from there. Batches are a pure function of the step
(:mod:`saes.store`), so the resumed run ends with the same weights as an uninterrupted one.

**Several processes.** Under ``torchrun`` each rank trains a replica wrapped in
:class:`~torch.nn.parallel.DistributedDataParallel` (gloo on CPU, nccl on GPU) on its own
substreams of the text, gradients are averaged, dead-feature counters are combined, and
rank 0 writes the checkpoints and the final SAE. A run whose ranks hold slices of one model
instead (``SAERun.sharded``: a cross-layer transcoder's features,
:mod:`saes.transcoders.sharding`) overrides the hooks that differ: how the model is built,
clipped, counted dead, checkpointed and resumed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
import torch
from torch import Tensor, nn

from interp.display import MISSING
from interp.errors import InterpError
from interp.mfu import ModelShape, forward_flops
from interp.mfu.flops import format_rate
from interp.models.loading import Model
from interp.profiling.session import phase
from interp.runs.manifest import model_manifest, sha256_texts
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    fraction,
    in_range,
    json_field,
    positive,
    seed_range,
    setting,
)
from interp.training import ResumableRun, barrier, train_steps
from saes.architectures import Architecture, ReLUConfig
from saes.results import TrainingRecord
from saes.sae import SAEConfig, SparseAutoencoder
from saes.store import (
    SITES,
    ActivationStore,
    LayersStore,
    SharedForward,
    StoreConfig,
    input_scale,
    mean_sq_norm,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SAE_SUBDIR = "sae"
CHECKPOINT_KIND = "sae_checkpoint"
#: An SAE that calibrates inference state when training ends (BatchTopK's threshold) does
#: it on the batches of this many final steps.
CALIBRATION_STEPS = 4


@dataclass(frozen=True)
class SAETrainConfig(Config):
    """Settings of one SAE training run (saved with the SAE and its checkpoints).

    ``arch`` is the architecture's own settings (:mod:`saes.architectures`); a dict (as read
    back from a saved ``config.json``) is rebuilt into them. ``layer`` and ``batch_size``,
    ``seed`` are set by ``interp sae train``'s ``--layer``/``--layers`` and model options.
    """

    layer: int = setting(6, cli=False, help="Residual stream after this block "
                                            "(blocks.L.hook_resid_post).")
    d_sae: int = setting(4608, check=at_least(1),
                         help="Dictionary size (8 × d_model for the default model).",
                         cli=Cli(range=True))
    arch: Architecture = setting(default_factory=ReLUConfig, cli=False,
                                 help="The architecture and its settings.")
    tokens: int = setting(2_000_000, check=at_least(1), help="Training tokens (activations).",
                          cli=Cli(range=True))
    batch_size: int = setting(4096, cli=False, check=at_least(1),
                              help="Activations (tokens) per training step, over all "
                                   "processes.")
    lr: float = setting(4e-4, check=positive, help="Adam's learning rate.")
    lr_warmup_fraction: float = setting(0.01, cli=False, check=fraction,
                                        help="Fraction of steps of linear learning-rate "
                                             "warm-up.")
    lr_decay_fraction: float = setting(0.2, cli=False, check=fraction,
                                       help="Fraction of steps of linear decay to 0 at the "
                                            "end.")
    sparsity_warmup_fraction: float = setting(
        0.05, check=fraction,
        help="Fraction of steps over which the L1 (ReLU) or L0 (JumpReLU) λ rises from 0.",
        cli=Cli(flag="--l1-warmup", range=True))
    beta1: float = setting(0.9, cli=False, check=in_range(0, 1, open_high=True),
                           help="Adam's β₁.")
    beta2: float = setting(0.999, cli=False, check=in_range(0, 1, open_high=True),
                           help="Adam's β₂.")
    grad_clip: float = setting(1.0, cli=False, check=positive,
                               help="Gradient norm clip.")
    dec_init_norm: float = setting(0.1, cli=False, check=positive,
                                   help="Initial decoder row norm (ReLU SAEs).")
    dead_window: int = setting(1_000_000, check=at_least(1),
                               help="Tokens without firing before a feature is dead.",
                               cli=Cli(range=True))
    resample_every: int = setting(0, check=at_least(0),
                                  help="Resample dead features every N steps in the first "
                                  "half (0: never).", cli=Cli(range=True))
    resample_until: float = setting(0.5, cli=False, check=fraction,
                                    help="Fraction of the run during which dead features "
                                         "are resampled.")
    checkpoint_every: int = setting(50, check=at_least(1), help="Steps between checkpoints.",
                                    cli=Cli(range=True))
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the initialisation and the data order.")
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.",
                           cli=Cli(range=True))
    windows_per_chunk: int = setting(
        1024, check=at_least(1),
        help="Windows shuffled together (memory: this × seq-len × d × 4 bytes).",
        cli=Cli(range=True))
    data_shards: int = setting(1, check=at_least(1),
                               help="Substreams of the text [default: the number of "
                               "processes].", cli=Cli(default=None, range=True))

    #: What the activation store reads at the layer (:data:`saes.store.SITES`).
    site: ClassVar[str] = "resid"
    #: What the progress bar and messages call the trained model.
    noun: ClassVar[str] = "SAE"

    def __post_init__(self) -> None:
        if isinstance(self.arch, Mapping):  # read back from a saved config.json
            object.__setattr__(self, "arch", Architecture.from_dict(self.arch))
        super().__post_init__()

    def check(self) -> None:
        """``arch`` must be an architecture's settings that fit ``d_sae``, and the store's shards
        and chunks must fit together."""
        if not isinstance(self.arch, Architecture):
            raise self.error("arch", "must be an SAE architecture's settings", self.arch)
        self.arch.check_width(self.d_sae)
        self.store_config()  # shards and chunks fit together

    @property
    def steps(self) -> int:
        """Optimiser steps: ``tokens / batch_size``, rounded up, at least 1."""
        return max(1, math.ceil(self.tokens / self.batch_size))

    def lr_at(self, step: int) -> float:
        """The learning rate at ``step`` (0-based): linear warm-up over ``lr_warmup_fraction`` of
        the steps, constant, then linear decay to 0 over the last ``lr_decay_fraction``."""
        warm = max(1, round(self.lr_warmup_fraction * self.steps))
        decay = round(self.lr_decay_fraction * self.steps)
        if step < warm:
            return self.lr * (step + 1) / warm
        if decay and step >= self.steps - decay:
            return self.lr * (self.steps - step) / decay
        return self.lr

    def sparsity_at(self, step: int) -> float:
        """The sparsity coefficient at ``step`` (0 for TopK and BatchTopK)."""
        full = self.arch.coefficient()
        warm = round(self.sparsity_warmup_fraction * self.steps)
        if warm and step < warm:
            return full * (step + 1) / warm
        return full

    def sae_config(self, model: Model) -> SAEConfig:
        """The :class:`~saes.sae.SAEConfig` of the SAE this run trains on ``model``."""
        return SAEConfig(d_in=model.d_model, d_sae=self.d_sae, hook_point=model.resid_hook(
            self.layer), layer=self.layer, model_id=model.model_id, **self.arch.sae_fields())

    def build(self, model: Model) -> SparseAutoencoder:
        """The (zero-weight) model this run trains on ``model``: the class its
        :meth:`sae_config` names (a transcoder's config names a transcoder class)."""
        cfg = self.sae_config(model)
        return cfg.model_class()(cfg, self.arch)

    def store_config(self) -> StoreConfig:
        """The activation store's settings this run implies."""
        return StoreConfig(layer=self.layer, site=self.site, seq_len=self.seq_len,
                           windows_per_chunk=self.windows_per_chunk,
                           data_shards=self.data_shards, seed=self.seed)


@dataclass
class SAETrainResult(Result):
    """What one call to :func:`train_sae` did; ``history`` covers every step so far.

    ``to_dict()`` is ``interp sae train``'s ``results.json`` (``config`` under ``train``),
    ``to_frame()`` the history (one row per step), and ``record`` the run as saved with the
    SAE (what ``interp sae eval`` reports under "Training"); in a notebook it shows its
    progress and the training curves. ``manifest`` is the one saved with the SAE.
    """

    out_dir: Path
    steps_done: int
    steps_total: int
    complete: bool
    resumed_from: int
    history: dict[str, list[float]] = field(repr=False)
    tokens_per_s: float
    elapsed_s: float
    sae_path: Path | None
    resampled: list[list[int]] = field(default_factory=list)
    config: SAETrainConfig | None = json_field(None, key="train")
    #: model FLOPs utilisation (see interp.mfu) and the FLOP/s it divides by; left out
    #: while unknown (no peak)
    mfu: float | None = json_field(None, omit_none=True)
    peak_flops: float | None = json_field(None, omit_none=True)
    flops: float | None = None  # FLOPs counted over the run (model forward + SAE steps)
    calibration: dict[str, float] | None = json_field(  # see TrainingRecord.calibration
        None, omit_none=True)

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (
        "out_dir", "steps_done", "steps_total", "complete", "resumed_from", "tokens_per_s",
        "elapsed_s", "flops", "sae_path", "train", "history", "resampled", ...)

    @property
    def record(self) -> TrainingRecord:
        """Settings, history and resampling events, as saved with the SAE."""
        return TrainingRecord(train=self.config.to_dict() if self.config else None,
                              history=self.history, resampled=self.resampled,
                              elapsed_s=self.elapsed_s, tokens_per_s=self.tokens_per_s,
                              mfu=self.mfu, peak_flops=self.peak_flops,
                              calibration=self.calibration)

    def to_frame(self) -> pd.DataFrame:
        """One row per step: loss, MSE, L1, L0, dead fraction, EV, learning rate, λ (the
        whole history, where the headline has the last step)."""
        return self.record.to_frame()

    def headline(self) -> Headline:
        """Progress, the last step's numbers, throughput and where the SAE is."""
        h = self.history
        last = [(k, h[k][-1]) for k in ("loss", "l0", "explained_variance", "dead_fraction")
                if h.get(k)]
        rows: list[tuple[str, Any]] = [
            ("steps", f"{self.steps_done} of {self.steps_total}"
                      + ("" if self.complete else " (unfinished: rerun to resume)")),
            ("tokens/s", self.tokens_per_s),
            ("MFU", MISSING if self.mfu is None else f"{100 * self.mfu:.2f}%"), *last,
            ("resampling events", len(self.resampled)),
            ("SAE", str(self.sae_path) if self.sae_path else MISSING),
        ]
        return Headline(f"SAE training — {self.out_dir}", rows=rows)

    def figure(self) -> Figure | None:
        """:func:`~saes.figures.training_figure` of the run's record."""
        from saes.figures import training_figure

        return training_figure(self.record)


class _LossModule(nn.Module):
    """The SAE's training loss as a module, so DistributedDataParallel can wrap it."""

    def __init__(self, sae: SparseAutoencoder) -> None:
        super().__init__()
        self.sae = sae

    def forward(self, x: Tensor, coefficient: float, dead: Tensor
                ) -> tuple[Tensor, dict[str, Tensor]]:
        return self.sae.loss(x, coefficient, dead)


def _dist() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _all_reduce(t: Tensor, op: str = "sum") -> Tensor:
    import torch.distributed as dist

    if _dist()[1] > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX)
    return t


def _all_gather_cat(t: Tensor) -> Tensor:
    import torch.distributed as dist

    world = _dist()[1]
    if world == 1:
        return t
    parts = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


HISTORY_KEYS = ("loss", "mse", "l1", "l0", "dead_fraction", "explained_variance", "lr",
                "sparsity_coef")


@torch.no_grad()
def resample_dead(
    sae: SparseAutoencoder, opt: torch.optim.Optimizer, dead: Tensor, x: Tensor,
    generator: torch.Generator,
) -> int:
    """Re-initialise the ``dead`` features on badly reconstructed inputs of ``x`` (scaled).

    See the module doc. Returns the number of features resampled.
    """
    idx = dead.nonzero().squeeze(1)
    if idx.numel() == 0:
        return 0
    f = sae.activate(sae.pre_acts(x))
    err = (f @ sae.W_dec + sae.b_dec - x).pow(2).sum(-1)
    weights = err.pow(2).double()
    if not torch.isfinite(weights).all() or float(weights.sum()) <= 0:
        return 0
    pick = torch.multinomial(weights, idx.numel(), replacement=idx.numel() > x.shape[0],
                             generator=generator)
    v = x[pick] - sae.b_dec
    v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-8)
    alive = ~dead
    dec_norm = sae.W_dec[alive].norm(dim=1).mean() if alive.any() else torch.tensor(0.1)
    enc_norm = sae.W_enc[:, alive].norm(dim=0).mean() if alive.any() else torch.tensor(0.1)
    sae.W_dec[idx] = v * dec_norm
    sae.W_enc[:, idx] = (v * enc_norm * 0.2).T
    sae.b_enc[idx] = 0.0
    for p, sl in ((sae.W_dec, (idx,)), (sae.W_enc, (slice(None), idx)), (sae.b_enc, (idx,))):
        state = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq"):
            if key in state:
                state[key][sl] = 0.0
    return int(idx.numel())


def _checkpoint_settings(cfg: SAETrainConfig, data: dict[str, Any], model: Model) -> dict[str, Any]:
    return {"train": cfg.to_dict(), "data": dict(data), "model_id": model.model_id}


def train_sae(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    cfg: SAETrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
) -> SAETrainResult:
    """Train (or resume) an SAE on ``docs`` at ``cfg.layer``; write ``out_dir/sae`` when done.

    Args:
        docs: training documents (the corpus's train split, or the user's text).
        out_dir: the run folder: ``checkpoint/`` and ``progress.json`` while training,
            ``sae/`` at the end. A folder holding a run with the same settings is resumed;
            other settings are refused in one line.
        data: where the text came from (``{"source": …, "sha256": …}``), recorded and
            compared on resume; its sha256 also keys the activation cache.
        cache_dir: keep activations on disk here (see :mod:`saes.store`).
        stop_at: stop (with a checkpoint) after this many steps in all, unfinished.
        manifest: run manifest to save with the SAE (default: built here).
        on_checkpoint: called with the step after each checkpoint is on disk (tests).

    Raises:
        InterpError: bad settings, a run with other settings in ``out_dir``, or a non-finite
            loss (training stops; the last good checkpoint is kept).
    """
    cfg = cfg or SAETrainConfig()
    check_memory(model, cfg)
    check_text(model, docs, cfg)
    return train_runs(model, docs, [(cfg, Path(out_dir).expanduser())], data=data,
                       cache_dir=cache_dir, stop_at=stop_at, manifest=manifest,
                       progress=progress, on_checkpoint=on_checkpoint)[0]


def check_memory(model: Model, cfg: SAETrainConfig, n_saes: int = 1) -> None:
    """Refuse (one line, before any weight is made) SAEs whose training would not fit:
    :func:`interp.runs.memory.sae_training_bytes` against the memory available."""
    from interp.runs.memory import require, sae_training_bytes

    need = sae_training_bytes(cfg.d_sae, model.d_model, batch=cfg.batch_size,
                              chunk_tokens=cfg.windows_per_chunk * cfg.seq_len
                              * SITES[cfg.site],
                              n_saes=n_saes)
    what = f"{n_saes} SAEs" if n_saes > 1 else "an SAE"
    require(need, f"training {what} of d_sae={cfg.d_sae:,} on d_model={model.d_model} "
            f"(batch_size={cfg.batch_size:,}, windows_per_chunk={cfg.windows_per_chunk:,} × "
            f"seq_len={cfg.seq_len})", "lower d_sae, batch_size or windows_per_chunk",
            device=model.device)


def text_windows(cfg: SAETrainConfig) -> int:
    """Text windows a run reads: each substream's whole chunks of windows (a chunk is read
    and shuffled whole), enough for ``steps × batch_size`` activations (``seq_len − 1`` per
    window: position 0 is dropped)."""
    store = cfg.store_config()
    per_shard = cfg.steps * cfg.batch_size // cfg.data_shards
    chunks = math.ceil(per_shard / store.tokens_per_shard_chunk)
    return chunks * cfg.windows_per_chunk


def check_text(model: Model, docs: Sequence[str], cfg: SAETrainConfig) -> None:
    """Refuse (one line, before any work) a run that would read more text than ``docs``
    hold (:func:`interp.data.windows.require_text`): the stream would start the text over,
    and the SAE would train on repeated activations."""
    from interp.data.windows import require_text

    windows = text_windows(cfg)
    chunks = windows // cfg.windows_per_chunk
    require_text(model, docs, need=windows * cfg.seq_len, what="SAE training",
                 asked=f"tokens={cfg.tokens:,}",
                 reads=f"{chunks:,} chunks of windows_per_chunk={cfg.windows_per_chunk:,} "
                       f"windows of seq_len={cfg.seq_len}",
                 fix="lower tokens (or windows_per_chunk) or give more text")


def layer_dir(out_dir: str | Path, layer: int) -> Path:
    """The run folder of ``layer`` inside a several-layer run folder."""
    return Path(out_dir).expanduser() / f"layer-{layer}"


def train_saes(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    layers: Sequence[int],
    cfg: SAETrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
    run_class: type[SAERun] | None = None,
) -> dict[int, SAETrainResult]:
    """Train one SAE per layer of ``layers`` (``cfg``'s settings, ``cfg.layer`` ignored) from
    the same model forward passes: each chunk of windows runs through the model once, up
    to the deepest layer, and every layer's store takes its activations from that pass.

    Each layer is a run folder of its own, ``out_dir/layer-L`` (:func:`layer_dir`), exactly
    as :func:`train_sae` would write it (checkpoints, resume, ``sae/``); a killed run
    resumes each layer from its own last checkpoint. Returns the results by layer.
    ``run_class`` trains another member of the family (a transcoder's run).
    """
    cfg = cfg or SAETrainConfig()
    checked = sorted({model.check_layer(layer) for layer in layers})
    if not checked:
        raise InterpError("no layers to train")
    check_memory(model, cfg, n_saes=len(checked))
    check_text(model, docs, cfg)
    runs = [(replace(cfg, layer=layer), layer_dir(out_dir, layer)) for layer in checked]
    results = train_runs(model, docs, runs, data=data, cache_dir=cache_dir, stop_at=stop_at,
                         manifest=manifest, progress=progress, on_checkpoint=on_checkpoint,
                         run_class=run_class)
    return dict(zip(checked, results, strict=True))


class SAERun(ResumableRun):
    """One SAE being trained: weights, optimiser, dead-feature counters, history and the
    activation store it draws its batches from; :func:`interp.training.train_steps` owns
    the run folder, checkpoints, progress and FLOPs."""

    checkpoint_kind = CHECKPOINT_KIND
    final_subdir = SAE_SUBDIR
    what = "an SAE run"
    loss_name = "SAE loss"
    nonfinite_hint = "try a lower learning rate (lr) or sparsity coefficient"

    def __init__(self, model: Model, cfg: SAETrainConfig, out: Path, data: dict[str, Any],
                 rank: int, world: int) -> None:
        model.check_layer(cfg.layer)
        self.model_dtype = str(model.dtype).removeprefix("torch.")
        super().__init__(out, _checkpoint_settings(cfg, data, model), steps=cfg.steps,
                         checkpoint_every=cfg.checkpoint_every, tokens_per_step=cfg.batch_size,
                         model_id=model.model_id, d_model=model.d_model, device=model.device,
                         dtypes=(self.model_dtype, "float32"), rank=rank, world=world)
        self.model, self.cfg, self.data = model, cfg, data
        self.sae_dir = self.final_dir
        torch.manual_seed(cfg.seed)
        self.sae = self.build_sae()
        self.hook = self.sae.cfg.hook_point
        self.optimizer = torch.optim.Adam(self.sae.parameters(), lr=cfg.lr,
                                          betas=(cfg.beta1, cfg.beta2))
        self.steps_since = torch.zeros(self.sae.n_latents, dtype=torch.long)  # since each fired
        self.history: dict[str, list[float]] = {k: [] for k in HISTORY_KEYS}
        self.resampled: list[list[int]] = []
        #: the activations' scale: one float (an SAE), or one per block of a row (a transcoder's
        #: input and output), each making E‖c·x‖² = d_model
        self.scale: float | list[float] | None = None
        self.resume()
        self.shape = ModelShape.of(model)
        self.final_batches: dict[int, Tensor] = {}  # step -> scaled batch, for calibration
        self.module: nn.Module = _LossModule(self.sae)
        self.dead_steps = max(1, math.ceil(cfg.dead_window / cfg.batch_size))
        self.store: ActivationStore | LayersStore | None = None
        self.shared: SharedForward | None = None
        self.deepest = max(self.store_layers())

    def build_sae(self) -> SparseAutoencoder:
        """The zero-weight model this run trains."""
        return self.cfg.build(self.model)

    def store_layers(self) -> list[int]:
        """The layers whose activations this run reads (one for an SAE or a transcoder)."""
        return [self.cfg.layer]

    @property
    def label(self) -> str:
        """What the progress bar calls this run."""
        return f"{self.cfg.noun} L{self.cfg.layer} d_sae={self.cfg.d_sae}"

    def open_store(self, docs: Sequence[str], shared: SharedForward, *, cache_dir: str | Path
                   | None, data_hash: str) -> ActivationStore | LayersStore:
        """The store this run draws its batches from, fed by ``shared``'s forwards."""
        return ActivationStore(self.model, docs, self.cfg.store_config(),
                               batch_size=self.cfg.batch_size, rank=self.rank,
                               world=self.world, cache_dir=cache_dir, data_hash=data_hash,
                               shared=shared)

    def close(self) -> None:
        """Let go of the run folder's lock and the activation cache entry's."""
        store = getattr(self, "store", None)  # none yet when resume() refused the folder
        if store is not None:
            store.close()
        super().close()

    # ---------------------------------------------------------------- checkpoint contents
    def state_tensors(self) -> dict[str, Tensor]:
        """The checkpoint's tensors: the model's state and the dead-latent counters."""
        return {**{k: v.detach() for k, v in self.sae.state_dict().items()},
                "steps_since_fired": self.steps_since}

    def load_state(self, tensors: dict[str, Tensor], config: dict[str, Any]) -> None:
        """Resume from a checkpoint's tensors and config."""
        with torch.no_grad():
            for name, t in self.sae.state_dict().items():  # parameters and buffers
                t.copy_(tensors[name])
        self.steps_since = tensors["steps_since_fired"].clone()
        self.history = {k: list(v) for k, v in config["history"].items()}
        scale = config["input_scale"]
        self.scale = [float(c) for c in scale] if isinstance(scale, list) else float(scale)
        self.resampled = list(config.get("resampled", []))

    def checkpoint_config(self) -> dict[str, Any]:
        """The checkpoint's JSON: history, scale(s), resampling events."""
        return {"history": self.history, "input_scale": self.scale,
                "resampled": self.resampled}

    def artifact_options(self) -> dict[str, Any]:
        """The checkpoint artifact's hook point and manifest note."""
        return {"hook_point": self.hook,
                "manifest": {"note": "SAE training checkpoint; the SAE is written at the end"}}

    def differences(self, have: dict[str, Any]) -> list[str]:
        """What differs between a checkpoint's run and this one (the model)."""
        model_id = self.model.model_id
        return ([f"model {have.get('model_id')!r} → {model_id!r}"]
                if have.get("model_id") != model_id else [])

    # ---------------------------------------------------------------- training
    def attach(self, store: ActivationStore | LayersStore, shared: SharedForward,
               deepest: int) -> None:
        """Draw batches from ``store`` (fed by ``shared`` forwards up to layer ``deepest``);
        a fresh run takes its input scale and ``b_dec`` from the first chunk, and the loss
        is wrapped for DistributedDataParallel under torchrun."""
        self.store, self.shared, self.deepest = store, shared, deepest
        if self.scale is None:
            self.init_from(store.first_chunk())
        if self.world > 1 and not self.sharded:
            from torch.nn.parallel import DistributedDataParallel

            self.module = DistributedDataParallel(self.module)

    @property
    def sharded(self) -> bool:
        """Whether the ranks hold slices of one model's latents (and read the same batches)
        instead of replicas of it: never for an SAE."""
        return False

    def clip_gradients(self) -> None:
        """Clip the gradients' norm to ``grad_clip``."""
        torch.nn.utils.clip_grad_norm_(self.sae.parameters(), self.cfg.grad_clip)

    def dead_fraction(self) -> float:
        """The fraction of latents that have not fired for the dead window."""
        return float((self.steps_since >= self.dead_steps).float().mean())

    def init_from(self, first: Tensor) -> None:
        """A fresh run: input scale(s) and b_dec from this process's first chunk(s)."""
        d = self.model.d_model
        scales, n = [], 0
        for block in first.split(d, dim=1):  # a transcoder's rows are [input | output]
            stats = _all_reduce(torch.tensor([*mean_sq_norm(block)], dtype=torch.float64))
            n = int(stats[1])  # rows over every process
            scales.append(input_scale(float(stats[0]), n, d))
        self.scale = scales[0] if len(scales) == 1 else scales
        total = _all_reduce((first.double() * self.scale_factor()).sum(0))
        self.sae.init_weights(torch.Generator().manual_seed(self.cfg.seed),
                              self.cfg.dec_init_norm)
        mean = (total / n).float()[None]
        with torch.no_grad():  # the mean of what the decoder reconstructs
            self.sae.b_dec.copy_(self.sae.split(mean)[1][0])

    def scale_factor(self) -> float | Tensor:
        """What a raw batch is multiplied by: the scale, or per-block scales side by side."""
        assert self.scale is not None
        if isinstance(self.scale, list):
            return torch.tensor(self.scale).repeat_interleave(self.model.d_model)
        return self.scale

    def batch(self, step: int) -> Tensor:
        """The scaled batch of ``step``; the model FLOPs it cost, if it ran the model."""
        assert self.store is not None and self.shared is not None and self.scale is not None
        forwarded = self.shared.forward_tokens
        x = self.store.batch(step) * self.scale_factor()
        if self.shared.forward_tokens > forwarded:  # this batch ran the model
            self.work.add(self.model_dtype, forward_flops(
                self.shape, self.shared.forward_tokens - forwarded, self.cfg.seq_len,
                layers=self.deepest + 1))
        if self.sae.calibrates and step >= self.cfg.steps - CALIBRATION_STEPS:
            self.final_batches[step] = x  # kept for the calibration at the end
        return x

    def train_step(self, step: int) -> float:
        """One optimiser step on the batch of ``step``."""
        x = self.batch(step)
        cfg, sae, opt = self.cfg, self.sae, self.optimizer
        dead_now = self.steps_since >= self.dead_steps
        self.work.add("float32", sae.step_flops(x.shape[0], int(dead_now.sum())))
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        coef = cfg.sparsity_at(step)
        with phase("loss"):
            loss, parts = self.module(x, coef, dead_now)
            loss_sum = _all_reduce(torch.stack([loss.detach(), parts["mse"], parts["l1"],
                                                parts["l0"], _var(sae.split(x)[1])]).double()
                                    ) / self.world
            if "threshold_sample" in parts:  # BatchTopK: one threshold for all ranks
                parts["threshold_sample"] = (_all_reduce(
                    parts["threshold_sample"].double().clone()) / self.world).float()
        if not math.isfinite(float(loss_sum[0])):  # before the step spoils the weights
            raise self.nonfinite(float(loss_sum[0]), step)
        with phase("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with phase("optimiser"):
            self.clip_gradients()
            opt.step()
            sae.after_step(parts)
        fired = (parts["fired"] if self.sharded  # each rank's own latents
                 else _all_reduce(parts["fired"].to(torch.int32), "max").bool())
        self.steps_since += 1
        self.steps_since[fired] = 0
        steps = cfg.steps
        if (cfg.resample_every and (step + 1) % cfg.resample_every == 0
                and step + 1 <= cfg.resample_until * steps and step + 1 < steps):
            dead = self.steps_since >= self.dead_steps
            n = resample_dead(sae, opt, dead, _all_gather_cat(x),
                              torch.Generator().manual_seed(cfg.seed * 7919 + step))
            if n:
                self.resampled.append([step + 1, n])
                self.steps_since[dead] = 0
        mse, var = float(loss_sum[1]), float(loss_sum[4])
        rec = {"loss": float(loss_sum[0]), "mse": mse, "l1": float(loss_sum[2]),
               "l0": float(loss_sum[3]),
               "dead_fraction": self.dead_fraction(),
               "explained_variance": 1 - mse / var if var > 0 else float("nan"),
               "lr": cfg.lr_at(step), "sparsity_coef": coef}
        for k in HISTORY_KEYS:
            self.history[k].append(rec[k])
        return rec["loss"]

    def info(self) -> str:
        """The progress bar's text: recent loss, L0, EV, dead fraction, throughput."""
        history = self.history
        if not history["loss"]:
            return ""
        k = min(10, len(history["loss"]))

        def avg(key: str) -> float:
            return sum(history[key][-k:]) / k

        return (f"loss {avg('loss'):.2f}  L0 {avg('l0'):.1f}  "
                f"EV {avg('explained_variance'):.3f}  dead {history['dead_fraction'][-1]:.3f}  "
                f"{format_rate(self.throughput(len(history['loss'])))}")

    # ---------------------------------------------------------------- the end
    def finish(self, done: int, manifest: dict[str, Any]) -> SAETrainResult:
        """Calibrate inference state, fold the input scale and save the SAE when every
        step is done; the result."""
        steps = self.cfg.steps
        summary = self.throughput(done)
        sae_path = self.sae_dir if done >= steps else None  # rank 0 saves it
        calibration: dict[str, float] = {}
        if done >= steps:
            if self.sae.calibrates:
                batches = self.last_batches()
                calibration = self.sae.calibrate(
                    batches, lambda t: _all_reduce(t.double().clone()) / self.world)
                calibration["tokens"] = self.world * sum(int(x.shape[0]) for x in batches)
            self.sae.set_scales(self.scale)  # type: ignore[arg-type]
            self.sae.fold_input_scale()
            if self.rank == 0:
                sae_path = self.sae.save(self.sae_dir, d_model=self.model.d_model,
                                         manifest=manifest,
                                         extra={**self.settings,
                                                "input_scale_folded": self.scale,
                                                "steps": done, "history": self.history,
                                                "resampled": self.resampled,
                                                "elapsed_s": self.elapsed,
                                                **({"calibration": calibration}
                                                   if calibration else {}),
                                                "tokens_per_s": summary["tokens_per_s"],
                                                **_mfu_fields(summary)})
            barrier(self.world)
        return self.result(done, sae_path, summary, calibration or None)

    def last_batches(self) -> list[Tensor]:
        """The scaled batches of the last :data:`CALIBRATION_STEPS` steps: those this
        process trained on, kept in memory; any it did not (a run resumed after them) drawn
        again from the store, which gives the same batch for a step every time."""
        assert self.store is not None and self.scale is not None
        steps = self.cfg.steps
        return [self.final_batches[s] if s in self.final_batches
                else self.store.batch(s) * self.scale_factor()
                for s in range(max(0, steps - CALIBRATION_STEPS), steps)]

    def result(self, done: int, sae_path: Path | None,
               summary: dict[str, Any] | None = None,
               calibration: dict[str, float] | None = None) -> SAETrainResult:
        """The run's :class:`SAETrainResult` after ``done`` steps (``summary``: its
        ``throughput()``, when the caller has it already)."""
        summary = summary or self.throughput(done)
        return SAETrainResult(self.out, done, self.cfg.steps, done >= self.cfg.steps,
                              self.start, self.history, summary["tokens_per_s"], self.elapsed,
                              sae_path, self.resampled, self.cfg, **_mfu_fields(summary),
                              calibration=calibration)


def train_runs(
    model: Model, docs: Sequence[str], specs: Sequence[tuple[SAETrainConfig, Path]], *,
    data: dict[str, Any] | None, cache_dir: str | Path | None, stop_at: int | None,
    manifest: dict[str, Any] | None, progress: bool | None,
    on_checkpoint: Callable[[int], None] | None, run_class: type[SAERun] | None = None,
) -> list[SAETrainResult]:
    """Train the runs of ``specs`` (one per layer, same settings otherwise) in lockstep from
    shared model forwards (:class:`saes.store.SharedForward`); ``run_class`` is the run's
    class (:class:`SAERun`, or a transcoder's)."""
    rank, world = _dist()
    data = dict(data or {})
    runs: list[SAERun] = []
    try:
        for cfg, out in specs:
            runs.append((run_class or SAERun)(model, cfg, out, data, rank, world))
        return _train_locked(model, docs, runs, specs, data=data, cache_dir=cache_dir,
                             stop_at=stop_at, manifest=manifest, progress=progress,
                             on_checkpoint=on_checkpoint, rank=rank, world=world)
    finally:
        for run in runs:
            run.close()  # the run folders' locks


def _train_locked(
    model: Model, docs: Sequence[str], runs: list[SAERun],
    specs: Sequence[tuple[SAETrainConfig, Path]], *, data: dict[str, Any],
    cache_dir: str | Path | None, stop_at: int | None, manifest: dict[str, Any] | None,
    progress: bool | None, on_checkpoint: Callable[[int], None] | None, rank: int, world: int,
) -> list[SAETrainResult]:
    if manifest is None:
        manifest = run_manifest_of(model, [cfg for cfg, _ in specs], data, docs)
    results = {id(r): r.result(r.start, r.sae_dir) for r in runs if r.complete}
    active = [r for r in runs if id(r) not in results]
    if active:
        shared = SharedForward(model, [layer for r in active for layer in r.store_layers()],
                               active[0].cfg.site)
        deepest = max(shared.layers)
        for run in active:
            run.attach(run.open_store(docs, shared, cache_dir=cache_dir,
                                      data_hash=str(data.get("sha256", ""))), shared, deepest)
        done = train_steps(active, stop_at=stop_at, progress=progress,
                           labels=[r.label for r in active], on_checkpoint=on_checkpoint)
        for run in active:
            results[id(run)] = run.finish(max(run.start, done), manifest)
    return [_with_manifest(results[id(r)], manifest) for r in runs]


def run_manifest_of(model: Model, cfgs: Sequence[SAETrainConfig], data: dict[str, Any],
                    docs: Sequence[str]) -> dict[str, Any]:
    """The manifest of a training run (one per call, shared by its layers): the first
    layer's settings with every layer in ``layers``, and the text's hash and source."""
    source = {"data_source": data["source"]} if data.get("source") else {}
    return model_manifest(
        model, seed=cfgs[0].seed, config={**cfgs[0].to_dict(), "layers": [c.layer for c in cfgs]},
        extra=source, dataset_hash=data.get("sha256") or sha256_texts(docs))


def _with_manifest(result: SAETrainResult, manifest: dict[str, Any]) -> SAETrainResult:
    result.manifest = manifest
    return result


def _mfu_fields(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in ("mfu", "peak_flops", "flops")}


def _var(x: Tensor) -> Tensor:
    """Σ‖x − x̄‖² per token (the explained-variance denominator), detached."""
    return (x - x.mean(0)).pow(2).sum(-1).mean().detach()
