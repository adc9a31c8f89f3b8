"""Typed config and result of automatic interpretation (``run_autointerp``).

A feature's score is the AUROC with which a scorer's log-odds separate its held-out
activating texts from non-activating ones, given its explanation (detection), or its
correctly marked texts from wrongly marked ones (fuzzing). Beside every score is its null
control: the same texts scored with a **shuffled explanation** (another feature's of the
same group), the **difference** with its 95% bootstrap interval over the texts, and the
one-sided p-value of a paired permutation test. A group's features are **explained** when
Benjamini–Hochberg at ``fdr`` rejects their null; the same criterion applied to a second
shuffled explanation against the first measures its **null rate** (its false-positive
rate on explanations that explain nothing).

Four groups go through the same contexts, explainers and scorers: the SAE's features
(``sae``), a random-weight SAE's (``random``, as many: explanations of noise), and planted
features whose answer is known: ``planted`` (indicators of a token set) and ``concept``
(indicators of a concept's words, shown some words and scored on held-out ones). Planted
features also carry a **reference** explanation (their token list; the concept's name),
scored by every scorer: a scorer × method that does not recover them **failed its planted
control**, and its scores are not summarised as findings (see :class:`ScorerControl`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from interp.display import ci_text
from interp.schema import (
    Check,
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_field,
    not_empty,
    seed_range,
    setting,
)
from saes.results import FeatureContext, parse_feature_spec

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: The feature groups, in the order tables show them.
GROUPS = ("sae", "random", "planted", "concept")
#: The planted groups (features whose answer is known) and the level each stands for.
PLANTED_LEVELS = {"planted": "token", "concept": "concept"}
METHODS = ("detection", "fuzzing")
PROGRAMMATIC = "programmatic"
#: A planted feature's known explanation (its tokens; its concept's name), scored by
#: every scorer: the scorer's planted control.
REFERENCE = "reference"
#: Fewer features than this: a summary's verdict needs every feature explained.
MIN_FEATURES = 5


def _spec_ok(spec: str) -> bool:
    parse_feature_spec(spec)  # raises its own one-line InterpError
    return True


def _methods_ok(value: str) -> bool:
    parts = [p.strip() for p in value.split(",")]
    return bool(parts) and all(p in METHODS for p in parts)


def split_list(value: str) -> list[str]:
    """A comma list's non-empty items, stripped, first occurrence kept."""
    out: list[str] = []
    for p in value.split(","):
        if p.strip() and p.strip() not in out:
            out.append(p.strip())
    return out


