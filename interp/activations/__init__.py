"""Reading activations: every hook read of the project goes through :func:`capture`."""

from __future__ import annotations

from interp.activations.capture import (
    Activations,
    capture,
    forward_with_hooks,
    iter_capture,
    resolve_hooks,
    summarize,
)

__all__ = [
    "Activations",
    "capture",
    "forward_with_hooks",
    "iter_capture",
    "resolve_hooks",
    "summarize",
]
