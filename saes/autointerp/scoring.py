"""Scoring an explanation: detection and fuzzing, read from a scorer's log-probabilities.

As delphi's classifier scorers (``delphi/scorers/classifier``: the scorer model reads the
explanation and examples and answers whether each is a true example; with ``log_prob``
the probability comes from the answer token's log-probabilities), with one example per
query, so no answer has to be parsed out of generated text: the score of a text is the
scorer's log-odds ``log Σ P(yes tokens) − log Σ P(no tokens)`` at the first answer
position. A score is a pure function of the prompt: deterministic, no sampling.

- **Detection** (:data:`DETECTION`): given the explanation, does this text make the
  feature fire? Positives are held-out activating texts, negatives non-activating ones.
- **Fuzzing** (:data:`FUZZING`): given the explanation, are the words marked ``<<…>>`` in
  this text the ones the feature fires on? Positives are activating texts with their
  active tokens marked; negatives are non-activating texts marked at the positions of an
  activating example (delphi's default fuzzing: its ``_prepare_and_batch``).

delphi shows several examples per prompt and reads one answer per example; one example
per prompt costs more prompts but makes every score independent of its neighbours and of
the batch, and the shared prefix (below) pays for it.

**The shared prefix.** Every prompt for one explanation is the same instructions, few-shot
examples and explanation, then the text. The longest common *token* prefix of the
tokenized prompts (measured, not assumed at a string boundary, so a merge across the
boundary cannot make it wrong) runs once into a KV cache; each batch of texts copies it
(``batch_repeat_interleave``) and runs only its own tokens, right-padded, reading each
row at its last real token. ``share_prefix=False`` runs every prompt whole, left-padded
(the reference): the scores agree to float rounding (``tests/unit/saes/test_autointerp.py``).
Both paths stop at the final norm and unembed only the rows they read.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from interp.errors import InterpError
from interp.models.forward import forward
from interp.models.loading import Model


@dataclass(frozen=True)
class ScoringPrompt:
    """A scorer's prompt: instructions with few-shot examples, the query (``{explanation}``
    and ``{text}``), and the spellings of the yes and no answers (each counted when it is
    one token of the scorer's vocabulary)."""

    name: str
    instructions: str
    query: str
    yes: tuple[str, ...] = (" yes", " Yes", "yes", "Yes")
    no: tuple[str, ...] = (" no", " No", "no", "No")


#: The detection prompt: does the text contain what the explanation describes? (yes/no)
#:
#: :meta hide-value:
DETECTION = ScoringPrompt(
    "detection",
    "Answer yes if the text contains what the explanation describes, no otherwise.\n\n"
    "Explanation: the token \" rain\"\nText: We stayed home because of the rain.\n"
    "Answer: yes\n\n"
    "Explanation: the token \" rain\"\nText: The train left the station at noon.\n"
    "Answer: no\n\n"
    "Explanation: words about colours\nText: She painted the door blue.\nAnswer: yes\n\n"
    "Explanation: words about colours\nText: He went to bed early.\nAnswer: no\n\n",
    "Explanation: {explanation}\nText: {text}\nAnswer:")

#: The fuzzing prompt: are the words marked ``<<…>>`` what the explanation describes?
#:
#: :meta hide-value:
FUZZING = ScoringPrompt(
    "fuzzing",
    "Words in the text are marked <<like this>>. Answer yes if the marked words are what "
    "the explanation describes, no otherwise.\n\n"
    "Explanation: the token \" rain\"\nText: We stayed home because of the<< rain>>.\n"
    "Answer: yes\n\n"
    "Explanation: the token \" rain\"\nText: The train left<< the>> station at noon.\n"
    "Answer: no\n\n"
    "Explanation: words about colours\nText: She painted the door<< blue>>.\nAnswer: yes\n\n"
    "Explanation: words about colours\nText: He<< went>> to bed early.\nAnswer: no\n\n",
    "Explanation: {explanation}\nText: {text}\nAnswer:")

PROMPTS = {p.name: p for p in (DETECTION, FUZZING)}


def prompt_texts(model: Model, explanation: str, texts: Sequence[str],
                 prompt: ScoringPrompt = DETECTION) -> list[str]:
    """Each text's scoring prompt as the scorer reads it: the chat template when the
    scorer has one (the answer's turn opened), else the raw prompt."""
    return [model.format_prompt(prompt.instructions
                                + prompt.query.format(explanation=explanation, text=t),
                                chat=model.has_chat_template) for t in texts]


def scoring_prompts(model: Model, explanation: str, texts: Sequence[str],
                    prompt: ScoringPrompt = DETECTION) -> list[list[int]]:
    """The token ids of each text's scoring prompt (:func:`prompt_texts`)."""
    return [model.encode(p) for p in prompt_texts(model, explanation, texts, prompt)]


def marked_text(tokens: Sequence[str], marked: Sequence[bool]) -> str:
    """``tokens`` joined, each run of marked tokens wrapped in ``<<`` and ``>>``."""
    out, inside = [], False
    for tok, m in zip(tokens, marked, strict=True):
        if m and not inside:
            out.append("<<")
        elif not m and inside:
            out.append(">>")
        inside = bool(m)
        out.append(tok)
    if inside:
        out.append(">>")
    return "".join(out)


def shared_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """The longest common token prefix of ``rows``, leaving every row at least one token."""
    if not rows:
        return 0
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    k = 0
    while k < n and all(r[k] == first[k] for r in rows):
        k += 1
    return max(k, 0)


def answer_ids(model: Model, prompt: ScoringPrompt) -> tuple[list[int], list[int]]:
    """The yes and no answers' token ids: each spelling that is one token of the scorer's
    vocabulary, else (a vocabulary without them) each spelling's first token, less those
    that both answers start with. Refuses a
    scorer whose yes and no tokens coincide."""
    def ids(spellings: Sequence[str], whole: bool) -> list[int]:
        out: list[int] = []
        for s in spellings:
            toks = model.encode_continuation(s)
            if toks and (len(toks) == 1 or not whole) and toks[0] not in out:
                out.append(toks[0])
        return out

    yes, no = ids(prompt.yes, True), ids(prompt.no, True)
    if not yes or not no:  # first tokens, leaving out those both answers start with
        y, n = ids(prompt.yes, False), ids(prompt.no, False)
        yes, no = [t for t in y if t not in n], [t for t in n if t not in y]
    if not yes or not no or set(yes) & set(no):
        raise InterpError(f"the scorer {model.model_id} cannot tell the answers "
                          f"{prompt.yes[0]!r} and {prompt.no[0]!r} apart by their first token")
    return yes, no


class _Stop(Exception):
    """Raised once the final residual stream is stored: no logits for every position."""


def _final_resid(model: Model, ids: Tensor, mask: Tensor, cache: Any = None) -> Tensor:
    """The residual stream entering the final norm, ``[b, new, d_model]``: the pass stops
    there, so the unembedding runs only on the rows read (:meth:`Model.unembed`, the
    model's own final norm and unembedding: its logits exactly)."""
    store: dict[str, Tensor] = {}

    def stop(t: Tensor, hook: Any) -> Tensor:  # noqa: ARG001 (TL hook signature)
        store["x"] = t
        raise _Stop

    with model.bridge.hooks(fwd_hooks=[("ln_final.hook_in", stop)]):
        try:
            forward(model, ids, mask, cache, use_cache=cache is not None)
        except _Stop:
            pass
    if "x" not in store:
        raise InterpError("the scorer's final norm never ran (ln_final.hook_in did not fire)")
    return store["x"]


def _log_odds(logits: Float[Tensor, "b vocab"], yes: list[int], no: list[int]) -> Tensor:
    lp = torch.log_softmax(logits.float(), dim=-1)
    return torch.logsumexp(lp[:, yes], -1) - torch.logsumexp(lp[:, no], -1)


def scores(
    model: Model, explanation: str, texts: Sequence[str], prompt: ScoringPrompt = DETECTION,
    *, batch_size: int = 16, share_prefix: bool = True,
) -> Float[Tensor, " n"]:
    """The scorer's log-odds of yes over no, for each text (see the module doc)."""
    if not texts:
        return torch.empty(0)
    yes, no = answer_ids(model, prompt)
    dev = model.device
    out = []
    with torch.no_grad():
        if not share_prefix:
            prompts = prompt_texts(model, explanation, texts, prompt)
            for s in range(0, len(prompts), batch_size):
                ids, mask = model.encode_padded(prompts[s:s + batch_size])  # left-padded
                resid = _final_resid(model, ids, mask)
                out.append(_log_odds(model.unembed(resid[:, -1]), yes, no).cpu())
            return torch.cat(out)
        rows = scoring_prompts(model, explanation, texts, prompt)
        k = shared_prefix_length(rows)
        head = torch.tensor([rows[0][:k]], dtype=torch.long, device=dev)
        _, prefix = forward(model, head, torch.ones_like(head), use_cache=True)
        for s in range(0, len(rows), batch_size):
            part = [r[k:] for r in rows[s:s + batch_size]]
            b, width = len(part), max(len(r) for r in part)
            ids = torch.zeros(b, width, dtype=torch.long)
            mask = torch.zeros(b, k + width, dtype=torch.long)
            mask[:, :k] = 1
            for i, r in enumerate(part):
                ids[i, :len(r)] = torch.tensor(r)
                mask[i, k:k + len(r)] = 1
            cache = copy.deepcopy(prefix)
            cache.batch_repeat_interleave(b)
            resid = _final_resid(model, ids.to(dev), mask.to(dev), cache)
            last = torch.tensor([len(r) - 1 for r in part], device=resid.device)
            out.append(_log_odds(model.unembed(resid[torch.arange(b), last]), yes, no).cpu())
    return torch.cat(out)
