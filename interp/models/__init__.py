"""Loading models: the embedded GGUF checkpoints, local folders and hub names."""

from __future__ import annotations

from interp.models.loading import Model, list_models, load, parse_device, parse_dtype

__all__ = ["Model", "list_models", "load", "parse_device", "parse_dtype"]
