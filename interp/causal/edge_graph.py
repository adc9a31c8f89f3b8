"""The computational graph of edge attribution: senders, receivers and the edges between them.

As in EAP (Syed et al. 2023) and EAP-IG (Hanna et al. 2024): the residual stream is the
sum of the outputs of its **senders** (the input embeddings, every attention head's
``z_h W_O[h]``, every MLP's output), and every **receiver** reads its own copy of it:
each head's query input, each key/value head's key and value inputs (grouped-query models
share a key/value input among the heads of a group, so the receiver is the key/value
head), each MLP's input and the logits (the final norm's input). An edge joins a sender
to every receiver downstream of it. Senders and receivers are numbered in the order the
forward pass meets them; edges are numbered receiver-major, so the edges into the
receivers of one layer's attention (or MLP) are one contiguous block of the edge axis.

SmolLM2-135M (30 layers, 9 heads, 3 key/value heads): 301 senders, 481 receivers,
70,651 edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from jaxtyping import Int
from torch import Tensor

#: Receiver kinds inside a layer's attention, in the order their inputs are read.
ATTN_KINDS = ("q", "k", "v")


@dataclass(frozen=True)
class Group:
    """Receivers that share their upstream senders: one layer's attention inputs (its
    query heads, then key and value heads), one layer's MLP, or the logits."""

    layer: int  # -1 for the logits
    kind: str  # "attn", "mlp" or "logits"
    first: int  # first receiver index
    size: int  # receivers
    upstream: int  # senders 0 .. upstream-1 feed every receiver of the group
    edge_start: int  # first edge index of the group's block (receiver-major)

    @property
    def n_edges(self) -> int:
        """Edges into the group."""
        return self.size * self.upstream


