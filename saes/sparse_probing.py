"""Sparse probing (SAEBench's metric): can k SAE latents do what a dense probe does?

For a labelled probe set (:func:`interp.probing.probes.load_probe_dataset`) the residual
stream at the SAE's hook point is read at each text's last token (or averaged) and
encoded by the SAE. For each of ``seeds`` held-out splits (the probe tool's splits: by
group when the set has one, keyed by ``1000·seed + s``):

* **k-sparse probe**: the ``k`` latents with the largest class-mean difference
  ``|mean(f | y=1) − mean(f | y=0)|`` **on the training rows only**, then the probe
  tool's standardised L2 logistic regression on those ``k`` columns, scored on the
  held-out rows; for each ``k`` in ``ks`` (default 1, 2, 5, 20);
* **k random latents** (the baseline): the same fit on ``k`` latents drawn at random
  among those that fire on at least one training text (a dead latent would be a straw
  man), averaged over ``random_draws`` draws;
* **dense probe** (the ceiling): the same fit on the whole residual-stream vector;
* **majority class**: the held-out split's majority rate (chance).

Accuracies come as their mean over splits with a Student-t 95% interval; the difference
between the k-sparse probe and k random latents is paired by split, and one whose
interval holds 0 is **within noise** (the report and ``results.json`` say so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float, Int

from interp.activations.capture import capture
from interp.errors import InterpError
from interp.models.loading import Model
from interp.probing.probes import (
    SEED_STRIDE,
    ProbeDataset,
    dataset_hash,
    fit_probe,
    split_indices,
)
from interp.profiling.session import phase
from interp.runs.progress import make_progress
from interp.stats.intervals import mean_t_ci
from saes.feature_steering import sae_layer
from saes.sae import SparseAutoencoder

POSITIONS = ("last", "mean")


@dataclass
class SparseProbeConfig:
    """Settings of one sparse-probing run (saved in ``results.json``)."""

    ks: Sequence[int] = (1, 2, 5, 20)
    seeds: int = 5
    test_size: float = 0.25
    C: float = 0.1
    position: str = "last"
    random_draws: int = 5
    batch_size: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        self.ks = sorted({int(k) for k in self.ks})
        if not self.ks or self.ks[0] < 1:
            raise InterpError(f"--ks must be positive integers, got {list(self.ks)}")
        if self.seeds < 1:
            raise InterpError(f"--seeds must be ≥ 1, got {self.seeds}")
        if not 0 < self.test_size < 1:
            raise InterpError(f"test size must be in (0, 1), got {self.test_size}")
        if not (math.isfinite(self.C) and self.C > 0):
            raise InterpError(f"C must be a positive number, got {self.C}")
        if self.position not in POSITIONS:
            raise InterpError(f"position must be one of {', '.join(POSITIONS)}, "
                              f"got {self.position!r}")
        if self.random_draws < 1:
            raise InterpError(f"random draws must be ≥ 1, got {self.random_draws}")

    def check(self, d_sae: int) -> None:
        """Refuse a k larger than the SAE's width."""
        if max(self.ks) > d_sae:
            raise InterpError(f"k {max(self.ks)} > d_sae {d_sae}: the SAE has only {d_sae} "
                              "latents")


def _summary(values: Sequence[float]) -> dict[str, Any]:
    mean, lo, hi = mean_t_ci(list(values))
    return {"mean": mean, "ci95": [lo, hi], "std": float(np.std(values, ddof=1))
            if len(values) > 1 else math.nan}


@dataclass
class SparseProbeResult:
    """What :func:`sparse_probe` measured; per-split accuracies are ``[k][split]``.

    ``to_dict()`` is ``results.json`` (with mean, interval and ``_n`` per accuracy),
    ``to_frame()`` one row per method and k.
    """

    model: str
    hook_point: str
    layer: int
    d_sae: int
    architecture: str
    dataset: str
    dataset_hash: str
    split: str
    n_examples: int
    n_test: list[int]
    ks: list[int]
    sparse_accuracy: list[list[float]]
    random_accuracy: list[list[float]]
    dense_accuracy: list[float]
    majority_accuracy: list[float]
    top_latents: list[list[int]]
    top_mean_differences: list[float]
    alive_latents: list[int]
    config: SparseProbeConfig
    sae_path: str | None = None
    manifest: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    def difference(self, i: int) -> dict[str, Any]:
        """k-sparse − k random for ``ks[i]``, paired by split, with its t interval."""
        d = [s - r for s, r in zip(self.sparse_accuracy[i], self.random_accuracy[i],
                                   strict=True)]
        out = _summary(d)
        lo, hi = out["ci95"]
        out["within_noise"] = (bool(lo <= 0 <= hi) if math.isfinite(lo) and math.isfinite(hi)
                               else None)
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One row per (method, k): mean accuracy, its interval and the pooled test n."""
        n = int(sum(self.n_test))
        rows = []
        for i, k in enumerate(self.ks):
            for method, values in (("sparse", self.sparse_accuracy[i]),
                                   ("random", self.random_accuracy[i])):
                s = _summary(values)
                rows.append({"method": method, "k": k, "accuracy": s["mean"],
                             "accuracy_ci95": s["ci95"], "accuracy_std": s["std"],
                             "accuracy_n": n})
        for method, values in (("dense", self.dense_accuracy),
                               ("majority", self.majority_accuracy)):
            s = _summary(values)
            rows.append({"method": method, "k": None, "accuracy": s["mean"],
                         "accuracy_ci95": s["ci95"], "accuracy_std": s["std"],
                         "accuracy_n": n})
        return rows

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["config"] = asdict(self.config)
        out["table"] = self.rows()
        out["sparse_minus_random"] = [{"k": k, **self.difference(i)}
                                      for i, k in enumerate(self.ks)]
        dense = _summary(self.dense_accuracy)
        out["dense"] = {**dense, "n": int(sum(self.n_test))}
        return {k: v for k, v in out.items() if v is not None}


def _top_by_mean_difference(
    f: Float[np.ndarray, "n d_sae"], y: Int[np.ndarray, " n"], k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``k`` latents with the largest |class-mean difference|, and those."""
    diff = np.abs(f[y == 1].mean(0) - f[y == 0].mean(0))
    order = np.argsort(-diff, kind="stable")[:k]
    return order, diff[order]


