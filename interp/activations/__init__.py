"""Reading activations: every hook read of the project goes through
:func:`~interp.activations.capture.capture`.

The function is not re-exported here: it would shadow its module,
:mod:`interp.activations.capture` (import it from there, or as ``interp.capture``).
"""

from __future__ import annotations

from interp.activations.capture import (
    Activations,
    forward_with_hooks,
    iter_capture,
    resolve_hooks,
    summarize,
)

__all__ = [
    "Activations",
    "forward_with_hooks",
    "iter_capture",
    "resolve_hooks",
    "summarize",
]
