"""Training the tuned lens: all layers' translators together, resumable, on CPU.

Each step runs ``batch_size`` packed windows of ``seq_len`` tokens through the model once
(:func:`~interp.activations.capture.forward_with_hooks`, every layer's ``hook_resid_post``
plus the logits), samples ``positions_per_window`` positions per window (never position 0), and
minimises, summed over the translated layers ℓ,

    KL( p_final ‖ softmax(W_U · RMSNorm_final(h_ℓ + A_ℓ h_ℓ + b_ℓ)) )

in nats, averaged over the sampled positions. The cost is the 49k-word unembedding at
every layer, not the forward pass, so sampling positions is what makes a CPU run
affordable; each layer's loss is back-propagated on its own to keep one layer's logits
in memory at a time.

Optimiser. The paper uses SGD with Nesterov momentum (lr 1, momentum 0.9) for 250 steps of
2¹⁸ tokens. A 30-minute CPU run sees ~1000× fewer tokens per step, where SGD's noise
dominates, so the default here is Adam (learning rate :data:`DEFAULT_LR`, linear warm-up
then linear decay to 0);
``optimizer="sgd"`` gives the paper's recipe. Weight decay is decoupled and applies to
``A`` only, so it pulls each translator toward the identity (A → 0), never toward zero.

Resuming. Window ``i`` and the positions sampled at step ``s`` are pure functions of the
seed (:mod:`interp.data.windows`), the learning rate is a function of the step, and the
checkpoint (an :mod:`interp.runs.artifacts` folder, written atomically every
``checkpoint_every`` steps) holds the translators, the optimiser state and the loss
history. A killed run rerun with the same settings therefore continues from its last
checkpoint and produces the same losses, bit for bit, as an uninterrupted run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

import pandas as pd
import torch
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows, require_text
from interp.display import percent
from interp.lenses.tuned import LENS_SUBDIR, Translators, TunedLens, unembedding_hash
from interp.mfu import ModelShape, forward_flops, tuned_lens_step_flops
from interp.mfu.choices import Choice, fallback, fastest, given
from interp.mfu.flops import format_rate
from interp.models.loading import Model
from interp.models.unembedding import Unembed
from interp.profiling.session import phase, phased
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import (
    Check,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_meta,
    non_negative,
    seed_range,
    setting,
)
from interp.training import ResumableRun, train_steps

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CHECKPOINT_SUBDIR = "checkpoint"
CHECKPOINT_KIND = "tuned_lens_checkpoint"
Optimizer = Literal["adam", "sgd"]
Init = Literal["lstsq", "zero"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
INITS: tuple[str, ...] = get_args(Init)

#: A window needs a position to read besides position 0, and one after it to predict.
SEQ_LEN = Check(lambda n: n >= 3, "must be a sequence length of at least 3 tokens", low=3)
_LR = Check(lambda x: math.isfinite(x) and x > 0,
            "must be > 0 (the learning rate must be > 0 and finite)", low=0)


#: Each optimiser's learning rate when ``lr`` is not given.
DEFAULT_LR: dict[str, float] = {"adam": 1e-4, "sgd": 1.0}


@dataclass(frozen=True)
class TunedLensTrainConfig(Config):
    """Settings of one tuned-lens training run (saved with the lens and its checkpoints).

    ``tokens`` counts tokens streamed through the model; the number of steps is
    ``ceil(tokens / (batch_size * seq_len))``. ``lr=None`` picks the optimiser's default
    (:data:`DEFAULT_LR`) when the config is made, and ``positions_per_window`` is capped
    at ``seq_len − 1``. ``init="lstsq"`` fits the starting translators on the first
    ``min(init_tokens, tokens)`` training tokens (the same windows the steps then use).
    """

    tokens: int = setting(250_000, check=at_least(1),
                          help="Training tokens streamed through the model.")
    seq_len: int = setting(128, check=SEQ_LEN, help="Tokens per packed training window.")
    batch_size: int = setting(4, cli=False, check=at_least(1),
                              help="Text windows per forward pass.")
    positions_per_window: int = setting(64, check=at_least(1),
                                        help="Positions per window in the loss (never 0).")
    optimizer: Optimizer = setting("adam", help="Adam, or the paper's Nesterov SGD.")
    lr: float | None = setting(None, check=_LR,
                               help="Learning rate [default: " + ", ".join(
                                   f"{v:g} for {k}" for k, v in DEFAULT_LR.items()) + "].")
    momentum: float = setting(0.9, cli=False, check=in_range(0, 1, open_high=True),
                              help="Adam's β1, or SGD's Nesterov momentum.")
    weight_decay: float = setting(
        1e-3, check=Check(lambda x: math.isfinite(x) and x >= 0,
                          "must be a finite weight decay ≥ 0", low=0),
        help="Decay of A toward 0, i.e. of each translator toward the identity.")
    warmup_fraction: float = setting(
        0.1, cli=False, check=in_range(0, 1, open_high=True),
        help="Share of the steps with a linear warm-up (then a linear decay to 0).")
    checkpoint_every: int = setting(10, check=at_least(1), help="Steps between checkpoints.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Keys the windows and the sampled positions (and the manifest).")
    unembed_dtype: Literal["auto", "bfloat16", "float32"] = setting(
        "auto", help="dtype of the unembedding matmul in the loss; auto: bfloat16 where it "
        "measured ≥ 1.1× faster than float32 on this machine (measured once, cached).")
    init: Init = setting(
        "lstsq", help="Start from the least-squares map (default) or the identity (the paper).")
    init_tokens: int = setting(32_768, check=at_least(1),
                               help="Training tokens the least-squares start is fitted on.")
    init_ridge: float = setting(1e-3, cli=False, check=non_negative,
                                help="Ridge of the least-squares start (× mean diagonal of XᵀX).")

    def __post_init__(self) -> None:
        super().__post_init__()  # validate, then fill in what the settings imply
        if self.lr is None:
            object.__setattr__(self, "lr", DEFAULT_LR[self.optimizer])
        object.__setattr__(self, "positions_per_window",
                           min(self.positions_per_window, self.seq_len - 1))

    @property
    def steps(self) -> int:
        """Optimiser steps: the token budget over ``batch_size × seq_len`` tokens a step, at least
        1."""
        return max(1, math.ceil(self.tokens / (self.batch_size * self.seq_len)))

    def lr_at(self, step: int) -> float:
        """Linear warm-up over the first ``warmup_fraction`` of steps, then linear decay to 0."""
        assert self.lr is not None
        warm = max(1, round(self.warmup_fraction * self.steps))
        if step < warm:
            return self.lr * (step + 1) / warm
        return self.lr * max(0.0, (self.steps - step) / max(1, self.steps - warm))


@dataclass
class TunedLensTrainResult(Result):
    """What a call to :func:`train_tuned_lens` did; ``losses`` covers every step so far.

    ``results.json`` leaves out the per-layer losses (they are in the lens's config).
    """

    out_dir: Path
    steps_done: int
    steps_total: int
    complete: bool
    resumed_from: int
    losses: list[float]
    layer_losses: list[list[float]] = field(repr=False, metadata=json_meta(skip=True))
    tokens_per_s: float
    elapsed_s: float
    lens_path: Path | None
    # Model FLOPs utilisation of the KL steps (the least-squares init is left out: its
    # normal equations run in float64); None without a peak. See interp.mfu.
    mfu: float | None = None
    peak_flops: float | None = None
    flops: float | None = None

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (..., "lens_path")

    @property
    def final_loss(self) -> float:
        """The mean loss (summed over layers) of the last 10 steps; NaN before any step."""
        recent = self.losses[-10:]
        return sum(recent) / len(recent) if recent else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """One row per step: the loss summed over layers, and each layer's loss.

        Not the headline (a few facts, no table): the whole loss history."""
        frame = pd.DataFrame({"step": range(1, len(self.losses) + 1), "loss": self.losses})
        if self.layer_losses:
            per_layer = pd.DataFrame(self.layer_losses).add_prefix("loss_layer_")
            frame = pd.concat([frame, per_layer], axis=1)
        return frame

    def headline(self) -> Headline:
        """Steps done, final loss, throughput, MFU and where the lens was saved (or that the run is
        unfinished)."""
        return Headline("tuned-lens training", rows=[
            ("steps", f"{self.steps_done} / {self.steps_total}"),
            ("loss (last 10 steps)", self.final_loss),
            ("tokens / s", self.tokens_per_s),
            ("MFU", percent(self.mfu)),
            ("lens", str(self.lens_path) if self.complete else "unfinished: rerun to resume"),
        ])

    def figure(self) -> Figure | None:
        """:func:`~interp.lenses.figures.training_loss_figure` (None before the first step)."""
        from interp.lenses.figures import training_loss_figure

        return training_loss_figure(self) if self.losses else None


def _optimizer(params: Sequence[Tensor], cfg: TunedLensTrainConfig) -> torch.optim.Optimizer:
    A, b = params
    assert cfg.lr is not None  # set by TunedLensTrainConfig.__post_init__
    groups = [
        {"params": [A], "weight_decay": cfg.weight_decay},
        {"params": [b], "weight_decay": 0.0},
    ]
    if cfg.optimizer == "adam":
        return torch.optim.AdamW(groups, lr=float(cfg.lr), betas=(cfg.momentum, 0.999))
    return torch.optim.SGD(groups, lr=float(cfg.lr), momentum=cfg.momentum, nesterov=True)


def sample_positions(cfg: TunedLensTrainConfig, step: int, n_windows: int) -> Tensor:
    """Positions (1 … seq_len−1) sampled at ``step``: ``[n_windows, positions_per_window]``."""
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 7919 * step + 1)
    k = cfg.positions_per_window
    return torch.stack(
        [torch.randperm(cfg.seq_len - 1, generator=g)[:k] + 1 for _ in range(n_windows)]
    )


def lens_loss_step(
    model: Model,
    translators: Translators,
    ids: Tensor,
    positions: Tensor,
    unembed: Unembed,
    matmul_dtype: torch.dtype = torch.float32,
    layers: Sequence[int] | None = None,
) -> list[float]:
    """Forward ``ids``, back-propagate the summed per-layer KL at ``positions``; per-layer KLs.

    ``KL(p ‖ q) = −H(p) + logsumexp(z) − Σ p·z`` for lens logits ``z``: one pass over the
    vocabulary forward and one backward (``softmax(z) − p``). Gradients accumulate into
    ``translators``; the caller steps the optimiser. ``layers`` restricts the loss to some
    translators (benchmarks); the default is all of them.
    """
    todo = list(range(translators.A.shape[0])) if layers is None else list(layers)
    names = {layer: model.resid_hook(layer) for layer in todo}
    with phase("forward"):
        acts, logits = forward_with_hooks(model, ids.to(model.device), None,
                                          list(names.values()), with_logits=True)
        assert logits is not None
        rows = torch.arange(ids.shape[0]).unsqueeze(1).expand_as(positions)
        final_lp = torch.log_softmax(logits[rows, positions].reshape(-1, logits.shape[-1]), -1)
        del logits
        p_final = final_lp.exp()
        ent_final = (p_final * final_lp).sum(-1)  # −H(final): the constant part of the KL
    out = []
    for layer in todo:
        with phase("loss"):  # translator, unembedding, KL
            h = acts.pop(names[layer])[rows, positions].reshape(-1, model.d_model)
            z = unembed(translators(h, layer), matmul_dtype=matmul_dtype)
            kl = (ent_final + torch.logsumexp(z, -1) - (p_final * z).sum(-1)).mean()
        with phase("backward"):
            kl.backward()
        out.append(float(kl.detach()))
    return out


@torch.no_grad()
@phased("least-squares init")
def lstsq_init(
    model: Model, translators: Translators, windows: Tensor, *, ridge: float = 1e-3,
    batch_size: int = 8, progress: bool | None = None,
) -> None:
    """Set each translator to the ridge least-squares map from ``h_ℓ`` to the final residual.

    The lens applies RMSNorm after the translator, so only the direction of its output
    matters; the target for position i is the last layer's residual rescaled to the
    input's RMS, ``y_i · rms(x_i)/rms(y_i)``, and ``A, b`` solve
    ``min Σ‖x_i + A x_i + b − y_i‖² + λ‖A‖²`` (λ = ``ridge`` × mean diagonal of XᵀX).
    A multi-output least-squares fit is optimal under every quadratic output metric,
    including the unembedding's, so this is the best affine map in logit space to first
    order — one pass of forwards instead of hundreds of unembedding steps. Position 0 is
    left out. KL training then starts from here.
    """
    n_tr, d = translators.A.shape[0], model.d_model
    names = [model.resid_hook(layer) for layer in range(model.n_layers)]
    xtx = torch.zeros(n_tr, d + 1, d + 1, dtype=torch.float64)
    xty = torch.zeros(n_tr, d + 1, d, dtype=torch.float64)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("least-squares init", total=windows.shape[0], info="")
        for i in range(0, windows.shape[0], batch_size):
            ids = windows[i : i + batch_size].to(model.device)
            acts, _ = forward_with_hooks(model, ids, None, names)
            y = acts[names[-1]][:, 1:].reshape(-1, d).double().cpu()
            y_rms = y.pow(2).mean(-1, keepdim=True).sqrt()
            for layer in range(n_tr):
                x = acts.pop(names[layer])[:, 1:].reshape(-1, d).double().cpu()
                x_rms = x.pow(2).mean(-1, keepdim=True).sqrt()
                x1 = torch.cat([x, torch.ones_like(x[:, :1])], 1)
                xtx[layer] += x1.T @ x1
                xty[layer] += x1.T @ (y * (x_rms / y_rms) - x)
            bar.update(task, advance=ids.shape[0])
    for layer in range(n_tr):
        reg = ridge * xtx[layer].diagonal()[:d].mean()
        eye = torch.eye(d + 1, dtype=torch.float64)
        eye[d, d] = 0.0  # no penalty on the bias
        w = torch.linalg.solve(xtx[layer] + reg * eye, xty[layer])  # [d+1, d]
        translators.A[layer].copy_(w[:d].T.float())
        translators.b[layer].copy_(w[d].float())


def _checkpoint_config(cfg: TunedLensTrainConfig, data: dict[str, Any],
                       unembed: str) -> dict[str, Any]:
    return {"train": cfg.to_dict(), "data": data, "unembedding_sha256": unembed}


class _LensRun(ResumableRun):
    """The translators being trained, their optimiser and loss history;
    :func:`interp.training.train_steps` owns the run folder, checkpoints and progress."""

    checkpoint_kind = CHECKPOINT_KIND
    final_subdir = LENS_SUBDIR
    what = "a tuned-lens run"
    loss_name = "tuned-lens loss"
    nonfinite_hint = "try a lower learning rate (lr)"
    checkpoint_at_start = False  # the least-squares start is checkpointed once it is fitted
    check_final = True  # a damaged lens/ (the cache's lens) is saved again from the checkpoint

    def __init__(self, model: Model, cfg: TunedLensTrainConfig, out: Path,
                 data: dict[str, Any]) -> None:
        self.model, self.cfg, self.data = model, cfg, data
        self.unembed_hash = unembedding_hash(model)
        self.model_dtype = str(model.dtype).removeprefix("torch.")
        self.unembed = Unembed(model)
        self.unembed_choice = unembed_dtype_choice(model, self.unembed, cfg.unembed_dtype)
        self.unembed_dtype = self.unembed_choice.value
        super().__init__(out, _checkpoint_config(cfg, data, self.unembed_hash),
                         steps=cfg.steps, checkpoint_every=cfg.checkpoint_every,
                         tokens_per_step=cfg.batch_size * cfg.seq_len,
                         model_id=model.model_id, d_model=model.d_model, device=model.device,
                         dtypes=(self.model_dtype, "float32", self.unembed_dtype))
        self.translators = Translators(model.n_layers - 1, model.d_model).to(model.device)
        self.optimizer = _optimizer([self.translators.A, self.translators.b], cfg)
        self.losses: list[float] = []
        self.layer_losses: list[list[float]] = []
        self.step_s = 0.0  # seconds of KL steps (the MFU's time: the init is left out)
        self.resume()
        self.start_known = 0 if self.work_known else self.start
        self.shape = ModelShape.of(model)
        self.matmul_dtype = getattr(torch, self.unembed_dtype)
        self.windows: Tensor | None = None

    # ---------------------------------------------------------------- checkpoint contents
    def state_tensors(self) -> dict[str, Tensor]:
        return {"A": self.translators.A.detach(), "b": self.translators.b.detach()}

    def load_state(self, tensors: dict[str, Tensor], config: dict[str, Any]) -> None:
        with torch.no_grad():
            self.translators.A.copy_(tensors["A"])
            self.translators.b.copy_(tensors["b"])
        self.losses = list(config["losses"])
        self.layer_losses = [list(x) for x in config["layer_losses"]]
        self.step_s = float(config.get("step_s", 0))

    def checkpoint_config(self) -> dict[str, Any]:
        return {"losses": self.losses, "layer_losses": self.layer_losses,
                "step_s": self.step_s}

    def artifact_options(self) -> dict[str, Any]:
        return {"seed": self.cfg.seed, "dataset_hash": self.data.get("sha256")}

    def differences(self, have: dict[str, Any]) -> list[str]:
        return (["the model's unembedding"]
                if have.get("unembedding_sha256") != self.unembed_hash else [])

    # ---------------------------------------------------------------- training
    def throughput(self, done_steps: int) -> dict[str, Any]:
        """MFU over the KL steps this process counted; tokens/s over all the run's time."""
        tokens = done_steps * self.tokens_per_step
        out = self.work.summary(self.step_s, self.peaks if self.work_known else None,
                                tokens=(done_steps - self.start_known) * self.tokens_per_step)
        out["tokens_per_s"] = tokens / self.elapsed if self.elapsed > 0 else 0.0
        return out

    def train_step(self, step: int) -> float:
        t0 = time.perf_counter()
        cfg, opt = self.cfg, self.optimizer
        assert self.windows is not None
        ids = self.windows[step * cfg.batch_size : (step + 1) * cfg.batch_size]
        pos = sample_positions(cfg, step, ids.shape[0])
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        with phase("optimiser"):
            opt.zero_grad(set_to_none=True)
        per_layer = lens_loss_step(self.model, self.translators, ids, pos, self.unembed,
                                   self.matmul_dtype)
        total = sum(per_layer)
        if not math.isfinite(total):  # before the step spoils the translators
            raise self.nonfinite(total, step)
        with phase("optimiser"):
            opt.step()
        self.losses.append(total)
        self.layer_losses.append(per_layer)
        self.work.add(self.model_dtype, forward_flops(self.shape, ids.numel(), cfg.seq_len))
        lens_flops, unembed_flops = tuned_lens_step_flops(
            self.shape, self.translators.A.shape[0], pos.numel())
        self.work.add("float32", lens_flops)
        self.work.add(self.unembed_dtype if self.unembed.fast else self.model_dtype,
                      unembed_flops)
        self.step_s += time.perf_counter() - t0
        return total

    def info(self) -> str:
        if not self.losses:
            return ""
        recent = self.losses[-10:]
        per_layer = sum(recent) / len(recent) / max(1, len(self.layer_losses[-1]))
        return (f"loss {sum(recent) / len(recent):.2f} (KL/layer {per_layer:.3f})  "
                f"{format_rate(self.throughput(len(self.losses)))}")

    def result(self, done: int, manifest: dict[str, Any]) -> TunedLensTrainResult:
        """Save the lens when every step is done; the run's result after ``done`` steps."""
        summary = self.throughput(done)
        lens_path = self.final_dir if self.complete else None
        if done >= self.steps and lens_path is None:
            lens_path = TunedLens(self.model, self.translators).save(
                self.final_dir,
                config={**self.settings, "steps": done, "losses": self.losses,
                        "layer_losses": self.layer_losses, "elapsed_s": self.elapsed,
                        "tokens_per_s": summary["tokens_per_s"], **_mfu_fields(summary)},
                manifest=manifest)
        return TunedLensTrainResult(self.out, done, self.steps, done >= self.steps, self.start,
                                    self.losses, self.layer_losses, summary["tokens_per_s"],
                                    self.elapsed, lens_path, **_mfu_fields(summary),
                                    manifest=manifest)


def check_memory(model: Model, cfg: TunedLensTrainConfig) -> None:
    """Refuse (one line, before any work) steps whose logits would not fit: the model's
    float32 logits at every position of a batch, and at the sampled positions the final
    log-probabilities and one layer's lens logits with their gradient (about 4 copies)."""
    from interp.runs.memory import logits_bytes, require

    need = (logits_bytes(cfg.batch_size, cfg.seq_len, model.d_vocab, copies=1)
            + logits_bytes(cfg.batch_size, cfg.positions_per_window, model.d_vocab, copies=4))
    require(need, f"training a tuned lens on batches of {cfg.batch_size} windows of "
            f"{cfg.seq_len} tokens over a {model.d_vocab:,}-token vocabulary",
            "lower batch_size, seq_len or positions_per_window", device=model.device)


def check_text(model: Model, docs: Sequence[str], cfg: TunedLensTrainConfig) -> None:
    """Refuse (one line, before any work) a run that would read more text than ``docs``
    hold (:func:`interp.data.windows.require_text`): ``steps × batch_size`` windows, the
    least-squares start's ``init_tokens`` among them."""
    n = cfg.steps * cfg.batch_size
    require_text(model, docs, need=n * cfg.seq_len, what="tuned-lens training",
                 asked=f"tokens={cfg.tokens:,}",
                 reads=f"{n:,} windows of seq_len={cfg.seq_len}",
                 fix="lower tokens or give more text")


#: Rows of the unembedding product timed to choose its dtype (``unembed_dtype="auto"``):
#: small enough to take well under a second even where bfloat16 is slow (a 49k vocabulary).
CHOICE_ROWS = 32


def unembed_dtype_choice(model: Model, unembed: Unembed, requested: str) -> Choice:
    """The unembedding matmul's dtype for training: ``requested``, or for ``"auto"`` the
    faster of float32 and bfloat16 for the loss's own step (the product, its log-sum-exp
    and their backward, ``CHOICE_ROWS`` rows), measured once on this machine and cached
    (:func:`interp.mfu.choices.fastest`); float32 unless bfloat16 is ≥ 1.1× faster."""
    if requested != "auto":
        return given("unembed_dtype", requested)
    if not unembed.fast:
        return fallback("unembed_dtype", "float32",
                        "the unembedding runs through the bridge here (in float32)")
    x = torch.randn(CHOICE_ROWS, model.d_model, generator=torch.Generator().manual_seed(0))
    x = (x * 5).to(model.device)

    def step(dtype: torch.dtype) -> Callable[[], None]:
        def run() -> None:
            h = x.clone().requires_grad_()
            unembed(h, matmul_dtype=dtype).logsumexp(-1).sum().backward()

        return run

    return fastest("unembed_dtype", {"float32": step(torch.float32),
                                     "bfloat16": step(torch.bfloat16)},
                   baseline="float32", device=model.device,
                   shape=f"{model.d_model}x{model.d_vocab}")


def train_tuned_lens(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    config: TunedLensTrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
    **settings: Any,
) -> TunedLensTrainResult:
    """Train (or resume) a tuned lens on ``docs``; write ``out_dir/lens`` when done.

    Settings come from ``config`` or, equally, from keyword arguments named as the fields
    of :class:`TunedLensTrainConfig` (``train_tuned_lens(model, docs, out, tokens=8192)``).

    Args:
        docs: training documents (e.g. :func:`interp.data.corpus.load_texts` ``"train"``).
        out_dir: the run folder: ``checkpoint/`` while training, ``lens/`` at the end.
            A run folder with a checkpoint from the same settings and data is resumed;
            different settings are refused (one line naming what differs).
        data: where the text came from (``{"source": …, "sha256": …}``), recorded and
            compared on resume.
        stop_at: stop (with a checkpoint) after this many steps in total, unfinished.
        manifest: run manifest to save with the lens and on the result (default: built
            here from the model, the settings and ``data``).
        on_checkpoint: called with the step after each checkpoint is on disk (tests).
    """
    cfg = TunedLensTrainConfig.resolve(config, settings)
    check_memory(model, cfg)
    check_text(model, docs, cfg)
    data = dict(data or {})
    man = manifest or model_manifest(
        model, seed=cfg.seed, config=cfg.to_dict(), dataset_hash=data.get("sha256"),
        texts=None if data.get("sha256") else docs,
        extra={"data_source": data["source"]} if "source" in data else None)
    run = _LensRun(model, cfg, Path(out_dir).expanduser(), data)
    man = {**man, "choices": {**man.get("choices", {}),
                              "unembed_dtype": run.unembed_choice.to_dict()}}
    try:
        return _train(run, model, docs, cfg, man, stop_at=stop_at, progress=progress,
                      on_checkpoint=on_checkpoint)
    finally:
        run.close()  # the run folder's lock


def _train(run: _LensRun, model: Model, docs: Sequence[str], cfg: TunedLensTrainConfig,
           man: dict[str, Any], *, stop_at: int | None, progress: bool | None,
           on_checkpoint: Callable[[int], None] | None) -> TunedLensTrainResult:
    if run.complete:
        return run.result(run.start, man)
    end = cfg.steps if stop_at is None else max(run.start, min(cfg.steps, int(stop_at)))
    need_init = cfg.init == "lstsq" and not run.resumed
    if run.start < end or need_init:
        run.windows = pack_windows(model, docs, seq_len=cfg.seq_len,
                                   n_windows=cfg.steps * cfg.batch_size, seed=cfg.seed)
    if need_init:
        assert run.windows is not None
        t0 = time.perf_counter()
        lstsq_init(model, run.translators, run.windows[:max(1, math.ceil(
            cfg.init_tokens / cfg.seq_len))], ridge=cfg.init_ridge, progress=progress)
        run.elapsed += time.perf_counter() - t0
        run.save_checkpoint(0)
        if on_checkpoint is not None:
            on_checkpoint(0)
    done = train_steps([run], stop_at=stop_at, progress=progress, labels=["tuned lens"],
                       on_checkpoint=on_checkpoint)
    return run.result(done, man)


def _mfu_fields(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in ("mfu", "peak_flops", "flops")}
