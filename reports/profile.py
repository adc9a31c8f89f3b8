"""The profile report (``--profile DIR`` → ``DIR/profile.html``).

Input is a :class:`~interp.profiling.results.ProfileResult`: the verdict with its
evidence, time per phase (:func:`interp.profiling.figures.phases_figure`), time per
operator category (:func:`interp.profiling.figures.categories_figure`) and the top
operators by self time; ``trace.json`` beside it opens in Perfetto.
"""

from __future__ import annotations

from markupsafe import Markup

from interp.profiling.figures import categories_figure, phases_figure
from interp.profiling.results import ProfileResult
from reports.html import Report, ReportFigure, render_page

__all__ = ["profile_report"]


def profile_report(result: ProfileResult) -> Report:
    """The profile page: the verdict with its evidence, time per phase and per operator category,
    and the top operators by self time."""
    r = result
    verb = r.meta.get("verb") or "run"
    lead = Markup('<p class="verdict"><b>{}</b>: {}.</p><p>interp {} · {:.2f} s wall time; the '
                  "phases cover {:.0%} of it; operators analysed over {}.</p>").format(
        r.verdict, r.evidence, verb, r.wall_s, r.phase_coverage, r.window)
    ops = [[o.name, o.category, f"{o.self_ms:.1f}", o.calls] for o in r.top_ops]
    phases = [[k, f"{v:.3f}", f"{v / r.wall_s:.1%}" if r.wall_s else "—"]
              for k, v in sorted(r.phases.items(), key=lambda t: -t[1])]
    cats = [[k, f"{v:.1%}"] for k, v in r.categories.items()]
    figures = {"phases": ReportFigure(phases_figure(r), label="Seconds per phase"),
               "categories": ReportFigure(categories_figure(r), label="Time by category")}
    return render_page(
        "profile.html.j2", title=f"Profile — interp {verb}",
        subtitle="Where the run's time went, and what bounds it.", lead=lead,
        manifest=r.manifest or {}, figures=figures, r=r, ops=ops, phases=phases, cats=cats,
    )
