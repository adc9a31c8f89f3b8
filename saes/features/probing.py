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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float, Int

from interp.activations.capture import capture
from interp.display import format_number, signed
from interp.errors import InterpError
from interp.models.loading import Model
from interp.probing.results import SEED_STRIDE
from interp.profiling.session import phase
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import (
    Check,
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_field,
    positive,
    seed_range,
    setting,
)
from interp.stats.intervals import mean_t_ci
from saes.features.steering import sae_layer
from saes.loading import LoadedSAE, unpack_sae
from saes.sae import SparseAutoencoder

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from interp.probing.probes import ProbeDataset

def parse_ks(text: str | Sequence[int]) -> list[int]:
    """``"1,2,5,20"`` as ``[1, 2, 5, 20]`` (the command line's ``--ks``)."""
    if not isinstance(text, str):
        return [int(k) for k in text]
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or any(not math.isfinite(v) or v != int(v) or v < 1 for v in values):
        raise InterpError(f"bad --ks {text!r}: use comma-separated positive integers")
    return [int(v) for v in values]


def _positive_ints(ks: Sequence[int]) -> bool:
    return len(ks) > 0 and all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                               for k in ks)


@dataclass(frozen=True)
class SparseProbeConfig(Config):
    """Settings of one sparse-probing run (saved in ``results.json``); ``ks`` is kept
    sorted, without repeats."""

    ks: Sequence[int] = setting(
        (1, 2, 5, 20), check=Check(_positive_ints, "must be positive integers"),
        help="Comma-separated numbers of latents the sparse probes may use.",
        cli=Cli(parse=parse_ks, default="1,2,5,20"))
    # bounded like the probe tool's splits: --seeds 2147483648 filled memory (found by the
    # CLI fuzzing) before a single probe ran
    seeds: int = setting(5, check=in_range(1, SEED_STRIDE), help="Held-out splits.",
                         cli=Cli(range=True))
    test_size: float = setting(0.25, cli=False,
                               check=in_range(0, 1, open_low=True, open_high=True),
                               help="Held-out fraction of each split.")
    C: float = setting(0.1, check=positive, help="Inverse L2 strength of every probe.",
                       cli=Cli(flag="--C"))
    position: Literal["last", "mean"] = setting("last",
                                                help="Token(s) of each text to read.")
    random_draws: int = setting(5, check=at_least(1),
                                help="Draws of k random latents per split (averaged).",
                                cli=Cli(range=True))
    batch_size: int = setting(16, cli=False, check=at_least(1), help="Texts per forward pass.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Keys the splits and the random latents.")

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "ks", sorted({int(k) for k in self.ks}))

    def check_width(self, d_sae: int) -> None:
        """Refuse a k larger than the SAE's width."""
        if max(self.ks) > d_sae:
            raise InterpError(f"k {max(self.ks)} > d_sae {d_sae}: the SAE has only {d_sae} "
                              "latents")


def _summary(values: Sequence[float]) -> dict[str, Any]:
    mean, lo, hi = mean_t_ci(list(values))
    return {"mean": mean, "ci95": [lo, hi], "std": float(np.std(values, ddof=1))
            if len(values) > 1 else math.nan}


@dataclass
class SparseProbeResult(Result):
    """What :func:`sparse_probe` measured; per-split accuracies are ``[k][split]``.

    ``to_dict()`` is ``results.json`` (with mean, interval and ``_n`` per accuracy),
    ``to_frame()`` one row per method and k; :meth:`headline` is the CLI's table.
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
    sae_path: str | None = json_field(None, omit_none=True)

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
        """One row per (method, k): the numbers behind the headline's table."""
        return pd.DataFrame(self.rows())

    def extra_data(self) -> dict[str, Any]:
        """Adds the per-k table, sparse minus random per k, and the dense probe's accuracy."""
        return {"table": self.rows(),
                "sparse_minus_random": [{"k": k, **self.difference(i)}
                                        for i, k in enumerate(self.ks)],
                "dense": {**_summary(self.dense_accuracy), "n": int(sum(self.n_test))}}

    def headline(self) -> Headline:
        """k-sparse against k random latents per k, then the dense probe and chance."""
        table: list[list[Any]] = []
        for i, k in enumerate(self.ks):
            d = self.difference(i)
            table.append([k, _summary(self.sparse_accuracy[i])["mean"],
                          _summary(self.random_accuracy[i])["mean"], signed(d["mean"]),
                          "within noise" if d["within_noise"] else ""])
        chance = _summary(self.majority_accuracy)["mean"]
        table.append(["dense", _summary(self.dense_accuracy)["mean"], "", "",
                      f"chance {format_number(chance)}"])
        return Headline(
            title=f"Sparse probing — {self.model}",
            rows=[("SAE", f"{self.architecture}, d_sae {self.d_sae}, at {self.hook_point}"),
                  ("dataset", f"{self.dataset} ({self.n_examples} texts, split {self.split})")],
            columns=["k", "k-sparse", "k random", "sparse − random", ""], table=table,
            table_title=f"sparse probing · {self.hook_point} · {self.dataset}")

    def figure(self) -> Figure | None:
        """:func:`~saes.figures.sparse_probe_figure`: held-out accuracy against k (k-sparse, k
        random latents, the dense probe, chance)."""
        from saes.figures import sparse_probe_figure

        return sparse_probe_figure(self)


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
    model: Model, sae: SparseAutoencoder | LoadedSAE, dataset: ProbeDataset,
    config: SparseProbeConfig | None = None, *, progress: bool | None = None,
    **settings: Any,
) -> SparseProbeResult:
    """k-sparse probes on the SAE's latents vs k random latents vs the dense probe
    (see the module doc). Settings come from ``config`` or keyword arguments named as its
    fields; a :class:`~saes.loading.LoadedSAE` adds its path to the result, which carries
    its manifest."""
    from interp.probing.probes import (  # scikit-learn: loaded when a probe is fitted
        SEED_STRIDE,
        dataset_hash,
        fit_probe,
        split_indices,
    )

    cfg = SparseProbeConfig.resolve(config, settings)
    sae, loaded = unpack_sae(sae)
    cfg.check_width(sae.cfg.d_sae)
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
    sae_path = str(loaded.path) if loaded is not None else None
    result = SparseProbeResult(
        model=model.model_id, hook_point=sae.cfg.hook_point, layer=layer,
        d_sae=sae.cfg.d_sae, architecture=sae.cfg.architecture, dataset=dataset.source,
        dataset_hash=dataset_hash(dataset),
        split=f"by {dataset.group_column}" if dataset.groups is not None else "stratified",
        n_examples=len(dataset), n_test=n_test, ks=ks, sparse_accuracy=sparse,
        random_accuracy=random_, dense_accuracy=dense, majority_accuracy=majority,
        top_latents=top_latents, top_mean_differences=top_diffs, alive_latents=alive,
        config=cfg, warnings=warnings, sae_path=sae_path,
    )
    result.manifest = model_manifest(
        model, seed=cfg.seed, texts=dataset.texts,
        config={**cfg.to_dict(), **({"sae": sae_path} if sae_path else {}),
                "dataset": dataset.source})
    return result
