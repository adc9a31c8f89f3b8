"""Directional ablation: remove a direction from the residual stream and measure what changes.

During a forward pass, at ``blocks.L.hook_resid_post`` and every position,
``h ← h − (h·u) u`` for a unit direction ``u``. We measure, on the dataset's prompts:

* (a) ``kl``: mean KL(clean ‖ ablated) of the next-token distribution at the last token;
* (b) ``logit_diff_change``: how much the model's own class separation in a task logit
  difference shrinks, when the dataset names ``target_tokens`` per class. The gap is
  ``logit(t₁) − logit(t₀)``; the separation is mean gap on class 1 minus class 0;
* (c) ``later_probe_accuracy``: a probe retrained on the ablated stream at a later layer.

Each direction's effects are compared with ≥ 10 random directions at the same layer,
**matched in variance**: the activations' variance along each random direction equals
the variance along the direction under test (a low-variance random direction would
barely move anything and flatter the test). Effects are reported with the percentile
and z-score of the test direction among the random ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.activations.capture import capture
from interp.errors import InterpError
from interp.lenses.logit import kl_divergence
from interp.models.loading import Model
from interp.probing.probes import ProbeDataset, fit_probe, split_indices
from interp.probing.results import (
    AblationConfig,
    AblationEffect,
    AblationResult,
    DirectionReport,
    ProbePosition,
    ProbeResult,
)
from interp.runs.progress import make_progress


def projection_hook(u: Float[Tensor, " d_model"]):
    """A TransformerLens hook removing the unit direction ``u`` from its activation."""
    u = u / u.norm()

    def hook(h: Tensor, hook: Any) -> Tensor:  # noqa: ARG001
        v = u.to(dtype=h.dtype, device=h.device)
        return h - (h @ v).unsqueeze(-1) * v

    return hook


def direction_variance(x: Float[np.ndarray, "n d_model"], u: Float[np.ndarray, " d_model"],
                       ) -> float:
    """Variance of the rows of ``x`` [n, d] projected on the unit vector along ``u``."""
    u = u / np.linalg.norm(u)
    return float(np.var(x @ u, ddof=1))


def variance_matched_directions(
    x: Float[np.ndarray, "n d_model"], u: Float[np.ndarray, " d_model"], k: int, seed: int = 0
) -> list[Float[np.ndarray, " d_model"]]:
    """``k`` random unit directions whose variance under ``x`` equals that along ``u``.

    Each starts as a uniformly random direction ``r₀`` and is rotated, in the plane of
    ``r₀`` and a random direction drawn from the principal subspace whose variances lie
    above (or below) the target, just far enough to match the target variance
    (bisection). Drawing the helper at random from that subspace, rather than always
    using the top principal direction, keeps the random directions spread out instead
    of all leaning on one outlier axis.
    """
    rng = np.random.default_rng(seed)
    xc = x - x.mean(0)
    cov = xc.T @ xc / max(len(x) - 1, 1)
    target = direction_variance(x, u)
    evals, evecs = np.linalg.eigh(cov)
    above = evecs[:, evals > target] if (evals > target).any() else evecs[:, -1:]
    below = evecs[:, evals < target] if (evals < target).any() else evecs[:, :1]
    out: list[np.ndarray] = []
    tries = 0
    while len(out) < k:
        tries += 1
        if tries > 20 * k:
            raise InterpError("could not draw variance-matched random directions")
        r0 = rng.standard_normal(x.shape[1])
        r0 /= np.linalg.norm(r0)
        v0 = float(r0 @ cov @ r0)
        basis = above if v0 < target else below
        helper = basis @ rng.standard_normal(basis.shape[1])
        helper /= np.linalg.norm(helper)
        e = helper - (helper @ r0) * r0
        e /= np.linalg.norm(e)

        def var(theta: float, r0: np.ndarray = r0, e: np.ndarray = e) -> float:
            r = math.cos(theta) * r0 + math.sin(theta) * e
            return float(r @ cov @ r)

        lo, hi = 0.0, math.pi / 2
        f_lo, f_hi = var(lo) - target, var(hi) - target
        if f_lo * f_hi > 0:
            continue
        for _ in range(60):
            mid = (lo + hi) / 2
            f_mid = var(mid) - target
            if f_mid * f_lo > 0:
                lo, f_lo = mid, f_mid
            else:
                hi = mid
        theta = (lo + hi) / 2
        r = math.cos(theta) * r0 + math.sin(theta) * e
        out.append((r / np.linalg.norm(r)).astype(np.float32))
    return out


def _percentile(value: float, others: Sequence[float]) -> float:
    return 100.0 * float(np.mean([o < value for o in others]))


def _z(value: float, others: Sequence[float]) -> float:
    sd = float(np.std(others, ddof=1)) if len(others) > 1 else 0.0
    return (value - float(np.mean(others))) / sd if sd > 0 else math.inf


def _rank_logit_diff(effect: AblationEffect, random: Sequence[AblationEffect],
                     ) -> tuple[float | None, float | None]:
    """(percentile, z) of the logit-gap change among the random directions' (None when
    it was not measured)."""
    value = effect.logit_diff_change
    others = [r.logit_diff_change for r in random]
    known = [v for v in others if v is not None]
    if value is None or not others or len(known) < len(others):
        return None, None
    return _percentile(value, known), _z(value, known)


class _Runner:
    """Runs the dataset once per direction with the projection hook active."""

    def __init__(self, model: Model, texts: Sequence[str], labels: np.ndarray,
                 targets: dict[int, str] | None, layer: int, later_layer: int,
                 batch_size: int, position: ProbePosition) -> None:
        self.model, self.texts, self.labels = model, list(texts), labels
        self.layer, self.later, self.batch_size = layer, later_layer, batch_size
        self.position: ProbePosition = position
        self.target_ids = None
        if targets is not None:
            self.target_ids = [model.single_token(targets[c], "target token") for c in (0, 1)]
        self.clean_lp, self.clean_later = self._run(None)

    def _run(self, u: Tensor | Any | None) -> tuple[Tensor, np.ndarray]:
        """Forward with ``u`` removed at the layer: a direction, or any hook function."""
        if u is None:
            hooks = []
        else:
            fn = projection_hook(u) if isinstance(u, Tensor) else u
            hooks = [(self.model.resid_hook(self.layer), fn)]
        with self.model.bridge.hooks(fwd_hooks=hooks):
            acts = capture(self.model, self.texts, layers=[self.later], positions=self.position,
                           batch_size=self.batch_size, with_logits=True, progress=False)
        assert acts.logits is not None
        # next-token distribution at the last token (with_logits follows `positions`)
        lp = torch.log_softmax(acts.logits.float(), -1)
        return lp, acts[self.later].float().numpy()

    def separation(self, lp: Tensor) -> float | None:
        if self.target_ids is None:
            return None
        gap = (lp[:, self.target_ids[1]] - lp[:, self.target_ids[0]]).numpy()
        return float(gap[self.labels == 1].mean() - gap[self.labels == 0].mean())

    def later_probe(self, x: np.ndarray, split: tuple[np.ndarray, np.ndarray]) -> float:
        return fit_probe(x, self.labels, split[0], split[1]).test_accuracy

    def effect(self, u: np.ndarray | Any, x_layer: np.ndarray,
               split: tuple[np.ndarray, np.ndarray], variance: float | None = None,
               ) -> AblationEffect:
        lp, later = self._run(torch.from_numpy(u) if isinstance(u, np.ndarray) else u)
        kl = float(kl_divergence(self.clean_lp, lp).mean())
        clean_sep, sep = self.separation(self.clean_lp), self.separation(lp)
        change = removed = None
        if clean_sep is not None and sep is not None:
            change = clean_sep - sep
            removed = change / clean_sep if clean_sep != 0 else None
        var = direction_variance(x_layer, u) if variance is None else variance
        return AblationEffect(kl, change, removed, self.later_probe(later, split), var)


def run_ablation(
    model: Model,
    texts: Sequence[str],
    labels: np.ndarray,
    directions: dict[str, Float[np.ndarray, " d_model"]],
    *,
    layer: int,
    x_layer: Float[np.ndarray, "n d_model"],
    groups: Sequence[str] | None = None,
    targets: dict[int, str] | None = None,
    n_random: int = 10,
    later_layer: int | None = None,
    position: ProbePosition = "last",
    batch_size: int = 16,
    seed: int = 0,
    leace: bool = False,
    progress: bool | None = None,
) -> AblationResult:
    """Ablate each of ``directions`` (name → [d_model]) at ``layer`` and compare with
    ``n_random`` variance-matched random directions per tested direction.

    ``x_layer`` holds the activations at ``layer`` (same positions as the probe) used
    to match variances. ``later_layer`` defaults to 4 layers later (capped at the last).
    ``leace=True`` also applies LEACE (Belrose et al. 2023, the ``concept-erasure``
    package), fitted on ``x_layer`` and the labels, as a second, principled erasure; it
    is reported as ``leace`` and ranked against the first direction's random set.
    """
    if n_random < 1:
        raise InterpError(f"random directions must be ≥ 1, got {n_random}")
    model.check_layer(layer)
    later = min(layer + 4, model.n_layers - 1) if later_layer is None else later_layer
    runner = _Runner(model, texts, labels, targets, layer, later, batch_size, position)
    split = split_indices(labels, groups, seed)
    result = AblationResult(layer, later, len(texts), runner.separation(runner.clean_lp),
                            runner.later_probe(runner.clean_later, split))
    total = len(directions) * (1 + n_random)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("ablating", total=total, info="")
        for name, u in directions.items():
            u = np.asarray(u, dtype=np.float32)
            if not np.isfinite(u).all() or np.linalg.norm(u) == 0:
                raise InterpError(f"direction {name!r} is zero or not finite")
            u = u / np.linalg.norm(u)
            eff = runner.effect(u, x_layer, split)
            bar.update(task, advance=1, info=name)
            rnd = []
            for r in variance_matched_directions(x_layer, u, n_random, seed=seed):
                rnd.append(runner.effect(r, x_layer, split))
                bar.update(task, advance=1, info=f"{name}: random {len(rnd)}")
            kls = [r.kl for r in rnd]
            result.directions[name] = DirectionReport(
                name, eff, rnd, _percentile(eff.kl, kls), _z(eff.kl, kls),
                *_rank_logit_diff(eff, rnd),
            )
    if leace:
        result.directions["leace"] = _leace_report(runner, x_layer, labels, split, result)
    return result


def leace_hook(x_layer: np.ndarray, labels: np.ndarray):
    """A hook applying a LEACE eraser fitted on ``x_layer`` [n, d] and binary labels."""
    try:
        from concept_erasure import LeaceEraser
    except ImportError:  # pragma: no cover - it is a dependency
        raise InterpError("LEACE needs the concept-erasure package") from None
    eraser = LeaceEraser.fit(torch.from_numpy(x_layer).double(),
                             torch.from_numpy(labels.astype(np.float64)).unsqueeze(1))

    def hook(h: Tensor, hook: Any) -> Tensor:  # noqa: ARG001
        return eraser(h.double()).to(h.dtype)

    return hook, eraser


def _leace_report(runner: _Runner, x_layer: np.ndarray, labels: np.ndarray,
                  split: tuple[np.ndarray, np.ndarray], result: AblationResult,
                  ) -> DirectionReport:
    hook, eraser = leace_hook(x_layer, labels)
    erased = eraser(torch.from_numpy(x_layer).double()).numpy()
    removed_var = float(np.var(x_layer, 0, ddof=1).sum() - np.var(erased, 0, ddof=1).sum())
    eff = runner.effect(hook, x_layer, split, variance=removed_var)
    ref = next(iter(result.directions.values()), None)
    rnd = ref.random if ref is not None else []
    kls = [r.kl for r in rnd]
    return DirectionReport(
        "leace", eff, rnd, _percentile(eff.kl, kls) if kls else math.nan,
        _z(eff.kl, kls) if kls else math.nan, *_rank_logit_diff(eff, rnd),
    )


def balanced_subsample(labels: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of at most ``n`` examples, ``n // 2`` per class where there are
    enough (seeded); every index when there are at most ``n``."""
    idx = np.arange(len(labels))
    if len(idx) <= n:
        return idx
    rng = np.random.default_rng(seed)
    per = n // 2
    return np.sort(np.concatenate([
        rng.choice(np.flatnonzero(labels == c), min(per, int((labels == c).sum())),
                   replace=False) for c in (0, 1)]))


