"""The field's SAE metrics on held-out text, each with its baseline and a 95% interval.

Held-out documents are packed into windows (:func:`interp.data.windows.pack_windows`);
position 0 of every window is left out of everything (see :mod:`saes.splice`).

*Reconstruction and sparsity* (one forward per window, stopped at the hooked layer):

* ``l0``: mean number of active features per token;
* ``explained_variance`` = 1 − Σ‖x − x̂‖² / Σ‖x − x̄‖² (x̄ the mean over the eval tokens);
* ``mse`` = mean ‖x − x̂‖² per token, ``cosine_similarity`` = mean cos(x, x̂);
* ``feature_density``: fraction of tokens each feature fires on; ``dead_fraction`` (never
  fired on the eval tokens) and ``dense_fraction`` (fired on more than ``dense_threshold``).

*Spliced into the model* (four full forwards per window: clean, SAE, zero and mean
ablation at positions 1…), next-token cross-entropy in nats over positions 1…seq−2:

* ``ce_loss_score`` = (CE_zero − CE_sae) / (CE_zero − CE_clean): the fraction of the loss
  gap from zero-ablating the layer that the SAE closes; ``ce_loss_score_mean_ablation`` the
  same against mean ablation (a harder, more honest baseline);
* ``delta_ce`` = CE_sae − CE_clean, and ``kl_sae`` = KL(clean ‖ spliced), per token.

Intervals: 95% percentile bootstrap over windows (1000 resamples, seeded), recomputing each
ratio from resampled sums, so they reflect the text's variability, not just token noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.progress import make_progress
from saes.sae import SparseAutoencoder
from saes.splice import logits_with, mean_replacement, sae_replacement, zero_replacement

DENSITY_BINS = np.arange(-7.0, 0.01, 0.25)


@dataclass
class EvalConfig:
    """How much held-out text to use and how to cut it."""

    tokens: int = 102_400
    ce_tokens: int | None = None
    seq_len: int = 128
    batch_size: int = 8
    seed: int = 0
    dense_threshold: float = 0.1
    n_bootstrap: int = 1000

    def __post_init__(self) -> None:
        if self.ce_tokens is None:
            self.ce_tokens = self.tokens
        if self.seq_len < 3:
            raise InterpError(f"sequence length must be ≥ 3, got {self.seq_len}")
        if self.tokens < 1 or self.ce_tokens < 0:
            raise InterpError(f"--tokens must be ≥ 1, got {self.tokens}")
        if self.batch_size < 1:
            raise InterpError(f"batch size must be ≥ 1, got {self.batch_size}")
        if not (math.isfinite(self.dense_threshold) and 0 < self.dense_threshold < 1):
            raise InterpError(f"dense threshold must be in (0, 1), got {self.dense_threshold}")

    @property
    def n_windows(self) -> int:
        return max(1, math.ceil(self.tokens / (self.seq_len - 1)))

    @property
    def n_ce_windows(self) -> int:
        assert self.ce_tokens is not None
        return 0 if self.ce_tokens == 0 else max(1, math.ceil(self.ce_tokens / (self.seq_len - 2)))


def _bootstrap(stat, sums: dict[str, np.ndarray], n: int, seed: int) -> list[float]:  # noqa: ANN001
    """Percentile 95% interval of ``stat(totals)`` over window resamples of ``sums``."""
    rng = np.random.default_rng(seed)
    k = next(iter(sums.values())).shape[0]
    vals = []
    for _ in range(n):
        idx = rng.integers(0, k, k)
        vals.append(stat({name: v[idx].sum(0) for name, v in sums.items()}))
    vals = np.asarray(vals, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return [float("nan"), float("nan")]
    return [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))]


def _ev(t: dict[str, np.ndarray]) -> float:
    n = t["n"]
    var = t["sumsq"] - float(np.dot(t["sumx"], t["sumx"])) / n
    return float(1 - t["err"] / var) if var > 0 else float("nan")


@torch.no_grad()
def reconstruction_metrics(
    model: Model, sae: SparseAutoencoder, windows: Tensor, cfg: EvalConfig,
    progress: bool | None = None,
) -> tuple[dict[str, Any], Tensor]:
    """L0, EV, MSE, cosine and densities on ``windows``; also returns the mean activation."""
    hook, d, m = sae.cfg.hook_point, sae.cfg.d_in, sae.cfg.d_sae
    nw = windows.shape[0]
    per = {"err": np.zeros(nw), "sumsq": np.zeros(nw), "n": np.zeros(nw),
           "l0": np.zeros(nw), "cos": np.zeros(nw), "sumx": np.zeros((nw, d))}
    fires = torch.zeros(m, dtype=torch.float64)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("SAE reconstruction", total=nw, info="")
        for i in range(0, nw, cfg.batch_size):
            ids = windows[i:i + cfg.batch_size]
            acts, _ = forward_with_hooks(model, ids.to(model.device), None, [hook])
            x = acts[hook][:, 1:].float().cpu()  # [b, s-1, d]
            f = sae.encode(x)
            x_hat = sae.decode(f)
            active = f > 0
            fires += active.double().sum((0, 1))
            sl = slice(i, i + ids.shape[0])
            per["err"][sl] = (x - x_hat).double().pow(2).sum((1, 2)).numpy()
            per["sumsq"][sl] = x.double().pow(2).sum((1, 2)).numpy()
            per["sumx"][sl] = x.double().sum(1).numpy()
            per["n"][sl] = x.shape[1]
            per["l0"][sl] = active.double().sum((1, 2)).numpy()
            per["cos"][sl] = torch.nn.functional.cosine_similarity(
                x.double(), x_hat.double(), dim=-1).sum(1).numpy()
            bar.update(task, advance=ids.shape[0])
    tot = {k: v.sum(0) for k, v in per.items()}
    n = float(tot["n"])
    boot = cfg.n_bootstrap
    density = (fires / n).numpy()
    dead = density == 0
    logd = np.log10(density[~dead]) if (~dead).any() else np.zeros(0)
    counts, edges = np.histogram(np.clip(logd, DENSITY_BINS[0], DENSITY_BINS[-1]),
                                 bins=DENSITY_BINS)
    l0_tok = per["l0"] / per["n"]
    out = {
        "n_tokens": int(n),
        "l0": float(tot["l0"] / n),
        "l0_ci95": _bootstrap(lambda t: t["l0"] / t["n"], per, boot, cfg.seed),
        "l0_std": float(np.std(l0_tok)),
        "explained_variance": _ev(tot),
        "explained_variance_ci95": _bootstrap(_ev, per, boot, cfg.seed + 1),
        "mse": float(tot["err"] / n),
        "mse_ci95": _bootstrap(lambda t: t["err"] / t["n"], per, boot, cfg.seed + 2),
        "cosine_similarity": float(tot["cos"] / n),
        "cosine_similarity_ci95": _bootstrap(lambda t: t["cos"] / t["n"], per, boot,
                                             cfg.seed + 3),
        "feature_density": [float(v) for v in density],
        "dead_fraction": float(dead.mean()),
        "dead_fraction_n": m,
        "dense_fraction": float((density > cfg.dense_threshold).mean()),
        "dense_threshold": cfg.dense_threshold,
        "density_histogram": {"edges": [float(e) for e in edges],
                              "counts": [int(c) for c in counts], "n_dead": int(dead.sum())},
    }
    mean = torch.from_numpy(tot["sumx"] / n).float()
    return out, mean


def _ce_and_kl(logits: Tensor, clean_lp: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """Per-window sums of next-token CE and KL(clean ‖ this) over positions 1…seq−2."""
    lp = torch.log_softmax(logits[:, 1:-1], -1)
    ce = -lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).sum(1)
    kl = (clean_lp.exp() * (clean_lp - lp)).sum(-1).sum(1)
    return ce.double(), kl.double()


@torch.no_grad()
def splice_metrics(
    model: Model, sae: SparseAutoencoder, windows: Tensor, mean: Tensor, cfg: EvalConfig,
    progress: bool | None = None,
) -> dict[str, Any]:
    """CE and KL with the SAE, zero and mean ablation spliced in (see module doc)."""
    hook = sae.cfg.hook_point
    variants = {"sae": sae_replacement(sae), "zero": zero_replacement(),
                "mean": mean_replacement(mean)}
    nw = windows.shape[0]
    per: dict[str, np.ndarray] = {k: np.zeros(nw) for k in
                                  ("clean", "sae", "zero", "mean", "kl_sae", "kl_zero",
                                   "kl_mean", "n")}
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("SAE spliced CE", total=nw, info="")
        for i in range(0, nw, cfg.batch_size):
            ids = windows[i:i + cfg.batch_size]
            targets = ids[:, 2:].to(model.device)
            clean = logits_with(model, ids, hook, None)
            clean_lp = torch.log_softmax(clean[:, 1:-1], -1)
            sl = slice(i, i + ids.shape[0])
            per["clean"][sl] = (-clean_lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                                .sum(1)).double().cpu().numpy()
            del clean
            for name, fn in variants.items():
                ce, kl = _ce_and_kl(logits_with(model, ids, hook, fn), clean_lp, targets)
                per[name][sl] = ce.cpu().numpy()
                per[f"kl_{name}"][sl] = kl.cpu().numpy()
            per["n"][sl] = targets.shape[1]
            bar.update(task, advance=ids.shape[0])
    tot = {k: float(v.sum()) for k, v in per.items()}
    n = tot["n"]
    boot, seed = cfg.n_bootstrap, cfg.seed + 10

    def score(base: str):  # noqa: ANN202
        def stat(t: dict[str, np.ndarray]) -> float:
            gap = t[base] - t["clean"]
            return float((t[base] - t["sae"]) / gap) if gap != 0 else float("nan")
        return stat

    return {
        "n_ce_tokens": int(n),
        "ce_clean": tot["clean"] / n,
        "ce_sae": tot["sae"] / n,
        "ce_zero_ablation": tot["zero"] / n,
        "ce_mean_ablation": tot["mean"] / n,
        "ce_loss_score": score("zero")(tot),
        "ce_loss_score_ci95": _bootstrap(score("zero"), per, boot, seed),
        "ce_loss_score_mean_ablation": score("mean")(tot),
        "ce_loss_score_mean_ablation_ci95": _bootstrap(score("mean"), per, boot, seed + 1),
        "delta_ce": (tot["sae"] - tot["clean"]) / n,
        "delta_ce_ci95": _bootstrap(lambda t: (t["sae"] - t["clean"]) / t["n"], per, boot,
                                    seed + 2),
        "kl_sae": tot["kl_sae"] / n,
        "kl_sae_ci95": _bootstrap(lambda t: t["kl_sae"] / t["n"], per, boot, seed + 3),
        "kl_zero_ablation": tot["kl_zero"] / n,
        "kl_mean_ablation": tot["kl_mean"] / n,
    }


def evaluate_sae(
    model: Model, sae: SparseAutoencoder, docs: list[str], cfg: EvalConfig | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """All metrics of the module doc on held-out ``docs``, as a JSON-ready dict."""
    cfg = cfg or EvalConfig()
    if sae.cfg.d_in != model.d_model:
        raise InterpError(
            f"SAE reads width {sae.cfg.d_in} but the model's d_model is {model.d_model}")
    n = max(cfg.n_windows, cfg.n_ce_windows)
    windows = pack_windows(model, docs, seq_len=cfg.seq_len, n_windows=n, seed=cfg.seed)
    sae = sae.to(model.device).eval()
    out: dict[str, Any] = {
        "model": model.model_id, "hook_point": sae.cfg.hook_point, "layer": sae.cfg.layer,
        "d_in": sae.cfg.d_in, "d_sae": sae.cfg.d_sae, "eval": asdict(cfg),
    }
    rec, mean = reconstruction_metrics(model, sae, windows[:cfg.n_windows], cfg, progress)
    out.update(rec)
    if cfg.n_ce_windows:
        out.update(splice_metrics(model, sae, windows[:cfg.n_ce_windows], mean, cfg, progress))
    return out
