"""The SAE-independent half of the spliced CE, kept on disk between evaluations.

:func:`saes.metrics.evaluate_sae` splices four variants into the model: clean, the SAE,
zero ablation and mean ablation. Zero and mean ablation (their CE and their KL against
the clean run, per window) do not depend on the SAE: they are fixed by the model's
weights, the hook point, the held-out windows and the mean activation (itself a function
of the windows). Evaluating many SAEs at one layer (a sweep, the frontier) recomputes
them every time; here they are stored once per such key and read back, so a warm
evaluation runs two suffixes per batch (clean, for the SAE's KL, and the SAE) instead of
four. The numbers are the same arrays, so every metric is identical.

The key hashes the model id, dtype and device type, a strided sample of every weight
(any fine-tune changes it), the hook point, the window token ids and the mean vector.
Files live in ``$INTERP_CACHE/sae-eval-baselines/<key>.safetensors`` (atomic writes, each with
its format version and sha256: one truncated, edited or of another version is recomputed;
one that cannot be written, to a full disk or a read-only cache, is one line on stderr and
the evaluation goes on; delete the folder to drop them; ``EvalConfig(cache_baselines=False)`` or
``interp sae eval --no-baseline-cache`` bypasses them).
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import torch
from jaxtyping import Float, Int
from safetensors.torch import load, save
from torch import Tensor

from interp.models.loading import Model
from interp.runs.atomic import atomic_write_bytes, cache_write
from interp.runs.paths import cache_dir
from interp.runs.progress import note

__all__ = ["BASELINE_KEYS", "baseline_key", "baseline_path", "load_baselines",
           "save_baselines"]

#: The per-window arrays stored: CE sums and KL(clean ‖ ·) sums of both ablations.
BASELINE_KEYS = ("zero", "mean", "kl_zero", "kl_mean")
_STRIDE = 997  # sample every 997th weight of each parameter: cheap, and any edit shows
#: The entries' format, in their safetensors metadata beside the arrays' sha256; an entry
#: of another version (or none), truncated or edited is computed again, saying so.
CACHE_VERSION = 2


@torch.no_grad()
def baseline_key(model: Model, hook: str, windows: Int[Tensor, "n seq"],
                 mean: Float[Tensor, " d"]) -> str:
    """Hex digest naming the baselines of ``model`` at ``hook`` on ``windows``."""
    h = hashlib.sha256()
    h.update(f"{model.model_id}|{model.dtype}|{model.device.type}|{hook}|".encode())
    for name, p in model.bridge.named_parameters():
        h.update(name.encode())
        h.update(str(tuple(p.shape)).encode())
        h.update(p.detach().reshape(-1)[::_STRIDE].float().cpu().numpy().tobytes())
    h.update(windows.to(torch.int64).cpu().numpy().tobytes())
    h.update(mean.double().cpu().numpy().tobytes())
    return h.hexdigest()[:32]


def baseline_path(key: str) -> Path:
    """Where the ablation baselines of cache key ``key`` are kept
    (``<cache>/sae-eval-baselines/<key>.safetensors``)."""
    return cache_dir() / "sae-eval-baselines" / f"{key}.safetensors"


def _digest(tensors: dict[str, Tensor]) -> str:
    """sha256 of the arrays (names and bytes, in name order)."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(tensors[name].contiguous().numpy().tobytes())
    return h.hexdigest()


def load_baselines(key: str, n_windows: int) -> dict[str, np.ndarray] | None:
    """The stored arrays for ``key``, or None (absent; or truncated, edited or of another
    version: then one line on stderr says they are computed again, and they are rewritten)."""
    path = baseline_path(key)
    if not path.is_file():
        return None
    problem = None
    tensors: dict[str, Tensor] = {}
    meta: dict[str, str] = {}
    try:
        raw = path.read_bytes()
        tensors = load(raw)
        (n,) = struct.unpack_from("<Q", raw, 0)
        meta = json.loads(raw[8:8 + n]).get("__metadata__") or {}
    except Exception:  # noqa: BLE001 - truncated or not safetensors
        problem = "damaged (unreadable)"
    if problem is None and meta.get("version") != str(CACHE_VERSION):
        problem = f"of another version ({meta.get('version') or 'unversioned'})"
    elif problem is None and meta.get("sha256") != _digest(tensors):
        problem = "damaged (sha256 mismatch)"
    elif problem is None and (set(tensors) != set(BASELINE_KEYS) or any(
            tuple(t.shape) != (n_windows,) for t in tensors.values())):
        problem = "damaged (other arrays than the key names)"
    if problem is not None:
        note(f"SAE-eval baseline cache entry {path} is {problem}; rebuilding")
        return None
    return {k: t.numpy() for k, t in tensors.items()}


def save_baselines(key: str, per: dict[str, np.ndarray]) -> Path | None:
    """Store the arrays of :data:`BASELINE_KEYS` from ``per`` under ``key`` (with the
    format's version and their sha256); the file, or None when it could not be written
    (a full disk, a read-only cache: one line on stderr, no partial file, the evaluation
    goes on with the numbers it computed)."""
    path = baseline_path(key)
    tensors = {k: torch.from_numpy(np.ascontiguousarray(per[k], dtype=np.float64))
               for k in BASELINE_KEYS}
    data = save(tensors, metadata={"version": str(CACHE_VERSION), "sha256": _digest(tensors)})
    written = cache_write(lambda: atomic_write_bytes(path, data), "SAE-eval baselines")
    return path if written else None
