"""One forward pass of a model: straight through Hugging Face where that is exact, else the bridge.

A :class:`~transformer_lens.model_bridge.TransformerBridge` forward call dispatches
every one of its ~1,700 ``HookPoint``s (SmolLM2) and runs a wrapper around every
Hugging Face sub-module, registered hook or not. At batch 1 that fixed cost was a third
to three quarters of a decode step on the 2-core development machine
(``bench/profile_decode.py``, ``bench/README.md``). :class:`ForwardRunner` runs a plain
Hugging Face model instead: a *shadow* of the bridge's ``original_model``, rebuilt from
its config on the meta device whose every parameter and buffer **is** (the same tensor
object as) the one inside the bridge's original components. Same weights, same HF code,
the same config (so the same attention implementation: the bridge loads with ``eager``),
the same position ids the bridge derives from the mask: logits equal to Hugging Face's to
the bit by construction, and to the bridge's to the bit on SmolLM2, Gemma-3 and a tiny
random checkpoint of every registered family but GPT-2, whose bridge computes LayerNorm
itself (within 1e-6 there; tests/unit/interp/test_families.py,
tests/{unit/interp,integration}/test_model_forward.py). KV cache: an HF ``DynamicCache``.

**Hooks.** A hook registered on one of the bridge's ``HookPoint``s still fires on the
direct path when its point is *routed*: the ``hook_in`` / ``hook_out`` of a bridge
component that wraps one Hugging Face module (blocks, attention and MLP modules, their
linear layers, norms, the embedding and the unembedding: ``hook_resid_pre`` /
``hook_resid_post`` / ``hook_resid_mid``, ``hook_attn_out``, ``hook_mlp_out``,
``attn.hook_q/k/v/z``, ``mlp.hook_pre/post``, ``ln_final.hook_in`` …; 727 of SmolLM2's
1,725 names). For the pass, a PyTorch hook on the shadow's module at that point calls the
bridge's ``HookPoint`` itself on the tensor the bridge would give it (its first input or
the first tensor of its output) and passes its return on. So the very hook functions
run, with the same ``hook`` object, the same shape conversions (``hook_z`` sees
``[batch, pos, head, d_head]``) and backward hooks, and the pass is bit-equal to the
bridge's (GPT-2: within 1e-6, as above): tested for every routed point of every model
above, reading and editing. Points inside the bridge's own attention (``hook_pattern``,
``hook_attn_scores``, ``hook_result``, the q and k norms), the norms' ``hook_scale`` /
``hook_normalized`` and any hook on a module that is not a ``HookPoint`` take the bridge
path.

**When the direct path is taken** (:meth:`ForwardRunner.plan`), all of:

* every live hook of the bridge is on a routed ``HookPoint``: forward, forward-pre or
  backward hooks; a hook on any other sub-module, or a global module hook, sends the
  pass through the bridge;
* the bridge is in its loaded state: weights not processed
  (``process_weights``), compatibility mode off;
* the architecture is a registered family (:mod:`interp.models.anatomy`, whose direct
  path is verified per family: :data:`DIRECT_MODEL_TYPES`), and the shadow could be built: every
  parameter and buffer of the rebuilt HF model maps, by its name with the bridge's
  ``_original_component`` levels removed, to a tensor of the bridge. Any other model
  always takes the bridge path.

**Decided once per batch.** A KV-cached batch is decided at its first pass (the one
without a cache, or with a fresh cache the caller built, as the verifier does); its
later passes follow the path (and the routes) its cache took, so a cache never crosses
paths. That is safe because no user code runs between two passes of a batch but the
engine's, which registers the same hooks at every pass; a hook registered from another
thread mid-batch is not supported. ``use_cache=False`` passes are decided one by one.
The check walks the bridge's ~2,000 modules' hook dicts: ~0.5 ms for SmolLM2.

``INTERP_FORWARD_PATH=bridge`` forces every pass through the bridge (benchmarks'
"before" column).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.models.anatomy import FAMILIES

#: HF ``model_type`` values whose direct path is tested equal to Hugging Face's forward
#: and to the bridge path: every registered family (:mod:`interp.models.anatomy`; tiny
#: random checkpoints of each in tests/unit/interp/test_families.py, and SmolLM2 and
#: Gemma-3 in tests/integration/test_model_forward.py).
DIRECT_MODEL_TYPES = frozenset(FAMILIES)

#: Set to ``bridge`` to force every pass through the bridge (for before/after benches).
PATH_ENV = "INTERP_FORWARD_PATH"

#: Bridge components whose ``hook_in`` fires on the wrapped HF module's first tensor input
#: and ``hook_out`` on its output (or the output's first tensor), with nothing else between:
#: their points are routed onto the shadow. Verified per point (test_model_forward.py);
#: the rotary embedding is left out (its ``hook_out`` never fires on the bridge).
ROUTED_COMPONENTS = frozenset({
    "BlockBridge", "LinearBridge", "RMSNormalizationBridge", "NormalizationBridge",
    "PositionEmbeddingsAttentionBridge", "AttentionBridge", "GatedMLPBridge", "MLPBridge",
    "EmbeddingBridge", "UnembeddingBridge",
})

#: Components never routed, by their last name: the bridge's attention applies the q and k
#: norms to ``[batch, head, pos, d_head]``, where some families' Hugging Face modules apply
#: them before the transpose (Qwen3: ``[batch, pos, head, d_head]``); same values, another
#: shape, so a hook there takes the bridge path.
UNROUTED_NAMES = frozenset({"q_norm", "k_norm"})

_ORIG = "._original_component"
_BLOCK = "transformer_lens.model_bridge.generalized_components.block"
#: (module, qualname) of hooks that the libraries install and that act only through a
#: HookPoint or an explicit output-recording call (see ForwardRunner.plan)
_INERT_HOOKS = frozenset({
    ("transformers.utils.output_capturing",
     "install_output_capuring_hook.<locals>.output_capturing_hook"),
    (_BLOCK, "BlockBridge._maybe_wire_capture_hooks.<locals>._capture_pre_ln1"),
    (_BLOCK, "BlockBridge._maybe_wire_capture_hooks.<locals>._capture_mlp_in"),
})


def _origin(fn: Any) -> tuple[str, str]:
    return getattr(fn, "__module__", "") or "", getattr(fn, "__qualname__", "") or ""


def _hf_name(name: str) -> str:
    """A bridge parameter's name with the wrapper levels removed (= the HF name)."""
    return name.replace(_ORIG, "").replace("_original_component.", "")


