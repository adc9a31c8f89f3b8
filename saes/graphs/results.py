"""The attribution graph's settings and its one result type."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
from torch import Tensor

from interp.display import MISSING, ci_text, format_number, with_ci
from interp.schema import (
    Cli,
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
        None,
        help="Attribute logit(ANSWER) − logit(WRONG) (each one token) instead of the top "
        "logits.", cli=Cli(metavar="ANSWER,WRONG"))
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
                             help="Keep at most this many of the pruned graph's edges, those "
                                  "of most influence on the targets, in results.json and the "
                                  "viewer.")
    max_feature_nodes: int | None = setting(
        None, check=at_least(1),
        help="Keep at most N active features as nodes, those of highest influence on the "
        "targets (as circuit-tracer's max_feature_nodes); the others join their "
        "position's error node. Memory grows with the square of the nodes: cap it for "
        "long prompts. Default: every active feature.", cli=Cli(metavar="N"))
    max_tokens: int = setting(64, check=at_least(2),
                              help="Refuse prompts longer than this many tokens.")
    batch_size: int = setting(256, cli=False, check=at_least(1),
                              help="Graph rows (targets) per backward pass.")
    check_features: int = setting(50, check=at_least(0),
                                  help="Intervene on this many top feature nodes in the real "
                                       "model (0: no check).")
    random_subgraphs: int = setting(20, check=at_least(1),
                                    help="Random feature sets of the pruned graph's size "
                                         "drawn for each faithfulness baseline "
                                         "(influence-matched, and any active features).")
    control_graphs: int = setting(3, check=at_least(0),
                                  help="Also build N control graphs on the same transcoders "
                                  "with their decoder rows shuffled across features, "
                                  "the baseline of the replacement and completeness "
                                  "scores (0: none; each costs about one graph).",
                                  cli=Cli(metavar="N"))
    null_permutations: int = setting(1000, cli=False, check=at_least(1),
                                     help="Shuffles of the sign agreement's permutation "
                                          "null.")
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

    ``to_dict()`` is ``results.json`` (the pruned graph's nodes and edges, the scores and
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
    target_real: float                   # the target metric in the real model
    target_replacement: float            # in the replacement model (error terms in)
    target_edge_sum: float               # Σ edges into the targets (weighted)
    n_feature_nodes: int | None = None   # active features kept as nodes (None: all of
    #                                      them; the others are in the error nodes)
    n_edges_pruned: int = 0              # edges the pruning kept (``edges`` holds at most
    #                                      config.max_edges of them, by influence)
    config: AttributionConfig | None = None
    checks: list[FeatureCheck] = field(default_factory=list)
    faithfulness: dict[str, Any] = field(default_factory=dict)
    agreement: dict[str, Any] = field(default_factory=dict)
    #: The control graphs' scores (decoder-shuffled transcoders, config.control_graphs):
    #: ``replacement_scores`` and ``completeness_scores``, one per control, and
    #: ``elapsed_s``, their time (not in the graph's ``elapsed_s``).
    controls: dict[str, Any] = field(default_factory=dict)
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

    @property
    def exact(self) -> bool:
        """Bookkeeping: the replacement model's target and the edges' sum equal the real
        target (to 1e-3 relative to ``max(1, |target|)``). True by construction, whatever
        the transcoders (the error nodes hold what they miss); False is a bug."""
        tol = 1e-3 * max(1.0, abs(self.target_real))
        vals = (self.target_real, self.target_replacement, self.target_edge_sum)
        return all(math.isfinite(v) for v in vals) and (
            abs(self.target_replacement - self.target_real) <= tol
            and abs(self.target_edge_sum - self.target_real) <= tol)

    def bookkeeping(self) -> str:
        """The exactness check, said as what it is."""
        if self.exact:
            return ("the edges sum to the target (exact by construction, with error nodes: "
                    f"real {self.target_real:.4f}, replacement {self.target_replacement:.4f}, "
                    f"Σ edges {self.target_edge_sum:.4f})")
        return (f"NOT exact (real {self.target_real:.4f}, replacement "
                f"{self.target_replacement:.4f}, Σ edges {self.target_edge_sum:.4f}): a bug, "
                "please report it")

    def worth(self) -> Worth:
        """What the graph is worth (:func:`graph_worth`)."""
        return graph_worth(self.replacement_score, self.completeness_score, self.controls,
                           self.agreement, self.exact)

    def headline(self) -> Headline:
        """What the graph is worth (scores against their controls, the real-model
        agreement against chance), then the bookkeeping."""
        ag, ctl = self.agreement, self.controls
        rows: list[tuple[str, Any]] = [
            ("prompt", self.prompt), ("target", self.target),
            ("active features", self.features_text()),
            ("nodes kept", f"{len(self.nodes)} of {self.n_nodes}"),
            ("replacement score", score_text(self.replacement_score,
                                             ctl.get("replacement_scores"))),
            ("completeness score", score_text(self.completeness_score,
                                              ctl.get("completeness_scores"))),
            ("Spearman (graph vs real model)", with_ci(
                ag.get("spearman_real"), *ag.get("spearman_real_ci95", [None] * 2))
             + f" over {ag.get('spearman_real_n', 0)} features; chance 0"
             if ag else MISSING),
            ("sign agreement (graph vs real model)", sign_text(ag, "real") if ag else MISSING),
            ("Spearman (graph vs real model, attention and norms frozen)",
             ag.get("spearman_real_frozen", MISSING)),
            ("Spearman (graph vs frozen replacement)", ag.get("spearman_replacement", MISSING)),
            ("faithfulness", faithfulness_text(self.faithfulness)),
            ("bookkeeping", self.bookkeeping()),
        ]
        return Headline(f"Attribution graph — {self.prompt!r}", rows=rows,
                        verdict=self.worth().sentence)

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
        if kind == "constant":  # the model's own biases; the last layer is the final norm's
            return f"const L{node['layer']}"
        if kind == "embedding":
            return f"emb {self.tokens[node['position']]!r}"
        return str(node.get("name", "target"))


def beats_controls(value: float, controls: Sequence[float] | None) -> bool | None:
    """Whether ``value`` lies above every control by more than the controls' own spread
    (max − min); None without controls. With 3 controls exchangeable with the graph
    (transcoders no better than shuffled ones), a graph passes by chance about 7% of the
    time (normal draws, simulated), with 4 about 3%, with 2 about 17%."""
    vals = [float(v) for v in controls or [] if math.isfinite(float(v))]
    if not vals or not math.isfinite(value):
        return None
    top = max(vals)
    return value > top + (top - min(vals))


def _g(x: float) -> str:
    """A score to 4 significant digits (controls of a few layers' transcoders sit within
    1e-4 of each other and of the graph)."""
    return f"{float(x):.4g}"


def score_text(value: float, controls: Sequence[float] | None) -> str:
    """``0.504 (decoder-shuffled controls 0.2113–0.2409, 3 graphs)``."""
    text = _g(value)
    vals = [float(v) for v in controls or []]
    if not vals:
        return text + " (no control graphs)"
    return (text + f" (decoder-shuffled controls {_g(min(vals))}–{_g(max(vals))}, "
            f"{len(vals)} graph{'s' * (len(vals) != 1)})")


def sign_text(ag: Mapping[str, Any], where: str) -> str:
    """``60% (permutation null 52% [38%, 66%], p 0.21; n 50)``."""
    sign = ag.get(f"sign_{where}")
    null = ag.get(f"sign_{where}_null")
    lo, hi = ag.get(f"sign_{where}_null_interval") or [math.nan] * 2
    if sign is None or not math.isfinite(float(sign)):
        return MISSING
    text = f"{100 * float(sign):.0f}%"
    if null is None or not math.isfinite(float(null)):
        return text
    return (text + f" (permutation null {100 * float(null):.0f}% [{100 * float(lo):.0f}%, "
            f"{100 * float(hi):.0f}%], p {format_number(ag.get(f'sign_{where}_p'), 2)}; "
            f"n {ag.get(f'sign_{where}_n', 0)})")


def faithfulness_text(f: Mapping[str, Any]) -> str:
    """``0.81 (influence-matched sets 0.62 [0.55, 0.70]; ceiling 0.93; any active 0.02)``."""
    if not f:
        return MISSING
    if not f.get("features_kept"):
        return "no feature survived pruning (error nodes and tokens hold the influence)"
    lo, hi = (f.get("matched_interval") or [None, None])[:2]
    return (f"{format_number(f.get('faithfulness'))} (influence-matched random sets "
            f"{format_number(f.get('matched_mean'))} {ci_text(lo, hi)}; ceiling, top by "
            f"measured effect {format_number(f.get('ceiling'))}; weak baseline, any active "
            f"features {format_number(f.get('random_mean'))})")


@dataclass(frozen=True)
class Worth:
    """What a graph is worth: ``level`` ("worthless", "informative" or "unknown"), the
    reasons, and the sentence the report and the CLI lead with."""

    level: str
    reasons: tuple[str, ...]

    @property
    def sentence(self) -> str:
        """The verdict, one sentence."""
        head = {"worthless": "This graph is WORTHLESS as an explanation",
                "informative": "This graph is informative",
                "unknown": "This graph's worth is not measured"}[self.level]
        return head + ": " + "; ".join(self.reasons)


def graph_worth(replacement: float, completeness: float, controls: Mapping[str, Any],
                agreement: Mapping[str, Any], exact: bool = True) -> Worth:
    """The verdict on a graph, from what can fail:

    * the **scores against their controls** (graphs on the same transcoders with their
      decoder rows shuffled across features): a replacement score not above the controls'
      by more than their spread (:func:`beats_controls`) says the features explain the
      influence no better than the shuffled ones: worthless;
    * the **real-model agreement**: a Spearman 95% interval that includes 0 (or lies below)
      says the graph's predictions do not agree with the real model beyond chance:
      worthless.

    Exactness is bookkeeping, not worth; a graph that is not exact is worthless (a bug).
    A replacement score under 0.5 (errors carry most of the influence) is said, as is a
    sign agreement not above its permutation null."""
    bad: list[str] = []
    good: list[str] = []
    notes: list[str] = []
    if not exact:
        bad.append("the replacement model does not reproduce the target (a bug)")
    reps = list(controls.get("replacement_scores") or [])
    beat = beats_controls(replacement, reps)
    if beat is None:
        notes.append(f"replacement score {_g(replacement)} (no control graphs: no baseline)")
    elif beat:
        good.append(f"its replacement score {_g(replacement)} is above the decoder-shuffled "
                    f"controls' {_g(min(reps))}–{_g(max(reps))}")
    else:
        bad.append(f"its features explain the influence no better than the same transcoders "
                   f"with their decoders shuffled (replacement score {_g(replacement)}, "
                   f"controls {_g(min(reps))}–{_g(max(reps))})")
    if math.isfinite(replacement) and replacement < 0.5:
        notes.append(f"error nodes carry most of the influence (replacement score "
                     f"{_g(replacement)} < 0.5, completeness {_g(completeness)})")
    rho = agreement.get("spearman_real")
    lo, hi = agreement.get("spearman_real_ci95") or [math.nan, math.nan]
    n = agreement.get("spearman_real_n", 0)
    if rho is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        notes.append("not checked against the real model" if not agreement else
                     f"too few features checked ({n}) to tell the real-model agreement "
                     "from chance")
    elif lo <= 0:
        bad.append(f"the graph's predictions do not agree with the real model beyond chance "
                   f"(Spearman {rho:.2f} [{lo:.2f}, {hi:.2f}] over {n} features)")
    else:
        good.append(f"its predictions agree with the real model beyond chance (Spearman "
                    f"{rho:.2f} [{lo:.2f}, {hi:.2f}] over {n} features)")
    slope = agreement.get("slope_real")
    if slope is not None and math.isfinite(float(slope)):
        s_lo, s_hi = agreement.get("slope_real_ci95") or [math.nan, math.nan]
        ci = (f" [{s_lo:.2f}, {s_hi:.2f}]" if math.isfinite(float(s_lo))
              and math.isfinite(float(s_hi)) else "")
        notes.append(f"removing a feature changes the real model {slope:.2f}×{ci} as much as "
                     f"the graph predicts (least squares through 0; 1 when they agree)")
    p = agreement.get("sign_real_p")
    if p is not None and math.isfinite(float(p)) and p > 0.05:
        notes.append(f"the signs agree no better than the permutation null "
                     f"({100 * agreement['sign_real']:.0f}% against "
                     f"{100 * agreement['sign_real_null']:.0f}%, p {p:.2f})")
    if bad:
        return Worth("worthless", tuple(bad + notes))
    if not good:
        return Worth("unknown", tuple(notes))
    return Worth("informative", tuple(good + notes))


__all__ = ["AttributionConfig", "AttributionGraph", "FeatureCheck", "Worth",
           "beats_controls", "graph_worth"]
