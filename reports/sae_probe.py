"""The sparse-probing report: k SAE latents against k random latents and the dense probe.

It renders a :class:`~saes.features.probing.SparseProbeResult` through
``templates/sae_probe.html.j2`` with :func:`saes.figures.sparse_probe_figure`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.display import ci_text, format_number, signed, with_ci
from interp.stats.intervals import mean_t_ci
from reports.html import (
    Report,
    ReportFigure,
    kv_table,
    noise_label,
    render_page,
    warnings_box,
)
from saes.features.probing import SparseProbeResult
from saes.figures import hover_titles, sparse_probe_figure

__all__ = ["sae_probe_report"]


def _rows(res: SparseProbeResult) -> list[list[Any]]:
    dense = mean_t_ci(res.dense_accuracy)[0]
    rows = []
    for i, k in enumerate(res.ks):
        diff = res.difference(i)
        lo, hi = diff["ci95"]
        sparse_mean = mean_t_ci(res.sparse_accuracy[i])[0]
        rows.append([str(k), with_ci(*mean_t_ci(res.sparse_accuracy[i])),
                     with_ci(*mean_t_ci(res.random_accuracy[i])),
                     with_ci(diff["mean"], lo, hi, fmt=signed), noise_label(lo, hi),
                     signed(sparse_mean - dense)])
    return rows


def _lead(res: SparseProbeResult) -> Any:
    best = max(range(len(res.ks)), key=lambda i: mean_t_ci(res.sparse_accuracy[i])[0])
    k1 = res.difference(0)
    lo, hi = k1["ci95"]
    verdict = ("within noise: not a result" if k1["within_noise"] else
               "no noise estimate (one split)" if k1["within_noise"] is None else
               f"95% CI {ci_text(lo, hi, fmt=signed)}")
    return kv_table({
        "dense probe (residual stream)": with_ci(*mean_t_ci(res.dense_accuracy)),
        f"best k-sparse probe (k = {res.ks[best]})":
            with_ci(*mean_t_ci(res.sparse_accuracy[best])),
        f"k = {res.ks[0]}: top latent − random latent": f"{signed(k1['mean'])} ({verdict})",
        "chance (majority class)": with_ci(*mean_t_ci(res.majority_accuracy)),
        "held-out split": f"{res.split}, {len(res.dense_accuracy)} splits, "
                          f"{round(sum(res.n_test) / len(res.n_test))} test texts each",
        "SAE": f"{res.architecture}, d_sae {res.d_sae}, at {res.hook_point}",
    }) + warnings_box(res.warnings)


def sae_probe_report(result: SparseProbeResult,
                     manifest: Mapping[str, Any] | None = None) -> Report:
    """The sparse-probing report: one page and its figure, with its manifest
    (``result.manifest`` unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    fig = sparse_probe_figure(result)
    top = [[str(r + 1), str(i), format_number(d)] for r, (i, d) in
           enumerate(zip(result.top_latents[0], result.top_mean_differences, strict=False))]
    return render_page(
        "sae_probe.html.j2", title=result.headline().title,
        subtitle=f"{result.dataset} · {result.n_examples} texts · SAE latents at "
                 f"{result.hook_point}",
        lead=_lead(result), manifest=manifest,
        figures={"accuracy": ReportFigure(fig, titles=hover_titles(fig),
                                          label="Held-out accuracy against k")},
        rows=_rows(result), top=top, res=result,
    )
