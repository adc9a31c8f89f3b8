"""Linear probes measured honestly: held-out accuracy, baselines, seed noise, layer sweeps.

A probe is standardised logistic regression on one layer's residual stream (by default
at each text's last token). Every number is measured on held-out data, split by
``group`` when the dataset has one (the deciding word: the adjective, the answer, the
entity), and repeated over seeds. Each probe is reported next to its baselines, all
through the same split and pipeline:

* **shuffled labels**: the probe trained on permuted labels (chance + memorisation);
* **majority class**: the test split's majority rate;
* **random weights**: the same architecture with random weights (representation control);
* **bag of words**: logistic regression on the text's word counts (surface control);
* **control task** (Hewitt & Liang 2019): a random label per final word type, with
  *selectivity* = task accuracy − control-task accuracy.

``control_accuracy`` is, per layer, the best of shuffled, random-weights and
bag-of-words. A layer sweep uses one capture pass for all layers.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from jaxtyping import Float, Int
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupShuffleSplit, StratifiedShuffleSplit
from sklearn.preprocessing import StandardScaler

from interp.activations.capture import capture
from interp.data.readers import read_records
from interp.errors import InterpError
from interp.models.loading import Model
from interp.probing.logistic import fit_logistic
from interp.probing.results import (
    METRICS,
    SEED_STRIDE,
    DatasetSummary,
    LayerStats,
    ProbeConfig,
    ProbeResult,
)
from interp.probing.traps import probe_traps
from interp.profiling.session import phase
from interp.runs.manifest import model_manifest
from interp.runs.paths import shipped_dataset
from interp.runs.progress import make_progress

DEFAULT_DATASET = "probes/capitals_truefalse.jsonl"
MIN_EXAMPLES = 10


# ------------------------------------------------------------------------- data
@dataclass
class ProbeDataset:
    """Texts with binary labels, optional groups and per-class target tokens."""

    texts: list[str]
    labels: np.ndarray  # int [n], values 0/1
    groups: list[str] | None
    target_tokens: dict[int, str] | None
    source: str
    label_names: list[str]
    #: the other scalar columns, as strings (what the trap checks search for a cause)
    columns: dict[str, list[str]] = field(default_factory=dict)
    #: the column ``groups`` came from
    group_column: str | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices: Sequence[int]) -> ProbeDataset:
        """The examples at ``indices``, in that order, with every column kept (groups,
        the other columns, target tokens and the source); for example the statements of
        some groups, ``ds.subset([i for i, g in enumerate(ds.groups) if g in keep])``."""
        idx = [int(i) for i in indices]
        if not idx:
            raise InterpError(f"{self.source}: an empty subset has nothing to probe")
        if min(idx) < -len(self) or max(idx) >= len(self):
            raise InterpError(f"{self.source}: subset index out of range for "
                              f"{len(self)} examples")
        return replace(self, texts=[self.texts[i] for i in idx], labels=self.labels[idx],
                       groups=None if self.groups is None else [self.groups[i] for i in idx],
                       columns={k: [v[i] for i in idx] for k, v in self.columns.items()})


def load_probe_dataset(
    path: str | Path | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    group_column: str | None = "group",
) -> ProbeDataset:
    """Read a JSONL/JSON/CSV/TSV probe set (default: the shipped capitals true/false set).

    Labels may be any two distinct values (ints, bools or strings); they are mapped to
    0/1 in sorted order. Raises :class:`InterpError` for a missing column, one class,
    more than two classes, or fewer than 10 examples.
    """
    p = Path(path) if path is not None else shipped_dataset(DEFAULT_DATASET)
    records = read_records(p)
    for col in (text_column, label_column):
        missing = [i + 1 for i, r in enumerate(records) if col not in r]
        if missing:
            cols = ", ".join(sorted(records[missing[0] - 1]))
            raise InterpError(
                f"{p}: record {missing[0]} has no column {col!r} (columns: {cols})"
            )
    texts = [str(r[text_column]) for r in records]
    for i, t in enumerate(texts):
        if not t.strip():
            raise InterpError(f"{p}: record {i + 1} has an empty {text_column!r}")
    raw = [r[label_column] for r in records]
    values = sorted({str(v) for v in raw})
    if len(values) < 2:
        raise InterpError(f"{p}: a single class ({values[0]!r}): a probe needs two labels")
    if len(values) > 2:
        raise InterpError(
            f"{p}: {len(values)} classes ({', '.join(values[:5])}…): probes are binary"
        )
    labels = np.array([values.index(str(v)) for v in raw], dtype=np.int64)
    if len(texts) < MIN_EXAMPLES:
        raise InterpError(f"{p}: only {len(texts)} examples; a probe needs at least "
                          f"{MIN_EXAMPLES}")
    groups = None
    if group_column and all(group_column in r for r in records):
        groups = [str(r[group_column]) for r in records]
        if len(set(groups)) < 4:
            groups = None  # too few groups to hold some out
    targets = None
    tt = records[0].get("target_tokens")
    if isinstance(tt, dict) and all(isinstance(r.get("target_tokens"), dict) for r in records):
        targets = {values.index(str(k)): str(v) for k, v in tt.items() if str(k) in values}
        if len(targets) != 2:
            targets = None
    skip = {text_column, label_column, "target_tokens"}
    columns = {k: [str(r[k]) for r in records] for k in records[0]
               if k not in skip and all(isinstance(r.get(k), str | int | float)
                                        for r in records)}
    return ProbeDataset(texts, labels, groups, targets, str(p), values, columns,
                        group_column if groups is not None else None)


def dataset_hash(ds: ProbeDataset) -> str:
    """sha256 over texts, labels and groups (identifies the data in manifests)."""
    h = hashlib.sha256()
    for i, t in enumerate(ds.texts):
        g = ds.groups[i] if ds.groups else ""
        h.update(f"{len(t)}:{t}\0{int(ds.labels[i])}\0{g}\n".encode())
    return h.hexdigest()


# ------------------------------------------------------------------------ splits
def split_indices(
    labels: np.ndarray, groups: Sequence[str] | None, seed: int, test_size: float = 0.25
) -> tuple[np.ndarray, np.ndarray]:
    """Held-out split: by group when groups are given (whole groups held out), else
    stratified. Retries seeds until both classes appear on both sides."""
    n = len(labels)
    idx = np.arange(n)
    for attempt in range(50):
        rs = seed * 1000 + attempt
        if groups is not None:
            splitter = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=rs)
            train, test = next(splitter.split(idx, labels, groups))
        else:
            splitter = StratifiedShuffleSplit(n_splits=1, test_size=test_size, random_state=rs)
            train, test = next(splitter.split(idx, labels))
        if len(set(labels[train])) == 2 and len(set(labels[test])) == 2:
            return train, test
    raise InterpError("cannot split the data so that both classes are in train and test")


# ----------------------------------------------------------------------- fitting
@dataclass
class FitResult:
    """One probe fit: train and held-out accuracy, held-out AUROC, and the fitted model and
    scaler."""
    train_accuracy: float
    test_accuracy: float
    test_auroc: float
    model: Any = field(repr=False, default=None)
    scaler: Any = field(repr=False, default=None)


def fit_probe(
    x: Float[np.ndarray, "n d"], y: Int[np.ndarray, " n"], train: Int[np.ndarray, " n_train"],
    test: Int[np.ndarray, " n_test"], *, C: float = 0.1,
    y_train: Int[np.ndarray, " n_train"] | None = None, seed: int = 0, tol: float = 1e-4,
) -> FitResult:
    """Standardise on the train rows, fit L2 logistic regression, score held-out rows.

    scikit-learn's ``newton-cholesky`` fit, in ``x``'s precision (float32 activations
    fit in float32; pass float64 and ``tol=1e-8`` for the reference that
    :func:`interp.probing.logistic.fit_logistic` matches). ``y_train`` overrides the
    training labels (shuffled-label baseline); the test score always uses the true ``y``.
    """
    scaler = StandardScaler().fit(x[train])
    xs_train, xs_test = scaler.transform(x[train]), scaler.transform(x[test])
    yt = y[train] if y_train is None else y_train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(
            C=C, solver="newton-cholesky", max_iter=200, random_state=seed, tol=tol
        ).fit(xs_train, yt)
    train_acc = float((clf.predict(xs_train) == yt).mean())  # on the labels it was fit to
    test_pred = clf.predict(xs_test)
    scores = clf.decision_function(xs_test)
    auroc = float(roc_auc_score(y[test], scores)) if len(set(y[test])) == 2 else math.nan
    return FitResult(train_acc, float((test_pred == y[test]).mean()), auroc, clf, scaler)


def _bow_features(texts: Sequence[str]) -> np.ndarray:
    vec = CountVectorizer(binary=True, token_pattern=r"(?u)\b\w+\b", lowercase=True)
    counts: Any = vec.fit_transform(texts)  # a scipy sparse matrix
    return counts.toarray().astype(np.float32)


def _final_word(text: str) -> str:
    words = [w.strip(".,!?;:\"'()").lower() for w in text.split()]
    words = [w for w in words if w]
    return words[-1] if words else ""


def control_task_types(texts: Sequence[str], groups: Sequence[str] | None) -> list[str] | None:
    """The word type each example's control label hangs on: its final word
    (Hewitt & Liang), or its group when every text ends with the same word (a shared
    cue such as "Overall, it was"). ``None`` when neither varies."""
    finals = [_final_word(t) for t in texts]
    if len(set(finals)) >= 2:
        return finals
    if groups is not None and len(set(groups)) >= 2:
        return list(groups)
    return None


def control_task_labels(types: Sequence[str], seed: int) -> np.ndarray:
    """Hewitt & Liang control task: a random (seeded) 0/1 label per word type, drawn
    until both labels occur."""
    for salt in range(100):
        out = np.array(
            [hashlib.sha256(f"{seed}\0{salt}\0{t}".encode()).digest()[0] & 1 for t in types],
            dtype=np.int64,
        )
        if len(set(out.tolist())) == 2:
            return out
    raise InterpError("cannot draw a two-class control task")


# ----------------------------------------------------------------------- the run


def random_weights_model(model: Model, seed: int = 0) -> Model:
    """The same architecture with random weights (cached per model and seed)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from interp.models.loading import load
    from interp.runs.paths import cache_dir

    key = hashlib.sha256(f"{model.model_id}\0{seed}".encode()).hexdigest()[:12]
    out = cache_dir() / "models" / f"random-weights-{key}"
    if not (out / "config.json").exists():
        cfg = AutoConfig.from_pretrained(model.path)
        torch.manual_seed(seed)
        hf = AutoModelForCausalLM.from_config(cfg)
        tmp = out.with_name(out.name + f".tmp-{seed}")
        hf.save_pretrained(str(tmp))
        model.tokenizer.save_pretrained(str(tmp))
        tmp.rename(out)
    return load(str(out), device=model.device, dtype=model.dtype)


