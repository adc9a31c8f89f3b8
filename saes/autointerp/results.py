"""Typed config and result of automatic interpretation (``run_autointerp``).

A feature's score is the AUROC with which a scorer model's log-odds separate its held-out
activating texts from non-activating ones, given its explanation (detection), or its
correctly marked texts from wrongly marked ones (fuzzing). Beside every score is its null
control: the same texts scored with a **shuffled explanation** (another feature's), and
the **difference** with its 95% bootstrap interval over the texts. A feature whose interval
holds 0 is "not explained". Three groups go through the same contexts, explainers and
scorers: the SAE's features (``sae``), features of a random-weight SAE of the same size
(``random``: explanations of noise, which must not score) and planted features (``planted``:
indicators of a known token set, which the programmatic explainer must name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from interp.display import ci_text
from interp.schema import (
    Check,
    Config,
    Headline,
    Result,
    at_least,
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
GROUPS = ("sae", "random", "planted")
METHODS = ("detection", "fuzzing")
PROGRAMMATIC = "programmatic"
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
        PROGRAMMATIC, check=not_empty, metavar="programmatic|MODEL",
        help="programmatic (named tokens), or an instruct model interp loads ('self': the "
             "model whose SAE it is); the programmatic baseline is always run beside it.")
    scorers: str = setting(
        "programmatic,self", flag="--scorer", check=not_empty, metavar="MODEL[,MODEL]",
        help="Scorers, comma-separated: programmatic (the named tokens matched, no model), "
             "'self' (the model whose SAE it is) or any model interp loads.")
    methods: str = setting("detection,fuzzing",
                           check=Check(_methods_ok, "must be detection, fuzzing or both"),
                           help="Scorers' tasks: detection, fuzzing or both (comma list).")
    tokens: int = setting(65536, cli_range=True, check=at_least(1),
                          help="Held-out tokens scanned for contexts.")
    seq_len: int = setting(128, cli_range=True, check=at_least(3),
                           help="Tokens per text window.")
    ctx_len: int = setting(32, cli_range=True, check=at_least(2),
                           help="Tokens per context (an example a scorer reads).")
    n_explain: int = setting(10, cli_range=True, check=at_least(1),
                             help="Top-activating contexts shown to the explainer.")
    n_score: int = setting(10, cli_range=True, check=at_least(2),
                           help="Held-out activating contexts (across activation quantiles) "
                                "and as many random non-activating ones per feature.")
    n_hard: int = setting(5, cli_range=True, check=at_least(0),
                          help="Held-out hard negatives per feature: contexts with its top "
                               "tokens where it does not fire.")
    n_quantiles: int = setting(5, cli=False, check=at_least(1),
                               help="Activation quantile bins the held-out positives come from.")
    random_features: int = setting(10, cli_range=True, check=at_least(0),
                                   help="Features of a random-weight SAE of the same size run "
                                        "through the same pipeline (a null control; 0: none).")
    planted: int = setting(4, cli_range=True, check=at_least(0),
                           help="Planted features (firing on a known token set) the "
                                "programmatic explainer must recover (0: none).")
    n_boot: int = setting(1000, flag="--bootstrap", check=at_least(100), cli_range=True,
                          help="Bootstrap resamples for every interval.")
    deterministic: bool = setting(True, flag="--deterministic/--no-deterministic",
                                  help="The explainer's generation is independent of "
                                             "its batch (decode-verify-rollback).")
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
    top_tokens: list[str] = field(default_factory=list)
    #: a planted feature's token set
    planted_tokens: list[str] | None = json_field(None, omit_none=True)
    examples: list[FeatureContext] = field(default_factory=list)
    n_positive: int = 0
    n_negative: int = 0
    n_hard: int = 0
    #: why the feature was not scored (too few contexts), or None
    skipped: str | None = json_field(None, omit_none=True)


@dataclass
class FeatureScore:
    """One feature × explainer × scorer × method: its AUROC, its shuffled control's, the
    difference with its 95% bootstrap CI over the texts, and balanced accuracy at log-odds 0
    (the scorer's own yes/no)."""

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

    @property
    def explained(self) -> bool:
        """The difference's interval lies above 0."""
        return bool(self.difference_ci95[0] > 0)


def best_score(rows: Sequence[FeatureScore]) -> FeatureScore | None:
    """The row whose difference interval starts highest (then the larger difference): an
    explained row whenever any is."""
    return max(rows, key=lambda r: (r.difference_ci95[0], r.difference), default=None)


@dataclass
class ScoreSummary:
    """One group × explainer × scorer × method over its features: the mean AUROC of true
    and shuffled explanations and of their difference (95% bootstrap CIs over features),
    and the share of features explained (Wilson CI)."""

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

    #: the columns of :meth:`cells`
    COLUMNS: ClassVar[list[str]] = ["group", "explainer", "scorer", "method", "features",
                                    "AUROC", "shuffled", "difference", "explained", "verdict"]

    def cells(self) -> list[Any]:
        """The row the headline and the report show (each mean with its interval)."""
        def ci(x: list[float]) -> str:
            return ci_text(x[0], x[1])

        return [self.group, self.explainer, self.scorer, self.method, self.n_features,
                f"{self.auroc:.2f} {ci(self.auroc_ci95)}",
                f"{self.shuffled_auroc:.2f} {ci(self.shuffled_auroc_ci95)}",
                f"{self.difference:+.2f} {ci(self.difference_ci95)}",
                f"{self.explained:.0%} {ci(self.explained_ci95)}", self.verdict]

    @property
    def verdict(self) -> str:
        """'explained' when the mean difference's interval lies above 0 (with fewer than
        :data:`MIN_FEATURES` features, whose bootstrap across features means little: when
        every feature's own interval does, else how many do), else 'inside the noise'."""
        if self.n_features < MIN_FEATURES:
            k = round(self.explained * self.n_features) if self.n_features else 0
            return "explained" if self.n_features and k == self.n_features \
                else f"{k} of {self.n_features} features explained (too few to pool)"
        lo = self.difference_ci95[0]
        return "explained" if lo == lo and lo > 0 else "inside the noise"


@dataclass
class PlantedRecovery:
    """A planted feature: its tokens, the programmatic explanation, whether it names every
    planted token, and per scorer the detection AUROC and whether it reaches 0.9."""

    feature: int
    tokens: list[str]
    explanation: str
    named: bool
    detection_auroc: dict[str, float] = field(default_factory=dict)

    def recovered(self, scorer: str, threshold: float = 0.9) -> bool:
        """Named, and detected with AUROC ≥ ``threshold`` by ``scorer``."""
        return self.named and self.detection_auroc.get(scorer, 0.0) >= threshold


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
    planted: list[PlantedRecovery] = field(default_factory=list)
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

    def best(self) -> ScoreSummary | None:
        """The SAE features' best explainer × scorer × method by the lower end of the
        difference's interval."""
        rows = [s for s in self.summary if s.group == "sae" and s.n_features]
        return max(rows, key=lambda s: (s.difference_ci95[0], s.difference), default=None)

    @property
    def planted_named(self) -> float:
        """Share of planted features whose programmatic explanation names every token."""
        return sum(p.named for p in self.planted) / len(self.planted) if self.planted \
            else float("nan")

    def extra_data(self) -> dict[str, Any]:
        """Adds the planted features' naming rate."""
        return {"planted_named": self.planted_named, "planted_named_n": len(self.planted)}

    def headline(self) -> Headline:
        """Per group × explainer × scorer × method: true, shuffled and their difference."""
        table = [s.cells() for s in self.summary]
        best = self.best()
        verdict = None
        if best is not None:
            verdict = (f"best: {best.explainer} explanations scored by {best.scorer} "
                       f"({best.method}) beat shuffled ones by {best.difference:+.2f} "
                       f"{ci_text(best.difference_ci95[0], best.difference_ci95[1])} AUROC — "
                       f"{best.verdict}")
        rows: list[tuple[str, Any]] = [
            ("model", self.model_id), ("hook point", self.hook_point),
            ("features (d_sae)", self.d_sae), ("tokens scanned", self.n_tokens),
            ("explainers", ", ".join(self.config.explainers)),
            ("scorers", ", ".join(f"{k} ({v})" if k != v else k
                                  for k, v in self.scorer_ids.items())),
        ]
        if self.planted:
            rows.append(("planted features named", f"{sum(p.named for p in self.planted)} "
                                                   f"of {len(self.planted)}"))
        return Headline(
            title="Automatic interpretation against null controls", rows=rows,
            table_title="AUROC of true and shuffled explanations (95% bootstrap CIs over "
                        "features); explained: features whose own difference CI is above 0",
            columns=ScoreSummary.COLUMNS, table=table, verdict=verdict)

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
                         "difference_hi": s.difference_ci95[1], "explained": s.explained,
                         "balanced_accuracy": s.balanced_accuracy})
        return pd.DataFrame(rows)


__all__ = ["GROUPS", "METHODS", "PROGRAMMATIC", "AutoInterpConfig", "AutoInterpResult",
           "ExplainedFeature", "FeatureScore", "PlantedRecovery", "ScoreSummary", "best_score",
           "split_list"]
