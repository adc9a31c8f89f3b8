"""Is a difference bigger than the noise? ``interp compare A B``, metric by metric.

A and B are two result folders of the same verb, or two seed groups (``interp seeds``).
For each metric both hold, the difference B − A gets a 95% interval from the best noise
estimate available, and a verdict: :data:`~interp.noise.results.LARGER` when the
interval excludes 0, :data:`~interp.noise.results.WITHIN` when it does not, and
:data:`~interp.noise.results.NO_NOISE` when nothing estimates the noise.

* **Seed groups**: Welch's t interval on the difference of the two groups' means
  (scipy's ``ttest_ind(equal_var=False)``), over the per-seed values. Where neither
  group varies with the seed at all the difference is exact (``zero seed spread``).
* **Single runs**: the metric's own ``NAME_ci95`` in both results (standard errors
  read as half-width / 1.96 and combined in quadrature), else a ``…_mean`` metric's
  ``…_std`` over the run's ``config.seeds`` seeds (Welch's interval from the two means,
  stds and counts, with Welch–Satterthwaite degrees of freedom); else no noise estimate.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.noise.metrics import flatten, read_results, verb_of
from interp.noise.results import (
    LARGER,
    NO_NOISE,
    WITHIN,
    CompareResult,
    MetricComparison,
)
from interp.noise.seeds import seed_group_folders

Z95 = 1.959963984540054
#: At least this share of each side's metrics must be shared, else A and B are refused
#: as results of different verbs.
MIN_SHARED = 0.5


def _verdict(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return NO_NOISE
    return LARGER if ci[0] > 0 or ci[1] < 0 else WITHIN


def _welch(a: list[float], b: list[float]) -> tuple[tuple[float, float] | None, str]:
    from scipy import stats

    diff = sum(b) / len(b) - sum(a) / len(a)
    if len(a) < 2 or len(b) < 2:
        return None, "fewer than 2 seeds on a side"
    if max(a) == min(a) and max(b) == min(b):
        return (diff, diff), "zero seed spread"
    res = stats.ttest_ind(b, a, equal_var=False)
    lo, hi = res.confidence_interval(0.95)
    return (float(lo), float(hi)), f"Welch t, {len(a)} vs {len(b)} seeds"


def _welch_from_stats(
    diff: float, sa: float, na: int, sb: float, nb: int
) -> tuple[float, float] | None:
    """Welch's 95% interval on a difference of means from each side's std (ddof 1) and n.

    The t quantile uses the Welch–Satterthwaite degrees of freedom, so a spread measured
    on two seeds gives the wide interval it deserves (t ≈ 12.7 at one degree of freedom).
    """
    from scipy import stats

    if na < 2 or nb < 2:
        return None
    va, vb = sa * sa / na, sb * sb / nb
    if va + vb == 0:
        return (diff, diff)
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    half = float(stats.t.ppf(0.975, df)) * math.sqrt(va + vb)
    return (diff - half, diff + half)


def _single(name: str, a: dict[str, Any], b: dict[str, Any], diff: float
            ) -> tuple[tuple[float, float] | None, str]:
    """A 95% interval on B − A for one metric of two single runs, if the runs estimate it."""
    ci_a, ci_b = a["cis"].get(name), b["cis"].get(name)
    if ci_a is not None and ci_b is not None:
        se = math.hypot((ci_a[1] - ci_a[0]) / (2 * Z95), (ci_b[1] - ci_b[0]) / (2 * Z95))
        return (diff - Z95 * se, diff + Z95 * se), "the metric's 95% CIs"
    if "_mean" in name:
        std_name = name.replace("_mean", "_std", 1)
        sa, sb = a["metrics"].get(std_name), b["metrics"].get(std_name)
        if sa is not None and sb is not None and a["n"] and b["n"]:
            ci = _welch_from_stats(diff, sa, a["n"], sb, b["n"])
            if ci is not None:
                return ci, f"Welch t from the std over {a['n']} and {b['n']} seeds"
    return None, "none in the results"


def _side(folder: str | Path) -> dict[str, Any]:
    data = read_results(folder)
    if data.get("kind") == "seeds":
        runs = [flatten(read_results(f))[0] for f in seed_group_folders(folder)]
        names = set(runs[0]).intersection(*runs[1:]) if runs else set()
        return {"group": True, "verb": verb_of(data), "runs": runs,
                "metrics": {n: sum(r[n] for r in runs) / len(runs) for n in
                            sorted(names, key=list(runs[0]).index)}}
    metrics, cis = flatten(data)
    cfg = data.get("config")
    n = cfg.get("seeds") if isinstance(cfg, dict) else None
    return {"group": False, "verb": verb_of(data), "metrics": metrics, "cis": cis,
            "n": n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None}


def compare_results(a_dir: str | Path, b_dir: str | Path) -> CompareResult:
    """Compare every metric A and B share (B − A); see the module docstring. The result's
    manifest records the two folders."""
    from interp.runs.manifest import run_manifest

    a, b = _side(a_dir), _side(b_dir)
    if a["group"] != b["group"]:
        raise InterpError("compare two seed groups or two single results, not one of each")
    if a["verb"] and b["verb"] and a["verb"] != b["verb"]:
        raise InterpError(f"A is a result of `interp {a['verb']}` and B of "
                          f"`interp {b['verb']}`: compare results of the same verb")
    shared = [n for n in a["metrics"] if n in b["metrics"]]
    if not shared or len(shared) < MIN_SHARED * min(len(a["metrics"]), len(b["metrics"])):
        raise InterpError(
            f"A and B share {len(shared)} of their {len(a['metrics'])} and "
            f"{len(b['metrics'])} metrics: not results of the same verb and settings")
    rows = []
    for name in shared:
        va, vb = a["metrics"][name], b["metrics"][name]
        if a["group"]:
            ci, method = _welch([r[name] for r in a["runs"]], [r[name] for r in b["runs"]])
        else:
            ci, method = _single(name, a, b, vb - va)
        rows.append(MetricComparison(name=name, a=va, b=vb, diff=vb - va, ci95=ci,
                                     method=method, verdict=_verdict(ci)))
    return CompareResult(
        a=str(a_dir), b=str(b_dir), verb=a["verb"] or b["verb"] or "unknown",
        kind="seed groups" if a["group"] else "single runs", rows=rows,
        only_a=[n for n in a["metrics"] if n not in b["metrics"]],
        only_b=[n for n in b["metrics"] if n not in a["metrics"]],
        manifest=run_manifest(config={"a": str(a_dir), "b": str(b_dir)}))
