"""Speed settings decided by measuring this machine once: the fastest of a few candidates.

CPUs differ: bfloat16 matmuls ran 1.6–1.8× faster than float32 on one with AVX512-BF16
and 4× slower on an AMD EPYC without it. A setting that trades precision or a kernel for
speed therefore has an ``"auto"`` value that :func:`fastest` resolves: each candidate
(the same operation the run will do, at a small size) is timed after a warm-up, best of
``repeats``, and a candidate other than the baseline is taken only when it is at least
``margin`` times faster than the baseline (else the baseline: float32, the exact
choice). The verdict is cached in ``$INTERP_CACHE/choices.json`` under the device, its
speed-relevant CPU flags (:func:`~interp.mfu.peak.cpu_features`), the setting, the shape
it was measured at and the thread count, in the same stamped format
as the peak cache (``peak.json``), so a machine measures once; a user can always give
the value instead. The :class:`Choice` says which value was used and why, and runs
record it in their manifest (``choices``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from interp.errors import InterpError
from interp.mfu.peak import cpu_features, device_name, read_stamped, write_stamped
from interp.profiling.session import phase
from interp.schema.convert import fields_data

#: Where a choice came from: measured now, read from the cache, or given by the user;
#: ``fallback`` when there was nothing to choose (the operation has one path).
SOURCES = ("measured", "cached", "given", "fallback")


@dataclass
class Choice:
    """The value a speed setting took on this machine, and why."""

    setting: str
    value: str
    source: str  # one of SOURCES
    reason: str
    seconds: dict[str, float] = field(default_factory=dict)  # best time per candidate
    key: str = ""  # the cache key (device | setting | shape | threads)

    def to_dict(self) -> dict[str, Any]:
        """The choice as JSON-ready data (the manifest's ``choices`` entry, the cache's)."""
        return fields_data(self)


def _cache_file() -> Any:
    from interp.runs.paths import cache_dir

    return cache_dir() / "choices.json"


def _time(fn: Callable[[], Any], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0


def _valid(entry: Any) -> bool:
    try:
        c = Choice(**entry)
    except TypeError:
        return False
    return c.source == "measured" and bool(c.value) and all(
        isinstance(v, int | float) and v > 0 for v in c.seconds.values())


def fastest(setting: str, candidates: Mapping[str, Callable[[], Any]], *, baseline: str,
            device: str | torch.device = "cpu", shape: str = "", margin: float = 1.1,
            repeats: int = 2, remeasure: bool = False) -> Choice:
    """The fastest of ``candidates`` (name → a call doing the run's operation once) on this
    machine: measured once per device, setting, ``shape`` and thread count, then cached.

    Each candidate runs once as a warm-up, then ``repeats`` timed calls (best kept). A
    candidate other than ``baseline`` wins only when ``baseline``'s best time is at least
    ``margin`` times its own. A candidate whose warm-up already took ``4 ×`` the best so
    far is not run again (a slow bfloat16 kernel is not waited for twice): on a CPU
    without native bfloat16 the tuned lens's choice costs about 2 s once.
    """
    if baseline not in candidates:
        raise InterpError(f"{setting}: the baseline {baseline!r} is not a candidate")
    dev = torch.device(device)
    cpu = "" if dev.type == "cuda" else f"|{cpu_features()}|threads={torch.get_num_threads()}"
    key = f"{device_name(dev)}|{setting}|{shape}{cpu}"
    path = _cache_file()
    cache = read_stamped(path, "speed choices", _valid)
    if key in cache and not remeasure and cache[key]["value"] in candidates:
        hit = Choice(**cache[key])
        return Choice(setting, hit.value, "cached", hit.reason, hit.seconds, key)
    seconds: dict[str, float] = {}
    with phase(f"measure {setting}"):
        for name in sorted(candidates, key=lambda n: n != baseline):  # the baseline first
            fn = candidates[name]
            first = _time(fn, dev)  # also the warm-up: kernel choice, a bf16 weight copy
            if seconds and first >= 4 * min(seconds.values()):
                seconds[name] = first  # far slower already: not waited for again
                continue
            seconds[name] = min(_time(fn, dev) for _ in range(repeats))
    base = seconds[baseline]
    win = min(seconds, key=lambda n: seconds[n])
    if win != baseline and base / seconds[win] >= margin:
        value = win
        reason = f"{win} measured {base / seconds[win]:.2f}× faster than {baseline} here"
    else:
        value = baseline
        ratio = base / seconds[win] if win != baseline else min(
            (base / s for n, s in seconds.items() if n != baseline), default=1.0)
        reason = (f"{baseline}: no candidate measured ≥ {margin:.2f}× faster here "
                  f"(best other {ratio:.2f}×)")
    choice = Choice(setting, value, "measured", reason, seconds, key)
    cache[key] = choice.to_dict()
    write_stamped(path, cache, "speed choices")
    return choice


def given(setting: str, value: str) -> Choice:
    """A value the user named: used as given, nothing measured."""
    return Choice(setting, value, "given", "given explicitly")


def fallback(setting: str, value: str, why: str) -> Choice:
    """The only value that applies (``why`` says so), nothing measured."""
    return Choice(setting, value, "fallback", why)
