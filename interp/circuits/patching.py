"""Exact activation patching, batched: one row per (pair, component).

For every component of a family, the corrupted prompt runs with that component's
activation replaced by its value in the clean run (``denoise``, the default), or the
clean prompt with the corrupted value (``noise``). Components:

* ``resid``: ``blocks.L.hook_resid_post`` at one position (label) per row; the
  embeddings (``blocks.0.hook_resid_pre``) are patched too, as ``embed_effect``;
* ``attn`` / ``mlp``: ``blocks.L.hook_attn_out`` / ``blocks.L.hook_mlp_out`` per position;
* ``heads``: one head's ``blocks.L.attn.hook_z`` at every position (or per position).

Rows of many pairs and components share a forward pass: the hook at a layer writes
the source values into the rows that patch that layer and leaves the others alone.
Every pair is left-padded to the task's common width, so a row's shapes do not depend
on which other rows share its batch. A pair with more components than the batch is cut
into equal chunks of its components sorted by layer; its chunks share one unpatched
prefix pass, and each runs only from its first patched block on (:func:`exact_patch`).
A run stops after the final norm and reads the answer − wrong logit difference at the
last position, through the two unembedding rows only.

This module is the toolkit's one patching engine: :func:`run_ld` (a pass with hooks),
:func:`ld_from_block` (a pass from a block's residual) and :func:`chunked_lds` (chunks
of rows sharing an unpatched prefix) run exact component patching here, exact path
patching and circuit passes (:mod:`interp.causal.edge_effects`), interchange
interventions and DAS (:mod:`interp.causal.interchange`), and AtP's gradients
(:mod:`interp.circuits.attribution`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models import weights
from interp.models.forward import can_run_from_block, forward, forward_from_block
from interp.models.loading import Model
from interp.runs.progress import make_progress

#: Pseudo-layer of the embeddings (``blocks.0.hook_resid_pre``) in the resid family.
EMBED = -1
FINAL_NORM_HOOK = "ln_final.hook_out"

HookFn = Callable[[Tensor, object], Tensor]


class _Stop(Exception):
    """Raised at the final norm once the last position's vector is stored."""


def family_hook(family: str, layer: int) -> str:
    """TransformerLens hook name of a family's activation at ``layer`` (``-1``: embeddings)."""
    if layer == EMBED:
        return "blocks.0.hook_resid_pre"
    names = {
        "resid": "blocks.{}.hook_resid_post",
        "attn": "blocks.{}.hook_attn_out",
        "mlp": "blocks.{}.hook_mlp_out",
        "heads": "blocks.{}.attn.hook_z",
    }
    try:
        return names[family].format(layer)
    except KeyError:
        raise InterpError(
            f"unknown family {family!r}: use one of resid, attn, mlp, heads"
        ) from None


def ld_direction(
    model: Model, answer: Int[Tensor, " b"], wrong: Int[Tensor, " b"]
) -> Float[Tensor, "b d_model"]:
    """``W_U[answer] - W_U[wrong]``: the LD is its dot with the final norm's output."""
    w = weights.unembedding(model, stored=True)  # a few rows: no float32 copy of W_U
    return (w[answer] - w[wrong]).float()


def run_ld(
    model: Model,
    ids: Int[Tensor, "b width"],
    mask: Bool[Tensor, "b width"],
    direction: Float[Tensor, "b d_model"],
    fwd_hooks: Sequence[tuple[str, HookFn]] = (),
    capture: Sequence[str] = (),
    cache: Any = None,
) -> tuple[Float[Tensor, " b"], dict[str, Tensor]]:
    """One forward to the final norm: the last position's logit difference, and captures.

    ``capture`` names hook points stored unchanged (detached, model dtype). Runs under
    the caller's grad mode, so AtP can differentiate through it. With ``cache`` (a KV
    cache of the first positions, which it extends), ``ids`` are the positions after
    them and ``mask`` covers all of them; the hooks see the new positions only.
    """
    if cache is not None:
        return _ld_pass(model, lambda: forward(model, ids, mask.long(), cache, use_cache=True),
                        direction, fwd_hooks, capture)
    return _ld_pass(model, lambda: forward(model, ids, mask.long()), direction, fwd_hooks,
                    capture)