def run_probe(
    model: Model,
    dataset: ProbeDataset,
    config: ProbeConfig | None = None,
    *,
    progress: bool | None = None,
    **settings: Any,
) -> ProbeResult:
    """Fit and evaluate probes at ``config.layers`` with every baseline, over seeds.

    Settings come from ``config`` or, equally, from keyword arguments named as the
    fields of :class:`ProbeConfig` (``run_probe(model, ds, layers=[6], seeds=3)``), not
    both. One capture pass reads all layers. Returns a :class:`ProbeResult` carrying its
    manifest; the probe directions kept there come from a final fit on all examples (for
    artifacts and ablation), not from the held-out runs.
    """
    config = ProbeConfig.resolve(config, settings)
    layer_list = model.parse_layers(config.layers)
    position, batch_size = config.position, config.batch_size
    acts = capture(model, dataset.texts, layers=layer_list, positions=position,
                   batch_size=batch_size, progress=progress)
    rand_acts = None
    if config.random_weights:
        with phase("load model"):
            rmodel = random_weights_model(model, seed=config.seed)
        rand_acts = capture(rmodel, dataset.texts, layers=layer_list, positions=position,
                            batch_size=batch_size, progress=progress)
    with phase("fit probes"):
        result = _fit_all(model, dataset, config, layer_list, acts, rand_acts, progress)
    result.manifest = model_manifest(model, seed=config.seed, config=result.config.to_dict(),
                                     dataset_hash=result.config.dataset_hash)
    return result


