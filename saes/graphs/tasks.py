"""The aggregate check over a task's pairs: a graph per clean prompt with the target
logit(answer) − logit(wrong), its top features intervened on in the real model and in the
frozen replacement model, and the agreement summarised over prompts with bootstrap CIs."""

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
from saes.graphs.results import AttributionConfig
from saes.graphs.run import run_attribution

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

        rows: list[tuple[str, Any]] = [
            ("task", self.task), ("prompts", self.n_pairs),
            ("features checked per prompt", s.get("features_per_prompt")),
            ("Spearman, graph vs real model (mean over prompts)", ci("spearman_real")),
            ("sign agreement, real model", ci("sign_real")),
            ("Spearman, real model with attention and norms frozen", ci("spearman_real_frozen")),
            ("sign agreement, attention and norms frozen", ci("sign_real_frozen")),
            ("Spearman, graph vs frozen replacement", ci("spearman_replacement")),
            ("sign agreement, frozen replacement", ci("sign_replacement")),
            ("replacement score (mean)", s.get("replacement_score")),
            ("completeness score (mean)", s.get("completeness_score")),
            ("faithfulness (mean) vs random subgraphs", f"{s.get('faithfulness', math.nan):.3f}"
             f" vs {s.get('faithfulness_random', math.nan):.3f}")]
        return Headline(f"Attribution graphs against interventions — {self.task}", rows=rows,
                        verdict=s.get("verdict"))

    def figure(self) -> Figure | None:
        """Predicted against measured effects over every prompt."""
        from saes.graphs.figures import task_figure

        return task_figure(self)


def _mean_ci(values: np.ndarray, seed: int) -> tuple[float, list[float]]:
    v = values[np.isfinite(values)]
    if not v.size:
        return math.nan, [math.nan, math.nan]
    return float(v.mean()), bootstrap_ci(lambda i: float(v[i].mean()), len(v), seed=seed)


def _pooled_sign(rows: list[list[tuple[float, float]]], seed: int) -> tuple[float, list[float]]:
    """Sign agreement pooled over all features, CI by resampling prompts."""
    agree = [np.array([np.sign(p) == np.sign(m) for p, m in r], dtype=float) for r in rows]
    agree = [a for a in agree if a.size]
    if not agree:
        return math.nan, [math.nan, math.nan]

    def stat(i: np.ndarray) -> float:
        return float(np.concatenate([agree[j] for j in i]).mean())

    return stat(np.arange(len(agree))), bootstrap_ci(stat, len(agree), seed=seed)


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
                "faithfulness": g.faithfulness.get("faithfulness"),
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
                "replacement_score",
                "completeness_score", "faithfulness", "faithfulness_random"):
        summary[key], summary[f"{key}_ci95"] = _mean_ci(frame[key].astype(float).to_numpy(),
                                                        cfg.seed)
    summary["sign_real"], summary["sign_real_ci95"] = _pooled_sign(real_pairs, cfg.seed)
    summary["sign_replacement"], summary["sign_replacement_ci95"] = _pooled_sign(rep_pairs,
                                                                                 cfg.seed)
    summary["sign_real_frozen"], summary["sign_real_frozen_ci95"] = _pooled_sign(frz_pairs,
                                                                                 cfg.seed)
    lo = summary["spearman_real_ci95"][0]
    met = summary["spearman_real"] >= 0.8 and summary["sign_real"] >= 0.9
    summary["verdict"] = (f"goal (Spearman ≥ 0.8, sign agreement ≥ 90%) "
                          f"{'met' if met else 'not met'}; the real-model Spearman's 95% CI "
                          f"starts at {lo:.2f}")
    worst.sort(key=lambda w: (not w["sign_differs"], -abs(w["real"] - w["predicted"])))
    result = GraphTaskResult(task=task.name, n_pairs=len(task.pairs), prompts=prompts,
                             summary=summary, worst=worst[:cfg.worst], config=cfg,
                             transcoders=getattr(transcoders, "to_dict", dict)())
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(),
                                     dataset_hash=task.sha256)
    return result


__all__ = ["GraphTaskConfig", "GraphTaskResult", "run_graph_task"]
