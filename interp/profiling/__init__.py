"""Profiling: phase timers and ``torch.profiler`` over any run, with a verdict.

``with interp.profile("prof/") as p: ...`` (or ``--profile DIR`` on every verb that
runs a model) times the tools' phases (:func:`~interp.runs.phases.phase`) and
records their operators; :func:`~interp.profiling.analysis.analyse` says where the time
went and whether the run is compute-, overhead- or data-bound.
"""

from interp.profiling.results import OpTime, ProfileConfig, ProfileResult
from interp.profiling.session import phase, profile, step

__all__ = ["OpTime", "ProfileConfig", "ProfileResult", "phase", "profile", "step"]
