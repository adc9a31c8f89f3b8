"""Features sharded across processes: the collectives a cross-layer transcoder whose
features are split over ``torchrun``'s ranks needs, and nothing else.

Each rank holds a contiguous slice of every layer's features (their encoder columns,
encoder biases, decoder vectors and thresholds); the decoder biases and skip paths are
whole on every rank. Every rank reads the same batch. A rank's features write a partial
prediction; :meth:`Shards.sum` adds the partials of every rank (forward: an all-reduce;
backward: the gradient as it is, since every rank computes the same loss from the same
sum). That is Megatron-LM's tensor parallelism for one layer, as CLT-Forge does it for
CLTs. With one rank every method is the identity, so the code path is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class Shards:
    """This process's place among ``world`` feature shards (``rank`` 0-based)."""

    rank: int = 0
    world: int = 1

    @property
    def on(self) -> bool:
        """Whether the features are split (more than one rank)."""
        return self.world > 1

    def span(self, m: int) -> tuple[int, int]:
        """The slice ``[lo, hi)`` of ``m`` features this rank holds (near-equal parts, the
        first ``m mod world`` ranks one more)."""
        base, extra = divmod(m, self.world)
        lo = self.rank * base + min(self.rank, extra)
        return lo, lo + base + (1 if self.rank < extra else 0)

    def sum(self, t: Tensor) -> Tensor:
        """Every rank's ``t`` added up (differentiable; the gradient passes through)."""
        if not self.on:
            return t
        return _SumOverRanks.apply(t)  # type: ignore[no-any-return]

    def total(self, t: Tensor) -> Tensor:
        """Every rank's ``t`` added up, outside autograd."""
        if not self.on:
            return t
        import torch.distributed as dist

        t = t.detach().clone()
        dist.all_reduce(t)
        return t

    def cat(self, t: Tensor, dim: int) -> Tensor:
        """Every rank's ``t`` side by side along ``dim``, in rank order (outside autograd;
        the parts may differ in size along ``dim``)."""
        if not self.on:
            return t
        import torch.distributed as dist

        t = t.detach().contiguous()
        sizes = [torch.zeros(1, dtype=torch.long) for _ in range(self.world)]
        dist.all_gather(sizes, torch.tensor([t.shape[dim]]))
        most = max(int(s) for s in sizes)
        pad = list(t.shape)
        pad[dim] = most - t.shape[dim]
        padded = torch.cat([t, t.new_zeros(pad)], dim) if pad[dim] else t
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        dist.all_gather(parts, padded.contiguous())
        return torch.cat([p.narrow(dim, 0, int(s)) for p, s in zip(parts, sizes, strict=True)],
                         dim)


class _SumOverRanks(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, t: Tensor) -> Tensor:  # noqa: ARG004 - autograd's signature
        import torch.distributed as dist

        out = t.detach().clone()
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:  # noqa: ARG004 - autograd's signature
        return grad


__all__ = ["Shards"]