def _build_shadow(
    bridge: Any,
) -> tuple[torch.nn.Module, list[tuple[dict[str, Any], str, Tensor]]] | None:
    """A plain HF model sharing the bridge's tensors, or ``None`` when it cannot be built.

    Also returns ``(owner dict, key, tensor)`` for each shared tensor, where the owner
    dict is the bridge module's ``_parameters`` / ``_buffers``: :meth:`ForwardRunner.stale`
    checks they still hold the same tensors (``bridge.to(...)`` replaces buffers).
    """
    om = getattr(bridge, "original_model", None)
    if om is None or not isinstance(om, torch.nn.Module):
        return None
    config = getattr(om, "config", None)
    if getattr(config, "model_type", None) not in DIRECT_MODEL_TYPES:
        return None
    try:
        with torch.device("meta"):
            shadow = type(om)(config)
    except Exception:  # noqa: BLE001 - any failure means "use the bridge"
        return None
    shadow.eval()
    source: dict[str, tuple[dict[str, Any], str, Tensor]] = {}
    for mod_name, mod in om.named_modules(remove_duplicate=False):
        prefix = f"{mod_name}." if mod_name else ""
        for store in (mod._parameters, mod._buffers):
            for key, t in store.items():
                if t is not None:
                    source.setdefault(_hf_name(prefix + key), (store, key, t))
    shared: list[tuple[dict[str, Any], str, Tensor]] = []
    for mod_name, mod in shadow.named_modules():
        prefix = f"{mod_name}." if mod_name else ""
        stores: tuple[Any, ...] = (mod._parameters, mod._buffers)
        for store in stores:
            for key, t in list(store.items()):
                if t is None:
                    continue
                src = source.get(prefix + key)
                if src is None or src[2].shape != t.shape:
                    return None
                store[key] = src[2]  # the very same Parameter / buffer object
                shared.append(src)
    return shadow, shared