def _fit_all(model: Model, dataset: ProbeDataset, config: ProbeConfig, layer_list: list[int],
             acts: Any, rand_acts: Any, progress: bool | None) -> ProbeResult:
    """Every probe and baseline of :func:`run_probe`, after the captures."""
    seeds, test_size, C = config.seeds, config.test_size, config.C
    y = dataset.labels
    keys = [SEED_STRIDE * config.seed + s for s in range(seeds)]  # split s's random key
    bow = _bow_features(dataset.texts)
    splits = [split_indices(y, dataset.groups, k, test_size) for k in keys]
    n_train = int(np.mean([len(tr) for tr, _ in splits]))
    n_test = int(np.mean([len(te) for _, te in splits]))
    warns = []
    if n_train < 2 * model.d_model:
        warns.append(
            f"only ~{n_train} training examples for d_model {model.d_model}: logistic "
            "regression can fit noise at this size; trust held-out numbers and baselines"
        )
    # layer-independent baselines, per seed
    shuffles = [np.random.default_rng(k).permutation(len(tr))
                for k, (tr, _) in zip(keys, splits, strict=True)]
    if config.solver == "torch":
        bow_acc = _bow_accuracies_torch(bow, y, splits, C)
    else:
        bow_acc = [fit_probe(bow, y, tr, te, C=C, seed=k).test_accuracy
                   for k, (tr, te) in zip(keys, splits, strict=True)]
    per_seed_common = [{
        "bow_accuracy": bow_acc[s],
        "majority_rate": float(max(np.mean(y[te]), 1 - np.mean(y[te]))),
    } for s, (_, te) in enumerate(splits)]
    ctrl_types = control_task_types(dataset.texts, dataset.groups)
    ctrl_y = [None if ctrl_types is None else control_task_labels(ctrl_types, k)
              for k in keys]
    ctrl_y = [cy if cy is not None and len(set(cy[tr].tolist())) == 2 else None
              for cy, (tr, _) in zip(ctrl_y, splits, strict=True)]
    stats: list[LayerStats] = []
    split = "group" if dataset.groups else "stratified"
    result = ProbeResult(
        replace(config, layers=layer_list, dataset=dataset.source,
                dataset_hash=dataset_hash(dataset), split=split),
        model.model_id, len(dataset), n_train, n_test, stats, warnings=warns,
        dataset=DatasetSummary(dataset.source, len(dataset), dataset.label_names, split,
                               len(set(dataset.groups)) if dataset.groups else None),
    )
    setup = _Setup(y, splits, shuffles, ctrl_y, per_seed_common, C)
    bar = make_progress(enabled=progress, auto=len(layer_list) > 1)
    with bar:
        task = bar.add_task("fitting probes", total=len(layer_list), info="")
        for chunk in _layer_chunks(layer_list, len(y), model.d_model, config.solver):
            if config.solver == "torch":
                fitted = _fit_layers_torch(setup, acts, rand_acts, chunk)
            else:
                fitted = [_fit_layer_sklearn(setup, acts, rand_acts, layer) for layer in chunk]
            for layer, (vals, fin) in zip(chunk, fitted, strict=True):
                x = acts[layer].float().numpy()
                stats.append(LayerStats(layer, vals))
                # final probe on all data: the direction in residual-stream units
                result.directions[layer] = fin.direction.astype(np.float32)
                result.biases[layer] = fin.bias
                result.scaler_mean[layer] = fin.mean.astype(np.float32)
                result.scaler_scale[layer] = fin.scale.astype(np.float32)
                result.mean_differences[layer] = (
                    x[y == 1].mean(0) - x[y == 0].mean(0)).astype(np.float32)
            best = max(stats, key=lambda st: st.mean("test_accuracy"))
            bar.update(task, advance=len(chunk), info=f"best L{best.layer} "
                       f"{best.mean('test_accuracy'):.2f}")
    result.warnings.extend(probe_traps(
        result.to_dict(), dataset.texts, y, dataset.columns, splits[0], dataset.group_column,
        lambda groups: split_indices(y, groups, keys[0], test_size)))
    return result


