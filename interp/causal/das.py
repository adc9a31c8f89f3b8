"""``run_das``: distributed alignment search over layers, scored against its controls.

For each layer: the base and source runs' residual streams are captured once; DAS
learns a ``dim``-dimensional subspace on the training pairs (once per seed) and is scored
on the held-out pairs, beside a random subspace of the same dimension, the full
interchange (exact patching of the residual stream at the position: the ceiling), no
interchange (the floor), and, with ``control``, DAS trained and scored on the control
task, whose counterfactual labels are drawn at random per pair (source or base label;
held-out IIA there must stay near its chance, the majority label's share). For a binary
task (two label tokens in all), a probe of the label at the position gives its held-out
accuracy (is the concept *readable* there?), and the probe's direction and the
class-mean difference are scored as subspaces too (is that direction *used*?). Pairs are
split by the task's ``template`` column when every pair has one (whole templates held
out), else at random.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.causal.interchange import (
    interchange_lds,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.causal.pairs import load_counterfactual_task
from interp.causal.results import DASConfig, DASResult, LayerIIA, Rate
from interp.circuits.tasks import TokenizedTask, tokenize_task
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import run_manifest
from interp.runs.progress import make_progress
from interp.stats.intervals import wilson_ci


def rate(success: Float[Tensor, " n"]) -> Rate:
    """The share of ``success`` (0/1 per pair) with its Wilson 95% interval."""
    n = int(success.numel())
    k = float(success.sum())
    return Rate(k / n if n else float("nan"), wilson_ci(k, n), n)


def split_pairs(groups: list[str] | None, n: int, test_size: float,
                seed: int) -> tuple[list[int], list[int], str]:
    """Train and held-out pair indices: whole groups held out when ``groups`` is given
    (and has at least two), else a random split; and a description of the split."""
    from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit

    idx = np.arange(n)
    if groups is not None and len(set(groups)) >= 2:
        sp = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=seed)
        train, test = next(sp.split(idx, groups=groups))
        how = f"by template: {len(set(groups[i] for i in test))} of {len(set(groups))} held out"
    else:
        train, test = next(ShuffleSplit(n_splits=1, test_size=test_size,
                                        random_state=seed).split(idx))
        how = "random"
    if len(train) == 0 or len(test) == 0:
        raise InterpError(f"cannot split {n} pairs into train and held-out sets")
    return sorted(int(i) for i in train), sorted(int(i) for i in test), how


def concept_directions(
    tt: TokenizedTask, base: Tensor, source: Tensor, where: Tensor, train: list[int],
    test: list[int], seed: int,
) -> tuple[Rate, Tensor, Tensor] | None:
    """For a binary task (two label tokens in all: he/she, good/bad), a probe of the
    prompt's own label on the residual stream at the position (mean over its tokens; the
    base and source prompt of every training pair, L2 logistic regression as
    :func:`interp.probing.probes.fit_probe` fits it) and its held-out accuracy on both
    prompts of the held-out pairs; its direction (the weights mapped back from the
    standardised space) and the class-mean difference on the training prompts, each as
    a unit ``d_model × 1`` basis. ``None`` when the task has more than two labels."""
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
    k = round(fit.test_accuracy * len(rows_test))
    accuracy = Rate(fit.test_accuracy, wilson_ci(k, len(rows_test)), len(rows_test))
    probe = torch.as_tensor(fit.model.coef_[0] / fit.scaler.scale_, dtype=torch.float32)
    xt, yt = torch.as_tensor(x[rows_train]), torch.as_tensor(y[rows_train])
    diff = (xt[yt == 1].mean(0) - xt[yt == 0].mean(0)).float()
    return (accuracy, (probe / probe.norm())[:, None], (diff / diff.norm())[:, None])


#: A named subspace to score beside DAS: ``(layer, base, source, where, train)`` → an
#: orthonormal basis ``[d_model, k]`` (chosen from the training pairs only), or ``None``
#: where it does not apply (an SAE's latents exist at its own layer only)
SubspaceFn = Callable[[int, Tensor, Tensor, Tensor, list[int]], Tensor | None]


def run_das(model: Model, config: DASConfig | None = None, *, progress: bool | None = None,
            subspaces: Mapping[str, SubspaceFn] | None = None, **settings: Any) -> DASResult:
    """Run distributed alignment search (see the module docstring).

    Settings come from ``config`` or, equally, keyword arguments named as the fields of
    :class:`DASConfig`, not both. The result's config holds the resolved layer list.
    ``subspaces`` adds named subspaces scored like DAS on the held-out pairs at each
    layer where they apply (:func:`saes.subspace.latent_subspace`: an SAE's latents).
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
    train, test, how = split_pairs(groups, n, config.test_size, config.seed)
    g = torch.Generator().manual_seed(config.seed)
    control = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0)  # random labels
    d = model.d_model
    out: list[LayerIIA] = []
    with make_progress(enabled=progress) as bar:
        job = bar.add_task("DAS", total=len(layers) * (config.seeds + int(config.control)),
                           info="")
        for layer in layers:
            t0 = time.perf_counter()
            base, source = residuals(model, tt, layer, config.batch_size)
            def score(basis: Tensor, lab: Tensor | None = None, *, layer: int = layer,
                      base: Tensor = base, source: Tensor = source) -> Rate:
                ld = interchange_lds(model, tt, test, layer, base, source, where, basis,
                                     config.batch_size)
                want = torch.ones_like(ld) if lab is None else lab[test]
                return rate((want * ld > 0).float())

            seeds: list[Rate] = []
            for s in range(config.seeds):
                bar.update(job, info=f"layer {layer}, seed {s}")
                basis, _ = train_das(model, tt, train, layer, base, source, where,
                                     dim=config.dim, steps=config.steps, lr=config.lr,
                                     batch_size=config.batch_size, seed=config.seed + s)
                seeds.append(score(basis))
                bar.advance(job)
            das = seeds[0]
            concept = concept_directions(tt, base, source, where, train, test, config.seed)
            ctrl, chance = None, None
            if config.control:
                bar.update(job, info=f"layer {layer}, control task")
                cb, _ = train_das(model, tt, train, layer, base, source, where,
                                  dim=config.dim, steps=config.steps, lr=config.lr,
                                  batch_size=config.batch_size, seed=config.seed,
                                  targets=control)
                ctrl = score(cb, control)
                plus = float((control[test] > 0).float().mean())
                chance = max(plus, 1.0 - plus)
                bar.advance(job)
            extra = {}
            for name, fn in (subspaces or {}).items():
                basis = fn(layer, base, source, where, list(train))
                if basis is not None:
                    extra[name] = score(basis)
            out.append(LayerIIA(
                layer=layer, das=das, das_seeds=[x.iia for x in seeds],
                random=score(random_basis(d, config.dim, config.seed + 7919 + layer)),
                full=score(torch.eye(d)), none=score(torch.zeros(d, 1)), control=ctrl,
                seconds=time.perf_counter() - t0, control_chance=chance,
                probe_accuracy=concept[0] if concept else None,
                probe_direction=score(concept[1]) if concept else None,
                mean_difference=score(concept[2]) if concept else None, subspaces=extra))
    result = DASResult(
        config=config, task=task.name, task_sha256=task.sha256, position=config.position,
        n_train=len(train), n_test=len(test), split=how, layers=out, model_id=model.model_id,
        manifest=run_manifest(model_id=model.model_id, seed=config.seed,
                              dataset_hash=task.sha256, config=config.to_dict()))
    result.add_warnings()
    return result