@dataclass(frozen=True)
class Route:
    """A bridge ``HookPoint`` carried onto the shadow: ``where`` is ``"in"`` (the module's
    first tensor input) or ``"out"`` (its output, or the output's first tensor)."""

    point: torch.nn.Module
    module: torch.nn.Module
    where: str


def _first_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | int | None:
    """Where the tensor a component's ``hook_in`` sees is: ``0`` for the first positional
    argument, else the keyword (``hidden_states`` first)."""
    if args and isinstance(args[0], Tensor):
        return 0
    if isinstance(kwargs.get("hidden_states"), Tensor):
        return "hidden_states"
    return next((k for k, v in kwargs.items() if isinstance(v, Tensor)), None)


def _route_in(point: torch.nn.Module) -> Callable[..., Any]:
    def pre(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:  # noqa: ARG001
        at = _first_input(args, kwargs)
        if isinstance(at, str):
            return args, {**kwargs, at: point(kwargs[at])}
        if at is None:
            raise RuntimeError(f"{point.name}: the module got no tensor to hook")
        return (point(args[0]), *args[1:]), kwargs

    return pre


def _route_out(point: torch.nn.Module) -> Callable[..., Any]:
    def post(module: torch.nn.Module, args: Any, out: Any) -> Any:  # noqa: ARG001
        if isinstance(out, Tensor):
            return point(out)
        if isinstance(out, tuple) and out and isinstance(out[0], Tensor):
            return (point(out[0]), *out[1:])
        raise RuntimeError(f"{point.name}: cannot hook an output of type {type(out).__name__}")

    return post


def _routes(bridge: Any, shadow: torch.nn.Module) -> dict[torch.nn.Module, Route]:
    """Every routable HookPoint of the bridge, by the HookPoint."""
    from transformer_lens.hook_points import HookPoint

    modules = dict(shadow.named_modules())
    out: dict[torch.nn.Module, Route] = {}
    for path, comp in bridge.original_model.named_modules():
        if (type(comp).__name__ not in ROUTED_COMPONENTS
                or "_original_component" not in comp._modules
                or path.rsplit(".", 1)[-1] in UNROUTED_NAMES):
            continue
        target = modules.get(_hf_name(path))
        if target is None:
            continue
        for attr, where in (("hook_in", "in"), ("hook_out", "out")):
            point = comp._modules.get(attr)
            if isinstance(point, HookPoint):
                out[point] = Route(point, target, where)
    return out


def _live(m: torch.nn.Module) -> bool:
    return bool(m._forward_pre_hooks or m._forward_hooks or m._backward_hooks
                or m._backward_pre_hooks)


#: KV caches that went through a direct pass (with the routes of their batch) / a bridge
#: pass: the later passes of their batch take the same path, so a cache never crosses paths.
_DIRECT_CACHES: weakref.WeakKeyDictionary[Any, tuple[Route, ...]] = weakref.WeakKeyDictionary()
_BRIDGE_CACHES: weakref.WeakSet[Any] = weakref.WeakSet()


class ForwardRunner:
    """Runs a model's forward passes (see the module docstring)."""

    def __init__(self, bridge: Any) -> None:
        self._bridge_ref = weakref.ref(bridge)
        self.shadow: torch.nn.Module | None = None
        self._shared: list[tuple[dict[str, Any], str, Tensor]] = []
        self._modules: list[torch.nn.Module] = []
        self._hook_points: set[torch.nn.Module] = set()
        self.routes: dict[torch.nn.Module, Route] = {}
        self._build()

    def _build(self) -> None:
        built = _build_shadow(self.bridge)
        self.shadow = built[0] if built else None
        self._shared = built[1] if built else []
        self._modules = list(self.bridge.modules())
        self._hook_points = set(self.bridge.hook_dict.values())
        self.routes = _routes(self.bridge, self.shadow) if self.shadow is not None else {}

    @property
    def bridge(self) -> Any:
        """The model's TransformerLens bridge (held by weak reference: the runner does not keep the
        model alive)."""
        b = self._bridge_ref()
        assert b is not None
        return b

    # -- the decision
    def live_routes(self) -> tuple[Route, ...] | None:
        """The routes of the live hooks, or ``None`` when a live hook cannot be routed.

        Every hook on a ``HookPoint`` counts (forward, forward-pre, backward), and every
        hook on another module except plumbing that is inert without one: the
        output-recording hooks transformers installs on its modules at their first forward
        (active only inside an ``output_hidden_states`` / ``output_attentions`` call), and
        the capture hooks a TransformerLens block wires on its norms (they feed HookPoints,
        checked here).
        """
        from torch.nn.modules import module as tmod

        if (tmod._global_forward_hooks or tmod._global_forward_pre_hooks
                or tmod._global_backward_hooks or tmod._global_backward_pre_hooks):
            return None
        found: list[Route] = []
        for m in self._modules:
            if not _live(m):
                continue
            if m in self._hook_points:
                route = self.routes.get(m)
                if route is None:
                    return None
                found.append(route)
            elif (m._backward_hooks or m._backward_pre_hooks or any(
                _origin(fn) not in _INERT_HOOKS
                for fn in (*m._forward_pre_hooks.values(), *m._forward_hooks.values())
            )):
                return None
        return tuple(found)

    def stale(self) -> bool:
        """Whether the bridge no longer holds the tensors the shadow shares."""
        return any(store.get(key) is not t for store, key, t in self._shared)

    def plan(self) -> tuple[Route, ...] | None:
        """The routes for a direct pass now, or ``None`` when the pass must take the bridge
        (a live hook that cannot be routed, processed weights, an unverified model)."""
        if self.shadow is None or os.environ.get(PATH_ENV, "").lower() == "bridge":
            return None
        b = self.bridge
        if getattr(b, "_weights_processed", False) or getattr(b, "compatibility_mode", False):
            return None
        if self.stale():
            self._build()
            if self.shadow is None:
                return None
        return self.live_routes()

    def direct_ok(self) -> bool:
        """Whether a pass may skip the bridge now (see :meth:`plan`)."""
        return self.plan() is not None

    @staticmethod
    def mark_bridge(cache: Any) -> None:
        """Record that ``cache`` went through the bridge path (its batch stays there)."""
        if cache is not None:
            _BRIDGE_CACHES.add(cache)

    def take(self, cache: Any, *, use_cache: bool) -> tuple[Route, ...] | None:
        """The decision for one pass: the routes of a direct pass, or ``None`` (the bridge).
        A cached pass follows the path its cache already took; a batch's first pass, a pass
        with a cache the caller built (the verifier's) and every ``use_cache=False`` pass
        are planned (:meth:`plan`)."""
        if use_cache and cache is not None:
            routes = _DIRECT_CACHES.get(cache)
            if routes is not None:
                return routes
            if cache in _BRIDGE_CACHES:
                return None
        return self.plan()

    # -- the passes
    @staticmethod
    def position_ids(
        mask: Int[Tensor, "batch total"], n_new: int,
    ) -> Int[Tensor, "batch new"]:
        """The bridge's positions: mask-derived for rows with a masked slot before a
        real token (left padding, masked-out slots), ``arange`` for the others."""
        mask = mask.long()
        derived = (mask.cumsum(-1) - 1).clamp_min(0)
        arange = torch.arange(mask.shape[1], device=mask.device)
        needs = ((derived != arange) & (mask != 0)).any(dim=1, keepdim=True)
        pos = torch.where(needs, derived, arange.expand_as(derived))
        return pos[:, mask.shape[1] - n_new :]

    @contextmanager
    def routed(self, routes: Sequence[Route]) -> Iterator[None]:
        """The routes' PyTorch hooks on the shadow for the duration of one pass."""
        handles = []
        try:
            for r in routes:
                if r.where == "in":
                    handles.append(r.module.register_forward_pre_hook(
                        _route_in(r.point), with_kwargs=True))
                else:
                    handles.append(r.module.register_forward_hook(_route_out(r.point)))
            yield
        finally:
            for h in handles:
                h.remove()

    def direct(
        self, ids: Int[Tensor, "batch new"], mask: Int[Tensor, "batch total"],
        cache: Any = None, *, use_cache: bool = True, routes: Sequence[Route] = (),
    ) -> tuple[Float[Tensor, "batch new vocab"], Any]:
        """One pass of the shadow HF model (the routed hook points firing); returns logits
        and (with use_cache) its cache."""
        assert self.shadow is not None
        if use_cache:
            if cache is None:
                from transformers import DynamicCache

                cache = DynamicCache(config=getattr(self.shadow, "config", None))
            _DIRECT_CACHES[cache] = tuple(routes)
        with self.routed(routes):
            out = self.shadow(
                input_ids=ids, attention_mask=mask,
                position_ids=self.position_ids(mask, ids.shape[1]),
                past_key_values=cache if use_cache else None, use_cache=use_cache,
            )
        return out.logits, (cache if use_cache else None)

    def forward(
        self, ids: Int[Tensor, "batch new"], mask: Int[Tensor, "batch total"] | None = None,
        cache: Any = None, *, use_cache: bool = False,
    ) -> tuple[Float[Tensor, "batch new vocab"], Any]:
        """One pass on whichever path :meth:`take` decides: logits (the model's dtype) and,
        with ``use_cache``, the extended KV cache. Runs under the caller's grad mode."""
        if mask is None:
            mask = torch.ones_like(ids)
        routes = self.take(cache, use_cache=use_cache)
        if routes is not None:
            return self.direct(ids, mask, cache, use_cache=use_cache, routes=routes)
        if not use_cache:
            return self.bridge(ids, attention_mask=mask, return_type="logits"), None
        logits, cache = self.bridge(ids, attention_mask=mask, past_key_values=cache,
                                    return_type="logits_and_cache", use_cache=True)
        self.mark_bridge(cache)  # its batch's later passes stay on the bridge
        return logits, cache


_RUNNERS: weakref.WeakKeyDictionary[Any, ForwardRunner] = weakref.WeakKeyDictionary()


def runner_for(bridge: Any) -> ForwardRunner:
    """The (cached) :class:`ForwardRunner` of a bridge."""
    r = _RUNNERS.get(bridge)
    if r is None:
        r = _RUNNERS[bridge] = ForwardRunner(bridge)
    return r


def forward(
    model: Any, ids: Int[Tensor, "batch pos"], mask: Tensor | None = None,
    cache: Any = None, *, use_cache: bool = False,
) -> tuple[Float[Tensor, "batch pos vocab"], Any]:
    """One forward pass of ``model`` (an :class:`~interp.models.Model`) with every hook
    registered on its bridge firing: the plain HF model when that is exact, else the
    bridge. Returns the logits (the model's dtype) and, with ``use_cache``, the cache."""
    return runner_for(model.bridge).forward(ids, mask, cache, use_cache=use_cache)


class _Skip(torch.nn.Module):
    """A decoder layer that returns its input: the blocks a suffix pass has already run."""

    def forward(self, hidden_states: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: ARG002
        return hidden_states


def _suffix_direct(
    runner: ForwardRunner, hidden: Float[Tensor, "batch pos d_model"], block: int,
    mask: Int[Tensor, "batch pos"], routes: Sequence[Route] = (),
) -> Float[Tensor, "batch pos vocab"] | None:
    """The shadow HF model from block ``block`` on, or ``None`` when it has no
    ``model.layers`` to cut. The layers before ``block`` are swapped for :class:`_Skip` in
    a view of the list (indices unchanged, so per-layer settings such as Gemma-3's
    sliding windows stay aligned) and ``hidden`` enters as ``inputs_embeds`` (the
    embedding, and Gemma's √d scale inside it, is skipped with them). The causal mask and
    the positions come from ``mask`` exactly as in a whole pass, so block ``block`` and
    every later one compute what they compute there, to the bit, given the same input
    and batch shape."""
    shadow = runner.shadow
    inner = getattr(shadow, "model", None)
    layers = getattr(inner, "layers", None)
    if shadow is None or inner is None or not isinstance(layers, torch.nn.ModuleList):
        return None
    view = torch.nn.ModuleList([_Skip() if i < block else m for i, m in enumerate(layers)])
    inner.layers = view
    try:
        with runner.routed(routes):  # the hooks from the block on fire; earlier ones never run
            out = shadow(inputs_embeds=hidden, attention_mask=mask,
                         position_ids=runner.position_ids(mask, hidden.shape[1]),
                         use_cache=False)
    finally:
        inner.layers = layers
    return out.logits


def can_run_from_block(model: Any) -> bool:
    """Whether :func:`forward_from_block` runs only the later blocks now (the direct path
    is open with the hooks registered at this moment, and the model's layers can be cut);
    when not, it is a whole bridge pass, correct but no faster."""
    runner = runner_for(model.bridge)
    layers = getattr(getattr(runner.shadow, "model", None), "layers", None)
    return isinstance(layers, torch.nn.ModuleList) and runner.plan() is not None


def forward_from_block(
    model: Any, hidden: Float[Tensor, "batch pos d_model"], block: int,
    mask: Int[Tensor, "batch pos"] | None = None,
) -> Float[Tensor, "batch pos vocab"]:
    """The model's logits (its dtype) when ``hidden`` enters block ``block``
    (``blocks.{block}.hook_resid_pre``; ``block == n_layers``: straight into the final
    norm), under the caller's grad mode, with every hook registered on the bridge firing.

    When :func:`can_run_from_block`, blocks ``0…block-1`` are not run at all: the plain
    HF model runs from ``block`` on with the routed hooks (those at later points fire;
    those at earlier points never run, and ``blocks.{block}.hook_resid_pre`` itself fires
    on ``hidden``). Rows are left-padded as ``mask`` says (all real when ``None``). Given
    the same input and batch shape, the result equals a whole pass's to the bit.
    Otherwise it is a whole bridge pass with the residual before ``block`` replaced by
    ``hidden`` (the prefix is recomputed and discarded: correct, not faster).
    """
    n = model.n_layers
    if not 0 <= block <= n:
        raise ValueError(f"block {block} is outside 0..{n}")
    hidden = hidden.to(device=model.device, dtype=model.dtype)
    b, s = hidden.shape[:2]
    if mask is None:
        mask = torch.ones(b, s, dtype=torch.long, device=hidden.device)
    mask = mask.to(device=hidden.device).long()
    runner = runner_for(model.bridge)
    routes = runner.plan()
    if routes is not None:
        logits = _suffix_direct(runner, hidden, block, mask, routes)
        if logits is not None:
            return logits
    ids = torch.zeros(b, s, dtype=torch.long, device=hidden.device)
    name = "blocks.0.hook_resid_pre" if block == 0 else model.resid_hook(block - 1)

    def put(tensor: Tensor, hook: Any) -> Tensor:  # noqa: ARG001 (TL hook signature)
        return hidden

    with model.bridge.hooks(fwd_hooks=[(name, put)]):
        return model.bridge(ids, attention_mask=mask, return_type="logits")


@torch.no_grad()
def logits_from_layer(
    model: Any, hidden: Float[Tensor, "batch pos d_model"], layer: int,
) -> Float[Tensor, "batch pos vocab"]:
    """Float32 logits of the model run from the residual stream after block ``layer``.

    ``hidden`` is ``blocks.{layer}.hook_resid_post`` for unpadded rows (every position
    real), possibly edited (a spliced SAE, an ablation). Blocks ``0…layer`` are not run
    again: callers that score several edits of one prefix (``interp sae eval``'s spliced
    variants) run the prefix once. When every live hook can be routed and the model has a
    verified direct path (:class:`ForwardRunner`), the suffix runs on the plain HF model
    (no TransformerLens hook dispatch; routed hooks after ``layer`` fire); otherwise it
    is a bridge forward whose ``hook_resid_post`` at ``layer`` is replaced by ``hidden``
    whole (the prefix is then recomputed and discarded: correct, not faster).
    """
    layer = model.check_layer(layer)
    return forward_from_block(model, hidden, layer + 1).float()
