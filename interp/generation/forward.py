"""The generation engine's forward pass: through the bridge, or straight through HF.

A :class:`~transformer_lens.model_bridge.TransformerBridge` forward call dispatches
every one of its ~1,700 ``HookPoint``s (SmolLM2) and runs a wrapper around every
Hugging Face sub-module, registered hook or not. At batch 1 that fixed cost was a third
to three quarters of a decode step on the 2-core development machine
(``bench/profile_decode.py``, ``bench/README.md``). When nothing can observe the pass,
:class:`ForwardRunner` runs a plain Hugging Face model instead: a *shadow* of the
bridge's ``original_model``, rebuilt from its config on the meta device whose every
parameter and buffer **is** (the same tensor object as) the one inside the bridge's
original components. Same weights, same HF code, the same config (so the same attention
implementation: the bridge loads with ``eager``), the same position ids the bridge
derives from the mask: logits equal to the bit on SmolLM2, a tiny Llama and a tiny
Gemma-3 (tests/{unit/interp,integration}/test_generation_forward.py). KV cache: an HF
``DynamicCache``.

**When the direct path is taken** (:meth:`ForwardRunner.direct_ok`), all of:

* no hooks of the engine (``hooks`` / ``row_hooks``) for this pass;
* no live hook on the bridge: no forward or forward-pre hook on any of its
  ``HookPoint``s nor on any other sub-module, and no global module hook (so a hook
  registered outside :func:`~interp.generation.generate`, e.g. by ``steer``, still
  fires: its pass goes through the bridge);
* the bridge is in its loaded state: weights not processed
  (``process_weights``), compatibility mode off;
* the architecture is one whose direct path is verified equal to the bridge's (the
  ``model_type`` is in :data:`DIRECT_MODEL_TYPES`: tests compare logits and greedy
  texts), and the shadow could be built: every parameter and buffer of the rebuilt HF
  model maps, by its name with the bridge's ``_original_component`` levels removed,
  to a tensor of the bridge. Any other model always takes the bridge path.

**Decided once per batch.** A KV-cached batch is decided at its first pass (the one
without a cache, or with a fresh cache the caller built, as the verifier does); its
later passes follow the path its cache took (both paths mark their caches), so a cache
never crosses paths. That is safe because on the direct path no user code runs between
two passes of a batch (no hook can fire, and the engine adds none mid-batch), so
nothing can register a hook in between; a hook registered from another thread
mid-batch is not supported. ``use_cache=False`` passes are decided one by one. The
check walks the bridge's ~2,000 modules' hook dicts: ~0.5 ms for SmolLM2 (1.8 ms on
the loaded 2-core machine), i.e. well under 1% of a 16-token batch-1 generation.

``INTERP_GENERATE_PATH=bridge`` forces the bridge path (benchmarks' "before" column).
"""

from __future__ import annotations

import os
import weakref
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

#: HF ``model_type`` values whose direct path is tested equal to the bridge path
#: (tests/{unit/interp,integration}/test_generation_forward.py: SmolLM2 and a tiny Llama;
#: a tiny Gemma-3 text model with sliding-window layers).
DIRECT_MODEL_TYPES = frozenset({"llama", "gemma3_text"})

#: Set to ``bridge`` to force every pass through the bridge (for before/after benches).
PATH_ENV = "INTERP_GENERATE_PATH"

_ORIG = "._original_component"
_BLOCK = "transformer_lens.model_bridge.generalized_components.block"
#: (module, qualname) of hooks that the libraries install and that act only through a
#: HookPoint or an explicit output-recording call (see ForwardRunner.hooks_live)
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


#: KV caches that went through a direct / a bridge pass: the later passes of their batch
#: take the same path, so a cache never crosses paths.
_DIRECT_CACHES: weakref.WeakSet[Any] = weakref.WeakSet()
_BRIDGE_CACHES: weakref.WeakSet[Any] = weakref.WeakSet()


