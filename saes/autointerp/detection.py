"""Detection scoring: given a feature's explanation, does a text make the feature fire?

As delphi's detection scorer (``delphi/scorers/classifier``: the scorer model reads the
explanation and texts and answers 1 or 0; with ``log_prob`` the probability is
``P(1) / (P(0) + P(1))`` from the answer token's log-probabilities), with one text per
query, so no answer has to be parsed out of generated text: the score of a text is the
scorer's log-odds ``log Σ P(yes tokens) − log Σ P(no tokens)`` at the first answer
position (yes tokens: the single-token spellings of ``"1"`` and ``" 1"``; no: of ``"0"``
and ``" 0"``). A score is a pure function of the prompt: deterministic, no sampling.

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
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from interp.errors import InterpError
from interp.models.forward import forward
from interp.models.loading import Model

INSTRUCTIONS = (
    "A feature of a language model is active on some words of some texts. You read an "
    "explanation of a feature and a text, and answer 1 if the feature is active somewhere "
    "in the text, 0 if it is not. Answer with one digit.\n\n"
    "Explanation: words about cooking food\n"
    "Text: She chopped the onions and fried them in butter.\nAnswer: 1\n\n"
    "Explanation: words about cooking food\n"
    "Text: The train left the station at noon.\nAnswer: 0\n\n"
    "Explanation: the word \"because\"\n"
    "Text: We stayed home because it rained.\nAnswer: 1\n\n"
)
QUERY = "Explanation: {explanation}\nText: {text}\nAnswer:"
YES = ("1", " 1")
NO = ("0", " 0")


def prompt_texts(model: Model, explanation: str, texts: Sequence[str]) -> list[str]:
    """Each text's detection prompt as the scorer reads it: the chat template when the
    scorer has one (the answer's turn opened), else the raw prompt."""
    return [model.format_prompt(INSTRUCTIONS + QUERY.format(explanation=explanation, text=t),
                                chat=model.has_chat_template) for t in texts]


def detection_prompts(model: Model, explanation: str, texts: Sequence[str]) -> list[list[int]]:
    """The token ids of each text's detection prompt (:func:`prompt_texts`)."""
    return [model.encode(p) for p in prompt_texts(model, explanation, texts)]


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


def _answer_ids(model: Model, spellings: Sequence[str]) -> list[int]:
    ids = []
    for s in spellings:
        toks = model.encode_continuation(s)
        if len(toks) == 1 and toks[0] not in ids:
            ids.append(toks[0])
    if not ids:
        raise InterpError(f"the scorer {model.model_id} has no single token for "
                          f"{' or '.join(repr(s) for s in spellings)}")
    return ids


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


def detection_scores(
    model: Model, explanation: str, texts: Sequence[str], *, batch_size: int = 16,
    share_prefix: bool = True,
) -> Float[Tensor, " n"]:
    """The scorer's log-odds that the feature fires, for each text (see the module doc)."""
    if not texts:
        return torch.empty(0)
    yes, no = _answer_ids(model, YES), _answer_ids(model, NO)
    dev = model.device
    out = []
    with torch.no_grad():
        if not share_prefix:
            prompts = prompt_texts(model, explanation, texts)
            for s in range(0, len(prompts), batch_size):
                ids, mask = model.encode_padded(prompts[s:s + batch_size])  # left-padded
                resid = _final_resid(model, ids, mask)
                out.append(_log_odds(model.unembed(resid[:, -1]), yes, no).cpu())
            return torch.cat(out)
        rows = detection_prompts(model, explanation, texts)
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