@dataclass(frozen=True)
class AutoInterpConfig(Config):
    """Which features, which explainer and scorers, and how many contexts of each kind."""

    features: str = setting(
        "alive:20", check=Check(_spec_ok, "must be 'alive:N' or a comma list of indices"),
        help="Features to explain: 'alive:N' (a seeded sample of live ones) or '3,17,99'.")
    explainer: str = setting(
        PROGRAMMATIC, check=not_empty,
        help="programmatic (named tokens), or an instruct model interp loads ('self': the "
        "model whose SAE it is); the programmatic baseline is always run beside it.",
        cli=Cli(metavar="programmatic|MODEL"))
    scorers: str = setting(
        "programmatic,self", check=not_empty,
        help="Scorers, comma-separated: programmatic (the named tokens matched, no model), "
        "'self' (the model whose SAE it is) or any model interp loads.",
        cli=Cli(flag="--scorer", metavar="MODEL[,MODEL]"))
    methods: str = setting("detection,fuzzing",
                           check=Check(_methods_ok, "must be detection, fuzzing or both"),
                           help="Scorers' tasks: detection, fuzzing or both (comma list).")
    tokens: int = setting(65536, check=at_least(1), help="Held-out tokens scanned for contexts.",
                          cli=Cli(range=True))
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.",
                           cli=Cli(range=True))
    ctx_len: int = setting(32, check=at_least(2),
                           help="Tokens per context (an example a scorer reads).",
                           cli=Cli(range=True))
    n_explain: int = setting(10, check=at_least(1),
                             help="Top-activating contexts shown to the explainer.",
                             cli=Cli(range=True))
    n_score: int = setting(10, check=at_least(2),
                           help="Held-out activating contexts (across activation quantiles) "
                           "and as many random non-activating ones per feature.",
                           cli=Cli(range=True))
    n_hard: int = setting(5, check=at_least(0),
                          help="Held-out hard negatives per feature: contexts with its top "
                          "tokens where it does not fire.", cli=Cli(range=True))
    n_quantiles: int = setting(5, cli=False, check=at_least(1),
                               help="Activation quantile bins the held-out positives come from.")
    random_features: int | None = setting(
        None, check=at_least(0),
        help="Features of a random-weight SAE of the same size run through the same "
             "pipeline (a null control; 0: none) [default: as many as the SAE features scored].")
    planted: int = setting(4, check=at_least(0),
                           help="Token-level planted features (firing on a known token set): "
                           "the programmatic explainer must name them and every scorer "
                           "detect them (0: none).", cli=Cli(range=True))
    planted_concepts: int = setting(
        4, check=at_least(0),
        help="Concept-level planted features (firing on the words of a concept such as "
        "colours; explained by the concept's name and scored on words the explainer "
        "never saw): every language-model scorer must detect them (0: none).", cli=Cli(range=True))
    planted_auroc: float = setting(0.9, cli=False, check=in_range(0.5, 1.0),
                                   help="A scorer recovers a planted feature when its reference "
                                        "explanation's AUROC reaches this (and it is explained).")
    fdr: float = setting(0.05, cli=False, check=in_range(0, 1, open_low=True, open_high=True),
                         help="False-discovery rate of 'explained' (Benjamini–Hochberg over "
                              "a group's features).")
    n_permutations: int = setting(5000, check=at_least(99),
                                  help="Resamples of each feature's paired permutation test.",
                                  cli=Cli(flag="--permutations", range=True))
    n_boot: int = setting(1000, check=at_least(100), help="Bootstrap resamples for every interval.",
                          cli=Cli(flag="--bootstrap", range=True))
    deterministic: bool = setting(True,
                                  help="The explainer's generation is independent of "
                                  "its batch (decode-verify-rollback).",
                                  cli=Cli(flag="--deterministic/--no-deterministic"))
    max_explanation_tokens: int = setting(24, cli=False, check=at_least(1),
                                          help="Most tokens a language-model explanation has.")
    batch_size: int = setting(8, cli=False, check=at_least(1),
                              help="Windows per forward pass and texts per scoring pass.")
    #: Measured peak RSS generating from 616-token explainer prompts (SmolLM2): 3.8 GB at 4
    #: per batch, 6.3 GB at 8, 19.6 GB at 32 (a 200-feature run at 32 peaked at 15.3 GB):
    #: the generation engine's prefill keeps float32 logits for every prompt position.
    #: Generation here is prefill-bound (600 prompt tokens, 24 new), so 4 costs little.
    explain_batch_size: int = setting(4, cli=False, check=at_least(1),
                                      help="Explanations generated together.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Seeds the split, the samples, the shuffles and the bootstrap.")

    @property
    def scorer_list(self) -> list[str]:
        """``scorers`` as a list."""
        return split_list(self.scorers)

    @property
    def method_list(self) -> list[str]:
        """``methods`` as a list."""
        return split_list(self.methods)

    @property
    def explainers(self) -> list[str]:
        """The programmatic baseline, then the language-model explainer if one is named."""
        return [PROGRAMMATIC] + ([self.explainer] if self.explainer != PROGRAMMATIC else [])

    def explainers_of(self, group: str) -> list[str]:
        """The explanations scored for ``group``: a planted group's reference as well."""
        return self.explainers + ([REFERENCE] if group in PLANTED_LEVELS else [])


