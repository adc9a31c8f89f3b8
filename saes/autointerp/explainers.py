"""The programmatic explainer: the tokens (and, where they need it, the preceding token)
that carry a feature's activation in its contexts. Every other explainer must beat it.

For each token text among the contexts it measures **coverage** (its share of the
feature's total activation mass in the contexts) and **precision** (the share of its
occurrences in the contexts where the feature fires). Tokens with precision ≥
``min_precision`` are taken by coverage, largest first, until ``coverage`` of the mass is
explained or ``max_tokens`` are named. When a token fires only after a particular
preceding token (its precision alone is lower, the bigram's high), the bigram is named
instead: 'the token " bank" after " river"' (when the bigram carries ≥ 80% of the
token's mass and its precision is ≥ 0.2 higher). Deterministic: ties break by token text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

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
    if not cues:
        return "no consistent token"
    names = ", ".join(c.text() for c in cues)
    return f"the token {names}" if len(cues) == 1 else f"the tokens {names}"


__all__ = ["Cue", "programmatic_explanation", "token_cues"]
