"""``run_patch``: one patching experiment from a task to a :class:`PatchResult`.

Reads and tokenizes the pairs, measures the clean and corrupted runs, leaves out the
pairs whose clean − corrupted gap is too small to normalise, then runs the chosen
methods over the family's components (exact patching, AtP, AtP*), compares each
approximation with exact patching when both ran, adds direct logit attribution on
the clean runs and the attention patterns of the top heads.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from interp.circuits.agreement import compare, split_half
from interp.circuits.attention import run_attention
from interp.circuits.attribution import atp, atp_star
from interp.circuits.dla import DLAUnsupported, direct_logit_attribution
from interp.circuits.groups import group_effects
from interp.circuits.pairs import prepare_pairs
from interp.circuits.patching import EMBED, components, exact_patch
from interp.circuits.results import (
    AttentionConfig,
    Effects,
    PatchConfig,
    PatchResult,
)
from interp.models.loading import Model
from interp.runs.manifest import run_manifest


def _effects(
    method: str,
    raw: Float[Tensor, "pairs comps"],
    shape: tuple[int, ...],
    clean: Tensor,
    corr: Tensor,
    seconds: float,
) -> Effects:
    gap = (clean - corr)[:, None]
    norm = (raw - corr[:, None]) / gap
    n = raw.shape[0]
    return Effects(method, norm.reshape(n, *shape), raw.reshape(n, *shape), seconds)


def run_patch(model: Model, config: PatchConfig | None = None, *, progress: bool | None = None,
              **settings: Any) -> PatchResult:
    """Run one patching experiment (see the module docstring).

    Settings come from ``config`` or, equally, from keyword arguments named as the fields
    of :class:`PatchConfig` (``run_patch(model, task="ioi", family="heads")``), not both.
    The result's config holds the resolved layer list; the result carries its manifest.
    """
    config = PatchConfig.resolve(config, settings)
    layers = model.parse_layers(config.layers)
    config = config.replace(layers=layers)
    pairs = prepare_pairs(model, config.task, limit=config.limit, min_gap=config.min_gap,
                          group_by=config.group_by, batch_size=config.batch_size)
    task, column, tt, keep = pairs.task, pairs.column, pairs.tokens, pairs.keep
    clean, corr = pairs.clean, pairs.corrupted
    bs = config.batch_size
    n_heads = int(model.bridge.cfg.n_heads)
    heads_axis = config.family == "heads"
    comps = components(config.family, layers, n_heads, len(tt.positions), config.per_position)
    if heads_axis:
        shape = (len(layers), n_heads, len(tt.positions)) if config.per_position else (
            len(layers), n_heads)
    else:
        shape = (len(layers), len(tt.positions))
    denoise = config.direction == "denoise"
    baseline = 0.0 if denoise else 1.0

    exact = approx = star = None
    embed_effect = None
    if config.method in ("exact", "both"):
        t0 = time.perf_counter()
        raw = exact_patch(model, tt, config.family, comps, direction=config.direction,
                          batch_size=bs, progress=progress)
        exact = _effects("exact", raw, shape, clean, corr, time.perf_counter() - t0)
        if config.family == "resid":
            emb = components("resid", [EMBED], n_heads, len(tt.positions), False)
            raw_e = exact_patch(model, tt, "resid", emb, direction=config.direction,
                                batch_size=bs, progress=progress)
            embed_effect = (raw_e - corr[:, None]) / (clean - corr)[:, None]
    base_ld = corr if denoise else clean
    if config.method in ("atp", "both"):
        t0 = time.perf_counter()
        est = atp(model, tt, config.family, comps, direction=config.direction,
                  batch_size=bs, progress=progress)
        approx = _effects("atp", base_ld[:, None] + est, shape, clean, corr,
                          time.perf_counter() - t0)
    if config.method == "atp-star" or (config.method == "both" and heads_axis):
        t0 = time.perf_counter()
        est = atp_star(model, tt, comps, direction=config.direction, batch_size=bs,
                       progress=progress)
        star = _effects("atp-star", base_ld[:, None] + est, shape, clean, corr,
                        time.perf_counter() - t0)
    agreement = []
    if exact is not None:
        for eff in (approx, star):
            if eff is not None:
                agreement.append(compare(exact, eff, baseline, n_boot=config.n_boot,
                                         seed=config.seed))

    dla, dla_skipped = None, None
    if config.dla:
        try:
            dla = direct_logit_attribution(model, tt, batch_size=bs)
        except DLAUnsupported as exc:  # the patching results stand without it
            dla_skipped = str(exc)
    summary = pairs.summary()
    result = PatchResult(
        config=config, task=summary, family=config.family, layers=layers,
        positions=None if heads_axis and not config.per_position else list(tt.positions),
        heads=list(range(n_heads)) if heads_axis else None, baseline=baseline,
        exact=exact, atp=approx, atp_star=star, agreement=agreement,
        embed_effect=embed_effect, dla=dla, dla_skipped=dla_skipped, model_id=model.model_id,
        # run_manifest, not model_manifest: patch's results.json has no "model" facts key
        manifest=run_manifest(model_id=model.model_id, seed=config.seed,
                              dataset_hash=task.sha256, config=config.to_dict()),
    )
    if exact is not None:
        result.split_half = split_half(exact, baseline, result.component_names())
    if column is not None:
        main, labels = result.primary, task.groups(column)
        result.groups = group_effects(
            main.normalised, result.component_names(), [labels[i] for i in keep],
            column=column, method=main.method, baseline=baseline)
        for line in result.groups.warnings():
            result.warn(line)
    result.attention = top_head_patterns(model, result, task.pairs[keep[0]].clean)
    return result


def top_head_patterns(model: Model, result: PatchResult, prompt: str) -> list:
    """Attention patterns of the result's top heads on ``prompt`` (one pair's clean prompt).

    The top heads come from patching for the ``heads`` family, else from DLA.
    """
    k = result.config.top_heads
    if k <= 0:
        return []
    heads = result.top_heads(k)
    if not heads and result.dla is not None:
        mean = result.dla.heads.mean(0)
        order = torch.argsort(mean.abs().flatten(), descending=True)[:k]
        n_heads = mean.shape[1]
        heads = [(int(i) // n_heads, int(i) % n_heads) for i in order]
    return [run_attention(model, AttentionConfig(prompt=prompt, layer=layer, heads=[head]))
            for layer, head in heads]
