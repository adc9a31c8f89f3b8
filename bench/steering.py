"""Benchmark: the batched steering sweep vs naive loops over (layer, α).

    .venv/bin/python bench/steering.py [--prompts 8] [--max-new-tokens 16]

Batched: per layer, one generation call runs every (prompt, α) as rows of the same
batches (per-request α). Naive: one generation call per (layer, α) with all prompts,
and one per (layer, α, prompt). Generation only (metrics excluded), same prompts and
settings; ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import interp  # noqa: E402
from interp.runs.paths import shipped_dataset  # noqa: E402
from interp.steering.sweep import sweep_prompts  # noqa: E402
from interp.steering.vectors import load_pairs, steer, train_vector  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--layers", default="6,10")
    ap.add_argument("--alphas", default="-2,0,2,4")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--skip-per-text", action="store_true",
                    help="Skip the slowest naive loop (one call per text).")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "steering.json"))
    args = ap.parse_args()
    model = interp.load()
    prompts = sweep_prompts(n=args.prompts)  # the shipped neutral prompts, as the sweep
    layers = [int(x) for x in args.layers.split(",")]
    alphas = [float(x) for x in args.alphas.split(",")]
    pairs = load_pairs(shipped_dataset("steering/sentiment.jsonl"))
    vecs = {layer: train_vector(model, pairs, layer, progress=False) for layer in layers}
    kw = {"max_new_tokens": args.max_new_tokens, "progress": False}

    t0 = time.perf_counter()
    batched = {}
    for layer in layers:
        rows = [p for p in prompts for _ in alphas]
        with steer(model, vecs[layer], alpha=[a for _ in prompts for a in alphas]):
            res = interp.generate(model, rows, batch_size=args.batch_size, **kw)
        batched[layer] = res.texts
    t_batched = time.perf_counter() - t0

    t0 = time.perf_counter()
    per_cell = {}
    for layer in layers:
        for a in alphas:
            with steer(model, vecs[layer], alpha=a):
                per_cell[(layer, a)] = interp.generate(model, prompts,
                                                       batch_size=args.batch_size, **kw).texts
    t_cell = time.perf_counter() - t0

    t_single = float("nan")
    if not args.skip_per_text:
        t0 = time.perf_counter()
        for layer in layers:
            for a in alphas:
                for p in prompts:
                    with steer(model, vecs[layer], alpha=a):
                        interp.generate(model, [p], batch_size=1, **kw)
        t_single = time.perf_counter() - t0

    same = all(batched[layer][i * len(alphas) + j] == per_cell[(layer, a)][i]
               for layer in layers for i in range(len(prompts)) for j, a in enumerate(alphas))
    out = {"prompts": len(prompts), "layers": layers, "alphas": alphas,
           "batched_s": t_batched, "per_cell_s": t_cell, "per_text_s": t_single,
           "speedup_vs_per_cell": t_cell / t_batched, "speedup_vs_per_text": t_single / t_batched,
           "batched_equals_per_cell": same}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    n = len(prompts) * len(layers) * len(alphas)
    print(f"{n} continuations ({len(layers)} layers × {len(alphas)} alphas × {len(prompts)} "
          f"prompts), {args.max_new_tokens} new tokens, greedy\n")
    print("| run | seconds | × batched |")
    print("|---|---:|---:|")
    print(f"| batched sweep (per-request α, one call per layer) | {t_batched:.1f} | 1.00 |")
    print(f"| naive: one call per (layer, α) | {t_cell:.1f} | {t_cell / t_batched:.2f} |")
    print(f"| naive: one call per (layer, α, prompt) | {t_single:.1f} | "
          f"{t_single / t_batched:.2f} |")
    print(f"\nbatched texts equal per-(layer, α) texts: {same}")


if __name__ == "__main__":
    main()
