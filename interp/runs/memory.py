"""Memory budgets: refuse, before any work starts, a request that would not fit.

The large requests of interp are few and their peaks are known from their shapes:

* logits over the vocabulary (generation, lenses, scoring, tuned-lens training and
  evaluation): ``rows × positions × vocab × 4`` bytes, held about twice over (the logits
  and their softmax);
* a sparse autoencoder in training: its ``2 · d_sae · d_model`` weights with their
  gradients and Adam's two moments (4 copies), and the activation store's chunk
  (``windows_per_chunk × seq_len × d_model × 4`` bytes, and a shuffled copy).

:func:`require` compares such an estimate with the memory available (the free memory
of the CUDA device a run uses, else the RAM available to new work:
``psutil.virtual_memory().available``, or ``MemAvailable`` in ``/proc/meminfo``) and
raises one :class:`~interp.errors.InterpError` line with both figures and what to
lower. ``INTERP_MAX_MEMORY_GB`` (the limit :func:`~interp.activations.capture.capture` also reads)
replaces the available figure, for a stricter budget or for tests.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from interp.errors import InterpError

if TYPE_CHECKING:
    import torch

ENV = "INTERP_MAX_MEMORY_GB"
"""Environment variable: the memory budget in GB (GiB), replacing the available memory."""

FLOAT32 = 4


def budget_from_env() -> int | None:
    """``$INTERP_MAX_MEMORY_GB`` in bytes, or None when it is not set."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        gb = float(raw)
    except ValueError:
        raise InterpError(f"{ENV} must be a number of GB, got {raw!r}") from None
    if not math.isfinite(gb) or gb <= 0:
        raise InterpError(f"{ENV} must be a positive number of GB, got {raw!r}")
    return int(gb * 2**30)


def _ram_available() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil is a dependency of torch's tooling
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        pass
    try:  # pragma: no cover - neither: half the physical memory
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 16 * 2**30


def available_bytes(device: str | torch.device | None = None) -> int:
    """The memory a new request may use: the budget, else the device's free memory."""
    budget = budget_from_env()
    if budget is not None:
        return budget
    if device is not None and str(device).startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    return _ram_available()


def size_text(n: float) -> str:
    """``41.2 GiB``, ``310.0 MiB``, ``12.0 KiB``, ``93.1 TiB``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale or unit == "KiB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError  # pragma: no cover


def require(need: float, what: str, advice: str,
            device: str | torch.device | None = None) -> None:
    """Refuse (one line) a request needing ``need`` bytes when less is available.

    The line reads ``"{what} would need about 41.2 GiB; 23.1 GiB available: {advice}"``.
    """
    have = available_bytes(device)
    if need > have:
        where = "" if device is None or str(device) == "cpu" else f" on {device}"
        raise InterpError(f"{what} would need about {size_text(need)}; {size_text(have)} "
                          f"available{where}: {advice}")


def logits_bytes(rows: int, positions: int, vocab: int, copies: float = 2) -> int:
    """Float32 logits of ``rows × positions`` over ``vocab``, held ``copies`` times."""
    return int(rows * positions * vocab * FLOAT32 * copies)


def sae_training_bytes(d_sae: int, d_model: int, *, batch: int, chunk_tokens: int,
                       n_saes: int = 1) -> int:
    """Peak bytes of SAE training beside the model.

    Each SAE: its two ``d_sae × d_model`` matrices with gradients and Adam's moments
    (4 copies), and its batch's latents (``batch × d_sae``, forward and backward, 3
    copies). The activation store: its chunk of ``chunk_tokens × d_model`` activations
    per SAE and a shuffled copy.
    """
    weights = 2 * d_sae * d_model * FLOAT32 * 4
    latents = batch * d_sae * FLOAT32 * 3
    chunk = chunk_tokens * d_model * FLOAT32 * 2
    return n_saes * (weights + latents + chunk)


__all__ = ["ENV", "available_bytes", "budget_from_env", "logits_bytes", "require",
           "sae_training_bytes", "size_text"]
