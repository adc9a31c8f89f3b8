"""The programmatic scorer: does a context hold the tokens an explanation names?

It reads the tokens an explanation quotes (``'the tokens " because", " since"'``; a cue
``'" bank" after " river"'`` needs its preceding token) and scores a context by matching
them, with no language model. It is the scorers' baseline, as the programmatic explainer
is the explainers': it checks the pipeline end to end (a planted feature's explanation
must score AUROC ≈ 1 against a shuffled one's ≈ 0.5), and measures how much of a feature
its named tokens carry. An explanation that quotes no token (most language-model
explanations) scores every context 0: AUROC 0.5, by construction.

- **Detection**: the number of the context's tokens that match a cue (the score's ranks
  are what AUROC reads; balanced accuracy predicts "fires" for any match).
- **Fuzzing**: the share of the marked tokens that match a cue, less ½ (positive: most
  marked tokens are the named ones), or −½ when nothing is marked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from saes.results import FeatureContext

#: A Python string literal, as :meth:`~saes.autointerp.explainers.Cue.text` writes a token.
_LITERAL = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")
_CUE = re.compile(rf"({_LITERAL.pattern})(?:\s+after\s+({_LITERAL.pattern}))?")


def parse_cues(explanation: str) -> list[tuple[str, str | None]]:
    """The ``(token, preceding token or None)`` cues an explanation quotes."""
    out = []
    for m in _CUE.finditer(explanation):
        try:
            tok = ast.literal_eval(m.group(1))
            prev = ast.literal_eval(m.group(2)) if m.group(2) else None
        except (ValueError, SyntaxError):
            continue
        if isinstance(tok, str) and (prev is None or isinstance(prev, str)):
            out.append((tok, prev))
    return out


def _hits(tokens: Sequence[str], cues: Sequence[tuple[str, str | None]]) -> list[bool]:
    return [any(t == tok and (prev is None or (j > 0 and tokens[j - 1] == prev))
                for tok, prev in cues) for j, t in enumerate(tokens)]


def token_scores(
    explanation: str, contexts: Sequence[FeatureContext],
    marked: Sequence[Sequence[bool]] | None = None,
) -> Float[Tensor, " n"]:
    """Detection scores of ``contexts`` (``marked`` None) or fuzzing scores of the contexts
    with those tokens marked (see the module doc)."""
    cues = parse_cues(explanation)
    out = []
    for i, c in enumerate(contexts):
        hits = _hits(c.tokens, cues)
        if marked is None:
            out.append(float(sum(hits)))
            continue
        m = marked[i]
        n = sum(bool(x) for x in m)
        out.append(sum(h for h, x in zip(hits, m, strict=True) if x) / n - 0.5 if n else -0.5)
    return torch.tensor(out, dtype=torch.float32)


__all__ = ["parse_cues", "token_scores"]
