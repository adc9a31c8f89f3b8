"""The device's peak FLOP/s: a measured matmul microbenchmark, or a table of known GPUs.

A CPU has no datasheet figure worth trusting (turbo, AVX-512 down-clocking, the thread
count, AMX for bfloat16), so its peak is *measured*: the best of several large square
matmuls in the given dtype with the current thread count. The figure is cached in
``$INTERP_CACHE/peak.json`` under the device name, dtype and thread count, so every run
on this machine divides by the same number (the file carries a version and the sha256
of its entries: one damaged, edited or of another version is measured again, saying so;
a figure that cannot be written, to a full disk or a read-only cache, is used all the same,
saying so).
A known GPU uses its datasheet's dense (no-sparsity) figure; an unknown one is measured
the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from interp.errors import InterpError
from interp.profiling.session import phase
from interp.schema import to_data
from interp.schema.settings import DTYPES

# Dense tensor-core (bf16/fp16) and plain float32 FLOP/s from the vendors' datasheets.
# float32 is the non-TF32 figure: torch's default matmul precision ("highest") keeps it.
KNOWN_GPUS: dict[str, dict[str, float]] = {
    "H200": {"bfloat16": 989.4e12, "float16": 989.4e12, "float32": 66.9e12},
    "H100 PCIe": {"bfloat16": 756.0e12, "float16": 756.0e12, "float32": 51.2e12},
    "H100": {"bfloat16": 989.4e12, "float16": 989.4e12, "float32": 66.9e12},
    "A100": {"bfloat16": 312.0e12, "float16": 312.0e12, "float32": 19.5e12},
    "L40S": {"bfloat16": 362.0e12, "float16": 362.0e12, "float32": 91.6e12},
    "L4": {"bfloat16": 121.0e12, "float16": 121.0e12, "float32": 30.3e12},
    "V100": {"float16": 125.0e12, "float32": 15.7e12},
}


@dataclass
class PeakResult:
    """One device's peak in one dtype and where the figure came from."""

    device: str  # the device's name (CPU model or GPU name)
    dtype: str
    flops: float  # FLOP/s
    source: str  # "measured" or "datasheet"
    threads: int | None = None  # CPU threads the measurement used
    matmul_size: int | None = None


def device_name(device: torch.device) -> str:
    """The device's name as recorded beside a peak: the GPU's name, else the CPU model from
    ``/proc/cpuinfo`` (or what ``platform`` knows)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


#: The CPU flags that decide matmul speed per dtype (bfloat16 native or emulated, AMX).
SPEED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
               "amx_bf16")
#: oneDNN's ISA caps: set, they change which kernels (and so which speeds) torch gets.
ISA_ENVS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def cpu_features() -> str:
    """The CPU's speed-relevant flags and any oneDNN ISA cap, as one cache-key part
    (``avx2,avx512_bf16,avx512f|ONEDNN_MAX_CPU_ISA=AVX2``). Two CPUs may share a model name
    (``AMD EPYC``) and differ in bfloat16 support; the key keeps their figures apart."""
    import os

    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    out = ",".join(f for f in SPEED_FLAGS if f in flags) or platform.machine() or "cpu"
    caps = [f"{e}={os.environ[e]}" for e in ISA_ENVS if os.environ.get(e)]
    return "|".join([out, *caps])


def known_gpu(name: str) -> dict[str, float] | None:
    """The datasheet entry whose name is a word-bounded part of ``name`` (first match)."""
    for key, peaks in KNOWN_GPUS.items():
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", name):
            return peaks
    return None


def _check_dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise InterpError(f"unknown dtype {dtype!r} for a peak; use one of {', '.join(DTYPES)}")
    return getattr(torch, dtype)


#: The measurement's budget per dtype, in seconds: the matmul is sized to fit it.
PEAK_BUDGET_S = 2.0
#: The largest matmul measured (CPU, CUDA): big enough to reach the peak on either.
MAX_SIZE = {"cpu": 2048, "cuda": 8192}
#: The probe that sizes it, and the smallest size measured.
PROBE_SIZE = 256


def _timed(device: torch.device, a: torch.Tensor, b: torch.Tensor) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    _ = a @ b
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0


def peak_size(device: torch.device, dtype: torch.dtype, repeats: int,
              budget_s: float = PEAK_BUDGET_S) -> int:
    """The square matmul size whose ``repeats + 1`` runs fit ``budget_s``, judged from a
    ``PROBE_SIZE`` matmul's rate, in steps of 256 between ``PROBE_SIZE`` and
    ``MAX_SIZE``. A small matmul runs below the peak, so the size errs small. On a CPU
    without native bfloat16 (1.2 GFLOP/s there against 40 in float32), six 2048² bfloat16
    matmuls take about 86 s; this sizes them to 512 (about 1.3 s), a size at which that
    CPU already runs at its bfloat16 rate.
    """
    top = MAX_SIZE.get(device.type, MAX_SIZE["cpu"])
    gen = torch.Generator(device="cpu").manual_seed(1)
    a = torch.randn(PROBE_SIZE, PROBE_SIZE, generator=gen).to(device=device, dtype=dtype)
    _timed(device, a, a)  # warm-up
    rate = 2.0 * PROBE_SIZE**3 / max(min(_timed(device, a, a) for _ in range(3)), 1e-9)
    n = (budget_s * rate / (2.0 * (repeats + 1))) ** (1 / 3)
    return int(min(top, max(PROBE_SIZE, (n // 256) * 256)))


def measure_peak(device: torch.device, dtype: str, *, size: int | None = None,
                 repeats: int = 5, budget_s: float = PEAK_BUDGET_S) -> PeakResult:
    """Best FLOP/s of ``repeats`` square ``size × size`` matmuls (after one warm-up). The
    size, unless given, fits the measurement into about ``budget_s`` seconds
    (:func:`peak_size`), up to 2048 on a CPU and 8192 on a GPU."""
    tdtype = _check_dtype(dtype)
    n = size or peak_size(device, tdtype, repeats, budget_s)
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=tdtype)
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=tdtype)
    best = float("inf")
    for i in range(repeats + 1):
        seconds = _timed(device, a, b)
        if i:  # the first one warms up the allocator and the kernel choice
            best = min(best, seconds)
    return PeakResult(device=device_name(device), dtype=dtype, flops=2.0 * n**3 / best,
                      source="measured", threads=torch.get_num_threads(), matmul_size=n)


def _cache_file() -> Path:
    from interp.runs.paths import cache_dir

    return cache_dir() / "peak.json"


def _cache_key(device: torch.device, dtype: str) -> str:
    cpu = "" if device.type == "cuda" else f"|{cpu_features()}|threads={torch.get_num_threads()}"
    return f"{device_name(device)}|{dtype}{cpu}"


def device_peak(device: str | torch.device, dtype: str | torch.dtype = "float32", *,
                remeasure: bool = False) -> PeakResult:
    """This device's peak in ``dtype``: the datasheet for a known GPU, else measured once
    and cached (``remeasure`` measures again and replaces the cached figure)."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise InterpError(f"no peak for device {str(device)!r}: interp measures cpu and cuda")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InterpError(f"device {str(dev)!r} is not available on this machine")
    name = str(dtype).removeprefix("torch.")
    _check_dtype(name)
    if dev.type == "cuda" and not remeasure:
        sheet = known_gpu(device_name(dev))
        if sheet and name in sheet:
            return PeakResult(device_name(dev), name, sheet[name], "datasheet")
    path = _cache_file()
    cache = read_stamped(path, "peak FLOP/s", _valid_peak)
    key = _cache_key(dev, name)
    if key in cache and not remeasure:
        return PeakResult(**cache[key])
    with phase("measure peak"):  # once per machine, dtype and thread count
        res = measure_peak(dev, name)
    cache[key] = to_data(res)
    write_stamped(path, cache, "peak FLOP/s")
    return res


