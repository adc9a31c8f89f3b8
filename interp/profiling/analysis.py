"""Read a session's trace: time per operator category, the verdict and its evidence.

Over the steady-state window (from the end of warm-up step ``skip_steps`` to the last
step), every operator's *self* time (its own time, children excluded) is summed by
category; the time no operator accounts for is Python and framework overhead. The
verdict names the largest share:

* ``compute-bound``: operators take more time than the overhead around them (the
  evidence names the categories: on a CPU, element-wise work is often the largest);
* ``overhead-bound``: time outside any operator does (small batches, Python loops);
* ``data-bound``: the ``data`` / ``tokenise`` phases take ≥ 30% of the whole run;
* on a GPU, ``memory-bound`` when element-wise and norm kernels outweigh matmuls, and
  the GPU's busy share says whether it waits on the CPU.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from interp.profiling.results import OpTime, ProfileResult
from interp.runs.manifest import run_manifest

MARKER = "interp: step"
OUTSIDE = "outside operators (Python, framework)"
PHASE_PREFIX = "phase: "
# torch.profiler's own range around each step: its self time is the step's time outside
# any operator (Python, framework), so it is not an operator and is left out like a phase.
STEP_RANGE_PREFIX = "ProfilerStep"
DATA_PHASES = ("data", "tokenise")
DATA_BOUND = 0.3

_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attention", ("scaled_dot_product", "softmax", "flash", "attention")),
    ("matmul", ("::mm", "addmm", "bmm", "matmul", "linear", "addmv", "::mv", "::dot",
                "einsum", "gemm")),
    ("norms", ("norm", "rsqrt")),
    ("element-wise", ("add", "mul", "sub", "div", "silu", "gelu", "exp", "neg", "pow",
                      "mean", "sum", "where", "copy", "to", "cat", "clone", "contiguous",
                      "fill", "zero", "index", "gather", "scatter", "masked", "embedding",
                      "cos", "sin", "tanh", "sigmoid", "max", "min", "topk", "sort")),
)


def category(op: str) -> str:
    """The category of an operator name (``aten::addmm`` → ``matmul``)."""
    low = op.lower()
    for cat, keys in _CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return "other ops"


def _is_range(name: str) -> bool:
    """A marker or range of interp's or torch.profiler's own, not an operator."""
    return (name == MARKER or name.startswith(PHASE_PREFIX)
            or name.startswith(STEP_RANGE_PREFIX))


def analyse(session: Any) -> ProfileResult:
    """The :class:`ProfileResult` of a stopped :class:`~interp.profiling.session.Session`."""
    cfg = session.config
    events = list(session.prof.events())
    marks = sorted(e.time_range.start for e in events if e.name == MARKER)
    cpu_events = [e for e in events if not _is_range(e.name)
                  and str(getattr(e, "device_type", "")).endswith("CPU")]
    total = int(getattr(session, "steps", len(marks)))
    first = min((e.time_range.start for e in cpu_events), default=0.0)
    if len(marks) > cfg.skip_steps:  # marks[k] is the end of step k (0-based)
        w0 = marks[cfg.skip_steps - 1] if cfg.skip_steps > 0 else first
        w1 = marks[-1]
        analysed = len(marks) - cfg.skip_steps
        window = (f"steady state: steps {cfg.skip_steps + 1}–{cfg.skip_steps + analysed} of "
                  f"{total}")
    else:
        starts = [e.time_range.start for e in cpu_events] or [0.0]
        ends = [e.time_range.end for e in cpu_events] or [0.0]
        w0, w1 = min(starts), max(ends)
        window = (f"whole run: {total} steps, too few for a steady state after "
                  f"{cfg.skip_steps} warm-up steps")
        analysed = total
    span_us = max(w1 - w0, 1.0)
    self_us: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    gpu_us = 0.0
    for e in events:
        if _is_range(e.name):
            continue
        if not w0 <= e.time_range.start <= w1:
            continue
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            gpu_us += e.time_range.end - e.time_range.start
            continue
        self_us[e.name] += float(e.self_cpu_time_total)
        calls[e.name] += 1
    shares: dict[str, float] = defaultdict(float)
    for name, us in self_us.items():
        shares[category(name)] += us / span_us
    inside = min(sum(shares.values()), 1.0)
    shares[OUTSIDE] = 1.0 - inside
    wall = session.wall_s
    data_s = sum(v for k, v in session.phases.items() if k in DATA_PHASES)
    shares_out = {k: round(v, 4) for k, v in sorted(shares.items(), key=lambda t: -t[1])}
    top = sorted(self_us.items(), key=lambda t: -t[1])[: cfg.top_ops]
    gpu_busy = min(gpu_us / span_us, 1.0) if session.cuda else None
    verdict, evidence = _verdict(shares, data_s / max(wall, 1e-9), gpu_busy, session.meta)
    top_level = {k: v for k, v in session.phases.items() if not k.endswith("(nested)")}
    return ProfileResult(
        config=cfg, wall_s=wall, phases={k: round(v, 4) for k, v in session.phases.items()},
        phase_coverage=min(sum(top_level.values()) / max(wall, 1e-9), 1.0),
        window=window, window_s=span_us / 1e6, steps=total,
        steps_analysed=analysed, categories=shares_out,
        top_ops=[OpTime(n, category(n), us / 1e3, calls[n]) for n, us in top],
        verdict=verdict, evidence=evidence, gpu_busy=gpu_busy, meta=dict(session.meta),
        manifest=run_manifest(config=cfg.to_dict()),
    )


def _verdict(shares: dict[str, float], data_share: float, gpu_busy: float | None,
             meta: dict[str, Any]) -> tuple[str, str]:
    compute = shares.get("matmul", 0.0) + shares.get("attention", 0.0)
    overhead = shares.get(OUTSIDE, 0.0)
    memory = shares.get("element-wise", 0.0) + shares.get("norms", 0.0)
    batch = f" at batch size {meta['batch_size']}" if meta.get("batch_size") else ""
    if data_share >= DATA_BOUND:
        return "data-bound", f"{data_share:.0%} of the run's wall time loading and tokenising data"
    if gpu_busy is not None and gpu_busy < 0.5:
        return "overhead-bound", (f"the GPU is busy {gpu_busy:.0%} of the steady state: it "
                                  f"waits on the CPU{batch}")
    if overhead >= max(compute, memory):
        return "overhead-bound", f"{overhead:.0%} of wall time outside any operator{batch}"
    if gpu_busy is not None and memory > compute:
        return "memory-bound", (f"{memory:.0%} of wall time in element-wise and norm "
                                f"kernels against {compute:.0%} in matmul and attention")
    inside = [(k, v) for k, v in shares.items() if k != OUTSIDE and v >= 0.01]
    parts = ", ".join(f"{k} {v:.0%}" for k, v in sorted(inside, key=lambda t: -t[1])[:3])
    return "compute-bound", f"{1 - overhead:.0%} of wall time inside operators ({parts})"
