"""The attribution graph's settings and its one result type."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
from torch import Tensor

from interp.display import MISSING
from interp.schema import (
    Config,
    Headline,
    Result,
    at_least,
    fraction,
    in_range,
    json_field,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class AttributionConfig(Config):
    """How a graph is built, pruned and checked."""

    target: str | None = setting(
        None, metavar="ANSWER,WRONG",
        help="Attribute logit(ANSWER) − logit(WRONG) (each one token) instead of the top "
             "logits.")
    max_logits: int = setting(10, check=at_least(1), help="At most this many top-logit "
                                                         "targets.")
    logit_probability: float = setting(0.95, check=in_range(0, 1, open_low=True),
                                       help="Top logits covering this much of the "
                                            "next-token probability are the targets.")
    node_threshold: float = setting(0.8, check=fraction,
                                    help="Keep the nodes holding this share of the "
                                         "influence.")
    edge_threshold: float = setting(0.98, check=fraction,
                                    help="Keep the edges holding this share of the edge "
                                         "influence.")
    max_edges: int = setting(10_000, check=at_least(1),
                             help="Keep at most this many of the pruned graph's edges, the "
                                  "strongest, in graph.json and the viewer.")
    max_feature_nodes: int | None = setting(
        None, check=at_least(1), metavar="N",
        help="Keep at most N active features as nodes, those of highest influence on the "
             "targets (as circuit-tracer's max_feature_nodes); the others join their "
             "position's error node. Memory grows with the square of the nodes: cap it for "
             "long prompts. Default: every active feature.")
    max_tokens: int = setting(64, check=at_least(2),
                              help="Refuse prompts longer than this many tokens.")
    batch_size: int = setting(256, cli=False, check=at_least(1),
                              help="Graph rows (targets) per backward pass.")
    check_features: int = setting(50, check=at_least(0),
                                  help="Intervene on this many top feature nodes in the real "
                                       "model (0: no check).")
    random_subgraphs: int = setting(20, check=at_least(1),
                                    help="Random subgraphs of the pruned graph's size, the "
                                         "faithfulness baseline.")
    seed: int = setting(0, check=seed_range, cli=False, help="Seeds the random subgraphs and "
                                                             "the bootstrap.")

    def answer_wrong(self) -> tuple[str, str] | None:
        """``target`` split into (answer, wrong), or None."""
        if self.target is None:
            return None
        parts = self.target.split(",")
        if len(parts) != 2 or not all(parts):
            raise self.error("target", "must be ANSWER,WRONG (two tokens, comma-separated)",
                             self.target)
        return parts[0], parts[1]

    def check(self) -> None:
        """A target, if given, names two tokens."""
        self.answer_wrong()


@dataclass
class FeatureCheck:
    """One feature node intervened on: the graph's prediction against the frozen replacement
    model and the real model (changes of the target metric)."""

    node: int               # the feature's node id in the graph
    layer: int
    position: int
    feature: int
    activation: float
    influence: float
    predicted: float        # −total effect: removing the feature, per the graph
    replacement: float      # measured in the frozen replacement model (features live)
    real: float             # measured in the real model, everything live
    real_frozen: float      # in the real model with attention patterns and norms frozen
    replacement_doubled: float
    real_doubled: float


@dataclass
class AttributionGraph(Result):
    """One prompt's attribution graph: nodes, edges, pruning, scores and the checks.

    ``to_dict()`` is ``graph.json`` (the pruned graph's nodes and edges, the scores and
    checks); ``to_frame()`` the node table; ``adjacency`` (the full ``[n, n]`` direct-effect
    matrix, rows targets) stays in memory and in ``adjacency.safetensors``.
    """

    prompt: str
    tokens: list[str]
    token_ids: list[int]
    target: str
    nodes: list[dict[str, Any]]          # every node kept by pruning (and all targets)
    edges: list[dict[str, Any]]          # kept edges: source, target, weight (the strongest)
    n_active_features: int
    n_nodes: int
    replacement_score: float
    completeness_score: float
    pruned_replacement_score: float
    pruned_completeness_score: float
    target_real: float                   # the target metric in the real model
    target_replacement: float            # in the replacement model (error terms in)
    target_edge_sum: float               # Σ edges into the targets (weighted)
    n_feature_nodes: int | None = None   # active features kept as nodes (None: all of
    #                                      them; the others are in the error nodes)
    n_edges_pruned: int = 0              # edges the pruning kept (``edges`` holds at most
    #                                      config.max_edges of them)
    config: AttributionConfig | None = None
    checks: list[FeatureCheck] = field(default_factory=list)
    faithfulness: dict[str, Any] = field(default_factory=dict)
    agreement: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    adjacency: Tensor | None = json_field(None, omit_none=True, repr=False, skip=True)
    transcoders: dict[str, Any] = field(default_factory=dict)

    json_order: ClassVar[tuple[Any, ...]] = (
        "prompt", "target", "replacement_score", "completeness_score", ...)

    def to_frame(self) -> pd.DataFrame:
        """The kept nodes, one row each."""
        return pd.DataFrame(self.nodes)

    def edge_frame(self) -> pd.DataFrame:
        """The kept edges, one row each."""
        return pd.DataFrame(self.edges)

    @property
    def n_edges_kept(self) -> int:
        """Edges the pruning kept (``edges`` holds the strongest ``max_edges`` of them; a
        graph saved without the count keeps them all)."""
        return max(self.n_edges_pruned, len(self.edges))

    @property
    def edges_capped(self) -> bool:
        """Whether ``edges`` holds fewer than the pruning kept (``max_edges``)."""
        return len(self.edges) < self.n_edges_kept

    @property
    def features_capped(self) -> bool:
        """Whether ``max_feature_nodes`` left active features out of the nodes (they are in
        the error nodes)."""
        return self.n_feature_nodes is not None and self.n_feature_nodes < self.n_active_features

    def features_text(self) -> str:
        """``17,564`` or ``17,564 (8,192 as nodes, the others in error nodes)``."""
        text = f"{self.n_active_features:,}"
        if self.features_capped:
            text += f" ({self.n_feature_nodes:,} as nodes, the others in error nodes)"
        return text

    def headline(self) -> Headline:
        """Scores, the exactness checks and the real-model agreement."""
        ag = self.agreement
        rows: list[tuple[str, Any]] = [
            ("prompt", self.prompt), ("target", self.target),
            ("active features", self.features_text()),
            ("nodes kept", f"{len(self.nodes)} of {self.n_nodes}"),
            ("replacement score", self.replacement_score),
            ("completeness score", self.completeness_score),
            ("target: real / replacement / Σ edges",
             f"{self.target_real:.4f} / {self.target_replacement:.4f} / "
             f"{self.target_edge_sum:.4f}"),
            ("Spearman (graph vs real model)", ag.get("spearman_real", MISSING)),
            ("sign agreement (graph vs real model)", ag.get("sign_real", MISSING)),
            ("Spearman (graph vs real model, attention and norms frozen)",
             ag.get("spearman_real_frozen", MISSING)),
            ("Spearman (graph vs frozen replacement)", ag.get("spearman_replacement", MISSING)),
        ]
        return Headline(f"Attribution graph — {self.prompt!r}", rows=rows,
                        verdict=self.verdict())

    def verdict(self) -> str:
        """Whether the replacement model is exact, and how the real model agrees."""
        exact = (abs(self.target_replacement - self.target_real) <= 1e-4
                 and abs(self.target_edge_sum - self.target_real) <= 1e-4)
        text = ("replacement model exact (target and Σ edges equal the real model's to 1e-4)"
                if exact else "replacement model NOT exact: a bug, please report it")
        rho = self.agreement.get("spearman_real")
        if rho is not None and rho == rho:
            lo, hi = self.agreement.get("spearman_real_ci95", [float("nan")] * 2)
            text += (f"; real-model Spearman {rho:.2f} [{lo:.2f}, {hi:.2f}] over "
                     f"{self.agreement.get('spearman_real_n', 0)} features"
                     + (" (within the noise of 0)" if lo <= 0 <= hi else ""))
        return text

    def figure(self) -> Figure | None:
        """The pruned graph (:func:`saes.graphs.figures.graph_figure`)."""
        from saes.graphs.figures import graph_figure

        return graph_figure(self)

    def node_label(self, node: dict[str, Any]) -> str:
        """A short label: ``L3 F120 @5``, ``err L3 @5``, ``emb 'Paris'``, the target."""
        kind = node["kind"]
        if kind == "feature":
            return f"L{node['layer']} F{node['feature']} @{node['position']}"
        if kind == "error":
            return f"err L{node['layer']} @{node['position']}"
        if kind == "bias":
            return f"bias L{node['layer']}"
        if kind == "embedding":
            return f"emb {self.tokens[node['position']]!r}"
        return str(node.get("name", "target"))


__all__ = ["AttributionConfig", "AttributionGraph", "FeatureCheck"]