@dataclass
class ExplainedFeature:
    """One feature: its explanations, its contexts' counts and a few of its top contexts."""

    group: str
    feature: int
    n_active: int
    explanations: dict[str, str] = field(default_factory=dict)
    #: the feature whose explanations are this one's shuffled control (same group)
    shuffled_from: int | None = None
    shuffled_group: str | None = None
    #: the second shuffled explanation's feature (the null-rate control), if any
    null_from: int | None = json_field(None, omit_none=True)
    null_group: str | None = json_field(None, omit_none=True)
    top_tokens: list[str] = field(default_factory=list)
    #: a planted feature's token set (a concept feature's: the words shown to the explainer)
    planted_tokens: list[str] | None = json_field(None, omit_none=True)
    #: a concept feature's concept and its held-out words (scored, never shown)
    concept: str | None = json_field(None, omit_none=True)
    held_out_tokens: list[str] | None = json_field(None, omit_none=True)
    examples: list[FeatureContext] = field(default_factory=list)
    n_positive: int = 0
    n_negative: int = 0
    n_hard: int = 0
    #: why the feature was not scored (too few contexts), or None
    skipped: str | None = json_field(None, omit_none=True)


@dataclass
class FeatureScore:
    """One feature × explainer × scorer × method: its AUROC, its shuffled control's, the
    difference with its 95% bootstrap CI over the texts and its permutation p-value (q:
    Benjamini–Hochberg over the group's features; explained: q ≤ fdr), balanced accuracy
    at log-odds 0 (the scorer's own yes/no), and the null control: a second shuffled
    explanation against the first, tested the same way."""

    group: str
    feature: int
    explainer: str
    scorer: str
    method: str
    auroc: float
    shuffled_auroc: float
    difference: float
    difference_ci95: list[float]
    balanced_accuracy: float
    n_positive: int
    n_negative: int
    p_value: float = float("nan")
    q_value: float = float("nan")
    explained: bool = False
    null_difference: float = float("nan")
    null_p_value: float = float("nan")
    null_q_value: float = float("nan")
    null_explained: bool = False


def best_score(rows: Sequence[FeatureScore]) -> FeatureScore | None:
    """The explained row of largest difference, else the row whose difference interval
    starts highest."""
    return max(rows, key=lambda r: (r.explained, r.difference if r.explained else
                                    r.difference_ci95[0], r.difference), default=None)


def row_kind(explainer: str, scorer: str) -> str:
    """What a row measures: 'token matching scored by token matching' (a pipeline check),
    'token matching' (another explainer scored by the token matcher) or 'language model'."""
    if scorer != PROGRAMMATIC:
        return "language model"
    return ("token matching scored by token matching" if explainer == PROGRAMMATIC
            else "token matching")