@dataclass(frozen=True)
class EdgeGraph:
    """The senders, receivers and edges of a model with ``n_layers`` blocks."""

    n_layers: int
    n_heads: int
    n_kv: int
    #: Attention and the MLP read the same residual (GPT-NeoX): a layer's MLP receives
    #: nothing from that layer's heads.
    parallel: bool = False

    # ----------------------------------------------------------------- senders
    @property
    def n_senders(self) -> int:
        """Input, every head, every MLP."""
        return 1 + self.n_layers * (self.n_heads + 1)

    def head_sender(self, layer: int, head: int) -> int:
        """The sender index of a head."""
        return 1 + layer * (self.n_heads + 1) + head

    def mlp_sender(self, layer: int) -> int:
        """The sender index of an MLP."""
        return 1 + layer * (self.n_heads + 1) + self.n_heads

    @cached_property
    def senders(self) -> list[str]:
        """Sender names: ``input``, ``a{L}.h{H}``, ``m{L}`` (EAP-IG's spelling)."""
        out = ["input"]
        for layer in range(self.n_layers):
            out += [f"a{layer}.h{h}" for h in range(self.n_heads)] + [f"m{layer}"]
        return out

    # ----------------------------------------------------------------- receivers
    @property
    def attn_size(self) -> int:
        """Receivers of one layer's attention: query heads, key heads, value heads."""
        return self.n_heads + 2 * self.n_kv

    @property
    def n_receivers(self) -> int:
        """Every layer's attention inputs and MLP, and the logits."""
        return self.n_layers * (self.attn_size + 1) + 1

    @cached_property
    def receivers(self) -> list[str]:
        """Receiver names: ``a{L}.h{H}<q>``, ``a{L}.kv{G}<k>``, ``a{L}.kv{G}<v>``, ``m{L}``,
        ``logits`` (with as many key/value heads as query heads, ``a{L}.h{H}<k>``)."""
        kv = "h" if self.n_kv == self.n_heads else "kv"
        out = []
        for layer in range(self.n_layers):
            out += [f"a{layer}.h{h}<q>" for h in range(self.n_heads)]
            out += [f"a{layer}.{kv}{g}<k>" for g in range(self.n_kv)]
            out += [f"a{layer}.{kv}{g}<v>" for g in range(self.n_kv)]
            out.append(f"m{layer}")
        return [*out, "logits"]

    @cached_property
    def groups(self) -> list[Group]:
        """The receiver groups in forward order: per layer its attention, then its MLP;
        last the logits."""
        out, first, edge = [], 0, 0
        for layer in range(self.n_layers):
            up = 1 + layer * (self.n_heads + 1)
            mlp_up = up if self.parallel else up + self.n_heads
            for kind, size, upstream in (("attn", self.attn_size, up), ("mlp", 1, mlp_up)):
                out.append(Group(layer, kind, first, size, upstream, edge))
                first += size
                edge += size * upstream
        out.append(Group(-1, "logits", first, 1, self.n_senders, edge))
        return out

    # ----------------------------------------------------------------- edges
    @property
    def n_edges(self) -> int:
        """Every sender joined to every receiver downstream of it."""
        last = self.groups[-1]
        return last.edge_start + last.n_edges

    @cached_property
    def edge_index(self) -> tuple[Int[Tensor, " edges"], Int[Tensor, " edges"]]:
        """``(sender, receiver)`` of every edge, receiver-major."""
        snd, rcv = [], []
        for g in self.groups:
            for r in range(g.first, g.first + g.size):
                snd.append(torch.arange(g.upstream))
                rcv.append(torch.full((g.upstream,), r))
        return torch.cat(snd), torch.cat(rcv)

    def edge_name(self, e: int) -> str:
        """``sender->receiver``."""
        s, r = self.edge_index
        return f"{self.senders[int(s[e])]}->{self.receivers[int(r[e])]}"

    def edge_of(self, sender: str, receiver: str) -> int:
        """The index of the edge ``sender -> receiver`` (a one-line error when there is none)."""
        from interp.errors import InterpError

        try:
            s, r = self.senders.index(sender), self.receivers.index(receiver)
        except ValueError:
            raise InterpError(f"no node {sender!r} or {receiver!r} in the graph") from None
        g = self.group_of(r)
        if s >= g.upstream:
            raise InterpError(f"{sender} is not upstream of {receiver}: no such edge")
        return g.edge_start + (r - g.first) * g.upstream + s

    def group_of(self, receiver: int) -> Group:
        """The group holding a receiver."""
        for g in self.groups:
            if g.first <= receiver < g.first + g.size:
                return g
        raise IndexError(receiver)

    def receiver_layer(self) -> Int[Tensor, " receivers"]:
        """Each receiver's layer (``n_layers`` for the logits)."""
        out = torch.empty(self.n_receivers, dtype=torch.long)
        for g in self.groups:
            out[g.first:g.first + g.size] = g.layer if g.layer >= 0 else self.n_layers
        return out

    def sender_node(self, s: int) -> str:
        """A sender's name."""
        return self.senders[s]

    def receiver_node(self, r: int) -> list[str]:
        """The sender nodes a receiver belongs to: a query head its head, a key/value head
        every query head of its group, an MLP input its MLP; the logits ``logits``."""
        name = self.receivers[r]
        if name == "logits":
            return ["logits"]
        if name.startswith("m"):
            return [name]
        layer_part, rest = name.split(".", 1)
        idx = int(rest[2:rest.index("<")] if rest.startswith("kv") else rest[1:rest.index("<")])
        if rest.endswith("<q>") or self.n_kv == self.n_heads:
            return [f"{layer_part}.h{idx}"]
        rep = self.n_heads // self.n_kv
        return [f"{layer_part}.h{idx * rep + j}" for j in range(rep)]


def model_graph(n_layers: int, n_heads: int, n_kv: int, *, parallel: bool = False) -> EdgeGraph:
    """The graph of a model's shape (one place that builds it)."""
    return EdgeGraph(n_layers, n_heads, n_kv, parallel)