@dataclass
class _Setup:
    """What every layer's fits share: labels, splits, shuffles, control labels."""

    y: np.ndarray
    splits: list[tuple[np.ndarray, np.ndarray]]
    shuffles: list[np.ndarray]
    ctrl_y: list[np.ndarray | None]  # None where the seed has no two-class control task
    common: list[dict[str, float]]
    C: float


@dataclass
class _Final:
    """The probe fitted on all examples, in residual-stream units."""

    direction: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray


def _layer_chunks(layers: list[int], n: int, d: int, solver: str) -> list[list[int]]:
    """Layers fitted together: float64 copies of ``chunk × n × d`` stay near 64 MB."""
    if solver != "torch":
        return [[layer] for layer in layers]
    size = max(1, 2**23 // max(1, n * d))
    return [layers[i:i + size] for i in range(0, len(layers), size)]


def _fit_layer_sklearn(
    st: _Setup, acts: Any, rand_acts: Any, layer: int
) -> tuple[dict[str, list[float]], _Final]:
    """One layer, one scikit-learn fit per seed and probe (the reference path)."""
    y, C = st.y, st.C
    x = acts[layer].float().numpy()
    vals: dict[str, list[float]] = {k: [] for k in METRICS}
    for s, (tr, te) in enumerate(st.splits):
        main = fit_probe(x, y, tr, te, C=C, seed=s)
        shuf = fit_probe(x, y, tr, te, C=C, seed=s, y_train=y[tr][st.shuffles[s]])
        cy = st.ctrl_y[s]
        ctrl = fit_probe(x, cy, tr, te, C=C, seed=s) if cy is not None else None
        vals["test_accuracy"].append(main.test_accuracy)
        vals["test_auroc"].append(main.test_auroc)
        vals["train_accuracy"].append(main.train_accuracy)
        vals["shuffled_accuracy"].append(shuf.test_accuracy)
        vals["control_task_accuracy"].append(ctrl.test_accuracy if ctrl else math.nan)
        vals["control_task_train_accuracy"].append(ctrl.train_accuracy if ctrl else math.nan)
        vals["bow_accuracy"].append(st.common[s]["bow_accuracy"])
        vals["majority_rate"].append(st.common[s]["majority_rate"])
        if rand_acts is not None:
            xr = rand_acts[layer].float().numpy()
            vals["random_weights_accuracy"].append(
                fit_probe(xr, y, tr, te, C=C, seed=s).test_accuracy)
        else:
            vals["random_weights_accuracy"].append(math.nan)
    full = np.arange(len(y))
    fin = fit_probe(x, y, full, full, C=C)
    coef = fin.model.coef_[0] / fin.scaler.scale_
    bias = float(fin.model.intercept_[0] - (coef * fin.scaler.mean_).sum())
    return vals, _Final(coef, bias, fin.scaler.mean_, fin.scaler.scale_)


def _accuracy(decision: np.ndarray, labels: np.ndarray) -> float:
    """scikit-learn's ``predict``: class 1 where the decision function is > 0."""
    return float(((decision > 0).astype(np.int64) == labels).mean())


def _bow_accuracies_torch(
    bow: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]], C: float
) -> list[float]:
    """The bag-of-words control of every seed, as one batched fit."""
    train = np.zeros((1, len(splits), len(y)), dtype=bool)
    for s, (tr, _) in enumerate(splits):
        train[0, s, tr] = True
    labels = torch.from_numpy(np.broadcast_to(y, train.shape).copy())
    fit = fit_logistic(torch.from_numpy(bow)[None], labels, torch.from_numpy(train), C=C)
    dec = fit.decision[0].numpy()
    return [_accuracy(dec[s, te], y[te]) for s, (_, te) in enumerate(splits)]


