"""``run_das``: distributed alignment search over layers, scored against controls that can fail.

For each layer the base and source runs' residual streams are captured once. The pairs are
**cross-fitted**: split into ``folds`` (whole templates when the task has a ``template``
column), each fold scored by subspaces trained on the other folds, so every pair is held
out exactly once and the intervals can resample templates, not pairs
(:func:`interp.stats.cluster_bootstrap_ci`; pairs of one template are not independent).

Beside DAS's IIA at each layer:

* a random direction of the same dimension, the full interchange (exact patching of the
  residual stream at the position: the ceiling) and no interchange (the floor);
* the **control task by type** (Hewitt & Liang 2019): every pair's target is a fixed
  seeded random function of its *type*, the source's deciding tokens (the tokens where the
  source prompt differs from the base: the name, the country), +1 "give the source's
  label" or −1 "keep the base's". A pair's control label is therefore shared by every pair
  of its type, so a subspace with room enough to memorise types carries its labels to
  held-out pairs of a type it saw in training, and beats the control's chance (the
  majority label's share); one that only carries the variable cannot. The control is
  scored on the held-out pairs whose type occurs in their fold's training pairs, and the
  **selectivity** is task IIA − control IIA on those pairs;
* the **subspace-illusion check** (Makelov et al. 2023): DAS's directions projected onto
  the span of the activations' observed variation at the position (the principal
  directions of the training prompts' activations there that explain ``span_variance``
  of their variance) and scored again. A direction whose effect comes from writing into a
  direction the activations never occupy (a dormant direction, moved by the component of
  the swap that varies) loses it there; the gap DAS − restricted, above zero beyond the
  noise, is flagged whether or not DAS beats the full interchange;
* for a binary task (two label tokens in all), a probe of the label at the position (is
  the concept *readable* there?) and the probe's direction and the class-mean difference
  scored as subspaces (is that direction *used*?).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.causal.interchange import (
    interchange_lds,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.causal.pairs import load_counterfactual_task
from interp.causal.results import DASConfig, DASResult, Difference, LayerIIA, Rate
from interp.circuits.tasks import TokenizedTask, tokenize_task
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import run_manifest
from interp.runs.progress import make_progress
from interp.stats.intervals import cluster_bootstrap_ci, wilson

#: A fold: its training and its held-out pair indices.
Fold = tuple[list[int], list[int]]


def rate(success: Float[Tensor, " n"], clusters: Sequence[Hashable] | None = None,
         seed: int = 0) -> Rate:
    """The share of ``success`` (0/1 per pair) with its 95% interval: Wilson's when the
    pairs are independent (``clusters`` None), else a bootstrap over the clusters
    (templates) widened to at least Wilson's, since pairs of one template cannot carry
    more information than independent ones (a template bootstrap of an all-success IIA
    would otherwise be [1, 1])."""
    n = int(success.numel())
    k = float(success.sum())
    if n == 0:
        return Rate(0.0, 0, clusters=None if clusters is None else 0, name="iia")
    wl, wh = wilson(k, n)
    if clusters is None:
        return Rate(k, n, wl, wh, name="iia")
    s = success.double().numpy()
    lo, hi = cluster_bootstrap_ci(lambda idx: float(s[idx].mean()), clusters, seed=seed)
    return Rate(k, n, min(lo, wl), max(hi, wh), len(set(clusters)), "iia")


def difference(a: Float[Tensor, " n"], b: Float[Tensor, " n"],
               clusters: Sequence[Hashable] | None = None, seed: int = 0) -> Difference:
    """mean(a) − mean(b) over the same pairs with its 95% percentile bootstrap interval,
    resampling clusters (templates) or, without them, pairs."""
    n = int(a.numel())
    if n == 0:
        return Difference(float("nan"), [None, None], 0)
    x = (a.double() - b.double()).numpy()
    units: Sequence[Hashable] = list(range(n)) if clusters is None else clusters
    lo, hi = cluster_bootstrap_ci(lambda idx: float(x[idx].mean()), units, seed=seed)
    return Difference(float(x.mean()), [lo, hi], n,
                      None if clusters is None else len(set(clusters)))


def cross_fit_folds(groups: Sequence[str] | None, n: int, folds: int,
                    seed: int) -> tuple[list[Fold], str]:
    """``folds`` (train, held-out) splits that hold out every pair once: whole groups
    (``GroupKFold``; as many folds as groups when there are fewer) when ``groups`` has at
    least two, else a shuffled ``KFold``; and a description of the split."""
    from sklearn.model_selection import GroupKFold, KFold

    idx = np.arange(n)
    n_groups = len(set(groups)) if groups is not None else 0
    if groups is not None and n_groups >= 2:
        k = min(folds, n_groups)
        # GroupKFold balances fold sizes deterministically; shuffling the group labels'
        # order first makes the assignment depend on the seed, as KFold's does
        names = sorted(set(groups))
        order = np.random.default_rng(seed).permutation(len(names))
        relabel = {g: int(order[i]) for i, g in enumerate(names)}
        splits = GroupKFold(n_splits=k).split(idx, groups=[relabel[g] for g in groups])
        how = f"{k} folds by template, {n_groups} templates"
    else:
        k = min(folds, n)
        if k < 2:
            raise InterpError(f"cannot split {n} pair{'s' * (n != 1)} into folds")
        splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(idx)
        how = f"{k} random folds"
    out = [(sorted(int(i) for i in tr), sorted(int(i) for i in te)) for tr, te in splits]
    if any(not tr or not te for tr, te in out):
        raise InterpError(f"cannot split {n} pairs into {k} folds with training pairs in each")
    return out, how


def pair_types(tt: TokenizedTask) -> list[tuple[int, ...]]:
    """Each pair's type for the control task: the source (clean) prompt's token ids where
    it differs from the base (corrupted) prompt, the tokens that decide the pair (a name, a
    country, a sentiment word); the whole source prompt where the two are equal."""
    differ = (tt.clean_ids != tt.corrupted_ids) & tt.attention_mask
    out = []
    for i in range(len(tt)):
        ids = tt.clean_ids[i][differ[i]] if bool(differ[i].any()) else \
            tt.clean_ids[i][tt.attention_mask[i]]
        out.append(tuple(int(t) for t in ids))
    return out


def control_labels(types: Sequence[tuple[int, ...]], seed: int) -> Float[Tensor, " pairs"]:
    """The control task's targets: +1 (give the source's label) or −1 (keep the base's),
    a fixed random function of each pair's type (a seeded hash of its token ids), so
    every pair of one type shares its label."""
    def bit(t: tuple[int, ...]) -> float:
        h = hashlib.sha256(f"{seed}:{','.join(map(str, t))}".encode()).digest()
        return 1.0 if h[0] & 1 else -1.0

    return torch.tensor([bit(t) for t in types], dtype=torch.float32)


def observed_span(
    base: Float[Tensor, "pairs width d"], source: Float[Tensor, "pairs width d"],
    where: Bool[Tensor, "pairs width"], rows: Sequence[int], share: float,
) -> Float[Tensor, "d r"]:
    """An orthonormal basis of the span the activations at the position vary in: the
    principal directions of the base and source runs' activations there (every token of
    the position, pairs ``rows``), centred, that together explain ``share`` of their
    variance (Makelov et al.'s "observed variation": a direction outside it is dormant)."""
    idx = torch.as_tensor(list(rows), dtype=torch.long)
    m = where[idx]
    x = torch.cat([base[idx][m], source[idx][m]]).double()
    x = x - x.mean(0, keepdim=True)
    _, s, vh = torch.linalg.svd(x, full_matrices=False)
    var = s ** 2
    total = float(var.sum())
    if total <= 0:
        return torch.zeros(x.shape[1], 0)
    cum = torch.cumsum(var, 0) / total
    r = int(torch.searchsorted(cum, torch.tensor([share], dtype=cum.dtype)).item()) + 1
    return vh[:min(r, vh.shape[0])].T.float()


def restrict_to_span(basis: Float[Tensor, "d k"], span: Float[Tensor, "d r"],
                     ) -> tuple[Float[Tensor, "d k2"], float]:
    """``basis`` projected onto ``span`` and orthonormalised (directions with nothing in
    the span are dropped), and the share of ``basis``'s squared norm inside the span."""
    proj = span @ (span.T @ basis)
    share = float((proj ** 2).sum() / (basis ** 2).sum().clamp_min(1e-30))
    keep = proj.norm(dim=0) > 1e-6
    if not bool(keep.any()):
        return torch.zeros(basis.shape[0], 1), share
    q, _ = torch.linalg.qr(proj[:, keep].double())
    return q.float(), share


def concept_directions(
    tt: TokenizedTask, base: Tensor, source: Tensor, where: Tensor, train: list[int],
    test: list[int], seed: int,
) -> tuple[Tensor, Tensor, Tensor] | None:
    """For a binary task (two label tokens in all: he/she, good/bad), a probe of the
    prompt's own label on the residual stream at the position (mean over its tokens; the
    base and source prompt of every training pair, L2 logistic regression as
    :func:`interp.probing.probes.fit_probe` fits it): whether it reads each held-out
    prompt right (the base prompts of ``test``, then their source prompts), its direction
    (the weights mapped back from the standardised space) and the class-mean difference
    on the training prompts, each as a unit ``d_model × 1`` basis. ``None`` when the task
    has more than two labels."""
    from interp.probing.probes import fit_probe

    ids = sorted(set(tt.answer.tolist()) | set(tt.wrong.tolist()))
    if len(ids) != 2:
        return None
    w = where[..., None].to(base.dtype)
    count = w.sum(1).clamp_min(1)
    xb, xs = (base * w).sum(1) / count, (source * w).sum(1) / count
    x = torch.cat([xb, xs]).double().cpu().numpy()
    y = torch.cat([tt.wrong, tt.answer]).eq(ids[1]).long().cpu().numpy()
    n = len(tt)
    rows_train = np.array(train + [i + n for i in train])
    rows_test = np.array(test + [i + n for i in test])
    fit = fit_probe(x, y, rows_train, rows_test, seed=seed)
    right = fit.model.predict(fit.scaler.transform(x[rows_test])) == y[rows_test]
    probe = torch.as_tensor(fit.model.coef_[0] / fit.scaler.scale_, dtype=torch.float32)
    xt, yt = torch.as_tensor(x[rows_train]), torch.as_tensor(y[rows_train])
    diff = (xt[yt == 1].mean(0) - xt[yt == 0].mean(0)).float()
    return (torch.as_tensor(right, dtype=torch.float32), (probe / probe.norm())[:, None],
            (diff / diff.norm())[:, None])


#: A named subspace to score beside DAS: ``(layer, base, source, where, train)`` → an
#: orthonormal basis ``[d_model, k]`` (chosen from the training pairs only), or ``None``
#: where it does not apply (an SAE's latents exist at its own layer only)
SubspaceFn = Callable[[int, Tensor, Tensor, Tensor, list[int]], Tensor | None]


class _Outcomes:
    """Per-pair 0/1 outcomes of one subspace, filled fold by fold (NaN: not scored)."""

    def __init__(self, n: int) -> None:
        self.values = torch.full((n,), float("nan"))

    def put(self, idx: Sequence[int], success: Tensor) -> None:
        if len(idx):
            self.values[torch.as_tensor(list(idx), dtype=torch.long)] = success.float()

    def scored(self) -> Tensor:
        return ~torch.isnan(self.values)


def run_das(model: Model, config: DASConfig | None = None, *, progress: bool | None = None,
            subspaces: Mapping[str, SubspaceFn] | None = None, **settings: Any) -> DASResult:
    """Run distributed alignment search (see the module docstring).

    Settings come from ``config`` or, equally, keyword arguments named as the fields of
    :class:`DASConfig`, not both. The result's config holds the resolved layer list.
    ``subspaces`` adds named subspaces scored like DAS on the held-out pairs at each
    layer where they apply (:func:`saes.features.subspace.latent_subspace`: an SAE's latents).
    """
    config = DASConfig.resolve(config, settings)
    layers = model.parse_layers(config.layers)
    config = config.replace(layers=layers)
    if config.dim >= model.d_model:
        raise InterpError(f"--dim {config.dim} must be below d_model ({model.d_model})")
    task = load_counterfactual_task(config.task, model, config.limit)
    tt = tokenize_task(model, task)
    where = position_mask(tt, config.position)
    n = len(tt)
    groups = task.groups("template") if "template" in task.column_names() else None
    folds, how = cross_fit_folds(groups, n, config.folds, config.seed)
    clusters: list[Hashable] | None = None
    if groups is not None and len(set(groups)) >= 2:
        clusters = list(groups)
    types = pair_types(tt)
    control = control_labels(types, config.seed)
    d = model.d_model
    out: list[LayerIIA] = []
    per_fold = config.seeds + int(config.control)
    with make_progress(enabled=progress) as bar:
        job = bar.add_task("DAS", total=len(layers) * len(folds) * per_fold, info="")
        for layer in layers:
            t0 = time.perf_counter()
            base, source = residuals(model, tt, layer, config.batch_size)

            def success(basis: Tensor, idx: Sequence[int], lab: Tensor | None = None, *,
                        layer: int = layer, base: Tensor = base,
                        source: Tensor = source) -> Tensor:
                ld = interchange_lds(model, tt, idx, layer, base, source, where, basis,
                                     config.batch_size)
                want = torch.ones_like(ld) if lab is None else lab[list(idx)]
                return (want * ld > 0).float()

            seeds = [_Outcomes(n) for _ in range(config.seeds)]
            in_span, ctrl = _Outcomes(n), _Outcomes(n)
            probe_right = [_Outcomes(n), _Outcomes(n)]  # base prompts, source prompts
            probe_dir, mean_diff = _Outcomes(n), _Outcomes(n)
            extra: dict[str, _Outcomes] = {}
            shares: list[float] = []
            dims: list[int] = []
            binary = True
            for f, (train, test) in enumerate(folds):
                for s in range(config.seeds):
                    bar.update(job, info=f"layer {layer}, fold {f + 1}, seed {s}")
                    basis, _ = train_das(model, tt, train, layer, base, source, where,
                                         dim=config.dim, steps=config.steps, lr=config.lr,
                                         batch_size=config.batch_size,
                                         seed=config.seed + s + 1000 * f)
                    seeds[s].put(test, success(basis, test))
                    if s == 0:
                        span = observed_span(base, source, where, train,
                                             config.span_variance)
                        restricted, share = restrict_to_span(basis, span)
                        in_span.put(test, success(restricted, test))
                        shares.append(share)
                        dims.append(int(span.shape[1]))
                    bar.advance(job)
                concept = concept_directions(tt, base, source, where, train, test,
                                             config.seed)
                if concept is None:
                    binary = False
                else:
                    right, probe, diff = concept
                    probe_right[0].put(test, right[:len(test)])
                    probe_right[1].put(test, right[len(test):])
                    probe_dir.put(test, success(probe, test))
                    mean_diff.put(test, success(diff, test))
                if config.control:
                    bar.update(job, info=f"layer {layer}, fold {f + 1}, control task")
                    seen = {types[i] for i in train}
                    scored = [i for i in test if types[i] in seen]
                    if scored:
                        cb, _ = train_das(model, tt, train, layer, base, source, where,
                                          dim=config.dim, steps=config.steps, lr=config.lr,
                                          batch_size=config.batch_size,
                                          seed=config.seed + 1000 * f, targets=control)
                        ctrl.put(scored, success(cb, scored, control))
                    bar.advance(job)
                for name, fn in (subspaces or {}).items():
                    sub = fn(layer, base, source, where, list(train))
                    if sub is not None:
                        extra.setdefault(name, _Outcomes(n)).put(test, success(sub, test))
            out.append(_layer(layer, config, seeds, in_span, ctrl, control, types,
                              probe_right if binary else None, probe_dir, mean_diff, extra,
                              shares, dims, clusters,
                              random=success(random_basis(d, config.dim,
                                                          config.seed + 7919 + layer),
                                             range(n)),
                              full=success(torch.eye(d), range(n)),
                              none=success(torch.zeros(d, 1), range(n)),
                              seconds=time.perf_counter() - t0))
    result = DASResult(
        config=config, task=task.name, task_sha256=task.sha256, position=config.position,
        n_pairs=n, split=how, n_clusters=None if clusters is None else len(set(clusters)),
        layers=out, model_id=model.model_id,
        manifest=run_manifest(model_id=model.model_id, seed=config.seed,
                              dataset_hash=task.sha256, config=config.to_dict()))
    result.add_warnings()
    return result


def _layer(layer: int, config: DASConfig, seeds: list[_Outcomes], in_span: _Outcomes,
           ctrl: _Outcomes, control: Tensor, types: list[tuple[int, ...]],
           probe_right: list[_Outcomes] | None, probe_dir: _Outcomes, mean_diff: _Outcomes,
           extra: dict[str, _Outcomes], shares: list[float], dims: list[int],
           clusters: list[Hashable] | None, *, random: Tensor, full: Tensor, none: Tensor,
           seconds: float) -> LayerIIA:
    """One layer's rates and differences from its per-pair outcomes."""
    seed = config.seed

    def clusters_at(mask: Tensor) -> list[Hashable] | None:
        if clusters is None:
            return None
        return [c for c, k in zip(clusters, mask.tolist(), strict=True) if k]

    def of(values: Tensor, mask: Tensor | None = None) -> Rate:
        m = torch.ones_like(values, dtype=torch.bool) if mask is None else mask
        return rate(values[m], clusters_at(m), seed)

    def diff(a: Tensor, b: Tensor, mask: Tensor) -> Difference:
        return difference(a[mask], b[mask], clusters_at(mask), seed)

    das = seeds[0].values
    ctrl_rate = chance = sel = None
    n_types = None
    if config.control and bool(ctrl.scored().any()):
        m = ctrl.scored()
        ctrl_rate = of(ctrl.values, m)
        plus = float((control[m] > 0).float().mean())
        chance = max(plus, 1.0 - plus)
        n_types = len({t for t, k in zip(types, m.tolist(), strict=True) if k})
        sel = diff(das, ctrl.values, m)
    probe_acc = None
    if probe_right is not None:
        both = torch.cat([probe_right[0].values, probe_right[1].values])
        cl2 = None if clusters is None else list(clusters) + list(clusters)
        probe_acc = rate(both, cl2, seed)
    every = torch.ones_like(das, dtype=torch.bool)
    return LayerIIA(
        layer=layer, das=of(das),
        das_seeds=[float(o.values.sum()) / len(o.values) for o in seeds],
        random=of(random), full=of(full), none=of(none), control=ctrl_rate,
        seconds=seconds, control_chance=chance, control_types=n_types, selectivity=sel,
        in_span=of(in_span.values), span_gap=diff(das, in_span.values, every),
        span_share=float(np.mean(shares)) if shares else None,
        span_dims=float(np.mean(dims)) if dims else None,
        probe_accuracy=probe_acc,
        probe_direction=of(probe_dir.values) if probe_right is not None else None,
        mean_difference=of(mean_diff.values) if probe_right is not None else None,
        subspaces={k: of(o.values, o.scored()) for k, o in extra.items()})