class ForwardRunner:
    """Runs the engine's forward passes for one model (see the module docstring)."""

    def __init__(self, bridge: Any) -> None:
        self._bridge_ref = weakref.ref(bridge)
        self.shadow: torch.nn.Module | None = None
        self._shared: list[tuple[dict[str, Any], str, Tensor]] = []
        self._modules: list[torch.nn.Module] = []
        self._hook_points: set[torch.nn.Module] = set()
        self._build()

    def _build(self) -> None:
        built = _build_shadow(self.bridge)
        self.shadow = built[0] if built else None
        self._shared = built[1] if built else []
        self._modules = list(self.bridge.modules())
        self._hook_points = set(self.bridge.hook_dict.values())

    @property
    def bridge(self) -> Any:
        """The model's TransformerLens bridge (held by weak reference: the runner does not keep the
        model alive)."""
        b = self._bridge_ref()
        assert b is not None
        return b

    # -- the decision
    def hooks_live(self) -> bool:
        """Whether any forward hook could fire during a bridge forward pass.

        Every hook on a ``HookPoint`` counts, and every hook on another module except
        plumbing that is inert without one: the output-recording hooks transformers
        installs on its modules at their first forward (active only inside an
        ``output_hidden_states`` / ``output_attentions`` call), and the capture hooks a
        TransformerLens block wires on its norms (they feed HookPoints, checked here).
        """
        from torch.nn.modules import module as tmod

        if tmod._global_forward_hooks or tmod._global_forward_pre_hooks:
            return True
        for m in self._modules:
            for hooks in (m._forward_pre_hooks, m._forward_hooks):
                if hooks and (m in self._hook_points or any(
                    _origin(fn) not in _INERT_HOOKS for fn in hooks.values()
                )):
                    return True
        return False

    def stale(self) -> bool:
        """Whether the bridge no longer holds the tensors the shadow shares."""
        return any(store.get(key) is not t for store, key, t in self._shared)

    def direct_ok(self) -> bool:
        """Whether a pass may skip the bridge (no hook, unprocessed, known model)."""
        if self.shadow is None or os.environ.get(PATH_ENV, "").lower() == "bridge":
            return False
        b = self.bridge
        if getattr(b, "_weights_processed", False) or getattr(b, "compatibility_mode", False):
            return False
        if self.stale():
            self._build()
            if self.shadow is None:
                return False
        return not self.hooks_live()

    def is_direct_cache(self, cache: Any) -> bool:
        """Whether ``cache`` went through :meth:`direct` (its batch is on the direct path)."""
        return cache is not None and cache in _DIRECT_CACHES

    @staticmethod
    def mark_bridge(cache: Any) -> None:
        """Record that ``cache`` went through the bridge path (its batch stays there)."""
        if cache is not None:
            _BRIDGE_CACHES.add(cache)

    def take_direct(self, cache: Any, *, use_cache: bool, engine_hooks: bool) -> bool:
        """The engine's decision for one pass. A cached pass follows the path its cache
        already took; a batch's first pass, a pass with a cache the caller built (the
        verifier's) and every ``use_cache=False`` pass check :meth:`direct_ok`."""
        if engine_hooks:
            return False
        if use_cache and cache is not None:
            if cache in _DIRECT_CACHES:
                return True
            if cache in _BRIDGE_CACHES:
                return False
        return self.direct_ok()

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

    def direct(
        self, ids: Int[Tensor, "batch new"], mask: Int[Tensor, "batch total"],
        cache: Any = None, *, use_cache: bool = True,
    ) -> tuple[Float[Tensor, "batch new vocab"], Any]:
        """One pass of the shadow HF model; returns logits and (with use_cache) its cache."""
        assert self.shadow is not None
        if use_cache:
            if cache is None:
                from transformers import DynamicCache

                cache = DynamicCache(config=getattr(self.shadow, "config", None))
            _DIRECT_CACHES.add(cache)
        out = self.shadow(
            input_ids=ids, attention_mask=mask,
            position_ids=self.position_ids(mask, ids.shape[1]),
            past_key_values=cache if use_cache else None, use_cache=use_cache,
        )
        return out.logits, (cache if use_cache else None)


