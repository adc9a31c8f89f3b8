"""Benchmark: a full 30-layer probe sweep vs one capture pass over the same examples.

    .venv/bin/python bench/probe.py [--examples 1000] [--seeds 5] [--repeats 3]

The sweep captures every layer in one pass, then fits per layer and seed the probe
and its baselines (shuffled labels, control task, random weights, bag of words).
Measured for both solvers in the same run: ``sklearn`` (one scikit-learn fit per
probe, the "before") and ``torch`` (all probes as batched problems, the "after"),
each with and without the random-weights control (which adds a capture pass through
the random model). Runs are interleaved over ``--repeats`` rounds and each figure is
the median, as a ratio to the median capture pass, because the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import numpy as np  # noqa: E402

import interp  # noqa: E402
from interp.probing.probes import ProbeDataset, load_probe_dataset, random_weights_model, run_probe  # noqa: E402
from interp.probing.results import ProbeSolver  # noqa: E402

RUNS: list[tuple[str, ProbeSolver, bool]] = [  # name, solver, random weights
    ("sklearn, no random weights", "sklearn", False),
    ("torch, no random weights", "torch", False),
    ("sklearn, with random weights", "sklearn", True),
    ("torch, with random weights", "torch", True),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
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
    interp.capture(model, ds.texts[:32], layers="all", progress=False)  # warm-up

    times: dict[str, list[float]] = {"capture": []} | {name: [] for name, _, _ in RUNS}
    best: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        interp.capture(model, ds.texts, layers="all", progress=False)
        times["capture"].append(time.perf_counter() - t0)
        for name, solver, rw in RUNS:
            t0 = time.perf_counter()
            res = run_probe(model, ds, layers="all", seeds=args.seeds, random_weights=rw,
                            solver=solver, progress=False)
            times[name].append(time.perf_counter() - t0)
            best[name] = res.means("test_accuracy")
    med = {k: statistics.median(v) for k, v in times.items()}
    cap = med["capture"]
    n_layers = len(best[RUNS[0][0]])
    diff = max(abs(a - b) for a, b in zip(best["torch, with random weights"],
                                          best["sklearn, with random weights"], strict=True))
    out = {
        "examples": len(ds), "seeds": args.seeds, "layers": n_layers,
        "repeats": args.repeats, "times_s": times, "median_s": med,
        "ratio_to_capture": {k: v / cap for k, v in med.items()},
        "fits": n_layers * args.seeds * 4,
        "max_mean_test_accuracy_difference_torch_vs_sklearn": diff,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"{len(ds)} examples, {n_layers} layers, {args.seeds} seeds, {model.device}, "
          f"median of {args.repeats} interleaved rounds\n")
    print("| run | seconds | × one capture pass |")
    print("|---|---:|---:|")
    print(f"| one capture pass, all {n_layers} layers | {cap:.1f} | 1.00 |")
    for name, _, _ in RUNS:
        print(f"| full sweep, {name} | {med[name]:.1f} | {med[name] / cap:.2f} |")
    print(f"\nlargest per-layer mean test-accuracy difference, torch vs sklearn: {diff:.4f}")


if __name__ == "__main__":
    main()