def _fit_layers_torch(
    st: _Setup, acts: Any, rand_acts: Any, layers: list[int]
) -> list[tuple[dict[str, list[float]], _Final]]:
    """Every probe of ``layers`` as batched problems: per layer, each seed's task,
    shuffled-label and control-task probe and the final all-data probe share the
    activations (one group); the random-weights probes are a second batch."""
    y, n = st.y, len(st.y)
    # problems of a layer: (kind, seed, labels, train rows); the same for every layer
    kinds: list[tuple[str, int, np.ndarray, np.ndarray]] = []
    for s, (tr, _) in enumerate(st.splits):
        mask = np.zeros(n, dtype=bool)
        mask[tr] = True
        shuffled = y.copy()
        shuffled[tr] = y[tr][st.shuffles[s]]
        kinds.append(("task", s, y, mask))
        kinds.append(("shuffled", s, shuffled, mask))
        cy = st.ctrl_y[s]
        if cy is not None:
            kinds.append(("control", s, cy, mask))
    kinds.append(("final", -1, y, np.ones(n, dtype=bool)))
    labels = torch.from_numpy(np.stack([k[2] for k in kinds]))
    train = torch.from_numpy(np.stack([k[3] for k in kinds]))
    g = len(layers)
    x = torch.stack([acts[layer].float() for layer in layers])
    fit = fit_logistic(x, labels.expand(g, -1, -1), train.expand(g, -1, -1), C=st.C)
    dec = fit.decision.numpy()
    w_raw, b_raw = fit.raw_coef()
    rand_dec = None
    if rand_acts is not None:
        rtrain = train[[i for i, k in enumerate(kinds) if k[0] == "task"]]
        xr = torch.stack([rand_acts[layer].float() for layer in layers])
        rlab = torch.from_numpy(y).expand(g, rtrain.shape[0], -1)
        rand_dec = fit_logistic(xr, rlab, rtrain.expand(g, -1, -1), C=st.C).decision.numpy()
    out = []
    for i in range(g):
        vals: dict[str, list[float]] = {k: [] for k in METRICS}
        at = {(k[0], k[1]): j for j, k in enumerate(kinds)}
        for s, (tr, te) in enumerate(st.splits):
            d_task = dec[i, at["task", s]]
            vals["test_accuracy"].append(_accuracy(d_task[te], y[te]))
            vals["test_auroc"].append(float(roc_auc_score(y[te], d_task[te])))
            vals["train_accuracy"].append(_accuracy(d_task[tr], y[tr]))
            d_shuf = dec[i, at["shuffled", s]]
            vals["shuffled_accuracy"].append(_accuracy(d_shuf[te], y[te]))
            cy = st.ctrl_y[s]
            if cy is not None:
                d_ctrl = dec[i, at["control", s]]
                vals["control_task_accuracy"].append(_accuracy(d_ctrl[te], cy[te]))
                vals["control_task_train_accuracy"].append(_accuracy(d_ctrl[tr], cy[tr]))
            else:
                vals["control_task_accuracy"].append(math.nan)
                vals["control_task_train_accuracy"].append(math.nan)
            vals["bow_accuracy"].append(st.common[s]["bow_accuracy"])
            vals["majority_rate"].append(st.common[s]["majority_rate"])
            vals["random_weights_accuracy"].append(
                _accuracy(rand_dec[i, s, te], y[te]) if rand_dec is not None else math.nan)
        j = at["final", -1]
        out.append((vals, _Final(w_raw[i, j].numpy(), float(b_raw[i, j]),
                                 fit.mean[i, j].numpy(), fit.scale[i, j].numpy())))
    return out


def save_probe(result: ProbeResult, layer: int, path: str | Path, manifest: dict) -> Path:
    """Save the probe at ``layer`` as an artifact (direction, bias, scaler, mean diff).

    ``direction`` is in residual-stream units: ``logit = h · direction + bias``.
    """
    from interp.runs.artifacts import save_artifact

    st = result.stats(layer)
    tensors = {
        "direction": torch.from_numpy(result.directions[layer]),
        "bias": torch.tensor([result.biases[layer]], dtype=torch.float32),
        "scaler_mean": torch.from_numpy(result.scaler_mean[layer]),
        "scaler_scale": torch.from_numpy(result.scaler_scale[layer]),
        "mean_difference": torch.from_numpy(result.mean_differences[layer]),
    }
    config = {**result.config.to_dict(), "layer": layer,
              "test_accuracy_mean": st.mean("test_accuracy"),
              "test_accuracy_std": st.std("test_accuracy")}
    return save_artifact(
        path, tensors, kind="probe", config=config, model_id=result.model_id,
        d_model=int(result.directions[layer].shape[0]),
        hook_point=f"blocks.{layer}.hook_resid_post", manifest=manifest,
    )
