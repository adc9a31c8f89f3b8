"""Training an SAE: Adam with schedules, dead-feature tracking, resampling, resume, DDP.

Each step takes a global batch of ``batch_size`` activations from the
:class:`~saes.store.ActivationStore`, scaled so that ``E‖x‖² = d_in``, and minimises the
architecture's loss (``TrainConfig.arch``, :mod:`saes.architectures`): for the default
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
rank 0 writes the checkpoints and the final SAE.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn

from interp.display import result_html
from interp.errors import InterpError
from interp.mfu import ModelShape, Work, forward_flops, sae_step_flops
from interp.mfu.flops import format_rate
from interp.mfu.peak import peaks_for
from interp.models.loading import Model
from interp.profiling.session import phase
from interp.profiling.session import step as profiling_step
from interp.runs.progress import make_progress
from interp.runs.resume import (
    check_resumable,
    load_optimizer_tensors,
    optimizer_tensors,
    prepare_run_dir,
    write_progress,
)
from saes.architectures import ArchConfig, ReLUConfig, arch_config_from_dict, sae_class
from saes.results import TrainingRecord
from saes.sae import SAEConfig, SparseAutoencoder
from saes.store import ActivationStore, StoreConfig, input_scale, mean_sq_norm

CHECKPOINT_SUBDIR = "checkpoint"
SAE_SUBDIR = "sae"
CHECKPOINT_KIND = "sae_checkpoint"


@dataclass
class TrainConfig:
    """Settings of one SAE training run (saved with the SAE and its checkpoints)."""

    layer: int = 6
    d_sae: int = 4608
    arch: ArchConfig = field(default_factory=ReLUConfig)
    tokens: int = 2_000_000
    batch_size: int = 4096
    lr: float = 4e-4
    lr_warmup_fraction: float = 0.01
    lr_decay_fraction: float = 0.2
    sparsity_warmup_fraction: float = 0.05
    beta1: float = 0.9
    beta2: float = 0.999
    grad_clip: float = 1.0
    dec_init_norm: float = 0.1
    dead_window: int = 1_000_000
    resample_every: int = 0
    resample_until: float = 0.5
    checkpoint_every: int = 50
    seed: int = 0
    seq_len: int = 128
    windows_per_chunk: int = 1024
    data_shards: int = 1

    def __post_init__(self) -> None:
        def finite(v: float) -> bool:
            return isinstance(v, (int, float)) and math.isfinite(v)

        if isinstance(self.arch, Mapping):  # read back from a saved config.json
            self.arch = arch_config_from_dict(self.arch)
        self.arch.validate(self.d_sae)
        checks = [
            (finite(self.lr) and self.lr > 0, f"--lr must be a positive number, got {self.lr}"),
            (self.tokens >= 1, f"--tokens must be ≥ 1, got {self.tokens}"),
            (self.d_sae >= 1, f"--d-sae must be ≥ 1, got {self.d_sae}"),
            (self.batch_size >= 1, f"--batch-size must be ≥ 1, got {self.batch_size}"),
            (self.checkpoint_every >= 1,
             f"checkpoint interval must be ≥ 1 step, got {self.checkpoint_every}"),
            (self.dead_window >= 1, f"dead window must be ≥ 1 token, got {self.dead_window}"),
            (self.resample_every >= 0, f"resample interval must be ≥ 0, got {self.resample_every}"),
        ]
        for name in ("lr_warmup_fraction", "lr_decay_fraction", "sparsity_warmup_fraction",
                     "resample_until"):
            v = getattr(self, name)
            checks.append((finite(v) and 0 <= v <= 1, f"{name} must be in [0, 1], got {v}"))
        for name in ("beta1", "beta2"):
            v = getattr(self, name)
            checks.append((finite(v) and 0 <= v < 1, f"{name} must be in [0, 1), got {v}"))
        checks.append((finite(self.grad_clip) and self.grad_clip > 0,
                       f"gradient clip must be > 0, got {self.grad_clip}"))
        for ok, message in checks:
            if not ok:
                raise InterpError(message)

    @property
    def steps(self) -> int:
        return max(1, math.ceil(self.tokens / self.batch_size))

    def lr_at(self, step: int) -> float:
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
            self.layer), layer=self.layer, model_id=model.model_id,
            **self.arch.sae_fields())  # type: ignore[arg-type]

    def store_config(self) -> StoreConfig:
        return StoreConfig(layer=self.layer, seq_len=self.seq_len,
                           windows_per_chunk=self.windows_per_chunk,
                           data_shards=self.data_shards, seed=self.seed)


@dataclass
class TrainResult:
    """What one call to :func:`train_sae` did; ``history`` covers every step so far.

    ``to_dict()`` is JSON-ready, ``to_frame()`` the history (one row per step), and
    ``record`` the run as saved with the SAE (what ``interp sae eval`` reports under
    "Training"); in a notebook it shows its progress and the training curves.
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
    config: TrainConfig | None = None
    mfu: float | None = None  # model FLOPs utilisation (see interp.mfu); None: no peak
    peak_flops: float | None = None  # FLOP/s the MFU divides by
    flops: float | None = None  # FLOPs counted over the run (model forward + SAE steps)

    @property
    def record(self) -> TrainingRecord:
        """Settings, history and resampling events, as saved with the SAE."""
        return TrainingRecord(train=asdict(self.config) if self.config else None,
                              history=self.history, resampled=self.resampled,
                              elapsed_s=self.elapsed_s, tokens_per_s=self.tokens_per_s,
                              mfu=self.mfu, peak_flops=self.peak_flops)

    def to_dict(self) -> dict[str, Any]:
        return {"out_dir": str(self.out_dir), "steps_done": self.steps_done,
                "steps_total": self.steps_total, "complete": self.complete,
                "resumed_from": self.resumed_from, "tokens_per_s": self.tokens_per_s,
                "elapsed_s": self.elapsed_s, "flops": self.flops,
                "sae_path": str(self.sae_path) if self.sae_path else None,
                **self.record.to_dict()}

    def to_frame(self) -> pd.DataFrame:
        """One row per step: loss, MSE, L1, L0, dead fraction, EV, learning rate, λ."""
        return self.record.to_frame()

    def _repr_html_(self) -> str:
        from saes.figures import training_figure

        h = self.history
        last = {k: h[k][-1] for k in ("loss", "l0", "explained_variance", "dead_fraction")
                if h.get(k)}
        rows: list[tuple[str, object]] = [
            ("steps", f"{self.steps_done} of {self.steps_total}"
                      + ("" if self.complete else " (unfinished: rerun to resume)")),
            ("tokens/s", self.tokens_per_s),
            ("MFU", "—" if self.mfu is None else f"{100 * self.mfu:.2f}%"), *last.items(),
            ("resampling events", len(self.resampled)),
            ("SAE", str(self.sae_path) if self.sae_path else "—"),
        ]
        return result_html(f"SAE training — {self.out_dir}", rows, training_figure(self.record))


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


