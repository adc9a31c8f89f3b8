"""Text generation: one batched, KV-cached, hook-aware engine for every tool."""

from __future__ import annotations

from interp.generation.engine import (
    Generation,
    GenerationConfig,
    GenerationResult,
    GenerationStats,
    generate,
)

__all__ = ["Generation", "GenerationConfig", "GenerationResult", "GenerationStats", "generate"]
