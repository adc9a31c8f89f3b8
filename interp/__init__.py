"""interp: mechanistic interpretability for transformer language models.

Quick start::

    import interp
    model = interp.load()                       # embedded SmolLM2-135M-Instruct
    acts = interp.capture(model, ["The capital of France is"], layers=[6])
    result = interp.logit_lens(model, "The capital of France is")
"""

from __future__ import annotations

import os

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

__version__ = "0.1.0"

from interp.capture import Activations, capture, iter_capture  # noqa: E402
from interp.errors import InterpError  # noqa: E402
from interp.generate import GenerationResult, generate  # noqa: E402
from interp.lens import LensResult, LogitLens, logit_lens, run_lens  # noqa: E402
from interp.models import Model, load  # noqa: E402

__all__ = [
    "Activations",
    "InterpError",
    "GenerationResult",
    "LensResult",
    "LogitLens",
    "Model",
    "capture",
    "generate",
    "iter_capture",
    "load",
    "logit_lens",
    "run_lens",
]
