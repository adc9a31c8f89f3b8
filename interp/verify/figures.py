"""The verification figure: each numeric check's measured difference against its tolerance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from interp.plotting import new_figure, styled

if TYPE_CHECKING:
    from interp.verify.results import VerifyResult

PASS, FAIL = "#2a7f62", "#c0392b"

#: Axis labels of the numeric checks (``generate_batch`` counts prompts and ``bos``
#: is yes/no: both are shown in the table, not here).
LABELS = {
    "lens_logits": "lens − logits",
    "hf_logits": "hooked − transformers",
    "capture_batch": "capture: batch − alone (rel.)",
}


@styled
def checks_figure(result: VerifyResult) -> Figure:
    """Horizontal bars on a log scale: the measured difference and the tolerance line."""
    rows = [c for c in result.checks
            if c.name in LABELS and c.value is not None and c.tolerance is not None]
    fig = new_figure(6.5, 0.55 * max(len(rows), 1) + 1.0)
    ax = fig.add_subplot()
    floor = 1e-9  # an exact zero still gets a visible bar
    for i, c in enumerate(rows):
        value = max(float(c.value or 0.0), floor)
        bar = ax.barh(i, value, color=PASS if c.passed else FAIL, height=0.55)
        bar[0].set_gid(f"check-{c.name}")
        tol = float(c.tolerance or 0.0)
        ax.plot([tol, tol], [i - 0.4, i + 0.4], color="#333", lw=1.5)
        ax.annotate(f"{float(c.value or 0.0):.1e}", (value, i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [LABELS[c.name] for c in rows])
    ax.invert_yaxis()
    ax.set_xlim(floor, 1.0)
    ax.set_xlabel("max |difference| (black tick: the tolerance)")
    return fig
