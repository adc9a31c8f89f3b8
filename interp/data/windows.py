"""Packed token windows over a text corpus: the training stream of the tuned lens (and SAEs).

Documents are shuffled with a seeded permutation, tokenised one by one, joined with the
end-of-text token between them and cut into windows of ``seq_len`` tokens, as the
tuned-lens paper packs its training text. Only as many documents are tokenised as the
requested windows need, and when the documents run out the next epoch reshuffles them
(seed + epoch), so the stream is a pure function of ``(docs, seq_len, seed)``: window
``i`` is the same whatever run, process or resume asks for it. Rank ``r`` of ``world``
processes takes windows ``r, r + world, …`` (:func:`shard`).

Position 0 of a window is an arbitrary mid-document token, but the model still treats it
as the first token of its context (an attention sink with a huge residual norm), so every
consumer leaves position 0 out of losses and means.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from jaxtyping import Int
from torch import Tensor

from interp.errors import InterpError
from interp.models.loading import Model
from interp.profiling.session import phased


def _doc_order(n_docs: int, seed: int, epoch: int) -> list[int]:
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + epoch)
    return torch.randperm(n_docs, generator=g).tolist()


def _doc_tokens(model: Model, docs: Sequence[str], seed: int) -> Iterator[list[int]]:
    """Each document's token ids plus the separator, in the seeded order, epoch after epoch."""
    tok = model.tokenizer
    sep = [int(tok.eos_token_id)] if tok.eos_token_id is not None else []
    epoch = 0
    while True:
        produced = False
        for i in _doc_order(len(docs), seed, epoch):
            ids = model.encode(docs[i])
            if ids:
                produced = True
                yield list(ids) + sep
        if not produced:
            raise InterpError("the text has no tokens")
        epoch += 1


def iter_windows(
    model: Model, docs: Sequence[str], *, seq_len: int, seed: int = 0, start: int = 0
) -> Iterator[Int[Tensor, " seq_len"]]:
    """Packed windows ``start, start + 1, …`` of ``seq_len`` tokens, lazily, without end.

    The same windows as :func:`pack_windows` (which takes the first ``n``), for streams
    too long to tokenise up front (SAE training). Skipping to ``start`` tokenises the
    documents before it, which is far cheaper than running the model over them.
    """
    if seq_len < 2:
        raise InterpError(f"sequence length must be ≥ 2, got {seq_len}")
    docs = [d for d in docs if isinstance(d, str) and d.strip()]
    if not docs:
        raise InterpError("no text: the document list is empty")
    buf: list[int] = []
    index = 0
    for ids in _doc_tokens(model, docs, seed):
        buf.extend(ids)
        while len(buf) >= seq_len:
            if index >= start:
                yield torch.tensor(buf[:seq_len], dtype=torch.long)
            del buf[:seq_len]
            index += 1


@phased("tokenise")
def pack_windows(
    model: Model, docs: Sequence[str], *, seq_len: int, n_windows: int, seed: int = 0
) -> Int[Tensor, "n_windows seq_len"]:
    """The first ``n_windows`` packed windows of ``seq_len`` tokens (see module doc)."""
    if seq_len < 2:
        raise InterpError(f"sequence length must be ≥ 2, got {seq_len}")
    if n_windows < 1:
        raise InterpError(f"need at least one window, got {n_windows}")
    it = iter_windows(model, docs, seq_len=seq_len, seed=seed)
    return torch.stack([next(it) for _ in range(n_windows)])


def shard(windows: Tensor, rank: int, world: int) -> Tensor:
    """Rank ``rank``'s share of ``windows`` (rows ``rank, rank + world, …``)."""
    if not 0 <= rank < world:
        raise InterpError(f"rank {rank} out of range for world size {world}")
    return windows[rank::world]
