"""The ``interp capture`` report: what was captured, and residual norms by layer.

Input is the capture ``results.json`` dict (see :func:`interp.activations.capture.summarize`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.heatmap import line_chart_svg
from reports.html import Section, figure, kv_table, render_report, table

NOTE_FIRST = (
    "The first real token's residual is an outlier on most models (an attention sink with "
    "a norm several times the others), so with positions=all it is summarised apart."
)


def _norm_section(r: Mapping[str, Any]) -> Section | None:
    rows = [h for h in r["hooks"] if h.get("layer") is not None and h["hook"].endswith(
        "hook_resid_post")]
    if len(rows) < 2:
        return None
    x = [h["layer"] for h in rows]
    series = {"mean ‖h‖ (captured positions)": [h["norm_mean"] for h in rows]}
    bands = {"mean ‖h‖ (captured positions)": ([h["norm_ci95"][0] for h in rows],
                                               [h["norm_ci95"][1] for h in rows])}
    if all(h.get("first_norm_mean") is not None for h in rows):
        series["mean ‖h‖, first token"] = [h["first_norm_mean"] for h in rows]
        series["mean ‖h‖, other tokens"] = [h["rest_norm_mean"] for h in rows]
    chart = line_chart_svg(series, x, x_label="layer (resid_post)", y_label="L2 norm",
                           bands=bands, integer_x=True)
    return Section(
        "Residual-stream norm by layer",
        figure(chart, "Mean L2 norm of the captured activations; band: 95% CI of the mean."),
        NOTE_FIRST if r["positions"] == "all" else None,
    )


def render_capture_report(result: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The complete HTML report for one ``interp capture`` run."""
    overview = kv_table({
        "model": result["model"],
        "prompts": result["n_prompts"],
        "tokens (real, all prompts)": result["n_tokens"],
        "positions": str(result["positions"]),
        "dtype": result["dtype"],
        "dataset": result["dataset"],
        "artifact": result["artifact"],
    })
    rows = [
        [h["hook"], " × ".join(str(s) for s in h["shape"]), h["norm_mean"], h["norm_std"],
         f"[{h['norm_ci95'][0]:.3g}, {h['norm_ci95'][1]:.3g}]", h["norm_n"]]
        for h in result["hooks"]
    ]
    sections = [
        Section("What was captured", overview),
        Section(
            "Hook points",
            table(["hook point", "shape", "mean ‖h‖", "std ‖h‖", "95% CI of mean", "n"], rows),
            "Norms are over the captured rows: one per prompt, or one per real token with "
            "positions=all (padding excluded).",
        ),
    ]
    norm = _norm_section(result)
    if norm is not None:
        sections.insert(1, norm)
    return render_report(
        f"Activations — {result['model']}", sections, dict(manifest),
        subtitle="Activations captured with interp.capture and saved as an artifact.",
    )