def _checkpoint_settings(cfg: TrainConfig, data: dict[str, Any], model: Model) -> dict[str, Any]:
    return {"train": asdict(cfg), "data": dict(data), "model_id": model.model_id}


def train_sae(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    cfg: TrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
) -> TrainResult:
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
    from interp.runs.artifacts import load_artifact, save_artifact

    cfg = cfg or TrainConfig()
    model.check_layer(cfg.layer)
    rank, world = _dist()
    out = Path(out_dir).expanduser()
    data = dict(data or {})
    want = _checkpoint_settings(cfg, data, model)
    ckpt_dir, sae_dir = out / CHECKPOINT_SUBDIR, out / SAE_SUBDIR
    prepare_run_dir(out, (CHECKPOINT_SUBDIR, SAE_SUBDIR), sweep=rank == 0)

    hook = model.resid_hook(cfg.layer)
    torch.manual_seed(cfg.seed)
    sae_cfg = cfg.sae_config(model)
    sae = sae_class(sae_cfg.architecture)(sae_cfg, cfg.arch)
    opt = torch.optim.Adam(sae.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))
    steps_since = torch.zeros(cfg.d_sae, dtype=torch.long)  # steps since each feature fired
    history: dict[str, list[float]] = {k: [] for k in HISTORY_KEYS}
    start, elapsed, resampled = 0, 0.0, []
    work, work_known = Work(), True  # FLOPs so far, for MFU (interp.mfu)
    scale: float | None = None
    if check_resumable(out, ckpt_dir, want, "an SAE run", lambda have: (
            [f"model {have.get('model_id')!r} → {model.model_id!r}"]
            if have.get("model_id") != model.model_id else [])):
        art = load_artifact(ckpt_dir, kind=CHECKPOINT_KIND, d_model=model.d_model)
        with torch.no_grad():
            for name, t in sae.state_dict().items():  # parameters and buffers, exactly
                t.copy_(art.tensors[name])
        steps_since = art.tensors["steps_since_fired"].clone()
        load_optimizer_tensors(opt, art.tensors)
        start = int(art.config["step"])
        history = {k: list(v) for k, v in art.config["history"].items()}
        elapsed = float(art.config.get("elapsed_s", 0.0))
        scale = float(art.config["input_scale"])
        resampled = list(art.config.get("resampled", []))
        work_known = "flops_by_dtype" in art.config  # older checkpoints did not count
        work = Work(art.config.get("flops_by_dtype"))

    steps = cfg.steps
    shape, model_dtype = ModelShape.of(model), str(model.dtype).removeprefix("torch.")
    peaks = peaks_for(model.device, tuple({model_dtype, "float32"}))

    def throughput(done_steps: int) -> dict[str, Any]:
        out = work.summary(elapsed, peaks if work_known else None,
                           tokens=done_steps * cfg.batch_size)
        out["tokens_per_s"] = _rate(cfg, done_steps, elapsed)  # global, all processes
        return out

    end = steps if stop_at is None else max(start, min(steps, int(stop_at)))
    if start >= steps and (sae_dir / "config.json").is_file():
        return TrainResult(out, start, steps, True, start, history,
                           _rate(cfg, start, elapsed), elapsed, sae_dir, resampled, cfg,
                           **_mfu_fields(throughput(start)))

    store = ActivationStore(model, docs, cfg.store_config(), batch_size=cfg.batch_size,
                            rank=rank, world=world, cache_dir=cache_dir,
                            data_hash=str(data.get("sha256", "")))
    if scale is None:  # a fresh run: input scale and b_dec from the first chunk(s)
        first = store.first_chunk()
        stats = _all_reduce(torch.tensor([*mean_sq_norm(first)], dtype=torch.float64))
        scale = input_scale(float(stats[0]), int(stats[1]), model.d_model)
        total = _all_reduce((first.double() * scale).sum(0))
        count = int(stats[1])
        sae.init_weights(torch.Generator().manual_seed(cfg.seed), cfg.dec_init_norm)
        with torch.no_grad():
            sae.b_dec.copy_((total / count).float())
        del first

    module: nn.Module = _LossModule(sae)
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        module = DistributedDataParallel(module)

    dead_steps = max(1, math.ceil(cfg.dead_window / cfg.batch_size))
    last_saved = [start]

    def save_checkpoint(step: int) -> None:
        if rank == 0:
            save_artifact(
                ckpt_dir,
                {**{k: v.detach() for k, v in sae.state_dict().items()},
                 "steps_since_fired": steps_since, **optimizer_tensors(opt)},
                kind=CHECKPOINT_KIND,
                config={**want, "step": step, "history": history, "elapsed_s": elapsed,
                        "input_scale": scale, "resampled": resampled,
                        **({"flops_by_dtype": work.flops} if work_known else {})},
                model_id=model.model_id, d_model=model.d_model, hook_point=hook,
                manifest={"note": "SAE training checkpoint; the SAE is written at the end"},
            )
        _barrier()
        last_saved[0] = step
        if on_checkpoint is not None and rank == 0:
            on_checkpoint(step)

    if start == 0 and not (ckpt_dir / "config.json").is_file():
        save_checkpoint(0)  # the initialised SAE: a kill from here on loses < one interval
    bar = make_progress(enabled=progress if rank == 0 else False, transient=False)
    with bar:
        task = bar.add_task(f"SAE L{cfg.layer} d_sae={cfg.d_sae}", total=steps, completed=start,
                            info=_info(history, throughput(start)))
        for step in range(start, end):
            t0 = time.perf_counter()
            forwarded = store.forward_tokens
            x = store.batch(step) * scale
            if store.forward_tokens > forwarded:  # this step ran the model for a new chunk
                work.add(model_dtype, forward_flops(shape, store.forward_tokens - forwarded,
                                                    cfg.seq_len, layers=cfg.layer + 1))
            work.add("float32", sae_step_flops(model.d_model, cfg.d_sae, x.shape[0]))
            for group in opt.param_groups:
                group["lr"] = cfg.lr_at(step)
            coef = cfg.sparsity_at(step)
            dead_now = steps_since >= dead_steps
            with phase("loss"):
                loss, parts = module(x, coef, dead_now)
                loss_sum = _all_reduce(torch.stack([loss.detach(), parts["mse"], parts["l1"],
                                                    parts["l0"], _var(x)]).double()) / world
                if "threshold_sample" in parts:  # BatchTopK: one threshold for all ranks
                    parts["threshold_sample"] = (_all_reduce(
                        parts["threshold_sample"].double().clone()) / world).float()
            if not math.isfinite(float(loss_sum[0])):
                kept = (f"the last good checkpoint (step {last_saved[0]}) is kept in {ckpt_dir}"
                        if (ckpt_dir / "config.json").is_file() else "no checkpoint was written")
                raise InterpError(
                    f"SAE loss became {float(loss_sum[0])} at step {step + 1}; stopped, {kept}; "
                    "try a lower --lr or --l1"
                )
            with phase("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with phase("optimiser"):
                torch.nn.utils.clip_grad_norm_(sae.parameters(), cfg.grad_clip)
                opt.step()
                sae.after_step(parts)
            fired = _all_reduce(parts["fired"].to(torch.int32), "max").bool()
            steps_since += 1
            steps_since[fired] = 0
            if (cfg.resample_every and (step + 1) % cfg.resample_every == 0
                    and step + 1 <= cfg.resample_until * steps and step + 1 < steps):
                dead = steps_since >= dead_steps
                n = resample_dead(sae, opt, dead, _all_gather_cat(x),
                                  torch.Generator().manual_seed(cfg.seed * 7919 + step))
                if n:
                    resampled.append([step + 1, n])
                    steps_since[dead] = 0
            mse, var = float(loss_sum[1]), float(loss_sum[4])
            rec = {"loss": float(loss_sum[0]), "mse": mse, "l1": float(loss_sum[2]),
                   "l0": float(loss_sum[3]),
                   "dead_fraction": float((steps_since >= dead_steps).float().mean()),
                   "explained_variance": 1 - mse / var if var > 0 else float("nan"),
                   "lr": cfg.lr_at(step), "sparsity_coef": coef}
            for k in HISTORY_KEYS:
                history[k].append(rec[k])
            elapsed += time.perf_counter() - t0
            bar.update(task, completed=step + 1, info=_info(history, throughput(step + 1)))
            profiling_step()
            if rank == 0:
                write_progress(out, step=step + 1, steps=steps, loss=rec["loss"],
                               checkpoint_step=last_saved[0])
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == end:
                save_checkpoint(step + 1)

    done = max(start, end)
    sae_path = sae_dir if done >= steps else None  # rank 0 saves it; the others return it
    if done >= steps:
        sae.cfg.input_scale = float(scale)
        sae.fold_input_scale()
        if rank == 0:
            from interp.runs.manifest import run_manifest

            man = manifest or run_manifest(
                model_id=model.model_id, seed=cfg.seed, dataset_hash=data.get("sha256"),
                config=asdict(cfg), extra={"model": model.manifest_info()},
            )
            sae_path = sae.save(sae_dir, d_model=model.d_model, manifest=man, extra={
                **want, "input_scale_folded": scale, "steps": done, "history": history,
                "resampled": resampled, "elapsed_s": elapsed,
                "tokens_per_s": _rate(cfg, done, elapsed), **_mfu_fields(throughput(done)),
            })
        _barrier()
    return TrainResult(out, done, steps, done >= steps, start, history,
                       _rate(cfg, done, elapsed), elapsed, sae_path, resampled, cfg,
                       **_mfu_fields(throughput(done)))


def _mfu_fields(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in ("mfu", "peak_flops", "flops")}


def _var(x: Tensor) -> Tensor:
    """Σ‖x − x̄‖² per token (the explained-variance denominator), detached."""
    return (x - x.mean(0)).pow(2).sum(-1).mean().detach()


def _barrier() -> None:
    import torch.distributed as dist

    if _dist()[1] > 1:
        dist.barrier()


def _rate(cfg: TrainConfig, steps: int, elapsed: float) -> float:
    return steps * cfg.batch_size / elapsed if elapsed > 0 else 0.0


def _info(history: dict[str, list[float]], throughput: dict[str, Any]) -> str:
    if not history["loss"]:
        return ""
    k = min(10, len(history["loss"]))

    def avg(key: str) -> float:
        return sum(history[key][-k:]) / k

    return (f"loss {avg('loss'):.2f}  L0 {avg('l0'):.1f}  EV {avg('explained_variance'):.3f}  "
            f"dead {history['dead_fraction'][-1]:.3f}  {format_rate(throughput)}")