@dataclass
class ScoreSummary:
    """One group × explainer × scorer × method over its features: the mean AUROC of true
    and shuffled explanations and of their difference (95% bootstrap CIs over features),
    the share of features explained (Benjamini–Hochberg; Wilson CI) beside its null rate
    (the same criterion on a second shuffled explanation against the first), and for the
    SAE's features the comparison with the random-weight SAE's (difference of the mean
    differences, two-sided Mann–Whitney p). ``scorer_passed``: whether the scorer × method
    passed its planted control (False: these are not findings)."""

    group: str
    explainer: str
    scorer: str
    method: str
    n_features: int
    auroc: float
    auroc_ci95: list[float]
    shuffled_auroc: float
    shuffled_auroc_ci95: list[float]
    difference: float
    difference_ci95: list[float]
    explained: float
    explained_ci95: list[float]
    explained_n: int
    null_explained: float = float("nan")
    null_explained_ci95: list[float] = field(default_factory=lambda: [float("nan")] * 2)
    null_explained_n: int = 0
    vs_random: float = float("nan")
    vs_random_p: float = float("nan")
    scorer_passed: bool = True

    #: the columns of :meth:`cells`
    COLUMNS: ClassVar[list[str]] = ["group", "explainer", "scorer", "method", "features",
                                    "AUROC", "shuffled", "difference", "explained (BH)",
                                    "null rate", "vs random SAE", "verdict"]

    @property
    def kind(self) -> str:
        """:func:`row_kind`."""
        return row_kind(self.explainer, self.scorer)

    def cells(self) -> list[Any]:
        """The row the headline and the report show (each mean with its interval)."""
        def ci(x: list[float]) -> str:
            return ci_text(x[0], x[1])

        vs = (f"{self.vs_random:+.2f} (p {self.vs_random_p:.2g})"
              if self.vs_random == self.vs_random else "—")
        null = (f"{self.null_explained:.0%} {ci(self.null_explained_ci95)}"
                if self.null_explained_n else "—")
        return [self.group, self.explainer, self.scorer, self.method, self.n_features,
                f"{self.auroc:.2f} {ci(self.auroc_ci95)}",
                f"{self.shuffled_auroc:.2f} {ci(self.shuffled_auroc_ci95)}",
                f"{self.difference:+.2f} {ci(self.difference_ci95)}",
                f"{self.explained:.0%} {ci(self.explained_ci95)}", null, vs, self.verdict]

    @property
    def verdict(self) -> str:
        """'explained' when the mean difference's interval lies above 0 (with fewer than
        :data:`MIN_FEATURES` features, whose bootstrap across features means little: when
        every feature is explained, else how many are), else 'not distinguishable from
        shuffled'; the SAE's features must also beat the random-weight SAE's (Mann–Whitney
        p < 0.05), else 'not distinguishable from random-weight features'."""
        if self.n_features < MIN_FEATURES:
            k = round(self.explained * self.n_features) if self.n_features else 0
            return "explained" if self.n_features and k == self.n_features \
                else f"{k} of {self.n_features} features explained (too few to pool)"
        lo = self.difference_ci95[0]
        if not (lo == lo and lo > 0):
            return "not distinguishable from shuffled"
        if self.group == "sae" and self.vs_random_p == self.vs_random_p and not (
                self.vs_random_p < 0.05 and self.vs_random > 0):
            return "above shuffled, not distinguishable from random-weight features"
        return "explained"


@dataclass
class ScorerControl:
    """One scorer × method's planted control: how many planted features of each level its
    reference explanations recover (AUROC ≥ ``planted_auroc`` and explained against a
    shuffled reference), and whether it passed. A language-model scorer is held to both
    levels; the programmatic scorer (a token matcher) to the token level only, and its
    concept-level result is reported to show that token matching cannot pass it. With no
    planted feature of a level it is held to, the control did not run: failed (closed)."""

    scorer: str
    method: str
    kind: str
    token_recovered: int
    token_n: int
    concept_recovered: int
    concept_n: int
    passed: bool
    reason: str

    @property
    def name(self) -> str:
        """'self · detection'."""
        return f"{self.scorer} · {self.method}"

    def cells(self) -> list[Any]:
        """The scorer-controls table's row."""
        return [self.scorer, self.method, self.kind,
                f"{self.token_recovered} of {self.token_n}",
                f"{self.concept_recovered} of {self.concept_n}",
                "passed" if self.passed else "FAILED", self.reason]

    COLUMNS: ClassVar[list[str]] = ["scorer", "method", "kind", "token-level recovered",
                                    "concept-level recovered", "planted control", "why"]


