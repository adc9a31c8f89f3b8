"""Typed config and result of distributed alignment search (:func:`~interp.causal.das.run_das`).

Every IIA is a :class:`~interp.stats.rates.Rate`: a proportion of held-out pairs with its
95% interval, written as every rate in the project (``iia``, ``iia_ci95``, ``iia_n``,
``iia_k``, and ``iia_clusters``: the number of templates the interval resamples, absent
where pairs are independent and the interval is Wilson's).
Pairs are cross-fitted: each fold of templates is scored by subspaces trained on the
others, so every pair is held out once. Beside DAS at each layer: a random direction of
the same dimension, the full interchange (the ceiling), no interchange (the floor); the
control task by type (Hewitt & Liang 2019: labels a fixed random function of the source's
deciding token, which a subspace with enough room can memorise and carry to held-out pairs
of a type it saw) with its chance and the selectivity (task IIA − control IIA); and the
subspace-illusion check (Makelov et al. 2023): DAS's IIA again with its directions
restricted to the span in which the activations at the position actually vary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from interp.circuits.results import Direction, GroupEffects, TaskSummary
from interp.display import ci_text
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    fraction,
    json_field,
    non_negative,
    not_empty,
    positive,
    seed_range,
    setting,
)
from interp.stats.rates import Rate

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class DASConfig(Config):
    """What :func:`~interp.causal.das.run_das` searches: where, how, on which pairs."""

    task: str = setting("capitals", check=not_empty,
                        help="A shipped circuit task (capitals, ioi, pronoun), a JSONL file "
                        "of clean/corrupted pairs (the corrupted prompt is the base, "
                        "the clean one the source), or a probe set with target tokens "
                        "(its minimal pairs the model solves).", cli=Cli(metavar="NAME|FILE"))
    layers: list[int] | str | int | None = setting(
        "all", help="Layers to search: comma-separated (0-based) or 'all'.")
    position: str = setting("END", check=not_empty,
                            help="Where to intervene: a role label of the task (e.g. country) "
                                 "or END, the last token.")
    dim: int = setting(1, check=at_least(1), help="Dimensions of the learned subspace (k).",
                       cli=Cli(range=True))
    steps: int = setting(100, check=at_least(1), help="Training steps per layer, fold and seed.",
                         cli=Cli(range=True))
    lr: float = setting(1e-2, check=positive, help="Adam's learning rate.")
    batch_size: int = setting(32, cli=False, check=at_least(1),
                              help="Pairs per training step and per scoring pass.")
    limit: int | None = setting(None, check=at_least(4), help="Use the first N pairs of the task.",
                                cli=Cli(range=True))
    folds: int = setting(3, check=at_least(2),
                         help="Cross-fitting folds: each fold (whole templates when the task "
                         "has a template column) is scored by subspaces trained on the "
                         "others, so every pair is held out once.", cli=Cli(range=True))
    seeds: int = setting(1, check=at_least(1),
                         help="Training seeds per layer and fold (the spread is reported).",
                         cli=Cli(range=True))
    control: bool = setting(True,
                            help="Skip the control task (DAS trained on labels that are a "
                            "fixed random function of the source's deciding tokens).",
                            cli=Cli(flag="--no-control"))
    span_variance: float = setting(
        0.99, check=fraction,
        help="The subspace-illusion check restricts DAS's directions to the principal "
             "directions of the activations at the position that explain this share of "
             "their variance.")
    sae: str | None = setting(None,
                              help="An SAE artifact of one layer's residual stream: its "
                              "latents that differ most between the prompts are scored "
                              "as a subspace at that layer.", cli=Cli(metavar="DIR"))
    sae_latents: int = setting(8, check=at_least(1),
                               help="How many SAE latents span that subspace.", cli=Cli(range=True))
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the folds, the control labels, the random directions "
                             "and the first training.")

    def check(self) -> None:
        """The illusion check keeps some variance."""
        if not 0 < self.span_variance <= 1:
            raise self.error("span_variance", "must be above 0 and at most 1",
                             self.span_variance)


@dataclass
class Difference:
    """A difference of two IIAs on the same pairs (selectivity: task − control; the
    illusion gap: DAS − DAS restricted to the observed span), with its 95% bootstrap
    interval over templates (``clusters``) or over pairs (``clusters`` None)."""

    value: float
    ci95: list[float | None]
    n: int
    clusters: int | None = None

    def text(self) -> str:
        """``+0.45 [0.30, 0.60]``."""
        lo, hi = self.ci95
        return f"{self.value:+.2f} {ci_text(lo, hi)}" if lo is not None and hi is not None \
            else f"{self.value:+.2f}"

    def above_zero(self) -> bool:
        """The interval lies wholly above zero."""
        lo = self.ci95[0]
        return lo is not None and lo == lo and lo > 0


@dataclass
class LayerIIA:
    """One layer's interchange-intervention accuracies, every pair held out once."""

    layer: int
    das: Rate
    #: the IIA of each training seed (their spread is the seed noise)
    das_seeds: list[float]
    random: Rate
    full: Rate
    none: Rate
    #: DAS trained and scored on the control task by type, on the held-out pairs whose
    #: type occurs in their fold's training pairs (``None`` with --no-control, or when no
    #: held-out pair's type was seen in training: then the control cannot say anything)
    control: Rate | None
    seconds: float
    #: the control task's chance: the majority label's share among its scored pairs (a
    #: subspace that always flips, or never flips, the output scores exactly this)
    control_chance: float | None = None
    #: distinct types among the control's scored pairs
    control_types: int | None = None
    #: task IIA − control IIA on the control's pairs (Hewitt & Liang's selectivity)
    selectivity: Difference | None = None
    #: DAS with its directions restricted to the observed span of the activations, and
    #: the gap DAS − that (above zero beyond the noise: the subspace illusion)
    in_span: Rate | None = None
    span_gap: Difference | None = None
    #: the share of DAS's directions (squared norm, mean over folds) inside that span, and
    #: the span's dimension (mean over folds)
    span_share: float | None = None
    span_dims: float | None = None
    #: binary tasks only: a probe's held-out accuracy at the position (readable?), and
    #: the IIA of its direction and of the class-mean difference (used?)
    probe_accuracy: Rate | None = None
    probe_direction: Rate | None = None
    mean_difference: Rate | None = None
    #: the IIA of each named extra subspace (an SAE's latents) where it applies
    subspaces: dict[str, Rate] = field(default_factory=dict)

    def control_fits(self) -> bool:
        """The control task's interval lies wholly above its chance: DAS at this dimension
        fits labels that are a random function of the input type."""
        if self.control is None or self.control_chance is None:
            return False
        lo = self.control.ci95[0]
        return lo is not None and lo > self.control_chance

    def beats_full(self) -> bool:
        """DAS's interval lies wholly above the full interchange's."""
        lo, hi = self.das.ci95[0], self.full.ci95[1]
        return lo is not None and hi is not None and lo > hi

    def illusion(self) -> bool:
        """DAS does more than its part in the observed span beyond the noise, or more
        than the full interchange: its effect goes through directions the activations do
        not occupy (Makelov et al. 2023)."""
        return (self.span_gap is not None and self.span_gap.above_zero()) or self.beats_full()


