"""Config and result types of a model verification (``interp models --verify``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from interp.schema import Check as Rule
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    each,
    not_empty,
    positive,
    setting,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Prompts of different lengths and kinds (prose, digits, code, a question), so that
#: a batch of them needs padding and covers more than one tokenizer path.
DEFAULT_PROMPTS: tuple[str, ...] = (
    "The Eiffel Tower is in the city of",
    "In 1969, 3 astronauts flew 384,400 km to the Moon and",
    "def add(a, b):\n    return",
    "Water boils at",
    "Why is the sky blue? Because",
)


#: A prompt with at least one non-blank character.
_non_blank = Rule(lambda p: isinstance(p, str) and p.strip() != "", "must not be blank")


@dataclass(frozen=True)
class VerifyConfig(Config):
    """What :func:`~interp.verify.checks.verify_model` checks, and how strictly."""

    prompts: tuple[str, ...] = setting(
        DEFAULT_PROMPTS, cli=False, check=(not_empty, each(_non_blank)),
        help="Prompts of different lengths and kinds, so that a batch of them needs padding.")
    max_new_tokens: int = setting(
        8, cli=False, check=at_least(1),
        help="Generated tokens per prompt in the batched-versus-one-at-a-time check.")
    logit_tolerance: float = setting(
        1e-3, cli=False, check=positive,
        help="Largest |difference| of two float32 logit computations that still counts as "
             "equal.")
    capture_tolerance: float = setting(
        1e-3, cli=False, check=positive,
        help="Largest |difference| of residual-stream activations captured alone or in a "
             "batch.")
    compare_hf: bool = setting(
        True,
        help="Skip the comparison with the plain transformers model (it loads the checkpoint "
        "a second time).", cli=Cli(flag="--no-hf"))


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
        """``"pass"``, ``"FAIL"`` or ``"not run"``."""
        return {True: "pass", False: "FAIL", None: "not run"}[self.passed]


@dataclass
class VerifyResult(Result):
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

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (
        "config", "model_id", "architecture", "n_layers", "d_model", "d_vocab",
        "special_prefix", "passed", "checks", "seconds", "table_row")

    @property
    def passed(self) -> bool:
        """Every check that ran passed (a check that could not run is not a failure)."""
        return all(c.passed is not False for c in self.checks)

    def check(self, name: str) -> Check:
        """The check named ``name`` (KeyError when there is none)."""
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
        """The header of the README's verified-models table (Markdown), the columns of
        :meth:`table_row`."""
        cols = ["model", "architecture", "size", "lens = logits", "hooked = HF logits",
                "capture batch-invariant", "BOS convention", "generate batched = alone"]
        return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)

    def extra_data(self) -> dict[str, Any]:
        """Adds ``passed`` and the model's ``table_row``."""
        return {"passed": self.passed, "table_row": self.table_row()}

    def headline(self) -> Headline:
        """One row per check: its outcome, the measured difference, the tolerance, and what
        it compared."""
        verdict = ("every check that ran passed" if self.passed
                   else "at least one check FAILED: interp does not read this model correctly")
        return Headline(
            title=f"verify · {self.model_id} · {self.architecture}",
            table_title=f"verify · {self.model_id} · {self.architecture}",
            rows=[("model", self.model_id), ("architecture", self.architecture),
                  ("size", f"{self.n_layers} × {self.d_model}, vocab {self.d_vocab:,}")],
            columns=["check", "result", "measured", "tolerance", "what was compared"],
            table=[[c.name, c.mark, None if c.value is None else f"{c.value:.2e}",
                    None if c.tolerance is None else f"{c.tolerance:g}", c.detail]
                   for c in self.checks],
            verdict=verdict)

    def figure(self) -> Figure | None:
        """:func:`~interp.verify.figures.checks_figure`: each check's measured difference against
        its tolerance."""
        from interp.verify.figures import checks_figure

        return checks_figure(self)
