"""``explanations.jsonl``: a run's explanations and scores, beside the SAE.

The first line is the header (``{"kind": "header", "manifest": …, "config": …, "model_id":
…, "hook_point": …}``); every other line is one SAE feature (``{"kind": "feature",
"feature": 17, "explanations": {"programmatic": …, "MODEL": …}, "scores": [{"explainer",
"scorer", "method", "auroc", "shuffled_auroc", "difference", "difference_ci95",
"explained", "scorer_passed"}, …], "label": …, "explained": …}``). ``label`` is the
explanation to show (the best-scoring explained one, else the programmatic one) and
``explained`` whether any of its scores is explained (Benjamini–Hochberg over the run's
features) by a scorer × method that passed its planted control: a score from a scorer
that failed it is kept, marked ``"scorer_passed": false``, and never makes a label or a
badge. The feature browser, the steering report and the attribution-graph viewer read it
with :func:`read_explanations`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.schema import json_safe
from saes.autointerp.results import PROGRAMMATIC, AutoInterpResult, FeatureScore, best_score

EXPLANATIONS = "explanations.jsonl"


@dataclass
class FeatureExplanation:
    """One feature's line of ``explanations.jsonl``."""

    feature: int
    label: str
    explained: bool
    explanations: dict[str, str] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def best_difference(self) -> float:
        """The largest AUROC difference over shuffled explanations among its scores (NaN
        without scores)."""
        diffs = [s["difference"] for s in self.scores
                 if isinstance(s.get("difference"), int | float)
                 and math.isfinite(s["difference"]) and s.get("scorer_passed", True)]
        return max(diffs) if diffs else math.nan

    def badge(self) -> str:
        """A short text of its best score: '+0.21 explained' or '+0.03 not explained'."""
        d = self.best_difference
        if d != d:
            return "not scored"
        return f"{d:+.2f} {'explained' if self.explained else 'not explained'}"


def _label(explanations: dict[str, str], rows: list[FeatureScore]) -> tuple[str, bool]:
    best = best_score(rows)
    if best is not None and best.explained:
        return explanations.get(best.explainer, ""), True
    return explanations.get(PROGRAMMATIC) or next(iter(explanations.values()), ""), False


def explanation_lines(result: AutoInterpResult) -> list[dict[str, Any]]:
    """The header and one record per explained SAE feature (the file's lines)."""
    head = {"kind": "header", "model_id": result.model_id, "hook_point": result.hook_point,
            "d_sae": result.d_sae, "sae": result.sae_path, "config": result.config.to_dict(),
            "scorers": result.scorer_ids, "manifest": result.manifest}
    lines: list[dict[str, Any]] = [head]
    for f in result.features:
        if f.group != "sae" or not f.explanations:
            continue
        rows = [r for r in result.scores if r.group == "sae" and r.feature == f.feature]
        label, explained = _label(f.explanations, [r for r in rows
                                                   if result.passed(r.scorer, r.method)])
        lines.append({
            "kind": "feature", "feature": f.feature, "label": label, "explained": explained,
            "explanations": f.explanations,
            "scores": [{"explainer": r.explainer, "scorer": r.scorer, "method": r.method,
                        "auroc": r.auroc, "shuffled_auroc": r.shuffled_auroc,
                        "difference": r.difference, "difference_ci95": r.difference_ci95,
                        "p_value": r.p_value, "q_value": r.q_value, "explained": r.explained,
                        "scorer_passed": result.passed(r.scorer, r.method)} for r in rows]})
    return lines


def explanations_text(result: AutoInterpResult) -> str:
    """``explanations.jsonl``'s text (NaN written as null)."""
    return "".join(json.dumps(json_safe(line), ensure_ascii=False) + "\n"
                   for line in explanation_lines(result))


def read_explanations(path: str | Path, d_sae: int | None = None,
                      ) -> dict[int, FeatureExplanation]:
    """The features of an ``explanations.jsonl`` (a file, or a folder holding one), by
    index. ``d_sae``: refuse a file that names a feature beyond it (another SAE's file)."""
    p = Path(path)
    if p.is_dir():
        p = p / EXPLANATIONS
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InterpError(f"cannot read explanations {p}: {e.strerror or e}") from e
    out: dict[int, FeatureExplanation] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise TypeError("not an object")
            if rec.get("kind") == "header":
                if d_sae is not None and rec.get("d_sae") not in (None, d_sae):
                    raise InterpError(f"{p} explains an SAE of d_sae={rec.get('d_sae')}, not "
                                      f"{d_sae}")
                continue
            feat = int(rec["feature"])
            fe = FeatureExplanation(
                feature=feat, label=str(rec.get("label", "")),
                explained=bool(rec.get("explained", False)),
                explanations={str(k): str(v) for k, v in dict(rec.get("explanations", {})).items()},
                scores=[s for s in rec.get("scores", []) if isinstance(s, dict)])
        except InterpError:
            raise
        except (ValueError, TypeError, KeyError) as e:
            raise InterpError(f"{p} line {n} is not an explanation record: {e}") from e
        if d_sae is not None and not 0 <= feat < d_sae:
            raise InterpError(f"{p} line {n} names feature {feat}, outside the SAE's "
                              f"d_sae={d_sae}")
        out[feat] = fe
    return out


def explanations_beside(folder: str | Path, d_sae: int) -> dict[int, FeatureExplanation] | None:
    """The explanations an SAE folder holds (its ``explanations.jsonl``), or None."""
    path = Path(folder) / EXPLANATIONS
    return read_explanations(path, d_sae=d_sae) if path.is_file() else None


__all__ = ["EXPLANATIONS", "FeatureExplanation", "explanation_lines", "explanations_beside",
           "explanations_text", "read_explanations"]
