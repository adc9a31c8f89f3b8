"""Benchmark: one cross-layer transcoder training step (loss, backward, Adam), by reach.

    .venv/bin/python bench/clt.py [--d-sae 1024] [--k 32] [--batch 4096] [--reach 1,4,all]
                                  [--steps 3] [--layers 30]

The embedded model's shape (30 layers, d_model 576), random rows (the step's cost does not
depend on their values), TopK, no dead features (AuxK off: the steady state). Each reach is
timed in the same run, interleaved step by step (the machine is shared), after one warm-up
step; the median over ``--steps``. ``reach 1`` is per-layer transcoders trained together
(the baseline: what a CLT's extra decoder blocks cost is the ratio to it); ``all`` is
Ameisen et al.'s CLT. Prints a table and writes ``bench/results/clt_step.json`` with the
load average before and after and the CPU's flags.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def _cpu() -> dict[str, object]:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                 if ln.startswith("model name")), platform.processor())
    flags = set(next((ln.split(":", 1)[1].split() for ln in info.splitlines()
                      if ln.startswith("flags")), []))
    return {"model": name, "cores": os.cpu_count(),
            "flags": sorted(f for f in ("avx2", "avx512f", "avx512bw", "avx512_vnni",
                                        "avx512_bf16", "amx_bf16") if f in flags)}


def main() -> None:
    from saes.architectures import TopKConfig
    from saes.transcoders.crosslayer import CLTConfig, CrossLayerTranscoder

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--d-sae", type=int, default=1024)
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--layers", type=int, default=30)
    p.add_argument("--d-model", type=int, default=576)
    p.add_argument("--reach", default="1,4,all")
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    reaches = [None if r == "all" else int(r) for r in a.reach.split(",")]
    load_before = os.getloadavg()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(a.batch, a.layers * 2 * a.d_model, generator=g)
    runs = {}
    for reach in reaches:
        cfg = CLTConfig(d_in=a.d_model, d_sae=a.d_sae, layers=tuple(range(a.layers)),
                        architecture="topk", k=a.k, reach=reach)
        clt = CrossLayerTranscoder(cfg, TopKConfig(k=a.k))
        clt.init_weights(torch.Generator().manual_seed(0))
        with torch.no_grad():  # cross-layer blocks as a trained CLT has them, not zero
            for w in clt.W_dec:
                w[:, 1:].normal_(std=0.01, generator=g)
        runs[reach] = (clt, torch.optim.Adam(clt.parameters(), lr=1e-4), [])
    dead = torch.zeros(a.layers * a.d_sae, dtype=torch.bool)
    for step in range(a.steps + 1):
        for _reach, (clt, opt, times) in runs.items():
            t0 = time.perf_counter()
            loss, _ = clt.loss(x, 0.0, dead)
            t1 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            if step:  # the first is a warm-up
                times.append((t1 - t0, t2 - t1, t3 - t2))
    base = statistics.median(sum(t) for t in runs[reaches[0]][2])
    rows = []
    print(f"CLT step, {a.layers} layers × d_sae {a.d_sae}, k {a.k}, batch {a.batch}; "
          f"load before {load_before[0]:.2f}")
    print(f"{'reach':>6} {'params':>8} {'forward s':>10} {'backward s':>11} {'Adam s':>7} "
          f"{'step s':>7} {'tokens/s':>9} {'× reach ' + str(reaches[0]):>10}")
    for reach, (clt, _, times) in runs.items():
        f, b, o = (statistics.median(t[i] for t in times) for i in range(3))
        step_s = statistics.median(sum(t) for t in times)
        n = sum(q.numel() for q in clt.parameters())
        rows.append({"reach": reach or "all", "parameters": n, "forward_s": f,
                     "backward_s": b, "adam_s": o, "step_s": step_s,
                     "tokens_per_s": a.batch / step_s, "vs_first": step_s / base})
        print(f"{reach or 'all'!s:>6} {n / 1e6:>7.0f}M {f:>10.2f} {b:>11.2f} {o:>7.2f} "
              f"{step_s:>7.2f} {a.batch / step_s:>9.0f} {step_s / base:>10.2f}")
    load_after = os.getloadavg()
    print(f"load after {load_after[0]:.2f}; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GB")
    RESULTS.mkdir(exist_ok=True)
    out = {"settings": vars(a), "rows": rows, "cpu": _cpu(), "torch": torch.__version__,
           "threads": torch.get_num_threads(), "load_average_before": load_before,
           "load_average_after": load_after,
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    (RESULTS / "clt_step.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