@torch.no_grad()
def sae_features(
    model: Model, sae: SparseAutoencoder, texts: Sequence[str], position: str = "last",
    batch_size: int = 16, progress: bool | None = None,
) -> tuple[Float[np.ndarray, "n d_model"], Float[np.ndarray, "n d_sae"]]:
    """Residual stream at the SAE's hook point (one vector per text) and its SAE latents."""
    acts = capture(model, list(texts), hooks=[sae.cfg.hook_point], positions=position,  # type: ignore[arg-type]
                   batch_size=batch_size, progress=progress)
    x = acts[sae.cfg.hook_point].float()
    with phase("encode"):
        f = sae.encode(x.to(sae.W_enc.device))
    return x.cpu().numpy(), f.cpu().numpy()


def sparse_probe(
    model: Model, sae: SparseAutoencoder, dataset: ProbeDataset,
    config: SparseProbeConfig | None = None, *, progress: bool | None = None,
) -> SparseProbeResult:
    """k-sparse probes on the SAE's latents vs k random latents vs the dense probe
    (see the module doc)."""
    cfg = config or SparseProbeConfig()
    cfg.check(sae.cfg.d_sae)
    layer = sae_layer(model, sae)
    x, f = sae_features(model, sae, dataset.texts, cfg.position, cfg.batch_size, progress)
    y = dataset.labels
    ks = list(cfg.ks)
    sparse = [[math.nan] * cfg.seeds for _ in ks]
    random_ = [[math.nan] * cfg.seeds for _ in ks]
    dense, majority, n_test, alive = [], [], [], []
    top_latents: list[list[int]] = []
    top_diffs: list[float] = []
    bar = make_progress(enabled=progress)
    with bar, phase("fit probes"):
        task = bar.add_task("sparse probes", total=cfg.seeds, info="")
        for s in range(cfg.seeds):
            key = SEED_STRIDE * cfg.seed + s
            train, test = split_indices(y, dataset.groups, key, cfg.test_size)
            rng = np.random.default_rng(key)
            order, diffs = _top_by_mean_difference(f[train], y[train], max(ks))
            top_latents.append([int(i) for i in order])
            if s == 0:
                top_diffs = [float(v) for v in diffs]
            live = np.flatnonzero((f[train] > 0).any(0))
            alive.append(int(live.size))
            for i, k in enumerate(ks):
                cols = order[:k]
                sparse[i][s] = fit_probe(f[:, cols], y, train, test, C=cfg.C,
                                         seed=key).test_accuracy
                pool = live if live.size >= k else np.arange(f.shape[1])
                accs = [fit_probe(f[:, rng.choice(pool, size=k, replace=False)], y, train,
                                  test, C=cfg.C, seed=key).test_accuracy
                        for _ in range(cfg.random_draws)]
                random_[i][s] = float(np.mean(accs))
            dense.append(fit_probe(x, y, train, test, C=cfg.C, seed=key).test_accuracy)
            counts = np.bincount(y[test], minlength=2)
            majority.append(float(counts.max() / counts.sum()))
            n_test.append(int(test.size))
            bar.update(task, advance=1)
    warnings = []
    if min(alive) < max(ks):
        warnings.append(f"only {min(alive)} latents fire on the training texts of some "
                        f"split, fewer than k = {max(ks)}: larger k add dead latents")
    return SparseProbeResult(
        model=model.model_id, hook_point=sae.cfg.hook_point, layer=layer,
        d_sae=sae.cfg.d_sae, architecture=sae.cfg.architecture, dataset=dataset.source,
        dataset_hash=dataset_hash(dataset),
        split=f"by {dataset.group_column}" if dataset.groups is not None else "stratified",
        n_examples=len(dataset), n_test=n_test, ks=ks, sparse_accuracy=sparse,
        random_accuracy=random_, dense_accuracy=dense, majority_accuracy=majority,
        top_latents=top_latents, top_mean_differences=top_diffs, alive_latents=alive,
        config=cfg, warnings=warnings,
    )
