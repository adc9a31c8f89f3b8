"""Explainers: the programmatic baseline and a language-model explainer.

**The programmatic explainer**: the tokens (and, where they need it, the preceding token)
that carry a feature's activation in its contexts. Every other explainer must beat it.

For each token text among the contexts it measures **coverage** (its share of the
feature's total activation mass in the contexts) and **precision** (the share of its
occurrences in the contexts where the feature fires). Tokens with precision ≥
``min_precision`` are taken by coverage, largest first, until ``coverage`` of the mass is
explained or ``max_tokens`` are named. When a token fires only after a particular
preceding token (its precision alone is lower, the bigram's high), the bigram is named
instead: 'the token " bank" after " river"' (when the bigram carries ≥ 80% of the
token's mass and its precision is ≥ 0.2 higher). Deterministic: ties break by token text.

**The language-model explainer** (:func:`lm_explanations`) shows an instruct model the top
contexts with the active tokens marked ``<<…>>`` (delphi's explainer prompt shows its
examples the same way) and takes its greedy answer, through the generation engine:
batched over features, and with ``deterministic=True`` independent of the batch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from interp.errors import InterpError
from interp.generation.engine import generate
from interp.models.loading import Model
from saes.results import FeatureContext

#: A bigram replaces its token when it carries this share of the token's activation mass
BIGRAM_MASS = 0.8
#: ... and its precision is at least this much higher than the token's alone
BIGRAM_GAIN = 0.2


@dataclass(frozen=True)
class Cue:
    """One named cue: a token, optionally after a preceding token, with its share of the
    activation mass and its precision in the contexts."""

    token: str
    previous: str | None
    coverage: float
    precision: float

    def text(self) -> str:
        """``" because"`` or ``" bank" after " river"``."""
        return repr(self.token) if self.previous is None else \
            f"{self.token!r} after {self.previous!r}"


def _stats(contexts: Sequence[FeatureContext], key) -> tuple[dict, dict, dict]:  # noqa: ANN001
    mass: dict = defaultdict(float)
    fires: dict = defaultdict(int)
    seen: dict = defaultdict(int)
    for c in contexts:
        for j, (tok, act) in enumerate(zip(c.tokens, c.acts, strict=True)):
            k = key(c.tokens, j, tok)
            if k is None:
                continue
            seen[k] += 1
            if act > 0:
                fires[k] += 1
                mass[k] += act
    return mass, fires, seen


def token_cues(
    contexts: Sequence[FeatureContext], *, coverage: float = 0.8, max_tokens: int = 5,
    min_precision: float = 0.5,
) -> list[Cue]:
    """The cues that explain the feature's activation in ``contexts`` (see the module doc)."""
    mass, fires, seen = _stats(contexts, lambda toks, j, tok: tok)
    total = sum(mass.values())
    if total <= 0:
        return []
    bi_mass, bi_fires, bi_seen = _stats(
        contexts, lambda toks, j, tok: (toks[j - 1], tok) if j > 0 else None)
    cues: list[Cue] = []
    got = 0.0
    for tok in sorted(mass, key=lambda t: (-mass[t], t)):
        if got >= coverage or len(cues) >= max_tokens:
            break
        prec = fires[tok] / seen[tok]
        # the preceding token that carries (nearly) all of this token's mass, if any
        pairs = [k for k in bi_mass if k[1] == tok]
        best = max(pairs, key=lambda k: (bi_mass[k], k[0]), default=None)
        if best is not None and bi_mass[best] >= BIGRAM_MASS * mass[tok]:
            bprec = bi_fires[best] / bi_seen[best]
            if bprec >= min_precision and bprec >= prec + BIGRAM_GAIN:
                cues.append(Cue(tok, best[0], bi_mass[best] / total, bprec))
                got += bi_mass[best] / total
                continue
        if prec >= min_precision:
            cues.append(Cue(tok, None, mass[tok] / total, prec))
            got += mass[tok] / total
    return cues


def programmatic_explanation(contexts: Sequence[FeatureContext], **settings: float) -> str:
    """The explanation text of :func:`token_cues`: 'the tokens " because", " since"'."""
    cues = token_cues(contexts, **settings)  # type: ignore[arg-type]
    return tokens_text([c.text() for c in cues]) if cues else "no consistent token"


def tokens_text(cues: Sequence[str]) -> str:
    """'the token X' or 'the tokens X, Y' of cue texts (:meth:`Cue.text`): the programmatic
    explanations' wording, and a token-level planted feature's reference explanation."""
    names = ", ".join(cues)
    return f"the token {names}" if len(cues) == 1 else f"the tokens {names}"


#: The explainer's request. No example answer in it: SmolLM2-135M-Instruct copied any
#: example phrase it was given into every explanation (measured on 20 features); of three
#: wordings tried, this one gave it answers that name a topic.
EXPLAIN_PROMPT = (
    "Text snippets, with some words marked <<like this>>:\n\n{examples}\n\n"
    "In five words or fewer, what topic or kind of word do the marked words share?"
)

#: Lead-ins an answer often starts with, dropped from the explanation.
LEADS = ("The marked words share the topic of ", "The marked words share ", "The marked words are ",
         "The marked words ", "They are ", "Answer: ")


def explainer_prompt(contexts: Sequence[FeatureContext], marked: Sequence[Sequence[bool]],
                     ) -> str:
    """The explainer's request: the contexts numbered, their marked tokens in ``<<…>>``."""
    from saes.autointerp.scoring import marked_text

    lines = [f"{i + 1}. {marked_text(c.tokens, m).strip()}".replace("\n", " ")
             for i, (c, m) in enumerate(zip(contexts, marked, strict=True))]
    return EXPLAIN_PROMPT.format(examples="\n".join(lines))


def clean_explanation(text: str, limit: int = 160) -> str:
    """A generated answer as an explanation: its first line, without surrounding quotes,
    a trailing full stop or a lead-in such as 'The marked words share the topic of'."""
    line = text.strip().split("\n", 1)[0].strip()
    for lead in LEADS:
        if line.lower().startswith(lead.lower()):
            line = line[len(lead):]
            break
    line = line.strip().rstrip(".").strip().strip('"').rstrip(".").strip()
    return line[:limit] if line else "no explanation"


def check_explainer(model: Model) -> None:
    """Refuse an explainer that is not an instruct model (it has no chat template)."""
    if not model.has_chat_template:
        raise InterpError(f"the explainer {model.model_id} is not an instruct model (it has no "
                          "chat template): use --explainer programmatic or an instruct model")


def lm_explanations(
    model: Model, contexts: Sequence[Sequence[FeatureContext]], *, max_new_tokens: int = 24,
    deterministic: bool = True, batch_size: int = 8, progress: bool | None = None,
) -> list[str]:
    """One explanation per feature from an instruct ``model`` shown ``contexts[i]`` (each
    context's active tokens marked), greedy, one batched call of the generation engine."""
    check_explainer(model)
    prompts = [explainer_prompt(cs, [[a > 0 for a in c.acts] for c in cs]) for cs in contexts]
    if not prompts:
        return []
    out = generate(model, prompts, chat=True, max_new_tokens=max_new_tokens, temperature=0.0,
                   deterministic=deterministic, batch_size=batch_size, stop=("\n",),
                   progress=progress)
    return [clean_explanation(t) for t in out.texts]


__all__ = ["EXPLAIN_PROMPT", "Cue", "check_explainer", "clean_explanation", "explainer_prompt",
           "lm_explanations", "programmatic_explanation", "token_cues", "tokens_text"]
