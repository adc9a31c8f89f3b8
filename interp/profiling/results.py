"""Config and result of a profiling session (``--profile DIR``,
:func:`~interp.profiling.session.profile`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from interp.schema import Config, Headline, Result, at_least, setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class ProfileConfig(Config):
    """How a session profiles: the warm-up steps left out of the steady state."""

    skip_steps: int = setting(
        2, check=at_least(0), cli=False,
        help="Steps (batches, decode steps) treated as warm-up and left out of the operator "
             "analysis (torch.profiler.schedule's wait + warm-up); with fewer steps than "
             "this + 1 the whole run is analysed (said in the result).")
    active_steps: int = setting(
        10, check=at_least(1), cli=False,
        help="Steady-state steps recorded after the warm-up (the trace's size).")
    cuda: bool = setting(True, cli=False, help="Record CUDA kernels too when a GPU is present.")
    top_ops: int = setting(15, check=at_least(1), cli=False,
                           help="Operators listed in the report.")


@dataclass
class OpTime:
    """One operator's self time in the steady state."""

    name: str
    category: str
    self_ms: float
    calls: int


@dataclass
class ProfileResult(Result):
    """Where a run's time went, and what bounds it; made with its manifest
    (:func:`interp.profiling.analysis.analyse`)."""

    config: ProfileConfig
    wall_s: float
    phases: dict[str, float]
    phase_coverage: float
    window: str
    window_s: float
    steps: int
    steps_analysed: int
    categories: dict[str, float]  # share of the window's wall time
    top_ops: list[OpTime]
    verdict: str
    evidence: str
    gpu_busy: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    trace: str | None = None

    warnings_always: ClassVar[bool] = False

    def headline(self) -> Headline:
        """The verdict with its evidence, the time by phase, and the top operators."""
        return Headline(
            title="Profile",
            rows=[("verdict", f"{self.verdict}: {self.evidence}"),
                  ("wall time", f"{self.wall_s:.2f} s"),
                  ("phase coverage", f"{self.phase_coverage:.0%}"),
                  *[(f"phase {k}", f"{v:.2f} s") for k, v in self.phases.items()]],
            columns=["name", "category", "self_ms", "calls"],
            table=[[o.name, o.category, o.self_ms, o.calls] for o in self.top_ops],
            table_title="top operators by self time")

    def figure(self) -> Figure | None:
        """:func:`~interp.profiling.figures.phases_figure`: seconds per phase."""
        from interp.profiling.figures import phases_figure

        return phases_figure(self)
