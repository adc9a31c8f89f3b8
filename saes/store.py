"""The activation store: a deterministic, bounded-memory stream of shuffled activations.

Text is packed into windows of ``seq_len`` tokens (:func:`interp.data.windows.iter_windows`),
run through the model up to the hooked layer only
(:func:`~interp.activations.capture.forward_with_hooks` stops the forward there), and each window's
**first token is dropped**: the model treats it as the start of its context (an attention sink whose
residual norm is about 7× the others'), and an SAE fitted to it wastes capacity and splices badly.
Windows are packed without padding, so the first real token is always index 0.

**Shuffling.** Activations arrive in *chunks* of ``windows_per_chunk`` windows. Each chunk's
tokens are permuted with a generator seeded by ``(seed, substream, chunk)`` and served in
order; memory holds one chunk per substream (``windows_per_chunk × (seq_len − 1) × d × 4``
bytes, 300 MB at the defaults for d = 576) whatever the number of tokens trained on.
Tokens from ~1000 windows of different documents are mixed within each batch.

**Substreams and ranks.** The window sequence is dealt round-robin into ``data_shards``
substreams (window ``i`` goes to substream ``i mod data_shards``). The global batch of
step ``s`` is the concatenation, over substreams, of each substream's ``batch/data_shards``
tokens for that step. A process with rank ``r`` of ``world`` serves substreams
``r, r + world, …``, so a 2-rank DistributedDataParallel run and a single process with
``data_shards=2`` see exactly the same global batches, and each rank reads and runs the
model over its own windows only.

**Determinism.** Batch ``s`` is a pure function of ``(text, model, layer, seq_len, seed,
data_shards, windows_per_chunk)``: a resumed run asks for step ``s`` and gets the same
tokens, recomputing at most one chunk.

**Disk cache.** With ``cache_dir`` each chunk's (unpermuted) activations are written once as
a safetensors shard (atomically) under a folder keyed by everything above, and later runs
— another λ, another width, a resume — read shards instead of running the model. A shard
carries :data:`CACHE_VERSION` and its activations' sha256; one truncated, edited or of
another version is recomputed with one line on stderr, never used. The cache only saves
time: a shard that cannot be written (a full disk, a read-only folder) is one line on
stderr, no partial file, and the run goes on without writing more. While a store uses an
entry it holds the entry's lock (:mod:`interp.runs.lock`; rank 0 for all ranks): another
process is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import math
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import iter_windows
from interp.errors import InterpError
from interp.models.loading import Model
from interp.profiling.session import phase
from interp.runs.progress import note
from interp.schema import Config, at_least, seed_range, setting
from interp.training.loop import ranks_agree

if TYPE_CHECKING:
    from interp.runs.lock import Lock

#: The activation cache's format: a shard carries it and its activations' sha256 in its
#: safetensors metadata, and ``store.json`` carries it; another version is rebuilt.
CACHE_VERSION = 2


@dataclass(frozen=True)
class StoreConfig(Config):
    """Where the activations come from and how they are cut and shuffled (set from the
    training run's settings; its fields key the disk cache)."""

    layer: int = setting(help="The block whose activations are read.")
    site: str = setting("resid", help="What is read at the layer: 'resid' (the residual stream "
                                      "after the block) or 'mlp' (the MLP's input and output, "
                                      "side by side, for transcoders).")
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.")
    windows_per_chunk: int = setting(1024, check=at_least(1),
                                     help="Windows shuffled together.")
    data_shards: int = setting(1, check=at_least(1), help="Substreams of the text.")
    seed: int = setting(0, check=seed_range, help="Seeds the shuffle.")
    forward_batch: int = setting(8, check=at_least(1), help="Windows per model forward.")

    def check(self) -> None:
        """A known ``site``; ``windows_per_chunk`` a multiple of ``data_shards``."""
        if self.site not in SITES:
            raise self.error("site", f"must be one of {', '.join(SITES)}", self.site)
        if self.windows_per_chunk % self.data_shards:
            raise self.error("windows_per_chunk", "must be a positive multiple of the data "
                             f"shards ({self.data_shards})", self.windows_per_chunk)

    @property
    def windows_per_shard_chunk(self) -> int:
        """Windows each substream contributes to a chunk."""
        return self.windows_per_chunk // self.data_shards

    @property
    def tokens_per_shard_chunk(self) -> int:
        """Activations (tokens) each substream contributes to a chunk, ``seq_len − 1`` per
        window."""
        return self.windows_per_shard_chunk * (self.seq_len - 1)


#: What a store can read at a layer, and how many activations of width d_model sit side by
#: side in each of its rows (:func:`site_hooks`).
SITES = {"resid": 1, "mlp": 2}


def site_hooks(model: Model, layer: int, site: str = "resid") -> list[str]:
    """The hook points read at ``layer`` for ``site``: ``resid`` is the residual stream after
    the block; ``mlp`` is the MLP's input (the normalised residual that feeds it,
    ``mlp.hook_in``) then what the MLP adds to the residual stream (``hook_mlp_out``, after
    Gemma's post-MLP norm)."""
    if site == "resid":
        return [model.resid_hook(layer)]
    if site == "mlp":
        return [f"blocks.{layer}.mlp.hook_in", f"blocks.{layer}.hook_mlp_out"]
    raise InterpError(f"unknown activation site {site!r}: use {', '.join(SITES)}")


def capture_windows_layers(
    model: Model, windows: Int[Tensor, "n seq"], layers: Sequence[int], batch: int = 8,
    site: str = "resid",
) -> dict[int, Float[Tensor, "n_tokens width"]]:
    """The ``site`` activations (:func:`site_hooks`, side by side) of each of ``layers`` for
    every window position but the first, in order, from one forward per batch stopped after
    the deepest layer.

    Rows are window-major: window 0's positions 1…seq−1, then window 1's, …
    """
    hooks = {layer: site_hooks(model, layer, site) for layer in layers}
    out: dict[int, list[Tensor]] = {layer: [] for layer in layers}
    with phase("forward"):
        for i in range(0, windows.shape[0], batch):
            ids = windows[i:i + batch].to(model.device)
            acts, _ = forward_with_hooks(model, ids, None,
                                         [h for names in hooks.values() for h in names])
            for layer, names in hooks.items():
                a = torch.cat([acts[h] for h in names], dim=-1) if len(names) > 1 \
                    else acts[names[0]]
                out[layer].append(a[:, 1:].reshape(-1, a.shape[-1]).cpu())
    return {layer: torch.cat(parts) for layer, parts in out.items()}


def capture_windows(
    model: Model, windows: Int[Tensor, "n seq"], layer: int, batch: int = 8
) -> Float[Tensor, "n_tokens d"]:
    """:func:`capture_windows_layers` for one layer."""
    return capture_windows_layers(model, windows, [layer], batch)[layer]


class SharedForward:
    """One model forward per chunk of windows for the stores of several layers.

    The first store that needs chunk ``c`` of substream ``s`` runs the windows through the
    model once, up to the deepest of ``layers``; every layer's activations (at ``site``) are
    kept until that layer's store takes them (at most one chunk per layer and substream). A
    store of one layer uses one of these on its own.
    """

    def __init__(self, model: Model, layers: Sequence[int], site: str = "resid") -> None:
        self.model = model
        self.site = site
        self.layers = sorted({model.check_layer(layer) for layer in layers})
        self.forward_tokens = 0  # tokens this process has run through the model (MFU)
        self._kept: dict[tuple[int, int], dict[int, Tensor]] = {}

    def take(self, layer: int, shard: int, chunk: int,
             windows: Callable[[], Tensor], forward_batch: int) -> Float[Tensor, "n d"]:
        """Layer ``layer``'s activations of chunk ``chunk`` of substream ``shard``
        (``windows()`` gives that chunk's token windows when the model must run)."""
        key = (shard, chunk)
        kept = self._kept.get(key)
        if kept is None or layer not in kept:
            with phase("tokenise"):
                ids = windows()
            for old in [k for k in self._kept if k[0] == shard]:
                del self._kept[old]
            kept = self._kept[key] = capture_windows_layers(self.model, ids, self.layers,
                                                            forward_batch, self.site)
            self.forward_tokens += ids.numel()
        return kept.pop(layer)


class _Substream:
    """Windows ``shard, shard + n_shards, …`` of the packed text, chunk by chunk."""

    def __init__(self, store: ActivationStore, shard: int) -> None:
        self.store = store
        self.shard = shard
        self.chunk_index = -1
        self.chunk: Tensor | None = None
        self._windows: Iterator[Tensor] | None = None
        self._next_window_chunk = 0

    def _chunk_windows(self, c: int) -> Tensor:
        cfg = self.store.cfg
        per = cfg.windows_per_shard_chunk
        if self._windows is None or self._next_window_chunk != c:
            first_global = c * cfg.windows_per_chunk  # windows of chunk c start here
            self._windows = iter_windows(
                self.store.model, self.store.docs, seq_len=cfg.seq_len, seed=cfg.seed,
                start=first_global,
            )
        rows = []
        for _ in range(per):
            group = [next(self._windows) for _ in range(cfg.data_shards)]
            rows.append(group[self.shard])
        self._next_window_chunk = c + 1
        return torch.stack(rows)

    def load(self, c: int) -> Tensor:
        """Chunk ``c`` of this substream, permuted (cached in memory until the next chunk)."""
        if c == self.chunk_index and self.chunk is not None:
            return self.chunk
        self.chunk = None  # free the old chunk before building the new one
        with phase("data"):
            acts = self.store._read_cached(self.shard, c)
        if acts is None:
            before = self.store.shared.forward_tokens
            acts = self.store.shared.take(self.store.cfg.layer, self.shard, c,
                                          lambda: self._chunk_windows(c),
                                          self.store.cfg.forward_batch)
            if self.store.shared.forward_tokens == before:  # another layer's store ran it
                self._windows = None
            self.store._write_cached(self.shard, c, acts)
        else:
            self._windows = None  # the window iterator no longer matches; rebuilt if needed
        g = torch.Generator().manual_seed(
            (self.store.cfg.seed * 1_000_003 + self.shard) * 1_000_033 + c)
        self.chunk = acts[torch.randperm(acts.shape[0], generator=g)]
        self.chunk_index = c
        return self.chunk

    def tokens(self, start: int, n: int) -> Tensor:
        """Tokens ``start … start + n − 1`` of this substream's shuffled stream."""
        per = self.store.cfg.tokens_per_shard_chunk
        parts = []
        while n > 0:
            c, off = divmod(start, per)
            take = min(n, per - off)
            parts.append(self.load(c)[off:off + take])
            start += take
            n -= take
        return torch.cat(parts) if len(parts) > 1 else parts[0]


class ActivationStore:
    """Batches of shuffled activations at one layer (see module doc).

    Several stores (one per layer, same text and settings) can share their model forward
    passes through one :class:`SharedForward` (``shared``): each chunk then runs through the
    model once for all of them.

    Args:
        model: the model to run.
        docs: the training documents.
        cfg: store settings.
        batch_size: global batch in tokens; must divide by ``cfg.data_shards``.
        rank, world: this process's place among DistributedDataParallel ranks.
        cache_dir: folder for on-disk activation shards, or ``None``.
        data_hash: identifies ``docs`` in the cache key (e.g. the corpus sha256).
    """

    def __init__(
        self, model: Model, docs: Sequence[str], cfg: StoreConfig, *, batch_size: int,
        rank: int = 0, world: int = 1, cache_dir: str | Path | None = None,
        data_hash: str = "", shared: SharedForward | None = None,
    ) -> None:
        if batch_size % cfg.data_shards:
            raise InterpError(
                f"batch size {batch_size} must be a multiple of the data shards "
                f"({cfg.data_shards})")
        if cfg.data_shards % world:
            raise InterpError(
                f"data shards ({cfg.data_shards}) must be a multiple of the number of processes "
                f"({world})")
        model.check_layer(cfg.layer)
        self.model, self.docs, self.cfg = model, docs, cfg
        self.batch_size = batch_size
        self.rank, self.world = rank, world
        self.shards = list(range(rank, cfg.data_shards, world))
        if shared is not None and (cfg.layer not in shared.layers or cfg.site != shared.site):
            raise InterpError(f"the shared forward does not capture {cfg.site} at layer "
                              f"{cfg.layer}")
        self.shared = shared or SharedForward(model, [cfg.layer], cfg.site)
        self.width = model.d_model * len(site_hooks(model, cfg.layer, cfg.site))
        self._subs = {s: _Substream(self, s) for s in self.shards}
        self.cache = Path(cache_dir) / self.cache_key(data_hash) if cache_dir else None
        self._lock: Lock | None = None
        self._writable = True  # False after a cache write failed: no more are tried
        if self.cache is not None:
            self._init_cache(data_hash)

    def close(self) -> None:
        """Let go of the activation cache entry's lock (also at exit or when collected)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @property
    def forward_tokens(self) -> int:
        """Tokens this process has run through the model (for this store and any store
        sharing its forward passes)."""
        return self.shared.forward_tokens

    # ---- batches ------------------------------------------------------------------
    @property
    def local_batch(self) -> int:
        """Tokens this process contributes to each global batch."""
        return self.batch_size // self.cfg.data_shards * len(self.shards)

    def batch(self, step: int) -> Float[Tensor, "local_batch width"]:
        """This process's part of the global batch of ``step`` (substreams concatenated)."""
        per = self.batch_size // self.cfg.data_shards
        return torch.cat([self._subs[s].tokens(step * per, per) for s in self.shards])

    def first_chunk(self) -> Float[Tensor, "n d"]:
        """This process's first chunk of every substream (for the input scale and b_dec)."""
        return torch.cat([self._subs[s].load(0) for s in self.shards])

    # ---- cache --------------------------------------------------------------------
    def cache_key(self, data_hash: str) -> str:
        """The cache folder's name: a hash of the settings (but ``forward_batch``), the model id and
        the text's hash ``data_hash``."""
        key = {**self.cfg.to_dict(), "model_id": self.model.model_id, "data": data_hash}
        key.pop("forward_batch")
        if key["site"] == "resid":  # the residual stream's entries keep their names
            key.pop("site")
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def _init_cache(self, data_hash: str) -> None:
        from interp.runs.atomic import atomic_write_text

        assert self.cache is not None
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only or full cache folder: the run goes on without
            note(f"activations not cached (cannot create activation cache {self.cache}: "
                 f"{exc.strerror or exc}); going on without the cache")
            self.cache = None
            return
        refused: InterpError | None = None
        if self.rank == 0:  # one lock per run, taken by rank 0 (every rank reads and writes)
            from interp.runs.lock import folder_lock

            try:
                self._lock = folder_lock(self.cache, subject=f"activation cache entry {self.cache}",
                                         hint="wait for it or use another cache_dir").acquire()
                weakref.finalize(self, self._lock.release)
                self._check_entry()
            except InterpError as exc:
                refused = exc
        if not ranks_agree(refused is None, self.world, self.model.device):
            raise refused or InterpError(f"activation cache entry {self.cache} is in use by "
                                         "another process (rank 0 could not lock it)")
        info = self.cache / "store.json"
        if self.rank == 0 and not info.is_file():
            from interp.runs.atomic import cache_write

            text = json.dumps(
                {**self.cfg.to_dict(), "model_id": self.model.model_id, "data": data_hash,
                 "hook": ", ".join(site_hooks(self.model, self.cfg.layer, self.cfg.site)),
                 "d_model": self.model.d_model,
                 "version": CACHE_VERSION},
                indent=1)
            self._writable = cache_write(lambda: atomic_write_text(info, text), "activations")

    def _check_entry(self) -> None:
        """An entry of another version (or whose ``store.json`` is damaged) loses its shards,
        with one line on stderr; they are computed again."""
        assert self.cache is not None
        info = self.cache / "store.json"
        if not info.is_file():
            return
        try:
            version = json.loads(info.read_text()).get("version")
            problem = (None if version == CACHE_VERSION
                       else f"of another version ({version or 'unversioned'}, "
                            f"not {CACHE_VERSION})")
        except (OSError, ValueError, AttributeError):
            problem = "damaged (store.json unreadable)"
        if problem is None:
            return
        note(f"activation cache entry {self.cache} is {problem}; rebuilding")
        for shard in self.cache.glob("*.safetensors"):
            shard.unlink(missing_ok=True)
        info.unlink(missing_ok=True)

    def _shard_path(self, shard: int, chunk: int) -> Path:
        assert self.cache is not None
        return self.cache / f"s{shard:03d}-c{chunk:06d}.safetensors"

    def _read_cached(self, shard: int, chunk: int) -> Tensor | None:
        if self.cache is None:
            return None
        p = self._shard_path(shard, chunk)
        if not p.is_file():
            return None
        from safetensors import safe_open

        problem = None
        try:
            with safe_open(str(p), framework="pt") as f:
                meta = f.metadata() or {}
                acts = f.get_tensor("acts")
        except Exception:  # noqa: BLE001 - truncated, not safetensors, no "acts": damaged
            problem, acts, meta = "damaged (unreadable)", None, {}
        if problem is None and meta.get("version") != str(CACHE_VERSION):
            problem = f"of another version ({meta.get('version') or 'unversioned'})"
        elif problem is None and meta.get("sha256") != _digest(acts):
            problem = "damaged (sha256 mismatch)"
        elif problem is None and acts is not None and tuple(acts.shape) != (
                self.cfg.tokens_per_shard_chunk, self.width):
            problem = "damaged (wrong shape)"
        if problem is not None or acts is None:  # recomputed, never trusted
            note(f"activation cache shard {p} is {problem}; rebuilding it")
            p.unlink(missing_ok=True)
            return None
        return acts

    def _write_cached(self, shard: int, chunk: int, acts: Tensor) -> None:
        """Cache a chunk's activations. The cache only saves time: a write that fails (a
        full disk, a read-only folder) is one line on stderr, leaves no partial shard, and
        the run goes on with the activations it computed, writing no more shards."""
        if self.cache is None or not self._writable:
            return
        from interp.runs.atomic import cache_write

        self._writable = cache_write(lambda: self._write_shard(shard, chunk, acts),
                                     "activations")

    def _write_shard(self, shard: int, chunk: int, acts: Tensor) -> None:
        import os
        import tempfile

        from interp.runs.atomic import save_safetensors, write_error

        target = self._shard_path(shard, chunk)
        kept = "the cached chunks written before are kept"
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise write_error(target, exc, kept) from None
        os.close(fd)
        try:
            save_safetensors({"acts": acts.contiguous()}, tmp, metadata={
                "version": str(CACHE_VERSION), "sha256": _digest(acts)})
            os.replace(tmp, target)
        except OSError as exc:  # a full disk: one line, no partial shard left behind
            raise write_error(target, exc, kept) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


class LayersStore:
    """Batches of the same tokens at several layers, side by side: one
    :class:`ActivationStore` per layer (same text and settings, one shared forward), whose
    batches hold the same tokens in the same order (the windows and each chunk's permutation
    depend on the seed, the substream and the chunk, not on the layer). A cross-layer
    transcoder trains on these rows (``[layer 0's row | layer 1's row | …]``)."""

    def __init__(self, stores: Sequence[ActivationStore]) -> None:
        if not stores:
            raise InterpError("no layers to read")
        self.stores = list(stores)
        self.shared = self.stores[0].shared

    def close(self) -> None:
        """Let go of every layer's cache entry lock."""
        for store in self.stores:
            store.close()

    @property
    def forward_tokens(self) -> int:
        """Tokens this process has run through the model."""
        return self.shared.forward_tokens

    def batch(self, step: int) -> Float[Tensor, "local_batch width"]:
        """Every layer's part of the batch of ``step``, side by side."""
        return torch.cat([s.batch(step) for s in self.stores], dim=1)

    def first_chunk(self) -> Float[Tensor, "n width"]:
        """Every layer's first chunk, side by side (for the scales and ``b_dec``)."""
        return torch.cat([s.first_chunk() for s in self.stores], dim=1)


def _digest(acts: Tensor | None) -> str:
    """sha256 of a shard's activations (their bytes, as stored)."""
    if acts is None:
        return ""
    flat = acts.detach().contiguous().cpu().reshape(-1).view(torch.uint8)
    return hashlib.sha256(flat.numpy().data).hexdigest()


def mean_sq_norm(x: Tensor) -> tuple[float, int]:
    """Σ‖x‖² (float64) and the row count, for the input scale across processes."""
    return float(x.double().pow(2).sum()), int(x.shape[0])


def input_scale(sum_sq: float, n: int, d_in: int) -> float:
    """The constant c with ``E‖c·x‖² = d_in``."""
    if n == 0 or not math.isfinite(sum_sq) or sum_sq <= 0:
        raise InterpError("cannot scale activations: they are all zero or not finite")
    return math.sqrt(d_in * n / sum_sq)