@dataclass
class PlantedRecovery:
    """A planted feature (token or concept level): its tokens (a concept's: those shown to
    the explainer, and ``held_out``), its reference explanation, the programmatic
    explanation and whether it names every token shown; per scorer the reference's
    detection AUROC, and per 'scorer · method' whether the scorer recovered it."""

    feature: int
    tokens: list[str]
    explanation: str
    named: bool
    detection_auroc: dict[str, float] = field(default_factory=dict)
    level: str = "token"
    reference: str = ""
    held_out: list[str] = field(default_factory=list)
    #: 'scorer · method' → the reference's AUROC, and whether it recovered the feature
    auroc: dict[str, float] = field(default_factory=dict)
    recovered_by: dict[str, bool] = field(default_factory=dict)

    def recovered(self, scorer: str, method: str = "detection") -> bool:
        """Whether ``scorer`` × ``method`` recovered it (see :class:`ScorerControl`)."""
        return self.recovered_by.get(f"{scorer} · {method}", False)


@dataclass
class AutoInterpResult(Result):
    """Explanations and their scores against null controls; ``to_dict()`` is
    ``results.json``."""

    config: AutoInterpConfig
    model_id: str
    hook_point: str
    layer: int | None
    d_sae: int
    n_tokens: int
    features: list[ExplainedFeature] = field(default_factory=list)
    scores: list[FeatureScore] = field(default_factory=list)
    summary: list[ScoreSummary] = field(default_factory=list)
    #: the token-level planted features, and the concept-level ones
    planted: list[PlantedRecovery] = field(default_factory=list)
    concepts: list[PlantedRecovery] = field(default_factory=list)
    #: each scorer × method's planted control
    controls: list[ScorerControl] = field(default_factory=list)
    #: scorer name → the model id it loaded
    scorer_ids: dict[str, str] = field(default_factory=dict)
    explainer_id: str | None = json_field(None, omit_none=True)
    seconds: dict[str, float] = field(default_factory=dict)
    sae_path: str | None = json_field(None, omit_none=True)
    data: dict[str, Any] | None = json_field(None, omit_none=True)

    warnings_always: ClassVar[bool] = False

    def feature(self, group: str, index: int) -> ExplainedFeature | None:
        """The explained feature ``index`` of ``group``."""
        return next((f for f in self.features if f.group == group and f.feature == index),
                    None)

    def summary_of(self, group: str, explainer: str, scorer: str, method: str,
                   ) -> ScoreSummary | None:
        """The summary row of one group × explainer × scorer × method."""
        return next((s for s in self.summary if (s.group, s.explainer, s.scorer, s.method)
                     == (group, explainer, scorer, method)), None)

    def control(self, scorer: str, method: str) -> ScorerControl | None:
        """The planted control of ``scorer`` × ``method``."""
        return next((c for c in self.controls if (c.scorer, c.method) == (scorer, method)),
                    None)

    def passed(self, scorer: str, method: str) -> bool:
        """Whether ``scorer`` × ``method`` passed its planted control (fails closed)."""
        c = self.control(scorer, method)
        return c is not None and c.passed

    def best(self, kind: str = "language model") -> ScoreSummary | None:
        """The SAE features' best row of ``kind`` ('language model' or 'token matching')
        among scorers that passed their planted control, by the lower end of the
        difference's interval."""
        rows = [s for s in self.summary if s.group == "sae" and s.n_features
                and s.scorer_passed and s.kind.startswith(kind)]
        return max(rows, key=lambda s: (s.difference_ci95[0], s.difference), default=None)

    @property
    def planted_named(self) -> float:
        """Share of token-level planted features whose programmatic explanation names every
        token."""
        return sum(p.named for p in self.planted) / len(self.planted) if self.planted \
            else float("nan")

    def extra_data(self) -> dict[str, Any]:
        """Adds the planted features' naming rate."""
        return {"planted_named": self.planted_named, "planted_named_n": len(self.planted)}

    def verdict(self) -> str:
        """What the run is worth, first: the language-model finding only where its scorer
        passed the planted control; token matching labelled as the pipeline check it is."""
        lm = [c for c in self.controls if c.kind == "language model"]
        parts = []
        best = self.best("language model")
        if best is not None:
            parts.append(
                f"{best.explainer} explanations scored by {best.scorer} ({best.method}, a "
                f"scorer that passed its planted control) beat shuffled ones by "
                f"{best.difference:+.2f} "
                f"{ci_text(best.difference_ci95[0], best.difference_ci95[1])} AUROC, "
                f"{best.explained:.0%} of features explained (null rate "
                f"{best.null_explained:.0%}) — {best.verdict}")
        elif lm:
            failed = "; ".join(f"{c.name}: {c.reason}" for c in lm if not c.passed)
            parts.append("No finding about the features: no language-model scorer passed "
                         f"its planted control ({failed}), so its scores are not summarised")
        else:
            parts.append("No finding about the features: no language-model scorer was run")
        tok = self.best("token matching")
        if tok is not None:
            parts.append(
                f"token matching ({tok.kind}, {tok.method}): {tok.difference:+.2f} "
                f"{ci_text(tok.difference_ci95[0], tok.difference_ci95[1])} AUROC over "
                f"shuffled — {tok.verdict}; it shows the pipeline works, not that the "
                "features are interpretable")
        return ". ".join(p[0].upper() + p[1:] for p in parts)

    def headline(self) -> Headline:
        """The scorers' planted controls, then per group × explainer × scorer × method of
        the scorers that passed: true, shuffled, their difference, the explained share and
        its null rate."""
        table = [[s.kind, *s.cells()] for s in self.summary if s.scorer_passed]
        rows: list[tuple[str, Any]] = [
            ("model", self.model_id), ("hook point", self.hook_point),
            ("features (d_sae)", self.d_sae), ("tokens scanned", self.n_tokens),
            ("explainers", ", ".join(self.config.explainers)),
            ("scorers", ", ".join(f"{k} ({v})" if k != v else k
                                  for k, v in self.scorer_ids.items())),
        ]
        for c in self.controls:
            rows.append((f"planted control: {c.name}",
                         f"{'passed' if c.passed else 'FAILED'} ({c.reason})"))
        if self.planted:
            rows.append(("planted features named", f"{sum(p.named for p in self.planted)} "
                                                   f"of {len(self.planted)}"))
        return Headline(
            title="Automatic interpretation against null controls", rows=rows,
            table_title="Scorers that passed their planted control: AUROC of true and "
                        "shuffled explanations (95% bootstrap CIs over features); explained: "
                        "Benjamini–Hochberg over features, beside its null rate",
            columns=["kind", *ScoreSummary.COLUMNS], table=table, verdict=self.verdict())

    def figure(self) -> Figure | None:
        """:func:`~saes.autointerp.figures.score_figure`: true against shuffled AUROC."""
        from saes.autointerp.figures import score_figure

        return score_figure(self) if self.scores else None

    def to_frame(self) -> pd.DataFrame:
        """One row per feature × explainer × scorer × method, with the explanation."""
        import pandas as pd

        rows = []
        for s in self.scores:
            f = self.feature(s.group, s.feature)
            rows.append({"group": s.group, "feature": s.feature, "explainer": s.explainer,
                         "scorer": s.scorer, "method": s.method,
                         "explanation": f.explanations.get(s.explainer) if f else None,
                         "auroc": s.auroc, "shuffled_auroc": s.shuffled_auroc,
                         "difference": s.difference, "difference_lo": s.difference_ci95[0],
                         "difference_hi": s.difference_ci95[1], "p_value": s.p_value,
                         "q_value": s.q_value, "explained": s.explained,
                         "null_difference": s.null_difference,
                         "null_explained": s.null_explained,
                         "scorer_passed": self.passed(s.scorer, s.method),
                         "balanced_accuracy": s.balanced_accuracy})
        return pd.DataFrame(rows)


__all__ = ["GROUPS", "METHODS", "PLANTED_LEVELS", "PROGRAMMATIC", "REFERENCE", "AutoInterpConfig",
           "AutoInterpResult", "ExplainedFeature", "FeatureScore", "PlantedRecovery",
           "ScoreSummary", "ScorerControl", "best_score", "row_kind", "split_list"]
