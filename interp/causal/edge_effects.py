"""Edge attribution (eap-clean, eap-corrupted, eap-ig), exact path patching and circuits.

On the graph of :mod:`interp.causal.edge_graph`, with ``base`` the run that is patched and
``source`` the run whose values are patched in (denoising: the corrupted prompt and the
clean one), an edge ``u -> v``'s **exact effect** is the change of the answer − wrong
logit difference (LD) when receiver ``v`` alone reads ``a_u(source)`` in place of
``a_u(base)`` in its input; everything downstream of ``v`` then runs normally. It is run
here as an intervention on ``v``'s input copy: ``x_v + Δ_u`` where ``Δ_u = a_u(source) -
a_u(base)``, passed through ``v``'s own norm and projection (a query head's rows of
``W_Q``, a key/value head's rows of ``W_K`` / ``W_V``, the MLP's input norm, the final
norm for the logits).

Gradient estimators, named by where the receiver's gradient is taken (every one
``Δ_u · ∂LD/∂x_v`` summed over positions; the direction sets only its sign):

* **eap-clean**: the gradient at the clean run: Syed et al. (2023)'s EAP, whose
  score is ``(a_u(corr) − a_u(clean)) · ∂L/∂x_v`` at the clean run (noising);
* **eap-corrupted**: the gradient at the corrupted run: ``hannamw/EAP-IG``'s
  ``EAP-IG-inputs`` with one step;
* **eap-ig** (Hanna et al. 2024, the input-interpolation variant of ``hannamw/EAP-IG``):
  the gradient averaged over the runs whose input embeddings are ``e_corr + (k/m)(e_clean
  − e_corr)``, ``k = 0 .. m-1`` (the reference's points: the corrupted end in, the clean
  end out; one step is eap-corrupted).

The base run's gradient (the corrupted run when denoising, the clean one when noising) makes
the score the derivative of the edge's exact patch. Also:

* **Exact path patching** (:func:`exact_edges`): the intervention above, one row per
  (pair, edge), batched as :func:`interp.circuits.patching.exact_patch` batches
  components: a pair's edges sorted by receiver layer, in chunks that share one unpatched
  prefix pass and run from their first receiver's block. Edges into the logits need no
  forward pass (the final norm of the base's last residual plus ``Δ_u``).
* **Circuit evaluation** (:func:`circuit_lds`): the clean prompt runs with every edge
  outside a set reading its sender's *corrupted* output (``x_v + Σ_{u∉C}(a_u(corr) -
  a_u(now))``): all edges gives the clean run, none the corrupted one.

The receivers' gradients come from adding a zero tensor at each projection's output (and
at the MLP's and the final norm's input) and pulling the gradient back through the
receiver's norm and projection rows, one vector-Jacobian product per layer. The graph
reads the residual stream as the sum of the senders' outputs and the attention output
biases (constant between runs: no sender), per family (:mod:`interp.models.anatomy`):
a block without a norm before a sublayer (OLMo-2) feeds it the stream as it is; where
attention and the MLP run in parallel (GPT-NeoX) a layer's MLP receives nothing from
that layer's heads; where a norm follows attention (Gemma's sandwich, OLMo-2) a head's
output is taken through it at the run's own scale, ``gain ⊙ z_h W_O[h] / scale``, which
keeps the sum exact in every run. :func:`check_additive` verifies the sum on the model
and says so in one line when it fails.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.causal.edge_graph import EdgeGraph, Group, model_graph
from interp.causal.results import EdgeConfig
from interp.circuits.patching import (
    HookFn,
    chunked_lds,
    ld_direction,
    run_ld,
)
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models import weights
from interp.models.forward import forward
from interp.models.loading import Model
from interp.models.unembedding import final_rms_norm, rms_norm, wrapped_module
from interp.runs.progress import make_progress


class EdgesUnsupported(InterpError):
    """The model's residual stream is not the sum of the graph's senders."""


def _caps(graph: EdgeGraph, w: EdgeGraphWeights) -> list[str]:
    names = ["blocks.0.hook_resid_pre", "ln_final.hook_in"]
    for layer in range(graph.n_layers):
        names += [f"blocks.{layer}.hook_resid_pre", _mlp_reads(graph, layer),
                  f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.hook_mlp_out"]
        if w.post_gain[layer] is not None:
            names.append(_post_scale(layer))
    return list(dict.fromkeys(names))


def _mlp_reads(graph: EdgeGraph, layer: int) -> str:
    """The residual stream a layer's MLP reads: after attention, or the block's input where
    attention and the MLP run in parallel."""
    return f"blocks.{layer}.hook_resid_{'pre' if graph.parallel else 'mid'}"


@dataclass
class EdgeGraphWeights:
    """The modules and weights each receiver reads its input through, per layer (read
    once from the bridge's wrapped modules: the same tensors, not copies)."""

    ln1: list[Any]
    ln2: list[Any]
    w_qkv: list[tuple[Tensor, Tensor, Tensor]]  # [H, dh, d], [KV, dh, d], [KV, dh, d]
    w_o: list[Tensor]  # [d, H, dh]
    lnf: Any
    #: Attention's output bias per layer (None without one): constant between runs, so it
    #: is no sender, but the residual stream holds it.
    b_o: list[Tensor | None]
    #: The gain of the RMSNorm after each layer's attention (None without one: pre-norm
    #: blocks); a head's output is ``gain ⊙ z_h W_O[h] / scale``, the scale being the run's.
    post_gain: list[Tensor | None]


def graph_of(model: Model) -> EdgeGraph:
    """The edge graph of ``model``'s shape."""
    a = model.anatomy
    return model_graph(a.n_layers, a.n_heads, a.n_kv_heads, parallel=a.family.parallel)


def graph_weights(model: Model, graph: EdgeGraph) -> EdgeGraphWeights:
    """The norms and projection weights of ``model`` that the graph's receivers read through."""
    d, h, kv = model.d_model, graph.n_heads, graph.n_kv
    dh = int(model.bridge.cfg.d_head)
    ln1, ln2, qkv, wo, bo, post = [], [], [], [], [], []
    for layer, block in enumerate(model.bridge.blocks):
        # a block without a norm before a sublayer (OLMo-2) feeds it the residual as it is
        ln1.append(wrapped_module(block.ln1) if hasattr(block, "ln1") else _identity)
        ln2.append(wrapped_module(block.ln2) if hasattr(block, "ln2") else _identity)
        post.append(_post_gain(model, block, layer))
        a = block.attn
        qkv.append((weights.linear(a.q)[0].reshape(h, dh, d),
                    weights.linear(a.k)[0].reshape(kv, dh, d),
                    weights.linear(a.v)[0].reshape(kv, dh, d)))
        w_o, b_o = weights.attn_out(model, layer)
        wo.append(w_o.reshape(d, h, dh))
        bo.append(b_o)
    return EdgeGraphWeights(ln1, ln2, qkv, wo, wrapped_module(model.bridge.ln_final), bo, post)


def _identity(x: Tensor) -> Tensor:
    return x


def _post_gain(model: Model, block: Any, layer: int) -> Tensor | None:
    """The gain of the RMSNorm after ``layer``'s attention, None where there is none."""
    if not hasattr(block, "ln1_post"):
        return None
    facts = rms_norm(model, block.ln1_post)
    if facts is None:
        raise EdgesUnsupported(f"the norm after layer {layer}'s attention is not an RMSNorm: "
                               "edge attribution cannot split it into its heads' outputs")
    return facts.gain


def head_outputs(
    w: EdgeGraphWeights, layer: int, z: Float[Tensor, "b pos heads d_head"],
    scale: Float[Tensor, "b pos 1"] | None = None,
) -> Float[Tensor, "b pos heads d_model"]:
    """Each head's ``z_h W_O[h]`` at ``layer`` (float32): the heads' sender outputs; where
    a norm follows attention, through it at the run's ``scale`` (its ``hook_scale``)."""
    out = torch.einsum("bphk,dhk->bphd", z.float(), w.w_o[layer].float())
    gain = w.post_gain[layer]
    if gain is None:
        return out
    if scale is None:
        raise ValueError(f"layer {layer}'s heads go through a norm: give its scale")
    return out * (gain / scale.float())[:, :, None, :]


def _post_scale(layer: int) -> str:
    return f"blocks.{layer}.ln1_post.hook_scale"


def sender_outputs(
    graph: EdgeGraph, w: EdgeGraphWeights, caps: dict[str, Tensor]
) -> Float[Tensor, "b pos senders d_model"]:
    """Every sender's output at every position, from a run's captures."""
    first = caps["blocks.0.hook_resid_pre"]
    b, p, d = first.shape
    out = torch.empty(b, p, graph.n_senders, d, dtype=torch.float32, device=first.device)
    out[:, :, 0] = first.float()
    for layer in range(graph.n_layers):
        s = graph.head_sender(layer, 0)
        out[:, :, s:s + graph.n_heads] = head_outputs(
            w, layer, caps[f"blocks.{layer}.attn.hook_z"], caps.get(_post_scale(layer)))
        out[:, :, graph.mlp_sender(layer)] = caps[f"blocks.{layer}.hook_mlp_out"].float()
    return out


def check_additive(graph: EdgeGraph, w: EdgeGraphWeights, caps: dict[str, Tensor],
                   model_id: str) -> None:
    """The residual stream at every receiver equals the sum of its upstream senders'
    outputs (relative error ≤ 1e-3), or a one-line :class:`EdgesUnsupported`."""
    a = sender_outputs(graph, w, caps)
    worst = 0.0
    for g in graph.groups:
        x = _resid_at(graph, g, caps).float()
        biases = [b for layer, b in enumerate(w.b_o)
                  if b is not None and graph.head_sender(layer, 0) < g.upstream]
        held = a[:, :, :g.upstream].sum(2) + sum(biases, torch.zeros(()))
        err = (held - x).abs().max().item()
        worst = max(worst, err / max(x.abs().max().item(), 1e-6))
    if worst > 1e-3:
        raise EdgesUnsupported(
            f"edge attribution needs a residual stream that is the sum of the embeddings' "
            f"and every head's and MLP's outputs (and the attention output biases); "
            f"{model_id}'s differs by {worst:.2g} (relative)")


def _resid_at(graph: EdgeGraph, g: Group, caps: dict[str, Tensor]) -> Tensor:
    """The residual stream a group's receivers read (before their norm)."""
    if g.kind == "logits":
        return caps["ln_final.hook_in"]
    if g.kind == "attn":
        return caps[f"blocks.{g.layer}.hook_resid_pre"]
    return caps[_mlp_reads(graph, g.layer)]


# ------------------------------------------------------------------ receiver-input edits
#: offsets(group) -> (rows, Δ [rows, pos, size, d]) or None: what to add to the group's
#: receivers' input copies in this pass
Offsets = Callable[[Group], tuple[Tensor, Tensor] | None]


def _edit_hooks(
    graph: EdgeGraph, w: EdgeGraphWeights, offsets: Offsets, state: dict[str, Tensor]
) -> list[tuple[str, HookFn]]:
    """Hooks that make each receiver read ``x + Δ`` (through its own norm and projection),
    with ``Δ`` from ``offsets``; ``state`` collects the residual stream each group reads,
    under the names :func:`_resid_at` reads them by (an ``offsets`` may read it too)."""
    hooks: list[tuple[str, HookFn]] = []
    memo: dict[int, tuple[Tensor, Tensor] | None] = {}

    def keep(name: str) -> HookFn:
        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            state[name] = t.detach()
            return t
        return hook

    def attn_edit(g: Group, kind: int) -> HookFn:
        h, kv = graph.n_heads, graph.n_kv
        lo, hi = [(0, h), (h, h + kv), (h + kv, h + 2 * kv)][kind]
        weight, ln = w.w_qkv[g.layer][kind], w.ln1[g.layer]

        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            if kind == 0:
                memo[g.first] = offsets(g)
            got = memo.get(g.first)
            if got is None:
                return t
            rows, delta = got
            x = state[f"blocks.{g.layer}.hook_resid_pre"][rows][:, :, None, :]
            dn = ln(x + delta[:, :, lo:hi].to(x.dtype)) - ln(x)
            add = torch.einsum("kprd,rhd->kprh", dn, weight)
            t = t.clone()
            t[rows] = t[rows] + add.to(t.dtype)
            return t
        return hook

    def mlp_edit(g: Group) -> HookFn:
        ln = w.ln2[g.layer]

        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            got = offsets(g)
            if got is None:
                return t
            rows, delta = got
            x = state[_mlp_reads(graph, g.layer)][rows]
            t = t.clone()
            t[rows] = t[rows] + (ln(x + delta[:, :, 0].to(x.dtype)) - ln(x)).to(t.dtype)
            return t
        return hook

    def logits_edit(g: Group) -> HookFn:
        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            got = offsets(g)
            if got is None:
                return t
            rows, delta = got
            t = t.clone()
            t[rows] = t[rows] + delta[:, :, 0].to(t.dtype)
            return t
        return hook

    for g in graph.groups:
        if g.kind == "attn":
            pre = f"blocks.{g.layer}.hook_resid_pre"
            hooks.append((pre, keep(pre)))
            for i, kind in enumerate("qkv"):
                hooks.append((f"blocks.{g.layer}.attn.hook_{kind}", attn_edit(g, i)))
        elif g.kind == "mlp":
            if not graph.parallel:  # a parallel MLP reads the resid_pre kept above
                mid = f"blocks.{g.layer}.hook_resid_mid"
                hooks.append((mid, keep(mid)))
            hooks.append((f"blocks.{g.layer}.mlp.hook_in", mlp_edit(g)))
        else:
            hooks += [("ln_final.hook_in", keep("ln_final.hook_in")),
                      ("ln_final.hook_in", logits_edit(g))]
    return hooks


# ------------------------------------------------------------------ gradients: EAP, EAP-IG
def _receiver_grads(
    model: Model, graph: EdgeGraph, w: EdgeGraphWeights, ids: Tensor, mask: Tensor, d: Tensor,
    embed: Tensor | None, capture: Sequence[str], prefix: Any = None,
) -> tuple[list[Tensor], dict[str, Tensor]]:
    """``∂LD/∂x_v`` for every receiver, per group ``[b, pos, size, d]``; the run on ``ids``
    (with its input embeddings replaced by ``embed`` when given), and its captures.
    With ``prefix`` (a KV cache of the first positions, copied, not extended), ``ids``
    are the positions after them, and so are the gradients and captures."""
    deltas: dict[str, Tensor] = {}

    def adder(name: str) -> HookFn:
        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            deltas[name] = torch.zeros_like(t, requires_grad=True)
            return t + deltas[name]
        return hook

    hooks: list[tuple[str, HookFn]] = []
    if embed is not None:
        hooks.append(("blocks.0.hook_resid_pre", lambda t, hook: embed.to(t.dtype)))
    names = []
    for layer in range(graph.n_layers):
        names += [f"blocks.{layer}.attn.hook_{k}" for k in "qkv"]
        names.append(f"blocks.{layer}.mlp.hook_in")
    names.append("ln_final.hook_in")
    hooks += [(n, adder(n)) for n in names]
    need = [n for layer in range(graph.n_layers)
            for n in (f"blocks.{layer}.hook_resid_pre", _mlp_reads(graph, layer))]
    cap = list(dict.fromkeys([*need, *capture]))
    with torch.enable_grad():
        ld, caps = run_ld(model, ids, mask, d, hooks, cap, cache=_fresh(prefix))
        order = [n for n in names if n in deltas]
        if len(order) != len(names):
            raise InterpError("edge attribution: a receiver's hook point never fired")
        grads = torch.autograd.grad(ld.sum(), [deltas[n] for n in order], allow_unused=True)
    g = {n: (torch.zeros_like(deltas[n]) if x is None else x.detach())
         for n, x in zip(order, grads, strict=True)}
    vecs, xs, lns = [], [], []
    for grp in graph.groups:
        if grp.kind == "attn":
            xs.append(caps[f"blocks.{grp.layer}.hook_resid_pre"])
            lns.append(w.ln1[grp.layer])
            vecs.append(torch.cat([
                torch.einsum("bphk,hkd->bphd", g[f"blocks.{grp.layer}.attn.hook_{k}"].float(),
                             wt.float())
                for k, wt in zip("qkv", w.w_qkv[grp.layer], strict=True)], 2))
        elif grp.kind == "mlp":
            xs.append(caps[_mlp_reads(graph, grp.layer)])
            lns.append(w.ln2[grp.layer])
            vecs.append(g[f"blocks.{grp.layer}.mlp.hook_in"].float()[:, :, None])
    out = _vjp(lns, xs, vecs)
    out.append(g["ln_final.hook_in"].float()[:, :, None])
    return out, caps


def _fresh(prefix: Any) -> Any:
    """A copy of a prefix KV cache for one pass (each pass extends its own), or None."""
    return None if prefix is None else copy.deepcopy(prefix)


def _prefix_cache(model: Model, ids: Tensor, mask: Tensor) -> Any:
    """The KV cache of ``ids`` (no gradient): the positions every run of a batch shares."""
    with torch.no_grad():
        return forward(model, ids, mask.long(), use_cache=True)[1]


def _vjp(lns: Sequence[Any], xs: Sequence[Tensor], us: Sequence[Tensor]) -> list[Tensor]:
    """``J_ln(x)^T u_r`` for each norm, its input ``x [b, p, d]`` and each receiver's
    ``u_r`` (``u [b, p, R, d]``): one backward pass for all of them."""
    with torch.enable_grad():
        xe = [x.detach()[:, :, None, :].expand_as(u).clone().requires_grad_(True)
              for x, u in zip(xs, us, strict=True)]
        total = torch.stack([(ln(x).float() * u).sum()
                             for ln, x, u in zip(lns, xe, us, strict=True)]).sum()
        grads = torch.autograd.grad(total, xe)
    return [g.float() for g in grads]


def _group_scores(
    graph: EdgeGraph, diff: Float[Tensor, "b pos senders d"], grads: list[Tensor]
) -> Float[Tensor, "b edges"]:
    """``Δ_u · ∂LD/∂x_v`` for every edge, summed over positions.

    One batched matrix product per receiver group on ``[b, senders, pos·d]`` (laid out
    once; a group's upstream senders are a leading slice of it, a view): einsum on the
    4-d tensors copied the senders' block for every group and took 10x longer."""
    b, p, n_s, d = diff.shape
    flat = diff.permute(0, 2, 1, 3).reshape(b, n_s, p * d)
    parts = []
    for g, gr in zip(graph.groups, grads, strict=True):
        r = gr.permute(0, 1, 3, 2).reshape(b, p * d, g.size)
        s = torch.bmm(flat[:, :g.upstream], r)  # [b, up, R]
        parts.append(s.transpose(1, 2).reshape(b, -1))
    return torch.cat(parts, 1)


#: The gradient estimators, named by where the receivers' gradient is taken.
GRADIENT_METHODS = ("eap-clean", "eap-corrupted", "eap-ig")


def edge_attribution(
    model: Model,
    tt: TokenizedTask,
    *,
    steps: int = EdgeConfig.ig_steps,
    direction: str = "denoise",
    methods: Sequence[str] = GRADIENT_METHODS,
    batch_size: int = 8,
    cache_prefix: bool = True,
    progress: bool | None = None,
) -> dict[str, Float[Tensor, "pairs edges"]]:
    """Scores of every edge for every pair, ``Δ_u · g_v`` summed over positions, with
    ``Δ_u = a_u(source) − a_u(base)`` (``direction`` sets only the sign) and ``g_v`` the
    receiver's gradient taken at:

    * ``eap-clean``: the clean run (Syed et al.'s EAP; with ``direction="noise"`` it is
      their score exactly, and the derivative of the exact patch at ε → 0);
    * ``eap-corrupted``: the corrupted run (``hannamw/EAP-IG``'s one-step EAP-IG; with
      ``direction="denoise"`` the derivative of the exact patch);
    * ``eap-ig``: the mean over the runs whose input embeddings are ``e_corr + (k/m)(e_clean
      − e_corr)``, ``k = 0 … m−1`` (``m = steps``): the corrupted end is included, the
      clean end is not, as in the reference; its first point is ``eap-corrupted``.

    Per batch: ``steps`` forward and backward passes along the path from the corrupted run
    (``k = 0``, which also captures the corrupted senders' outputs), and one pass of the
    clean run (with a backward only for ``eap-clean``). ``cache_prefix``: the positions
    before the first one where a batch's prompts differ run once, as a KV cache
    (``False``: every pass runs every position; the reference, equal up to float
    rounding)."""
    if steps < 1:
        raise InterpError(f"steps must be at least 1, got {steps}")
    unknown = [m for m in methods if m not in GRADIENT_METHODS]
    if unknown or not methods:
        raise InterpError(f"unknown gradient method {unknown or methods!r}: use "
                          + ", ".join(GRADIENT_METHODS))
    graph = graph_of(model)
    w = graph_weights(model, graph)
    sign = 1.0 if direction == "denoise" else -1.0  # Δ = source − base
    names = _caps(graph, w)
    along = "eap-corrupted" in methods or "eap-ig" in methods
    out: dict[str, list[Tensor]] = {m: [] for m in methods}
    with make_progress(enabled=progress) as bar:
        task = bar.add_task(f"edge gradients ({', '.join(methods)})", total=len(tt), info="")
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            clean_ids, corr_ids = tt.clean_ids[sl], tt.corrupted_ids[sl]
            mask = tt.attention_mask[sl]
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            # Before the first position where the prompts differ, every sender's output
            # is the same in both runs and along the path (causal attention): those
            # positions add nothing to any score, so they run once, as a KV cache, and
            # every pass runs only the positions after them.
            cut = min(first_difference(clean_ids, corr_ids), clean_ids.shape[1] - 1)
            prefix = (_prefix_cache(model, corr_ids[:, :cut], mask[:, :cut])
                      if cut > 0 and cache_prefix else None)
            if prefix is None:
                cut = 0
            grads_clean = None
            if "eap-clean" in methods:
                grads_clean, clean = _receiver_grads(model, graph, w, clean_ids[:, cut:], mask,
                                                     d, None, names, prefix)
            else:
                with torch.no_grad():
                    _, clean = run_ld(model, clean_ids[:, cut:], mask, d, capture=names,
                                      cache=_fresh(prefix))
            grads0 = None
            if along:
                grads0, corr = _receiver_grads(model, graph, w, corr_ids[:, cut:], mask, d,
                                               None, names, prefix)
            else:
                with torch.no_grad():
                    _, corr = run_ld(model, corr_ids[:, cut:], mask, d, capture=names,
                                     cache=_fresh(prefix))
            if s == 0:
                check_additive(graph, w, corr, model.model_id)
            diff = sign * (sender_outputs(graph, w, clean) - sender_outputs(graph, w, corr))
            diff = diff * mask[:, cut:, None, None].to(diff.dtype)
            if grads_clean is not None:
                out["eap-clean"].append(_group_scores(graph, diff, grads_clean).cpu())
            if grads0 is not None and "eap-corrupted" in methods:
                out["eap-corrupted"].append(_group_scores(graph, diff, grads0).cpu())
            if grads0 is not None and "eap-ig" in methods:
                total = [g.clone() for g in grads0]
                e0, e1 = corr["blocks.0.hook_resid_pre"], clean["blocks.0.hook_resid_pre"]
                for k in range(1, steps):
                    emb = e0 + (k / steps) * (e1 - e0)
                    more, _ = _receiver_grads(model, graph, w, corr_ids[:, cut:], mask, d,
                                              emb, (), prefix)
                    for t, m in zip(total, more, strict=True):
                        t += m
                out["eap-ig"].append(_group_scores(graph, diff, [t / steps for t in total]).cpu())
            bar.advance(task, mask.shape[0])
    return {m: torch.cat(v) for m, v in out.items()}


def first_difference(a: Int[Tensor, "b width"], b: Int[Tensor, "b width"]) -> int:
    """The first column where any row of ``a`` and ``b`` differ (the width if none)."""
    cols = (a != b).any(0).nonzero()
    return int(cols[0]) if len(cols) else a.shape[1]


# ------------------------------------------------------------------ exact path patching
def exact_edges(
    model: Model,
    tt: TokenizedTask,
    edges: Int[Tensor, " k"],
    *,
    direction: str = "denoise",
    batch_size: int = 32,
    reuse_prefix: bool = True,
    freeze_final_norm: bool = False,
    scale: float = 1.0,
    progress: bool | None = None,
) -> Float[Tensor, "pairs k"]:
    """Raw LD of the base run with each edge patched alone, per (pair, edge).

    ``freeze_final_norm``: edges into the logits use the base run's final-norm scale
    (the LD is then linear in the edge's ``Δ``: the difference of the sender's direct
    logit attribution terms between the runs). ``reuse_prefix=False`` runs every chunk
    whole (the reference for the prefix reuse). ``scale`` patches that fraction of each
    ``Δ`` (``(patched(ε) - base) / ε`` tends to the edge's EAP score as ε → 0)."""
    graph = graph_of(model)
    w = graph_weights(model, graph)
    snd, rcv = graph.edge_index
    edges = edges.long().cpu()
    e_snd, e_rcv = snd[edges], rcv[edges]
    layer_of = graph.receiver_layer()[e_rcv]
    groups = {g.first + i: g for g in graph.groups for i in range(g.size)}
    base_ids, src_ids = tt.runs(direction)
    names = _caps(graph, w)
    n, k = len(tt), len(edges)
    out = torch.empty(n, k)
    logit_edges = (layer_of == graph.n_layers).nonzero().squeeze(1)
    inner = (layer_of < graph.n_layers).nonzero().squeeze(1)
    inner = inner[torch.argsort(layer_of[inner], stable=True)]
    n_chunks = -(-len(inner) // batch_size) if len(inner) else 0
    size = -(-len(inner) // n_chunks) if n_chunks else 0
    norm = final_rms_norm(model) if freeze_final_norm else None
    if freeze_final_norm and norm is None:
        raise InterpError("freeze_final_norm needs an RMSNorm final norm")
    with torch.no_grad(), make_progress(enabled=progress) as bar:
        task = bar.add_task("path patching", total=n * k, info="")
        for p in range(n):
            row = slice(p, p + 1)
            mask = tt.attention_mask[row]
            d = ld_direction(model, tt.answer[row], tt.wrong[row])
            ld0, base = run_ld(model, base_ids[row], mask, d, capture=names)
            _, src = run_ld(model, src_ids[row], mask, d, capture=names)
            diff = (sender_outputs(graph, w, src) - sender_outputs(graph, w, base))[0]
            diff = diff * mask[0, :, None, None].to(diff.dtype) * scale  # [pos, S, d]
            if len(logit_edges):
                x = base["ln_final.hook_in"][0, -1].float()
                dl = diff[-1, e_snd[logit_edges]]  # [m, d]
                if norm is not None:
                    rms = torch.sqrt(x.pow(2).mean() + norm.eps)
                    out[p, logit_edges] = (ld0.float() + (dl * norm.gain / rms) @ d[0]).cpu()
                else:
                    y = w.lnf((x + dl).to(model.dtype)).float()
                    out[p, logit_edges] = (y @ d[0]).cpu()
                bar.advance(task, len(logit_edges))
            chunks = [inner[s:s + size] for s in range(0, len(inner), size)] if size else []

            def hooks_for(j: int, chunks: list[Tensor] = chunks, diff: Tensor = diff
                          ) -> list[tuple[str, HookFn]]:
                chunk = chunks[j]
                offs = _exact_offsets(groups, e_snd[chunk], e_rcv[chunk], diff)
                return _edit_hooks(graph, w, lambda g, o=offs: o.get(g.first), {})

            # every chunk runs the pair's base prompt, padded to the common chunk size
            # with rows that patch nothing
            lds = chunked_lds(model, base_ids[row].expand(size, -1), mask.expand(size, -1),
                              d.expand(size, -1), [int(layer_of[c].min()) for c in chunks],
                              hooks_for, reuse_prefix=reuse_prefix)
            for chunk, ld in zip(chunks, lds, strict=True):
                out[p, chunk] = ld[:len(chunk)].float().cpu()
                bar.advance(task, len(chunk))
    return out


def _exact_offsets(
    groups: dict[int, Group], snd: Tensor, rcv: Tensor, diff: Tensor
) -> dict[int, tuple[Tensor, Tensor]]:
    """Per group (keyed by its first receiver): the rows that patch one of its receivers,
    and their ``Δ`` at that receiver's slot (zero elsewhere)."""
    out: dict[int, tuple[Tensor, Tensor]] = {}
    by_group: dict[int, list[int]] = {}
    for i in range(len(snd)):
        by_group.setdefault(groups[int(rcv[i])].first, []).append(i)
    pos, d = diff.shape[0], diff.shape[-1]
    for first, idx in by_group.items():
        g = groups[first]
        delta = torch.zeros(len(idx), pos, g.size, d, dtype=diff.dtype, device=diff.device)
        for j, i in enumerate(idx):
            delta[j, :, int(rcv[i]) - g.first] = diff[:, int(snd[i])]
        out[first] = (torch.tensor(idx, device=diff.device), delta)
    return out


# ------------------------------------------------------------------ circuits
def circuit_lds(
    model: Model,
    tt: TokenizedTask,
    circuits: Sequence[Bool[Tensor, " edges"]],
    *,
    batch_size: int = 16,
    progress: bool | None = None,
) -> Float[Tensor, "pairs circuits"]:
    """Raw LD of the clean prompt with only each circuit's edges carrying clean values
    (every other edge reads its sender's output in the corrupted run)."""
    graph = graph_of(model)
    w = graph_weights(model, graph)
    snd, rcv = graph.edge_index
    names = _caps(graph, w)
    out = torch.empty(len(tt), len(circuits))
    with torch.no_grad(), make_progress(enabled=progress) as bar:
        task = bar.add_task("circuits", total=len(tt) * len(circuits), info="")
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            mask = tt.attention_mask[sl]
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            _, corr = run_ld(model, tt.corrupted_ids[sl], mask, d, capture=names)
            a_corr = sender_outputs(graph, w, corr)
            for c, keep in enumerate(circuits):
                sel = keep.nonzero().squeeze(1)
                ld = _circuit_pass(model, graph, w, tt.clean_ids[sl], mask, d, corr, a_corr,
                                   snd[sel], rcv[sel])
                out[sl, c] = ld.float().cpu()
                bar.advance(task, mask.shape[0])
    return out


def _circuit_pass(
    model: Model, graph: EdgeGraph, w: EdgeGraphWeights, ids: Tensor, mask: Tensor, d: Tensor,
    corr: dict[str, Tensor], a_corr: Tensor, c_snd: Tensor, c_rcv: Tensor,
) -> Tensor:
    """One clean pass whose receivers read corrupted values on every edge outside the
    circuit ``(c_snd, c_rcv)``."""
    b = ids.shape[0]
    now = torch.zeros_like(a_corr)
    state: dict[str, Tensor] = {}
    rows = torch.arange(b, device=ids.device)
    edges_in: dict[int, tuple[Tensor, Tensor]] = {}
    for g in graph.groups:
        sel = (c_rcv >= g.first) & (c_rcv < g.first + g.size)
        if sel.any():
            edges_in[g.first] = ((c_rcv[sel] - g.first).to(ids.device), c_snd[sel].to(ids.device))

    def offsets(g: Group) -> tuple[Tensor, Tensor]:
        base = _resid_at(graph, g, corr).float() - _resid_at(graph, g, state).float()
        delta = base[:, :, None, :].repeat(1, 1, g.size, 1)
        if g.first in edges_in:
            slots, snds = edges_in[g.first]
            keep = a_corr[:, :, snds] - now[:, :, snds]
            delta.index_add_(2, slots, -keep)
        return rows, delta

    def record(fill: Callable[[Tensor], None]) -> HookFn:
        """A hook that writes a sender's output of this pass into ``now``."""
        def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            fill(t.detach())
            return t
        return hook

    z_now: dict[int, Tensor] = {}

    def heads(layer: int) -> Callable[[Tensor], None]:
        def fill(z: Tensor) -> None:
            if w.post_gain[layer] is not None:  # the norm's scale comes next: wait for it
                z_now[layer] = z
                return
            s = graph.head_sender(layer, 0)
            now[:, :, s:s + graph.n_heads] = head_outputs(w, layer, z)
        return fill

    def post_heads(layer: int) -> Callable[[Tensor], None]:
        def fill(scale: Tensor) -> None:
            s = graph.head_sender(layer, 0)
            now[:, :, s:s + graph.n_heads] = head_outputs(w, layer, z_now.pop(layer), scale)
        return fill

    def mlp(layer: int) -> Callable[[Tensor], None]:
        def fill(x: Tensor) -> None:
            now[:, :, graph.mlp_sender(layer)] = x.float()
        return fill

    def embed(x: Tensor) -> None:
        now[:, :, 0] = x.float()

    hooks = [("blocks.0.hook_resid_pre", record(embed))]
    for layer in range(graph.n_layers):
        hooks.append((f"blocks.{layer}.attn.hook_z", record(heads(layer))))
        if w.post_gain[layer] is not None:
            hooks.append((_post_scale(layer), record(post_heads(layer))))
        hooks.append((f"blocks.{layer}.hook_mlp_out", record(mlp(layer))))
    hooks += _edit_hooks(graph, w, offsets, state)
    ld, _ = run_ld(model, ids, mask, d, hooks)
    return ld
