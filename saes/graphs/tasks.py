"""The aggregate check over a task's pairs: a graph per clean prompt with the target
logit(answer) − logit(wrong), its top features intervened on in the real model and in the
frozen replacement model, and the agreement summarised over prompts with bootstrap CIs;
sign agreement pooled over the prompts against its permutation null (measured changes
shuffled within each prompt), and the replacement score against each prompt's
decoder-shuffled control graphs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from interp.circuits.tasks import load_task
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import Headline, Result, at_least, setting
from interp.stats.intervals import bootstrap_ci
from saes.graphs.checks import sign_null
from saes.graphs.graph import run_attribution
from saes.graphs.results import AttributionConfig, beats_controls

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class GraphTaskConfig(AttributionConfig):
    """:class:`AttributionConfig` for every clean prompt of a task (its ``target`` is each
    pair's answer and wrong token)."""

    task: str = setting("capitals", help="A shipped task (capitals, ioi, pronoun) or a task "
                                         "file (JSONL).")
    limit: int = setting(20, check=at_least(1), help="Pairs to use (the first N).")
    worst: int = setting(10, check=at_least(0), cli=False,
                         help="Features where the real model disagrees most, shown.")


@dataclass
class GraphTaskResult(Result):
    """Graph-vs-intervention agreement over a task's prompts."""

    task: str
    n_pairs: int
    prompts: list[dict[str, Any]]
    summary: dict[str, Any]
    worst: list[dict[str, Any]]
    config: GraphTaskConfig | None = None
    transcoders: dict[str, Any] = field(default_factory=dict)

    json_order: ClassVar[tuple[Any, ...]] = ("task", "n_pairs", "summary", ...)

    def to_frame(self) -> pd.DataFrame:
        """One row per prompt."""
        return pd.DataFrame(self.prompts)

    def headline(self) -> Headline:
        """Spearman and sign agreement, real and frozen, with CIs over prompts."""
        s = self.summary

        def ci(key: str) -> str:
            v, (lo, hi) = s.get(key, math.nan), s.get(f"{key}_ci95", [math.nan] * 2)
            return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"

        def sign(key: str) -> str:
            lo, hi = s.get(f"{key}_null_interval", [math.nan] * 2)
            return (f"{ci(key)}; permutation null {s.get(f'{key}_null', math.nan):.3f} "
                    f"[{lo:.3f}, {hi:.3f}], p {s.get(f'{key}_p', math.nan):.3g}")

        rows: list[tuple[str, Any]] = [
            ("task", self.task), ("prompts", self.n_pairs),
            ("features checked per prompt", s.get("features_per_prompt")),
            ("Spearman, graph vs real model (mean over prompts; chance 0)",
             ci("spearman_real")),
            ("sign agreement, real model", sign("sign_real")),
            ("Spearman, real model with attention and norms frozen", ci("spearman_real_frozen")),
            ("sign agreement, attention and norms frozen", sign("sign_real_frozen")),
            ("Spearman, graph vs frozen replacement", ci("spearman_replacement")),
            ("sign agreement, frozen replacement", sign("sign_replacement")),
            ("replacement score (mean)", f"{ci('replacement_score')}; decoder-shuffled "
             f"controls {ci('replacement_control')}; above its controls in "
             f"{s.get('beats_controls', 0)} of {s.get('with_controls', 0)} prompts"),
            ("completeness score (mean)", f"{ci('completeness_score')}; controls "
             f"{ci('completeness_control')}"),
            ("faithfulness (mean)", f"{ci('faithfulness')}; influence-matched random sets "
             f"{ci('faithfulness_matched')}; ceiling (top by measured effect) "
             f"{ci('faithfulness_ceiling')}; weak baseline (any active features) "
             f"{ci('faithfulness_random')}")]
        return Headline(f"Attribution graphs against interventions — {self.task}", rows=rows,
                        verdict=s.get("verdict"))

    def figure(self) -> Figure | None:
        """Predicted against measured effects over every prompt."""
        from saes.graphs.figures import task_figure

        return task_figure(self)


def _mean(values: list[float] | None) -> float:
    return float(np.mean(values)) if values else math.nan


def _mean_ci(values: np.ndarray, seed: int) -> tuple[float, list[float]]:
    v = values[np.isfinite(values)]
    if not v.size:
        return math.nan, [math.nan, math.nan]
    return float(v.mean()), bootstrap_ci(lambda i: float(v[i].mean()), len(v), seed=seed)


def _pooled_sign(rows: list[list[tuple[float, float]]], seed: int, n_resamples: int
                 ) -> dict[str, Any]:
    """Sign agreement pooled over all features, CI by resampling prompts, and its
    permutation null (measured shuffled within each prompt: :func:`sign_null`)."""
    agree = [np.array([np.sign(p) == np.sign(m) for p, m in r], dtype=float) for r in rows]
    agree = [a for a in agree if a.size]
    if not agree:
        return {"": math.nan, "_ci95": [math.nan, math.nan], "_null": math.nan,
                "_null_interval": [math.nan, math.nan], "_p": math.nan}

    def stat(i: np.ndarray) -> float:
        return float(np.concatenate([agree[j] for j in i]).mean())

    null = sign_null([(np.array([p for p, _ in r]), np.array([m for _, m in r]))
                      for r in rows if r], n_resamples, seed)
    return {"": stat(np.arange(len(agree))), "_ci95": bootstrap_ci(stat, len(agree), seed=seed),
            "_null": null["null"], "_null_interval": null["null_interval"], "_p": null["p"]}


def task_verdict(summary: dict[str, Any]) -> str:
    """The task check's verdict: worthless when the real-model Spearman's CI over prompts
    includes 0, or when the graphs' replacement scores beat their decoder-shuffled
    controls in fewer than half the prompts; and the stated goal (Spearman ≥ 0.8, sign ≥
    90%)."""
    rho = summary.get("spearman_real", math.nan)
    lo, hi = summary.get("spearman_real_ci95", [math.nan] * 2)
    bad: list[str] = []
    good: list[str] = []
    if not (math.isfinite(lo) and math.isfinite(hi)):
        bad.append("the agreement with the real model has no interval (too few prompts)")
    elif lo <= 0:
        bad.append(f"the graphs' predictions do not agree with the real model beyond chance "
                   f"(mean Spearman {rho:.2f} [{lo:.2f}, {hi:.2f}])")
    else:
        good.append(f"the graphs' predictions agree with the real model beyond chance (mean "
                    f"Spearman {rho:.2f} [{lo:.2f}, {hi:.2f}])")
    n_ctl, n_beat = summary.get("with_controls", 0), summary.get("beats_controls", 0)
    if n_ctl:
        text = (f"replacement scores above their decoder-shuffled controls in {n_beat} of "
                f"{n_ctl} prompts")
        (good if 2 * n_beat > n_ctl else bad).append(text)
    p = summary.get("sign_real_p", math.nan)
    sign_note = (f"sign agreement {100 * summary.get('sign_real', math.nan):.0f}% against a "
                 f"permutation null of {100 * summary.get('sign_real_null', math.nan):.0f}% "
                 f"(p {p:.3g})")
    met = (rho >= 0.8 and summary.get("sign_real", 0) >= 0.9 and lo > 0
           and math.isfinite(p) and p <= 0.05)
    goal = f"goal (Spearman ≥ 0.8, sign agreement ≥ 90%) {'met' if met else 'not met'}"
    head = "WORTHLESS as explanations" if bad else "informative"
    return f"The task's graphs are {head}: " + "; ".join([*bad, *good, sign_note, goal])


def run_graph_task(model: Model, transcoders: Any, cfg: GraphTaskConfig | None = None, *,
                   progress: bool | None = None) -> GraphTaskResult:
    """A graph per pair of ``cfg.task`` (the first ``cfg.limit``) with its real-model check;
    prompts whose answer or wrong is not one token are refused in one line."""
    cfg = cfg or GraphTaskConfig()
    task = load_task(cfg.task, cfg.limit)
    if cfg.check_features == 0:
        raise InterpError("check_features must be at least 1 for a task check")
    prompts: list[dict[str, Any]] = []
    real_pairs: list[list[tuple[float, float]]] = []
    rep_pairs: list[list[tuple[float, float]]] = []
    frz_pairs: list[list[tuple[float, float]]] = []
    worst: list[dict[str, Any]] = []
    bar = make_progress(enabled=progress)
    with bar:
        job = bar.add_task(f"graphs ({task.name})", total=len(task.pairs), info="")
        for n, pair in enumerate(task.pairs):
            if "," in pair.answer or "," in pair.wrong:
                raise InterpError(f"pair {n}: answer and wrong cannot contain a comma")
            g = run_attribution(model, transcoders, pair.clean,
                                replace(AttributionConfig(**{
                                    k: v for k, v in cfg.to_dict().items()
                                    if k in AttributionConfig.settings()}),
                                        target=f"{pair.answer},{pair.wrong}"),
                                progress=False)
            g.adjacency = None  # [n, n] per prompt: not kept
            ag = g.agreement
            prompts.append({
                "prompt": pair.clean, "answer": pair.answer, "wrong": pair.wrong,
                "target": g.target_real, "active_features": g.n_active_features,
                "replacement_score": g.replacement_score,
                "completeness_score": g.completeness_score,
                "spearman_real": ag.get("spearman_real"), "sign_real": ag.get("sign_real"),
                "spearman_real_frozen": ag.get("spearman_real_frozen"),
                "sign_real_frozen": ag.get("sign_real_frozen"),
                "spearman_replacement": ag.get("spearman_replacement"),
                "sign_replacement": ag.get("sign_replacement"),
                "replacement_control": _mean(g.controls.get("replacement_scores")),
                "completeness_control": _mean(g.controls.get("completeness_scores")),
                "beats_controls": beats_controls(g.replacement_score,
                                                 g.controls.get("replacement_scores")),
                "faithfulness": g.faithfulness.get("faithfulness"),
                "faithfulness_matched": g.faithfulness.get("matched_mean"),
                "faithfulness_ceiling": g.faithfulness.get("ceiling"),
                "faithfulness_random": g.faithfulness.get("random_mean"),
                "elapsed_s": g.elapsed_s})
            real_pairs.append([(c.predicted, c.real) for c in g.checks])
            rep_pairs.append([(c.predicted, c.replacement) for c in g.checks])
            frz_pairs.append([(c.predicted, c.real_frozen) for c in g.checks])
            for c in g.checks:
                worst.append({"prompt": n, "text": pair.clean, "layer": c.layer,
                              "position": c.position, "token": g.tokens[c.position],
                              "feature": c.feature, "predicted": c.predicted,
                              "real": c.real, "replacement": c.replacement,
                              "real_frozen": c.real_frozen,
                              "sign_differs": bool(np.sign(c.predicted) != np.sign(c.real))})
            bar.advance(job, 1)
    frame = pd.DataFrame(prompts)
    summary: dict[str, Any] = {"features_per_prompt": cfg.check_features}
    for key in ("spearman_real", "spearman_real_frozen", "spearman_replacement",
                "replacement_score", "replacement_control", "completeness_score",
                "completeness_control", "faithfulness", "faithfulness_matched",
                "faithfulness_ceiling", "faithfulness_random"):
        summary[key], summary[f"{key}_ci95"] = _mean_ci(frame[key].astype(float).to_numpy(),
                                                        cfg.seed)
    for key, rows in (("sign_real", real_pairs), ("sign_replacement", rep_pairs),
                      ("sign_real_frozen", frz_pairs)):
        for suffix, value in _pooled_sign(rows, cfg.seed, cfg.null_permutations).items():
            summary[key + suffix] = value
    beats = [b for b in frame["beats_controls"] if b is not None]
    summary["with_controls"], summary["beats_controls"] = len(beats), int(sum(beats))
    summary["verdict"] = task_verdict(summary)
    worst.sort(key=lambda w: (not w["sign_differs"], -abs(w["real"] - w["predicted"])))
    result = GraphTaskResult(task=task.name, n_pairs=len(task.pairs), prompts=prompts,
                             summary=summary, worst=worst[:cfg.worst], config=cfg,
                             transcoders=getattr(transcoders, "to_dict", dict)())
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(),
                                     dataset_hash=task.sha256)
    return result


__all__ = ["GraphTaskConfig", "GraphTaskResult", "run_graph_task", "task_verdict"]
