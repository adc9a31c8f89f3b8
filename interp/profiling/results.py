"""Config and result of a profiling session (``--profile DIR``, :func:`interp.profile`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from interp.display import result_html


@dataclass
class ProfileConfig:
    """How a session profiles: the warm-up steps left out of the steady state."""

    #: steps (batches, decode steps) treated as warm-up and left out of the operator
    #: analysis (``torch.profiler.schedule``'s wait + warm-up); fewer steps than this + 1
    #: and the whole run is analysed (said in the result)
    skip_steps: int = 2
    #: steady-state steps recorded after the warm-up (the trace's size)
    active_steps: int = 10
    #: record CUDA kernels too when a GPU is present
    cuda: bool = True
    #: operators listed in the report
    top_ops: int = 15


@dataclass
class OpTime:
    """One operator's self time in the steady state."""

    name: str
    category: str
    self_ms: float
    calls: int


@dataclass
class ProfileResult:
    """Where a run's time went, and what bounds it."""

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
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = asdict(self.config)
        d.pop("manifest", None)
        return d

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(o) for o in self.top_ops])

    def _repr_html_(self) -> str:
        return result_html("Profile", [
            ("verdict", f"{self.verdict}: {self.evidence}"), ("wall time", f"{self.wall_s:.2f} s"),
            ("phase coverage", f"{self.phase_coverage:.0%}"),
            *[(f"phase {k}", f"{v:.2f} s") for k, v in self.phases.items()]])
