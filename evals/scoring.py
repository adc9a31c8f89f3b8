"""Log-probability of given continuations after given prompts (cloze and letter scoring).

``score_continuations(model, prompts, continuations)`` returns, for every prompt ``i`` and
each of its ``k`` continuations ``j``, the summed natural-log probability of the
continuation's tokens given the prompt, and how many tokens that is.

**Tokenisation.** ``prompts[i]`` is the final text the model sees (the caller has
already applied the chat template, see :meth:`interp.models.loading.Model.format_prompt`). The
prompt and each continuation are tokenised *separately* (no special tokens added) and
their ids concatenated. So the continuation's tokens are the same whatever the prompt
(``" Paris."`` is always ``[" Paris", "."]``), at the price of a seam: text that would
merge across the boundary when tokenised together (``"The answer is"`` + ``" Paris"``
does not merge on byte-level BPE; ``"Par"`` + ``"is"`` would) is scored as split. Start
continuations with the space that belongs to them (``" Paris."``), and end prompts
without one.

**Two paths.**

* Fast (``deterministic=False``): prompts are sorted by length and run in left-padded
  batches of ``batch_size`` *once*, with the KV cache; the cache is then repeated for
  the ``k`` continuations of each prompt, which are fed together (right-padded) in a
  second pass. The prompt is never recomputed per continuation, and when every
  continuation is a single token (letters) the second pass is skipped: the prompt's
  last logits score them all.
* Deterministic (``deterministic=True``): every (prompt, continuation) sequence runs
  right-padded in a forward pass of a *fixed shape* (``FIXED_ROWS`` rows, length rounded
  up to a multiple of ``FIXED_BUCKET``), without the cache, as the verifier of
  :func:`~interp.generation.engine.generate` does. A row's result then depends only on its own
  tokens, so the scores are bit-identical whatever ``batch_size`` or the other prompts. It costs
  about ``k`` times the fast path's prompt compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.errors import InterpError
from interp.models.forward import forward
from interp.models.loading import Model
from interp.runs.progress import make_progress

#: Rows of every forward pass on the deterministic path (dummy rows fill the rest).
FIXED_ROWS = 8
#: Sequence lengths on the deterministic path are rounded up to a multiple of this.
FIXED_BUCKET = 16

__all__ = ["ContinuationScores", "score_continuations", "FIXED_ROWS", "FIXED_BUCKET"]


@dataclass
class ContinuationScores:
    """Scores of ``k`` continuations for each of ``n`` prompts.

    ``logprob[i, j]``: summed natural-log probability of continuation ``j``'s tokens
    after prompt ``i``; ``n_tokens[i, j]``: how many tokens that continuation has.
    """

    logprob: Float[Tensor, "n k"]
    n_tokens: Int[Tensor, "n k"]

    def mean(self) -> Float[Tensor, "n k"]:
        """Per-token (length-normalised) log-probability."""
        return self.logprob / self.n_tokens.clamp(min=1).to(self.logprob.dtype)

    def best(self, normalise: bool = True) -> Int[Tensor, " n"]:
        """Index of the highest-scoring continuation per prompt (ties: the lowest index)."""
        s = self.mean() if normalise else self.logprob
        return torch.argmax(s, dim=1)


def _tokenize(model: Model, texts: Sequence[str], *, continuation: bool) -> list[list[int]]:
    """Prompts as the model reads them from the start (its BOS, if any); continuations bare."""
    encode = model.encode_continuation if continuation else model.encode
    return [encode(t) for t in texts]


def _check(prompts: Sequence[str], continuations: Sequence[Sequence[str]]) -> int:
    if isinstance(prompts, str):
        raise InterpError("prompts must be a list of strings, not one string")
    if len(prompts) != len(continuations):
        raise InterpError(
            f"{len(prompts)} prompts but {len(continuations)} lists of continuations"
        )
    if not prompts:
        raise InterpError("no prompts to score")
    k = len(continuations[0])
    for i, (p, cs) in enumerate(zip(prompts, continuations, strict=True)):
        if not isinstance(p, str) or not p:
            raise InterpError(f"prompt {i} is empty")
        if isinstance(cs, str):
            raise InterpError(f"continuations of prompt {i} must be a list, not one string")
        if len(cs) != k or k == 0:
            raise InterpError(
                f"prompt {i} has {len(cs)} continuations; every prompt needs the same "
                f"number (≥ 1), here {k}"
            )
        for c in cs:
            if not isinstance(c, str) or not c:
                raise InterpError(f"prompt {i} has an empty continuation")
    return k


def score_continuations(
    model: Model,
    prompts: Sequence[str],
    continuations: Sequence[Sequence[str]],
    *,
    batch_size: int = 16,
    deterministic: bool = False,
    progress: bool | None = None,
    description: str = "scoring",
) -> ContinuationScores:
    """Summed log-probability of each continuation after its prompt (see module docstring).

    Args:
        model: a loaded :class:`~interp.models.loading.Model`.
        prompts: ``n`` final texts (chat template already applied).
        continuations: ``n`` lists of ``k`` non-empty strings, appended verbatim.
        batch_size: prompts per forward pass on the fast path.
        deterministic: fixed-shape, cache-free scoring, bit-identical for any batch size.
        progress: force the progress bar on/off (default: on for more than one batch).
        description: the progress bar's label.

    Returns:
        :class:`ContinuationScores` with ``[n, k]`` tensors (float32 on the CPU).
    """
    k = _check(prompts, continuations)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InterpError(f"batch size must be ≥ 1, got {batch_size}")
    p_ids = _tokenize(model, prompts, continuation=False)
    flat = [c for cs in continuations for c in cs]
    c_ids_flat = _tokenize(model, flat, continuation=True)
    c_ids = [c_ids_flat[i * k : (i + 1) * k] for i in range(len(prompts))]
    for i, ids in enumerate(p_ids):
        if not ids:
            raise InterpError(f"prompt {i} has no tokens")
    _check_memory(model, p_ids, c_ids, 1 if deterministic else batch_size)
    n = len(prompts)
    logprob = torch.zeros(n, k, dtype=torch.float32)
    n_tokens = torch.tensor([[len(c) for c in row] for row in c_ids], dtype=torch.long)
    if deterministic:
        _score_fixed(model, p_ids, c_ids, logprob, progress, description)
    else:
        _score_cached(model, p_ids, c_ids, logprob, batch_size, progress, description)
    return ContinuationScores(logprob=logprob, n_tokens=n_tokens)


# ------------------------------------------------------------------------ fast path
def _check_memory(model: Model, p_ids: list[list[int]], c_ids: list[list[list[int]]],
                  batch_size: int) -> None:
    """Refuse (one line, before the first pass) scoring whose logits would not fit.

    A batch's prompt pass holds float32 logits over the vocabulary at every prompt
    position, and its continuation pass at every continuation position of its ``b·k``
    rows (each about twice: logits and log-softmax), beside the KV cache of all rows.
    """
    from interp.runs.memory import FLOAT32, logits_bytes, require

    b = min(batch_size, len(p_ids))
    k = len(c_ids[0]) if c_ids else 1
    prompt = max(len(p) for p in p_ids)
    cont = max((len(c) for row in c_ids for c in row), default=1)
    need = (max(logits_bytes(b, prompt, model.d_vocab), logits_bytes(b * k, cont, model.d_vocab))
            + 2 * model.n_layers * b * k * (prompt + cont) * model.d_model * FLOAT32)
    require(need, f"scoring {k} continuation(s) of up to {cont} tokens after prompts of up to "
            f"{prompt} tokens in batches of {b} over a {model.d_vocab:,}-token vocabulary",
            "lower batch_size or shorten the prompts", device=model.device)


def _score_cached(
    model: Model, p_ids: list[list[int]], c_ids: list[list[list[int]]], out: Tensor,
    batch_size: int, progress: bool | None, description: str,
) -> None:
    """Prompts once with the KV cache, then all continuations from the repeated cache."""
    dev = model.device
    pad = int(model.tokenizer.pad_token_id)
    k = len(c_ids[0])
    order = sorted(range(len(p_ids)), key=lambda i: -len(p_ids[i]))
    batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    bar = make_progress(enabled=progress if progress is not None else len(batches) > 1)
    with bar:
        task = bar.add_task(description, total=len(p_ids), info="")
        for idx in batches:
            b = len(idx)
            width = max(len(p_ids[i]) for i in idx)
            ids = torch.full((b, width), pad, dtype=torch.long)
            mask = torch.zeros((b, width), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, width - len(p_ids[i]):] = torch.tensor(p_ids[i])
                mask[r, width - len(p_ids[i]):] = 1
            ids, mask = ids.to(dev), mask.to(dev)
            multi = any(len(c) > 1 for i in idx for c in c_ids[i])
            with torch.no_grad():
                logits, cache = forward(model, ids, mask, use_cache=multi)
                first = torch.log_softmax(logits[:, -1].float(), dim=-1).cpu()  # [b, V]
                del logits
                for r, i in enumerate(idx):
                    for j in range(k):
                        out[i, j] = first[r, c_ids[i][j][0]]
                if multi:
                    _continue_from_cache(model, idx, c_ids, out, mask, cache, pad)
            bar.update(task, advance=b, info=f"{width} tok")


def _continue_from_cache(
    model: Model, idx: list[int], c_ids: list[list[list[int]]], out: Tensor,
    prompt_mask: Tensor, cache: object, pad: int,
) -> None:
    """Feed tokens 1..m-1 of every continuation (``b·k`` rows) after the cached prompts;
    add the log-probabilities of tokens 2..m to ``out``."""
    dev = model.device
    k = len(c_ids[idx[0]])
    rows = [c_ids[i][j] for i in idx for j in range(k)]
    width = max(len(c) for c in rows) - 1
    feed = torch.full((len(rows), width), pad, dtype=torch.long)
    fmask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, c in enumerate(rows):
        if len(c) > 1:
            feed[r, : len(c) - 1] = torch.tensor(c[:-1])
            fmask[r, : len(c) - 1] = 1
    cache.batch_repeat_interleave(k)  # type: ignore[attr-defined]
    mask = torch.cat([prompt_mask.repeat_interleave(k, dim=0), fmask.to(dev)], dim=1)
    logits = forward(model, feed.to(dev), mask, cache, use_cache=True)[0]
    lp = torch.log_softmax(logits.float(), dim=-1).cpu()  # [b·k, width, V]
    for r, c in enumerate(rows):
        if len(c) > 1:
            tgt = torch.tensor(c[1:])
            val = lp[r, torch.arange(len(c) - 1), tgt].sum()
            i, j = idx[r // k], r % k
            out[i, j] += val


# ----------------------------------------------------------------- deterministic path
def _score_fixed(
    model: Model, p_ids: list[list[int]], c_ids: list[list[list[int]]], out: Tensor,
    progress: bool | None, description: str,
) -> None:
    """Every (prompt, continuation) in a fixed-shape, right-padded, cache-free pass.

    Sequences are grouped by bucket (length rounded up to ``FIXED_BUCKET``), in the
    order of the caller's prompts; each pass has exactly ``FIXED_ROWS`` rows (the
    rest copy the first row), so its shape depends only on the bucket.
    """
    dev = model.device
    pad = int(model.tokenizer.pad_token_id)
    k = len(c_ids[0])
    seqs = [(i, j) for i in range(len(p_ids)) for j in range(k)]
    by_bucket: dict[int, list[tuple[int, int]]] = {}
    for i, j in seqs:
        n = len(p_ids[i]) + len(c_ids[i][j])
        by_bucket.setdefault(-(-n // FIXED_BUCKET) * FIXED_BUCKET, []).append((i, j))
    chunks = [
        (bucket, members[s : s + FIXED_ROWS])
        for bucket, members in sorted(by_bucket.items())
        for s in range(0, len(members), FIXED_ROWS)
    ]
    bar = make_progress(enabled=progress if progress is not None else len(chunks) > 1)
    with bar:
        task = bar.add_task(description, total=len(seqs), info="")
        for bucket, chunk in chunks:
            ids = torch.full((FIXED_ROWS, bucket), pad, dtype=torch.long)
            mask = torch.zeros((FIXED_ROWS, bucket), dtype=torch.long)
            for r in range(FIXED_ROWS):
                i, j = chunk[r] if r < len(chunk) else chunk[0]
                seq = p_ids[i] + c_ids[i][j]
                ids[r, : len(seq)] = torch.tensor(seq)
                mask[r, : len(seq)] = 1
            with torch.no_grad():
                logits = model.logits(ids.to(dev), mask.to(dev))
            for r, (i, j) in enumerate(chunk):
                lp_, c = len(p_ids[i]), c_ids[i][j]
                pos = torch.arange(lp_ - 1, lp_ - 1 + len(c))
                row = torch.log_softmax(logits[r, pos].float(), dim=-1).cpu()
                out[i, j] = row[torch.arange(len(c)), torch.tensor(c)].sum()
            bar.update(task, advance=len(chunk), info=f"{bucket} tok")