_RUNNERS: weakref.WeakKeyDictionary[Any, ForwardRunner] = weakref.WeakKeyDictionary()


def runner_for(bridge: Any) -> ForwardRunner:
    """The (cached) :class:`ForwardRunner` of a bridge."""
    r = _RUNNERS.get(bridge)
    if r is None:
        r = _RUNNERS[bridge] = ForwardRunner(bridge)
    return r


class _Skip(torch.nn.Module):
    """A decoder layer that returns its input: the blocks a suffix pass has already run."""

    def forward(self, hidden_states: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: ARG002
        return hidden_states


def _suffix_direct(
    runner: ForwardRunner, hidden: Float[Tensor, "batch pos d_model"], layer: int,
) -> Float[Tensor, "batch pos vocab"] | None:
    """The shadow HF model from block ``layer + 1`` on, or ``None`` when it has no
    ``model.layers`` to cut. The layers up to ``layer`` are swapped for :class:`_Skip` in
    a view of the list (indices unchanged, so per-layer settings such as Gemma-3's
    sliding windows stay aligned) and ``hidden`` enters as ``inputs_embeds`` (the
    embedding, and Gemma's √d scale inside it, is skipped with them)."""
    shadow = runner.shadow
    inner = getattr(shadow, "model", None)
    layers = getattr(inner, "layers", None)
    if shadow is None or inner is None or not isinstance(layers, torch.nn.ModuleList):
        return None
    view = torch.nn.ModuleList([_Skip() if i <= layer else m for i, m in enumerate(layers)])
    b, s = hidden.shape[:2]
    mask = torch.ones(b, s, dtype=torch.long, device=hidden.device)
    inner.layers = view
    try:
        out = shadow(inputs_embeds=hidden, attention_mask=mask,
                     position_ids=runner.position_ids(mask, s), use_cache=False)
    finally:
        inner.layers = layers
    return out.logits


@torch.no_grad()
def logits_from_layer(
    model: Any, hidden: Float[Tensor, "batch pos d_model"], layer: int,
) -> Float[Tensor, "batch pos vocab"]:
    """Float32 logits of the model run from the residual stream after block ``layer``.

    ``hidden`` is ``blocks.{layer}.hook_resid_post`` for unpadded rows (every position
    real), possibly edited (a spliced SAE, an ablation). Blocks ``0…layer`` are not run
    again: callers that score several edits of one prefix (``interp sae eval``'s spliced
    variants) run the prefix once. When nothing can observe the pass and the model has a
    verified direct path (:class:`ForwardRunner`), the suffix runs on the plain HF model
    (no TransformerLens hook dispatch); otherwise it is a bridge forward whose
    ``hook_resid_post`` at ``layer`` is replaced by ``hidden`` whole (the prefix is then
    recomputed and discarded: correct, not faster).
    """
    layer = model.check_layer(layer)
    hidden = hidden.to(device=model.device, dtype=model.dtype)
    runner = runner_for(model.bridge)
    if runner.direct_ok():
        logits = _suffix_direct(runner, hidden, layer)
        if logits is not None:
            return logits.float()
    b, s = hidden.shape[:2]
    ids = torch.zeros(b, s, dtype=torch.long, device=model.device)

    def put(tensor: Tensor, hook: Any) -> Tensor:  # noqa: ARG001 (TL hook signature)
        return hidden

    with model.bridge.hooks(fwd_hooks=[(model.resid_hook(layer), put)]):
        return model.bridge(ids, attention_mask=torch.ones_like(ids),
                            return_type="logits").float()
