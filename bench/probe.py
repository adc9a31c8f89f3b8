"""Benchmark: a full 30-layer probe sweep vs one capture pass over the same examples.

    .venv/bin/python bench/probe.py [--examples 1000] [--seeds 5]

The sweep captures every layer in one pass, then fits per layer and seed the probe
and its baselines (shuffled labels, control task, random weights). Times are
ratios within one run, because the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import numpy as np  # noqa: E402

import interp  # noqa: E402
from interp.probing.probes import ProbeDataset, load_probe_dataset, random_weights_model, run_probe  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "probe.json"))
    args = ap.parse_args()

    model = interp.load(args.model)
    full = load_probe_dataset()
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(len(full), min(args.examples, len(full)), replace=False))
    ds = ProbeDataset([full.texts[i] for i in idx], full.labels[idx],
                      [full.groups[i] for i in idx] if full.groups else None,
                      full.target_tokens, full.source, full.label_names)
    random_weights_model(model)  # build the cached random-weights checkpoint outside timing

    t0 = time.perf_counter()
    interp.capture(model, ds.texts, layers="all", progress=False)
    t_capture = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = run_probe(model, ds, layers="all", seeds=args.seeds, progress=False)
    t_sweep = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_probe(model, ds, layers="all", seeds=args.seeds, random_weights=False, progress=False)
    t_sweep_norw = time.perf_counter() - t0
    n_fits = 30 * args.seeds * 4
    d = res.to_dict()
    out = {
        "examples": len(ds), "seeds": args.seeds, "layers": len(d["layers"]),
        "capture_s": t_capture, "sweep_s": t_sweep, "sweep_no_random_weights_s": t_sweep_norw,
        "ratio_sweep_to_capture": t_sweep / t_capture,
        "ratio_sweep_no_random_weights_to_capture": t_sweep_norw / t_capture,
        "fits": n_fits, "best_layer": d["best_layer"],
        "best_test_accuracy": max(d["test_accuracy_mean"]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"{len(ds)} examples, {len(d['layers'])} layers, {args.seeds} seeds, {model.device}\n")
    print("| run | seconds | × one capture pass |")
    print("|---|---:|---:|")
    print(f"| one capture pass, all 30 layers | {t_capture:.1f} | 1.00 |")
    print(f"| full sweep (probe + shuffled + control task + random weights + BoW) | "
          f"{t_sweep:.1f} | {t_sweep / t_capture:.2f} |")
    print(f"| full sweep without the random-weights control | {t_sweep_norw:.1f} | "
          f"{t_sweep_norw / t_capture:.2f} |")


if __name__ == "__main__":
    main()
