"""The field's SAE metrics on held-out text, each with its baseline and a 95% interval.

Held-out documents are packed into windows (:func:`interp.data.windows.pack_windows`);
position 0 of every window is left out of everything (see :mod:`saes.splice`).

*Reconstruction and sparsity* (one forward per window, stopped at the hooked layer):

* ``l0``: mean number of active features per token;
* ``explained_variance`` = 1 − Σ‖x − x̂‖² / Σ‖x − x̄‖² (x̄ the mean over the eval tokens);
* ``mse`` = mean ‖x − x̂‖² per token, ``cosine_similarity`` = mean cos(x, x̂);
* ``feature_density``: fraction of tokens each feature fires on; ``dead_fraction`` (never
  fired on the eval tokens) and ``dense_fraction`` (fired on more than ``dense_threshold``).

*Spliced into the model* (clean, SAE, zero and mean ablation at positions 1…), next-token
cross-entropy in nats over positions 1…seq−2. The blocks up to the hook run once per
window (their activations are kept from the reconstruction pass when they fit in
``PREFIX_KEEP_BYTES``); only the blocks after it run four times, on the plain HF model
where that path is verified (:func:`interp.models.forward.logits_from_layer`). SAEs at
a hook point other than a residual stream fall back to four full bridge forwards.

* ``ce_loss_score`` = (CE_zero − CE_sae) / (CE_zero − CE_clean): the fraction of the loss
  gap from zero-ablating the layer that the SAE closes; ``ce_loss_score_mean_ablation`` the
  same against mean ablation (a harder, more honest baseline);
* ``delta_ce`` = CE_sae − CE_clean, and ``kl_sae`` = KL(clean ‖ spliced), per token.

Intervals: 95% percentile bootstrap over windows (:func:`~interp.stats.intervals.bootstrap_ci`, 1000
resamples, seeded), recomputing each ratio from resampled sums, so they reflect the text's
variability, not just token noise.

:func:`evaluate_sae` returns a :class:`SAEEvalResult` (defined in :mod:`saes.results`; its fields
are ``results.json``); :mod:`saes.figures` draws it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows, require_text
from interp.errors import InterpError
from interp.models.forward import logits_from_layer
from interp.models.loading import Model
from interp.profiling.session import phase
from interp.runs.manifest import model_manifest, sha256_texts
from interp.runs.progress import make_progress
from interp.stats.intervals import bootstrap_ci
from saes.baselines import BASELINE_KEYS, baseline_key, load_baselines, save_baselines
from saes.loading import LoadedSAE, unpack_sae
from saes.results import (
    CI,
    DEFAULT_TARGETS,
    DENSITY_BINS,
    DensityHistogram,
    SAEEvalConfig,
    SAEEvalResult,
    TrainingRecord,
)
from saes.sae import SparseAutoencoder
from saes.splice import (
    Replace,
    logits_with,
    mean_replacement,
    replace_after_first,
    sae_replacement,
    zero_replacement,
)

__all__ = ["DENSITY_BINS", "SAEEvalConfig", "SAEEvalResult", "evaluate_sae"]


def _window_ci(stat: Callable[[dict[str, np.ndarray]], float], per: dict[str, np.ndarray],
               keys: Sequence[str], n_resamples: int, seed: int) -> CI:
    """Percentile 95% interval of ``stat(totals)``, resampling windows (rows of ``per``).

    Only the arrays in ``keys`` are resampled; each resample's totals are their sums over
    the drawn windows. One window gives the point value twice (nothing to resample).
    """
    arrays = {k: per[k] for k in keys}
    n = next(iter(arrays.values())).shape[0]

    def statistic(idx: np.ndarray) -> float:
        return stat({k: v[idx].sum(0) for k, v in arrays.items()})

    if n < 2:
        v = statistic(np.arange(n))
        return (v, v) if math.isfinite(v) else (math.nan, math.nan)
    lo, hi = bootstrap_ci(statistic, n, n_resamples=n_resamples, seed=seed)
    return (lo, hi)


def _ev(t: dict[str, np.ndarray]) -> float:
    n = t["n"]
    var = t["sumsq"] - float(np.dot(t["sumx"], t["sumx"])) / n
    return float(1 - t["err"] / var) if var > 0 else float("nan")


#: Largest block of hook activations :func:`evaluate_sae` keeps from the reconstruction pass
#: for the spliced passes (above it, the spliced passes recompute the prefix).
PREFIX_KEEP_BYTES = 2 * 1024**3


@torch.no_grad()
def _reconstruction(
    model: Model, sae: SparseAutoencoder, windows: Int[Tensor, "n seq"], cfg: SAEEvalConfig,
    progress: bool | None = None, keep: int = 0,
) -> tuple[dict[str, Any], Tensor, Tensor | None]:
    """L0, EV, MSE, cosine and densities (fields of :class:`SAEEvalResult`) on ``windows``;
    also returns the mean activation and, with ``keep`` > 0, the hook activations of the
    first ``keep`` windows (every position, the model's dtype) for :func:`_splice`."""
    hook, d, m = sae.cfg.hook_point, sae.cfg.d_in, sae.cfg.d_sae
    nw = windows.shape[0]
    per = {"err": np.zeros(nw), "sumsq": np.zeros(nw), "n": np.zeros(nw),
           "l0": np.zeros(nw), "cos": np.zeros(nw), "sumx": np.zeros((nw, d))}
    fires = torch.zeros(m, dtype=torch.float64)
    kept = (torch.empty(keep, windows.shape[1], d, dtype=model.dtype, device=model.device)
            if keep else None)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("SAE reconstruction", total=nw, info="")
        for i in range(0, nw, cfg.batch_size):
            ids = windows[i:i + cfg.batch_size]
            with phase("forward"):
                acts, _ = forward_with_hooks(model, ids.to(model.device), None, [hook])
            if kept is not None and i < keep:
                kept[i:i + ids.shape[0]] = acts[hook][:keep - i].to(model.dtype)
            with phase("metrics"):
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
    boot, seed = cfg.n_bootstrap, cfg.seed

    def ratio(key: str) -> Callable[[dict[str, np.ndarray]], float]:
        return lambda t: float(t[key] / t["n"])

    density = (fires / n).numpy()
    dead = density == 0
    out = {
        "n_tokens": int(n),
        "l0": float(tot["l0"] / n),
        "l0_ci95": _window_ci(ratio("l0"), per, ("l0", "n"), boot, seed),
        "l0_std": float(np.std(per["l0"] / per["n"])),
        "explained_variance": _ev(tot),
        "explained_variance_ci95": _window_ci(_ev, per, ("err", "sumsq", "sumx", "n"), boot,
                                              seed + 1),
        "mse": float(tot["err"] / n),
        "mse_ci95": _window_ci(ratio("err"), per, ("err", "n"), boot, seed + 2),
        "cosine_similarity": float(tot["cos"] / n),
        "cosine_similarity_ci95": _window_ci(ratio("cos"), per, ("cos", "n"), boot, seed + 3),
        "feature_density": [float(v) for v in density],
        "dead_fraction": float(dead.mean()),
        "dead_fraction_n": m,
        "dense_fraction": float((density > cfg.dense_threshold).mean()),
        "dense_threshold": cfg.dense_threshold,
        "density_histogram": DensityHistogram.of(density),
    }
    mean = torch.from_numpy(tot["sumx"] / n).float()
    return out, mean, kept


def _ce_and_kl(
    logits: Float[Tensor, "b pos vocab"], clean: Float[Tensor, "b n vocab"],
    clean_p: Float[Tensor, "b n vocab"], clean_lse: Float[Tensor, "b n"],
    targets: Int[Tensor, "b n"],
) -> tuple[Tensor, Tensor]:
    """Per-window sums of next-token CE and KL(clean ‖ this) over positions 1…seq−2.

    With ``z`` the logits, ``lse`` their log-sum-exp and ``p`` the clean softmax:
    CE = lse − z[target] and KL = Σ p·(z_clean − z) − lse_clean + lse (Σ p = 1), which
    reads each vocabulary row twice instead of materialising two log-softmaxes.
    """
    z = logits[:, 1:-1]
    lse = torch.logsumexp(z, -1)
    ce = (lse - z.gather(-1, targets.unsqueeze(-1)).squeeze(-1)).sum(1)
    kl = ((clean_p * (clean - z)).sum(-1) - clean_lse + lse).sum(1)
    return ce.double(), kl.double()


@torch.no_grad()
def _splice(
    model: Model, sae: SparseAutoencoder, windows: Int[Tensor, "n seq"], mean: Tensor,
    cfg: SAEEvalConfig, progress: bool | None = None, prefix: Tensor | None = None,
) -> dict[str, Any]:
    """CE and KL with the SAE, zero and mean ablation spliced in (fields of
    :class:`SAEEvalResult`; see the module doc).

    Each batch's hook activations (``prefix``, kept by :func:`_reconstruction`, or one
    forward stopped at the hook) are edited four ways (clean, SAE, zero, mean) and only
    the blocks after the hook run for each (:func:`~interp.models.forward.
    logits_from_layer`): the blocks before it run once per window, not five times.
    """
    hook, layer = sae.cfg.hook_point, sae.cfg.layer
    resid = layer is not None and hook == model.resid_hook(layer)

    def run(x: Tensor, ids: Tensor, replace: Replace | None) -> Tensor:
        if resid:
            assert layer is not None
            return logits_from_layer(model, x if replace is None
                                     else replace_after_first(replace)(x), layer)
        return logits_with(model, ids, hook, replace)  # another hook point: full forwards
    variants = {"sae": sae_replacement(sae), "zero": zero_replacement(),
                "mean": mean_replacement(mean)}
    nw = windows.shape[0]
    per: dict[str, np.ndarray] = {k: np.zeros(nw) for k in
                                  ("clean", "sae", "zero", "mean", "kl_sae", "kl_zero",
                                   "kl_mean", "n")}
    key = baseline_key(model, hook, windows, mean) if cfg.cache_baselines else None
    cached = load_baselines(key, nw) if key is not None else None
    if cached is not None:  # zero and mean ablation do not depend on the SAE
        per.update(cached)
        del variants["zero"], variants["mean"]
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("SAE spliced CE", total=nw, info="")
        for i in range(0, nw, cfg.batch_size):
            ids = windows[i:i + cfg.batch_size]
            targets = ids[:, 2:].to(model.device)
            if not resid:
                x = ids
            elif prefix is not None and i + ids.shape[0] <= prefix.shape[0]:
                x = prefix[i:i + ids.shape[0]]
            else:
                with phase("forward"):
                    acts, _ = forward_with_hooks(model, ids.to(model.device), None, [hook])
                x = acts[hook].to(model.dtype)
            with phase("forward"):
                clean = run(x, ids, None)[:, 1:-1]
            with phase("metrics"):
                clean_lse = torch.logsumexp(clean, -1)
                clean_p = torch.exp(clean - clean_lse.unsqueeze(-1))
                sl = slice(i, i + ids.shape[0])
                per["clean"][sl] = (clean_lse - clean.gather(-1, targets.unsqueeze(-1))
                                    .squeeze(-1)).sum(1).double().cpu().numpy()
            for name, fn in variants.items():
                with phase("forward"):
                    logits = run(x, ids, fn)
                with phase("metrics"):
                    ce, kl = _ce_and_kl(logits, clean, clean_p, clean_lse, targets)
                per[name][sl] = ce.cpu().numpy()
                per[f"kl_{name}"][sl] = kl.cpu().numpy()
                del logits
            del clean, clean_p
            per["n"][sl] = targets.shape[1]
            bar.update(task, advance=ids.shape[0])
    if key is not None and cached is None:
        save_baselines(key, {k: per[k] for k in BASELINE_KEYS})
    tot = {k: float(v.sum()) for k, v in per.items()}
    n = tot["n"]
    boot, seed = cfg.n_bootstrap, cfg.seed + 10

    def score(base: str) -> Callable[[dict[str, Any]], float]:
        def stat(t: dict[str, Any]) -> float:
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
        "ce_loss_score_ci95": _window_ci(score("zero"), per, ("zero", "sae", "clean"), boot,
                                         seed),
        "ce_loss_score_mean_ablation": score("mean")(tot),
        "ce_loss_score_mean_ablation_ci95": _window_ci(score("mean"), per,
                                                       ("mean", "sae", "clean"), boot, seed + 1),
        "delta_ce": (tot["sae"] - tot["clean"]) / n,
        "delta_ce_ci95": _window_ci(lambda t: float((t["sae"] - t["clean"]) / t["n"]), per,
                                    ("sae", "clean", "n"), boot, seed + 2),
        "kl_sae": tot["kl_sae"] / n,
        "kl_sae_ci95": _window_ci(lambda t: float(t["kl_sae"] / t["n"]), per, ("kl_sae", "n"),
                                  boot, seed + 3),
        "kl_zero_ablation": tot["kl_zero"] / n,
        "kl_mean_ablation": tot["kl_mean"] / n,
        "baselines_cached": cached is not None,
    }