def ld_from_block(
    model: Model,
    hidden: Float[Tensor, "rows width d_model"],
    block: int,
    mask: Bool[Tensor, "rows width"],
    direction: Float[Tensor, "rows d_model"],
    fwd_hooks: Sequence[tuple[str, HookFn]],
) -> Float[Tensor, " rows"]:
    """:func:`run_ld` for rows whose residual before ``block`` is ``hidden``: only the
    blocks from ``block`` on run (:func:`~interp.models.forward.forward_from_block`)."""
    return _ld_pass(model, lambda: forward_from_block(model, hidden, block, mask.long()),
                    direction, fwd_hooks, ())[0]


def _ld_pass(
    model: Model,
    run: Callable[[], object],
    direction: Float[Tensor, "b d_model"],
    fwd_hooks: Sequence[tuple[str, HookFn]],
    capture: Sequence[str],
) -> tuple[Float[Tensor, " b"], dict[str, Tensor]]:
    """``run`` (a forward) with ``fwd_hooks`` and keepers for ``capture``, stopped at the
    final norm: the last position's logit difference along ``direction``, and captures."""
    store: dict[str, Tensor] = {}
    final: dict[str, Tensor] = {}

    def keeper(name: str) -> HookFn:
        def keep(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            store[name] = t.detach()
            return t

        return keep

    def stop(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
        final["x"] = t[:, -1]
        raise _Stop

    hooks = [*fwd_hooks, *[(n, keeper(n)) for n in capture], (FINAL_NORM_HOOK, stop)]
    with model.bridge.hooks(fwd_hooks=hooks):
        try:
            run()
        except _Stop:
            pass
    missing = [n for n in capture if n not in store]
    if "x" not in final or missing:
        raise InterpError(f"hook point(s) never fired: {', '.join(missing or [FINAL_NORM_HOOK])}")
    return (final["x"].float() * direction).sum(-1), store


@dataclass
class Component:
    """One patchable unit: a layer (``-1`` = embeddings), a head, a position (``-1`` = all)."""

    layer: int
    head: int = -1
    position: int = -1


def components(
    family: str, layers: Sequence[int], n_heads: int, n_positions: int, per_position: bool
) -> list[Component]:
    """Every component of a family, layer-major (the order of the result's axes)."""
    out: list[Component] = []
    for layer in layers:
        if family == "heads":
            for h in range(n_heads):
                if per_position:
                    out += [Component(layer, h, p) for p in range(n_positions)]
                else:
                    out.append(Component(layer, h))
        else:
            out += [Component(layer, -1, p) for p in range(n_positions)]
    return out


def pair_lds(
    model: Model, tt: TokenizedTask, batch_size: int
) -> tuple[Float[Tensor, " pairs"], Float[Tensor, " pairs"]]:
    """The clean and corrupted runs' logit differences, per pair."""
    clean, corr = [], []
    with torch.no_grad():
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            clean.append(run_ld(model, tt.clean_ids[sl], tt.attention_mask[sl], d)[0])
            corr.append(run_ld(model, tt.corrupted_ids[sl], tt.attention_mask[sl], d)[0])
    return torch.cat(clean), torch.cat(corr)


def cache_run(
    model: Model,
    ids: Int[Tensor, "pairs width"],
    tt: TokenizedTask,
    names: Sequence[str],
    batch_size: int,
) -> dict[str, Tensor]:
    """Activations at ``names`` for every pair (no grad), ``[pairs, width, ...]``."""
    parts: dict[str, list[Tensor]] = {n: [] for n in names}
    with torch.no_grad():
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            _, got = run_ld(model, ids[sl], tt.attention_mask[sl], d, capture=names)
            for n in names:
                parts[n].append(got[n])
    return {n: torch.cat(v) for n, v in parts.items()}


def _row_mask(
    family: str,
    comp: Sequence[Component],
    pair_idx: Int[Tensor, " k"],
    tt: TokenizedTask,
    n_heads: int,
) -> Bool[Tensor, "k width ..."]:
    """Which elements of each row's activation the patch replaces."""
    pos = torch.tensor([c.position for c in comp], device=pair_idx.device)
    if (pos >= 0).all():
        where = tt.position_mask[pair_idx, pos]  # [k, width]
    else:
        where = tt.attention_mask[pair_idx]
    if family != "heads":
        return where[..., None]  # broadcast over d_model
    heads = torch.tensor([c.head for c in comp], device=pair_idx.device)
    onehot = torch.nn.functional.one_hot(heads, n_heads).bool()  # [k, H]
    return (where[:, :, None] & onehot[:, None, :])[..., None]  # [k, width, H, 1]


def _patch_hook(
    rows: Tensor, src: Tensor, mask: Tensor
) -> HookFn:
    def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
        t = t.clone()
        t[rows] = torch.where(mask, src.to(t.dtype), t[rows])
        return t

    return hook


def entry_block(layer: int) -> int:
    """The first block a patch at a family's ``layer`` needs to run: the block whose
    output (resid, attn, mlp) or attention (heads) it edits; block 0 for the embeddings."""
    return max(layer, 0)


def prefix_resid(
    model: Model,
    ids: Int[Tensor, "rows width"],
    mask: Bool[Tensor, "rows width"],
    blocks: Sequence[int],
) -> dict[int, Tensor]:
    """``blocks.{b}.hook_resid_pre`` for each of ``blocks`` (all > 0), one unpatched pass
    that stops as the deepest one is stored (under the caller's grad mode)."""
    store: dict[int, Tensor] = {}
    last = max(blocks)

    def keeper(b: int) -> HookFn:
        def keep(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            store[b] = t.detach()
            if b == last:
                raise _Stop
            return t

        return keep

    hooks = [(f"blocks.{b}.hook_resid_pre", keeper(b)) for b in sorted(set(blocks))]
    with model.bridge.hooks(fwd_hooks=hooks):
        try:
            forward(model, ids, mask.long())
        except _Stop:
            pass
    return store


def chunked_lds(
    model: Model,
    ids: Int[Tensor, "rows width"],
    mask: Bool[Tensor, "rows width"],
    direction: Float[Tensor, "rows d_model"],
    starts: Sequence[int],
    hooks_for: Callable[[int], Sequence[tuple[str, HookFn]]],
    *,
    reuse_prefix: bool = True,
) -> Iterator[Float[Tensor, " rows"]]:
    """The logit difference of the same rows patched by each chunk's hooks in turn: the
    patching engine of exact component patching and exact path patching.

    Chunk ``j`` patches with ``hooks_for(j)`` (built when its pass runs, so hooks may read
    what earlier passes left) and edits nothing before block ``starts[j]``. With
    ``reuse_prefix`` (more than one chunk, and a direct path that can start at a block,
    :func:`~interp.models.forward.can_run_from_block`), one unpatched pass stores the
    residual before each chunk's first block and each chunk runs only from there: each
    row's result equals a whole pass of the same rows to the bit (same inputs, same batch
    shape). Without it every chunk runs whole (the reference).
    """
    cut = reuse_prefix and len(starts) > 1 and can_run_from_block(model)
    deep = [s for s in starts if s > 0] if cut else []
    prefix = prefix_resid(model, ids, mask, deep) if deep else {}
    for j, start in enumerate(starts):
        hooks = hooks_for(j)
        if start in prefix:
            yield ld_from_block(model, prefix[start], start, mask, direction, hooks)
        else:
            yield run_ld(model, ids, mask, direction, hooks)[0]


@dataclass
class _Chunk:
    """One patched forward: its rows' pairs and components (``-1``: a padding row that
    patches nothing), and the first block any of its patches needs."""

    pair_idx: Int[Tensor, " rows"]
    comp_idx: Int[Tensor, " rows"]
    start: int


def _chunks(
    comps: Sequence[Component], n_pairs: int, batch_size: int, per_pair: bool
) -> list[list[_Chunk]]:
    """The patched forwards, grouped by the rows that share their unpatched prefix.

    ``per_pair``: each pair's components, sorted by layer, in equal chunks of at most
    ``batch_size`` rows (the last padded to the same count), so every chunk of a pair
    has the same base rows and one prefix pass serves them all. Otherwise rows of many
    pairs in flat batches of ``batch_size``, each its own group (run whole).
    """
    n_comp = len(comps)
    if not per_pair:
        total = n_pairs * n_comp
        out = []
        for s in range(0, total, batch_size):
            flat = torch.arange(s, min(s + batch_size, total))
            out.append([_Chunk(flat // n_comp, flat % n_comp, 0)])
        return out
    k = -(-n_comp // batch_size)
    size = -(-n_comp // k)
    order = sorted(range(n_comp), key=lambda j: entry_block(comps[j].layer))
    groups = []
    for p in range(n_pairs):
        group = []
        for s in range(0, n_comp, size):
            idx = order[s:s + size]
            comp_idx = torch.tensor(idx + [-1] * (size - len(idx)))
            start = min(entry_block(comps[j].layer) for j in idx)
            group.append(_Chunk(torch.full((size,), p), comp_idx, start))
        groups.append(group)
    return groups


def exact_patch(
    model: Model,
    tt: TokenizedTask,
    family: str,
    comps: Sequence[Component],
    *,
    direction: str = "denoise",
    batch_size: int = 32,
    reuse_prefix: bool = True,
    progress: bool | None = None,
) -> Float[Tensor, "pairs components"]:
    """Raw logit difference of every (pair, component) patched run.

    ``denoise`` runs the corrupted prompts with clean activations patched in;
    ``noise`` the clean prompts with corrupted ones. The source run is cached once.

    When a pair has more components than ``batch_size``, its components (sorted by
    layer) are split into equal chunks of at most ``batch_size`` rows. Every row of a
    chunk is the same base prompt until the chunk's first patched block, so with
    ``reuse_prefix`` (and a direct path that can start at a block,
    :func:`~interp.models.forward.can_run_from_block`), one unpatched pass of that
    chunk's shape stores the residual before each chunk's first block, and each chunk
    runs only from there: each row's result equals a whole pass of the same chunk to the
    bit (same inputs, same batch shape), about 1.5x fewer blocks for every head of
    SmolLM2. ``reuse_prefix=False`` runs every chunk whole (the reference). Pairs with
    at most ``batch_size`` components share flat batches, run whole.
    """
    base_ids, src_ids = tt.runs(direction)
    layers = sorted({c.layer for c in comps})
    names = [family_hook(family, layer) for layer in layers]
    cache = cache_run(model, src_ids, tt, names, batch_size)
    by_layer = dict(zip(layers, names, strict=True))
    n_heads = int(model.bridge.cfg.n_heads)
    n_pairs, n_comp = len(tt), len(comps)
    out = torch.empty(n_pairs, n_comp, dtype=torch.float32)
    dev = tt.clean_ids.device
    groups = _chunks(comps, n_pairs, batch_size, per_pair=n_comp > batch_size)

    def hooks_of(chunk: _Chunk) -> list[tuple[str, HookFn]]:
        pair_idx, real = chunk.pair_idx.to(dev), chunk.comp_idx >= 0
        hooks: list[tuple[str, HookFn]] = []
        for layer in layers:
            sel = [j for j in range(len(pair_idx)) if bool(real[j])
                   and comps[int(chunk.comp_idx[j])].layer == layer]
            if not sel:
                continue
            rows = torch.tensor(sel, device=dev)
            crow = [comps[int(chunk.comp_idx[j])] for j in sel]
            mask = _row_mask(family, crow, pair_idx[rows], tt, n_heads)
            src = cache[by_layer[layer]][pair_idx[rows]]
            hooks.append((by_layer[layer], _patch_hook(rows, src, mask.expand_as(src))))
        return hooks

    with torch.no_grad(), make_progress(enabled=progress) as bar:
        task = bar.add_task(f"patching {family}", total=n_pairs * n_comp, info="")
        for group in groups:
            # a group's chunks run the same rows: one pair's (or one flat batch, alone)
            rows0 = group[0].pair_idx.to(dev)
            d = ld_direction(model, tt.answer[rows0], tt.wrong[rows0])
            lds = chunked_lds(model, base_ids[rows0], tt.attention_mask[rows0], d,
                              [c.start for c in group], lambda j, g=group: hooks_of(g[j]),
                              reuse_prefix=reuse_prefix)
            for chunk, ld in zip(group, lds, strict=True):
                keep = (chunk.comp_idx >= 0).nonzero().squeeze(1)
                out[chunk.pair_idx[keep], chunk.comp_idx[keep]] = ld.cpu()[keep]
                bar.advance(task, len(keep))
    return out