#: The cache files' format (``peak.json``, ``choices.json``); a file of another version is
#: measured again.
CACHE_VERSION = 2
#: The key of a cache file's stamp (the format version and the sha256 of every entry),
#: beside the entries themselves.
STAMP_KEY = "_interp_cache"


def _stamp(entries: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()
    return {"version": CACHE_VERSION, "sha256": hashlib.sha256(body).hexdigest()}


def read_stamped(path: Path, what: str, valid: Callable[[Any], bool]) -> dict[str, Any]:
    """The entries of a stamped cache file, or ``{}`` when there are none; a file that is
    damaged, edited, of another version or with an entry ``valid`` refuses is never used:
    one line on stderr says it is measured again."""
    if not path.is_file():
        return {}
    problem = None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data, problem = None, "damaged (not readable JSON)"
    if problem is None and not isinstance(data, dict):
        problem = "damaged (not a JSON object)"
    if problem is None:
        assert isinstance(data, dict)
        stamp = data.pop(STAMP_KEY, None)
        version = stamp.get("version") if isinstance(stamp, dict) else None
        if version != CACHE_VERSION:
            problem = f"of another version ({version or 'unversioned'}, not {CACHE_VERSION})"
        elif stamp.get("sha256") != _stamp(data)["sha256"]:  # type: ignore[union-attr]
            problem = "damaged (sha256 mismatch)"
        elif not all(isinstance(e, dict) and valid(e) for e in data.values()):
            problem = f"damaged (an entry is not {what})"
    if problem is None:
        assert isinstance(data, dict)
        return data
    from interp.runs.progress import note

    note(f"{what} cache {path} is {problem}; measuring again")
    return {}


def write_stamped(path: Path, entries: dict[str, Any], what: str) -> None:
    """Write a stamped cache file atomically; a full disk or a read-only cache is one line
    (the figure is only a speed-up), not the run's end."""
    from interp.runs.atomic import atomic_write_text, cache_write

    text = json.dumps({**entries, STAMP_KEY: _stamp(entries)}, indent=1, sort_keys=True) + "\n"
    cache_write(lambda: atomic_write_text(path, text), what)


def _valid_peak(entry: Any) -> bool:
    try:
        return math.isfinite(PeakResult(**entry).flops) and entry["flops"] > 0
    except (TypeError, KeyError):
        return False


def peaks_for(device: str | torch.device, dtypes: tuple[str, ...]) -> dict[str, float]:
    """``{dtype: FLOP/s}`` for the dtypes a run uses (measured once per machine)."""
    return {d: device_peak(device, d).flops for d in dtypes}