def ablate_probe(
    model: Model,
    dataset: ProbeDataset,
    probe: ProbeResult,
    config: AblationConfig | None = None,
    *,
    progress: bool | None = None,
    **settings: Any,
) -> AblationResult:
    """The ablation check of a probe: remove its direction (and the class-mean
    difference) at the layer and compare with variance-matched random directions.

    Runs on a balanced subsample of ``dataset`` (the one ``probe`` was fit on), read at
    the probe's token position. Attach the result with ``probe.ablation = ...`` to get
    the ``results.json`` of ``interp probe --ablate``.
    """
    config = AblationConfig.resolve(config, settings)
    layer = probe.best_layer() if config.layer is None else config.layer
    if layer not in probe.directions:
        raise InterpError(f"the probe has no direction at layer {layer} "
                          f"(layers: {probe.layer_numbers})")
    position = probe.config.position
    batch_size = probe.config.batch_size if config.batch_size is None else config.batch_size
    idx = balanced_subsample(dataset.labels, config.n_examples, config.seed)
    texts = [dataset.texts[i] for i in idx]
    labels = dataset.labels[idx]
    groups = [dataset.groups[i] for i in idx] if dataset.groups else None
    x = capture(model, texts, layers=[layer], positions=position, batch_size=batch_size,
                progress=False)[layer].float().numpy()
    return run_ablation(
        model, texts, labels,
        {"probe": probe.directions[layer], "mean_difference": probe.mean_differences[layer]},
        layer=layer, x_layer=x, groups=groups, targets=dataset.target_tokens,
        n_random=config.n_random, later_layer=config.later_layer, position=position,
        batch_size=batch_size, seed=config.seed, leace=config.leace, progress=progress,
    )


__all__ = [
    "AblationConfig", "AblationEffect", "AblationResult", "DirectionReport", "ablate_probe",
    "balanced_subsample", "direction_variance", "leace_hook", "projection_hook",
    "run_ablation", "variance_matched_directions",
]

