"""Config and result types of a model verification (``interp models --verify``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from interp.display import result_html
from interp.errors import InterpError

#: Prompts of different lengths and kinds (prose, digits, code, a question), so that
#: a batch of them needs padding and covers more than one tokenizer path.
DEFAULT_PROMPTS: tuple[str, ...] = (
    "The Eiffel Tower is in the city of",
    "In 1969, 3 astronauts flew 384,400 km to the Moon and",
    "def add(a, b):\n    return",
    "Water boils at",
    "Why is the sky blue? Because",
)


@dataclass
class VerifyConfig:
    """What :func:`~interp.verify.checks.verify_model` checks, and how strictly."""

    prompts: tuple[str, ...] = DEFAULT_PROMPTS
    #: generated tokens per prompt in the batched-versus-one-at-a-time check
    max_new_tokens: int = 8
    #: largest |difference| of two float32 logit computations that still counts as equal
    logit_tolerance: float = 1e-3
    #: largest |difference| of residual-stream activations captured alone or in a batch
    capture_tolerance: float = 1e-3
    #: compare with the plain Hugging Face model (loads the checkpoint a second time)
    compare_hf: bool = True

    def check(self) -> None:
        if not self.prompts or any(not p.strip() for p in self.prompts):
            raise InterpError("verify needs at least one non-blank prompt")
        if self.max_new_tokens < 1:
            raise InterpError(f"max new tokens must be ≥ 1, got {self.max_new_tokens}")
        for name in ("logit_tolerance", "capture_tolerance"):
            if not getattr(self, name) > 0:
                raise InterpError(f"{name.replace('_', ' ')} must be > 0")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["prompts"] = list(self.prompts)
        return d


@dataclass
class Check:
    """One verification: what was measured, against what, and whether it passed."""

    name: str
    passed: bool | None  # None: not run (the reason is in ``detail``)
    value: float | None
    tolerance: float | None
    detail: str

    @property
    def mark(self) -> str:
        return {True: "pass", False: "FAIL", None: "not run"}[self.passed]


@dataclass
class VerifyResult:
    """Every check run on one model; ``to_dict()`` is ``results.json``."""

    config: VerifyConfig
    model_id: str
    architecture: str
    n_layers: int
    d_model: int
    d_vocab: int
    special_prefix: list[str]
    checks: list[Check]
    seconds: float
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every check that ran passed (a check that could not run is not a failure)."""
        return all(c.passed is not False for c in self.checks)

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def table_row(self) -> str:
        """The model's row of the README's verified-models table (Markdown)."""
        cells = [f"`{self.model_id}`", self.architecture,
                 f"{self.n_layers} × {self.d_model}, vocab {self.d_vocab:,}"]
        for c in self.checks:
            if c.name == "bos":
                cells.append(f"{c.mark}: {c.detail}")
            elif c.name == "generate_batch" and c.value is not None:
                cells.append(f"{c.mark} ({int(c.value)} of {len(self.config.prompts)} differ)")
            elif c.value is not None:
                cells.append(f"{c.mark} ({c.value:.1e})")
            else:
                cells.append(c.mark)
        return "| " + " | ".join(cells) + " |"

    @staticmethod
    def table_header() -> str:
        cols = ["model", "architecture", "size", "lens = logits", "hooked = HF logits",
                "capture batch-invariant", "BOS convention", "generate batched = alone"]
        return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "model_id": self.model_id,
            "architecture": self.architecture,
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "d_vocab": self.d_vocab,
            "special_prefix": self.special_prefix,
            "passed": self.passed,
            "checks": [asdict(c) for c in self.checks],
            "seconds": self.seconds,
            "table_row": self.table_row(),
        }

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(c) for c in self.checks])

    def _repr_html_(self) -> str:
        return result_html(
            f"Verification of {self.model_id}",
            [(c.name, f"{c.mark}: {c.detail}") for c in self.checks],
        )