def evaluate_sae(
    model: Model, sae: SparseAutoencoder | LoadedSAE, docs: Sequence[str],
    cfg: SAEEvalConfig | None = None, progress: bool | None = None, *,
    data: dict[str, Any] | None = None, **settings: Any,
) -> SAEEvalResult:
    """All metrics of the module doc on held-out ``docs``.

    Reconstruction and densities on ``cfg.tokens`` tokens, the spliced CE on
    ``cfg.ce_tokens`` (left out when 0), each in windows of ``cfg.seq_len`` tokens. Settings
    come from ``cfg`` or keyword arguments named as its fields. ``sae`` may be a
    :class:`~saes.loading.LoadedSAE`: the result then records its path, its training record
    and its manifest's provenance. ``data`` says where ``docs`` came from
    (``{"source": …, "sha256": …}``). The result is judged against
    :data:`~saes.results.DEFAULT_TARGETS` and carries its manifest; ``result.to_dict()`` is
    JSON-ready (NaN aside).
    """
    cfg = SAEEvalConfig.resolve(cfg, settings)
    sae, loaded = unpack_sae(sae)
    if sae.cfg.d_in != model.d_model:
        raise InterpError(
            f"SAE reads width {sae.cfg.d_in} but the model's d_model is {model.d_model}")
    n = max(cfg.n_windows, cfg.n_ce_windows)
    require_text(model, docs, need=n * cfg.seq_len, what="SAE evaluation",
                 asked=f"tokens={cfg.tokens:,}, ce_tokens={cfg.ce_tokens:,}",
                 reads=f"{n:,} windows of seq_len={cfg.seq_len}, position 0 unscored",
                 fix="lower tokens and ce_tokens or give more held-out text")
    windows = pack_windows(model, docs, seq_len=cfg.seq_len, n_windows=n, seed=cfg.seed)
    sae = sae.to(model.device).eval()
    n_ce = cfg.n_ce_windows
    keep = min(n_ce, cfg.n_windows)
    if keep * cfg.seq_len * model.d_model * model.dtype.itemsize > PREFIX_KEEP_BYTES:
        keep = 0  # too large to hold: the spliced passes recompute the prefix
    rec, mean, prefix = _reconstruction(model, sae, windows[:cfg.n_windows], cfg, progress,
                                        keep=keep)
    spliced = (_splice(model, sae, windows[:n_ce], mean, cfg, progress, prefix)
               if n_ce else {})
    result = SAEEvalResult(model=model.model_id, hook_point=sae.cfg.hook_point,
                           layer=sae.cfg.layer, d_in=sae.cfg.d_in, d_sae=sae.cfg.d_sae,
                           architecture=sae.cfg.architecture, k=sae.cfg.k, eval=cfg,
                           **rec, **spliced)
    result.data = dict(data) if data is not None else None
    result.targets = dict(DEFAULT_TARGETS)
    config: dict[str, Any] = cfg.to_dict()
    extra: dict[str, Any] = {}
    if loaded is not None:
        result.sae_path = str(loaded.path)
        result.training = TrainingRecord.of_artifact(loaded.config)
        config["sae"] = str(loaded.path)
        extra["sae_manifest"] = {k: loaded.manifest.get(k) for k in
                                 ("git_commit", "timestamp", "dataset_hash", "seed", "config")}
    result.manifest = model_manifest(
        model, seed=cfg.seed, config=config, extra=extra,
        dataset_hash=(data or {}).get("sha256") or sha256_texts(docs))
    return result