@dataclass
class DASResult(Result):
    """Per layer: DAS's held-out IIA beside its controls; ``to_dict()`` is ``results.json``."""

    config: DASConfig
    task: str
    task_sha256: str
    position: str
    n_pairs: int
    split: str
    #: templates the intervals resample (``None``: pairs independent, Wilson intervals)
    n_clusters: int | None = None
    layers: list[LayerIIA] = field(default_factory=list)
    model_id: str = ""

    warnings_always: ClassVar[bool] = False

    def illusions(self) -> list[LayerIIA]:
        """Layers where DAS's effect goes through directions the activations do not
        occupy (:meth:`LayerIIA.illusion`)."""
        return [r for r in self.layers if r.illusion()]

    def control_fits(self) -> list[LayerIIA]:
        """Layers where DAS fits the control task beyond its chance."""
        return [r for r in self.layers if r.control_fits()]

    def add_warnings(self) -> None:
        """One warning per layer of :meth:`illusions` and of :meth:`control_fits`."""
        for r in self.layers:
            if r.span_gap is not None and r.span_gap.above_zero() and r.in_span is not None:
                self.warn(f"layer {r.layer}: DAS's IIA {r.das.text()} falls to "
                          f"{r.in_span.text()} when its directions are restricted to the span "
                          "the activations vary in: its effect goes through directions the "
                          "model's activations do not occupy (a subspace illusion), not a "
                          "causal variable")
            elif r.beats_full():
                self.warn(f"layer {r.layer}: DAS's IIA {r.das.text()} exceeds the full "
                          f"interchange's {r.full.text()} beyond the noise: the direction "
                          "opens a path the model does not use (a subspace illusion), not a "
                          "causal variable")
            if r.control_fits() and r.control is not None:
                self.warn(f"layer {r.layer}: DAS fits the control task ({r.control.text()} "
                          f"against its chance {r.control_chance:.2f}): a subspace of "
                          f"{self.config.dim} dimension{'s' * (self.config.dim > 1)} can "
                          "memorise labels that are a random function of the input type, so "
                          "its task IIA is not evidence of a variable on its own; read the "
                          "selectivity")

    def best(self) -> LayerIIA | None:
        """The layer with the highest DAS IIA (the first of ties)."""
        return max(self.layers, key=lambda r: r.das.value, default=None)

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: every IIA with its interval."""
        import pandas as pd

        rows = []
        for r in self.layers:
            row: dict[str, Any] = {"layer": r.layer}
            for name in ("das", "in_span", "random", "full", "none", "control",
                         "probe_accuracy", "probe_direction", "mean_difference"):
                rate = getattr(r, name)
                if rate is not None:
                    row[name] = rate.value
                    row[f"{name}_lo"], row[f"{name}_hi"] = rate.ci95
            for name in ("selectivity", "span_gap"):
                diff = getattr(r, name)
                if diff is not None:
                    row[name] = diff.value
                    row[f"{name}_lo"], row[f"{name}_hi"] = diff.ci95
            for name, rate in r.subspaces.items():
                row[name] = rate.value
                row[f"{name}_lo"], row[f"{name}_hi"] = rate.ci95
            row["control_chance"] = r.control_chance
            row["span_share"] = r.span_share
            row["das_seed_min"] = min(r.das_seeds)
            row["das_seed_max"] = max(r.das_seeds)
            rows.append(row)
        return pd.DataFrame(rows)

    def intervals_text(self) -> str:
        """What the intervals rest on: ``bootstrap over 10 templates`` or ``Wilson``."""
        if self.n_clusters is None:
            return "Wilson 95% CI over pairs"
        return f"95% bootstrap CI over {self.n_clusters} templates"

    def headline(self) -> Headline:
        """IIA per layer: DAS and its controls; the verdict reads the best layer."""
        def text(x: Rate | Difference | None) -> str:
            return x.text() if x is not None else "—"

        def control(r: LayerIIA) -> str:
            if r.control is None or r.control_chance is None:
                return "—"
            return f"{r.control.text()} (chance {r.control_chance:.2f})"

        extra = list(dict.fromkeys(k for r in self.layers for k in r.subspaces))
        table = [[r.layer, r.das.text(), text(r.in_span), control(r), text(r.selectivity),
                  text(r.probe_direction), text(r.mean_difference),
                  *[text(r.subspaces.get(k)) for k in extra],
                  r.random.text(), r.full.text(), r.none.text(),
                  text(r.probe_accuracy)] for r in self.layers]
        return Headline(
            title="Distributed alignment search",
            rows=[("model", self.model_id or "unknown"), ("task", self.task),
                  ("position", self.position),
                  ("subspace", f"{self.config.dim} dimension{'s' * (self.config.dim > 1)}"),
                  ("pairs", f"{self.n_pairs}, each held out once ({self.split})"),
                  ("seeds", self.config.seeds)],
            table_title=f"held-out IIA by layer ({self.intervals_text()})",
            columns=["layer", "DAS", "DAS in observed span", "control task", "selectivity",
                     "probe direction", "mean difference", *extra, "random direction",
                     "full interchange", "none", "probe accuracy"],
            table=table, verdict=self.verdict())

    def verdict(self) -> str | None:
        """The best layer's DAS against its controls, in one sentence that says what the
        figure is worth."""
        b = self.best()
        if b is None:
            return None
        text = (f"best layer {b.layer}: DAS IIA {b.das.text()} against a random direction's "
                f"{b.random.text()} and the full interchange's {b.full.text()}")
        lo = b.das.ci95[0]
        hi = b.random.ci95[1]
        if lo is None or hi is None or lo <= hi:
            text += "; not distinguishable from a random direction"
        if b.illusion():
            text += ("; but its effect goes through directions the activations do not "
                     "occupy (subspace illusion)" + (f": restricted to their span it scores "
                                                     f"{b.in_span.text()}"
                                                     if b.in_span is not None else ""))
        elif b.in_span is not None:
            text += f"; restricted to the activations' span {b.in_span.text()}"
        if b.control is not None and b.control_chance is not None:
            text += (f"; control task {b.control.text()} (chance {b.control_chance:.2f}"
                     + (", fitted: the subspace memorises type labels" if b.control_fits()
                        else "") + ")")
            if b.selectivity is not None:
                text += f", selectivity {b.selectivity.text()}"
        elif self.config.control:
            text += "; control task not scored (no held-out pair's type seen in training)"
        if b.probe_direction is not None and b.probe_accuracy is not None:
            text += (f"; the probe's direction {b.probe_direction.text()}, the probe reads "
                     f"the label at {b.probe_accuracy.text()}")
        return text

    def figure(self) -> Figure | None:
        """:func:`~interp.causal.figures.iia_by_layer`."""
        from interp.causal.figures import iia_by_layer

        return iia_by_layer(self) if self.layers else None


# ---------------------------------------------------------------------- edge attribution
EdgeMethod = Literal["all", "eap-clean", "eap-corrupted", "eap-ig", "exact"]
#: ``--method``'s values, and the gradient estimators among them
EDGE_METHODS = ("all", "eap-clean", "eap-corrupted", "eap-ig", "exact")
GRADIENT_ESTIMATORS = ("eap-clean", "eap-corrupted", "eap-ig")


def parse_edge_method(text: str) -> str:
    """``--method``: one of :data:`EDGE_METHODS`; the old name ``eap`` says which new one
    is which (a ``ValueError`` otherwise, shown as one line)."""
    if text == "eap":
        raise ValueError("EAP is named by where its gradient is taken: eap-clean (Syed et "
                         "al.'s EAP) or eap-corrupted (hannamw/EAP-IG's one-step EAP-IG); "
                         "use one of " + ", ".join(EDGE_METHODS))
    if text not in EDGE_METHODS:
        raise ValueError("use one of " + ", ".join(EDGE_METHODS))
    return text


@dataclass(frozen=True)
class EdgeConfig(Config):
    """What :func:`~interp.causal.edges.run_edges` scores, and against what."""

    task: str = setting("ioi", check=not_empty,
                        help="A shipped circuit task (ioi, capitals, pronoun) or a JSONL file "
                        "of clean/corrupted pairs.", cli=Cli(metavar="NAME|FILE"))
    method: EdgeMethod = setting(
        "all",
        help="eap-clean (gradient at the clean run: Syed et al.'s EAP) | eap-corrupted "
        "(gradient at the corrupted run) | eap-ig (integrated from the corrupted to the "
        "clean input; eap-corrupted, its first point, comes with it) | exact (path "
        "patching of a sample) | all (every estimator for every edge, exact for the "
        "sample, compared).", cli=Cli(parse=parse_edge_method, metavar="|".join(EDGE_METHODS)))
    ig_steps: int = setting(20, check=at_least(1),
                            help="eap-ig's integration steps m: the gradient at e_corr + "
                            "(k/m)(e_clean − e_corr), k = 0 … m−1 (1 gives "
                            "eap-corrupted). 20: on IOI its scores are within 1.5% "
                            "(relative L2) of 60 steps' and sum to the gap within "
                            "1.2% (bench/edges_ig_steps.py).", cli=Cli(range=True))
    sample: int = setting(500, check=at_least(1),
                          help="Edges patched exactly: the top edges by the estimators "
                          "(--top) plus a random sample stratified by receiver layer.",
                          cli=Cli(range=True))
    top: int = setting(100, check=at_least(0),
                       help="Of the sample, this many are the edges with the largest |score| "
                       "under any estimator.", cli=Cli(range=True))
    direction: Direction = setting(
        "denoise", help="denoise: clean values into the corrupted run; noise: the reverse.")
    limit: int | None = setting(None, check=at_least(1), help="Use the first N pairs of the task.",
                                cli=Cli(range=True))
    min_gap: float = setting(0.1, check=non_negative,
                             help="Leave out pairs whose clean − corrupted logit difference "
                             "gap is smaller.", cli=Cli(range=True))
    circuit_edges: int = setting(200, check=at_least(1),
                                 help="Edges kept in the saved circuit (before pruning); the "
                                 "headline's faithfulness is read at this count.",
                                 cli=Cli(range=True))
    max_edges: int = setting(1000, check=at_least(1),
                             help="The faithfulness curve's largest edge count.",
                             cli=Cli(range=True))
    random_draws: int = setting(5, check=at_least(2),
                                help="Edge sets drawn per count for each estimator's matched "
                                "baseline (their spread is the set-to-set noise of the "
                                "comparison) and for the plain random one.", cli=Cli(range=True))
    recall_k: int = setting(50, check=at_least(1),
                            help="k of recall@k against exact path patching.", cli=Cli(range=True))
    n_boot: int = setting(1000, check=at_least(100),
                          help="Bootstrap resamples (over pairs) for the agreement CIs.",
                          cli=Cli(flag="--bootstrap", range=True))
    batch_size: int = setting(8, cli=False, check=at_least(1),
                              help="Pairs per gradient pass; rows per patched pass x4.")
    group_by: str = setting(
        "auto", check=not_empty,
        help="A task-file column whose values group the pairs: the top sampled edges' exact "
        "effects per group. auto: 'template' when every pair has it; none: no groups.",
        cli=Cli(metavar="COLUMN|auto|none"))
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the edge sample, the baseline edge sets and the bootstrap.")

    #: an estimator's matched baseline at n edges draws from its ranks n+1 … (1 + this)·n
    match_pool: ClassVar[int] = 2

    def check(self) -> None:
        """The sample holds its top edges."""
        if self.top > self.sample:
            raise self.error("top", f"must be at most --sample ({self.sample})", self.top)

    @property
    def estimators(self) -> tuple[str, ...]:
        """The gradient estimators this run scores every edge by."""
        if self.method == "all":
            return GRADIENT_ESTIMATORS
        if self.method == "exact":
            return ()
        if self.method == "eap-ig":
            return ("eap-corrupted", "eap-ig")
        return (self.method,)


@dataclass
class EdgeAgreement:
    """One estimator against exact path patching on the sampled edges: a LOCAL check
    (edge by edge, each patched alone), not the test of a circuit."""

    method: str
    n_edges: int
    spearman: float
    spearman_ci95: list[float]
    k: int
    recall: float
    recall_ci95: list[float]
    #: the same on the random (stratified) part of the sample alone
    spearman_random: float = float("nan")


#: The kinds of edge sets on the faithfulness curves: an estimator's top n; its matched
#: baseline (n edges drawn from its ranks n+1 … (1 + EdgeConfig.match_pool)·n); n edges from all
#: (the weak baseline); the top n sampled edges by exact path patching (the reference).
FaithKind = Literal["top", "matched", "random", "exact"]


@dataclass
class FaithCurve:
    """The share of the clean − corrupted gap kept by edge sets of ``n`` edges."""

    method: str
    n: list[int]
    mean: list[float]
    ci95: list[list[float]]
    kind: str = "top"


@dataclass
class FaithVersus:
    """An estimator's top ``n`` edges against its matched baseline at one ``n``.

    ``difference_ci95``: the pairs' noise (standard error of the per-pair difference) and
    the set-to-set noise (the spread of the matched draws' means, the top set counted as
    one more draw, with a t-quantile for the few draws) together:
    :func:`~interp.causal.edges.versus_matched`."""

    method: str
    n: int
    kept: float
    kept_ci95: list[float]
    matched: float
    matched_draws: list[float]
    difference: float
    difference_ci95: list[float]
    #: the plain random sets' mean (the weak baseline) and the exact reference, same n
    random: float | None = None
    exact: float | None = None

    @property
    def verdict(self) -> str:
        """``beats``, ``below`` or ``within the noise`` of the matched baseline."""
        lo, hi = self.difference_ci95
        if lo > 0:
            return "beats"
        if hi < 0:
            return "below"
        return "within the noise"


@dataclass
class CircuitEdge:
    """One kept edge and its score (the circuit's method, mean over pairs)."""

    sender: str
    receiver: str
    score: float


@dataclass
class Circuit:
    """The pruned edge set: the top edges by ``method``, less those that reach neither the
    input nor the logits through other kept edges."""

    method: str
    n_top: int
    edges: list[CircuitEdge]
    faithfulness: float
    faithfulness_ci95: list[float]

    def to_json(self) -> dict[str, Any]:
        """``circuit.json``."""
        nodes = sorted({e.sender for e in self.edges} | {e.receiver for e in self.edges})
        return {"method": self.method, "top_edges": self.n_top, "nodes": nodes,
                "edges": [[e.sender, e.receiver, e.score] for e in self.edges],
                "faithfulness": self.faithfulness,
                "faithfulness_ci95": self.faithfulness_ci95}


@dataclass
class SampledEdge:
    """One edge patched exactly: its mean effect on the logit difference (raw, nats)
    and each estimator's mean score, and whether it was chosen as a top edge or at random."""

    edge: str
    chosen: str  # "top" or "random"
    exact: float
    eap_clean: float | None = None
    eap_corrupted: float | None = None
    eap_ig: float | None = None

    def score(self, method: str) -> float | None:
        """An estimator's score of the edge (None where it was not run)."""
        return getattr(self, method.replace("-", "_"))


@dataclass
class EdgeResult(Result):
    """Edge scores against exact path patching; ``to_dict()`` is ``results.json``."""

    config: EdgeConfig
    task: TaskSummary
    n_edges: int
    n_senders: int
    n_receivers: int
    #: The model's layout the edges are read on (the report draws the circuit on it).
    n_layers: int = 0
    n_heads: int = 0
    n_kv: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: seconds of one unpatched forward pass of a batch, for forward-equivalents
    forward_seconds: float = float("nan")
    agreement: list[EdgeAgreement] = field(default_factory=list)
    faithfulness: list[FaithCurve] = field(default_factory=list)
    versus: list[FaithVersus] = field(default_factory=list)
    circuit: Circuit | None = json_field(None, omit_none=True)
    sample: list[SampledEdge] = field(default_factory=list)
    top_edges: list[SampledEdge] = field(default_factory=list)
    groups: GroupEffects | None = json_field(None, omit_none=True)
    model_id: str = ""
    #: per-pair scores ``[pairs, edges]`` by method (``exact``: ``[pairs, sample]``)
    scores: dict[str, Any] = json_field(default_factory=dict, skip=True)

    def forward_equivalents(self, method: str) -> float:
        """A method's time per batch of pairs in unpatched forward passes of that batch."""
        n_batches = -(-self.task.n_used // self.config.batch_size)
        return self.seconds.get(method, float("nan")) / n_batches / self.forward_seconds

    def _seconds_text(self, method: str) -> str:
        if method in self.seconds:
            return f"{self.seconds[method]:.1f}"
        return "in eap-ig's" if "eap-ig" in self.seconds else "—"

    def _fwd_text(self, method: str) -> str:
        return f"{self.forward_equivalents(method):.1f}" if method in self.seconds else "—"

    def versus_at(self, n: int) -> list[FaithVersus]:
        """Every estimator's comparison with its matched baseline at ``n`` edges."""
        return [v for v in self.versus if v.n == n]

    def headline(self) -> Headline:
        """Faithfulness of each estimator's top edges against its matched baseline and the
        exact reference first; the per-edge agreement with exact patching (a local check)
        beside it."""
        def ci(x: list[float]) -> str:
            return ci_text(x[0], x[1], 2)

        def num(x: float | None) -> str:
            return "—" if x is None or x != x else f"{x:.2f}"

        n = self.config.circuit_edges
        at = {v.method: v for v in self.versus_at(n)}
        agree = {a.method: a for a in self.agreement}
        table = []
        for m in dict.fromkeys([*at, *agree]):
            v, a = at.get(m), agree.get(m)
            table.append([
                m, f"{v.kept:.2f} {ci(v.kept_ci95)}" if v else "—",
                num(v.matched) if v else "—",
                f"{v.difference:+.2f} {ci(v.difference_ci95)}" if v else "—",
                v.verdict if v else "—",
                f"{a.spearman:.2f} {ci(a.spearman_ci95)}" if a else "—",
                f"{a.recall:.2f} {ci(a.recall_ci95)}" if a else "—",
                self._seconds_text(m), self._fwd_text(m)])
        verdict = None
        if at:
            parts = [f"{v.method} {v.kept:.2f} vs matched {v.matched:.2f} "
                     f"({v.verdict})" for v in at.values()]
            first = next(iter(at.values()))
            tail = []
            if first.exact is not None:
                tail.append(f"the top {n} sampled edges by exact patching keep "
                            f"{first.exact:.2f} (a reference, not a bound)")
            if first.random is not None:
                tail.append(f"{n} edges drawn from all keep {first.random:.2f} (the weak "
                            "baseline)")
            if all(abs(v.matched) < 0.01 for v in at.values()):
                tail.append("the matched sets keep nothing either: without the top edges, "
                            "the next-ranked ones carry none of the gap")
            verdict = (f"top {n} edges keep of the gap: " + "; ".join(parts)
                       + ("; " + "; ".join(tail) if tail else ""))
        if self.circuit is not None:
            c = self.circuit
            text = (f"saved circuit: top {c.n_top} {c.method} edges, {len(c.edges)} after "
                    f"pruning, keeps {c.faithfulness:.2f} {ci(c.faithfulness_ci95)}")
            verdict = f"{verdict}; {text}" if verdict else text
        return Headline(
            title="Edge attribution: circuit faithfulness against matched baselines",
            rows=[("model", self.model_id or "unknown"), ("task", self.task.name),
                  ("pairs", f"{self.task.n_used} used of {self.task.n_read}"),
                  ("graph", f"{self.n_senders} senders, {self.n_receivers} receivers, "
                            f"{self.n_edges} edges"),
                  ("direction", self.config.direction),
                  ("eap-ig steps", self.config.ig_steps)],
            table_title=(f"top {n} edges' share of the gap vs {n} edges matched in |score| "
                         "(95% CI); Spearman and recall@k: the local, edge-by-edge check "
                         "against exact path patching on the sample"),
            columns=["estimator", f"top {n} keep", "matched", "difference", "verdict",
                     "Spearman (local)", "recall@k", "seconds",
                     "forward-equivalents per batch"],
            table=table, verdict=verdict)

    def figure(self) -> Figure | None:
        """:func:`~interp.causal.figures.faithfulness_curves`."""
        from interp.causal.figures import faithfulness_curves

        return faithfulness_curves(self) if self.faithfulness else None
