"""Benchmark: batched vs one-by-one generation, the deterministic mode's cost, and how
many sequences diverge without the verifier.

Ratios are measured within one run (the machine is shared and noisy).

    .venv/bin/python bench/generate.py [--prompts 32] [--max-new-tokens 16]
    # deterministic / plain batched at several lengths, KV-cached verifier vs the previous
    # full-recompute one (interleaved repeats, medians), and a sweep of --verify-every:
    .venv/bin/python bench/generate.py --cost-only --lengths 16,64 --sweep-w 4,8,16,32
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import statistics  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

import interp  # noqa: E402
import interp.generation.engine as engine  # noqa: E402
from interp.generation.engine import generate  # noqa: E402
from interp.runs.paths import shipped_dataset  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--noise", type=float, default=0.05, help="--inject-batch-noise EPS")
    ap.add_argument("--threads", type=int, default=None, help="torch threads")
    ap.add_argument("--lengths", default="16,64",
                    help="new-token counts of the deterministic-cost table")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats (median)")
    ap.add_argument("--sweep-w", default="", help="--verify-every values to sweep, e.g. 4,8,16,32")
    ap.add_argument("--cost-only", action="store_true",
                    help="only the deterministic-cost table (and the sweep)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "generate.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    model = interp.load(args.model, device=args.device)
    lines = shipped_dataset("prompts/mixed_256.jsonl").read_text().splitlines()
    prompts = [json.loads(x)["text"] for x in lines][: args.prompts]
    generate(model, prompts[:2], max_new_tokens=2, progress=False)  # warm-up
    lengths = [int(x) for x in args.lengths.split(",") if x]
    sweep = [int(x) for x in args.sweep_w.split(",") if x]
    cost = deterministic_cost(model, prompts, lengths, sweep, args.batch_size, args.repeats)
    print_cost(cost, len(prompts), args.batch_size, args.repeats)
    if args.cost_only:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"deterministic_cost": cost}, indent=2))
        return
    kw = {"max_new_tokens": args.max_new_tokens, "progress": False}

    def timed(name: str, **extra):
        t0 = time.perf_counter()
        res = generate(model, prompts, **kw, **extra)
        dt = time.perf_counter() - t0
        print(f"{name}: {dt:.1f} s, {res.stats.new_tokens} tokens", file=sys.stderr)
        return res, dt

    one, t_one = timed("one-by-one", batch_size=1)
    bat, t_bat = timed(f"batched {args.batch_size}", batch_size=args.batch_size)
    det, t_det = timed(f"batched {args.batch_size} deterministic", batch_size=args.batch_size,
                       deterministic=True)
    reference = one.texts
    verified = det.texts
    divergence = {}
    for b in (1, 7, 32):
        texts = one.texts if b == 1 else generate(model, prompts, batch_size=b, **kw).texts
        divergence[b] = {
            "vs_one_by_one": sum(x != y for x, y in zip(texts, reference, strict=True)),
            "vs_verified": sum(x != y for x, y in zip(texts, verified, strict=True)),
        }
    det_other = generate(model, prompts, batch_size=7, deterministic=True, **kw).texts
    # the same question under an injected shape-dependent fault (a GPU-like reduction order)
    eps = args.noise
    faulted = {b: generate(model, prompts, batch_size=b, inject_batch_noise=eps, **kw).texts
               for b in (1, 7, 32)}
    faulted_det = {b: generate(model, prompts, batch_size=b, inject_batch_noise=eps,
                               deterministic=True, **kw).texts for b in (1, 7, 32)}
    fault = {
        b: {"plain_vs_batch1": sum(x != y for x, y in zip(faulted[b], faulted[1], strict=True)),
            "deterministic_vs_batch1": sum(
                x != y for x, y in zip(faulted_det[b], faulted_det[1], strict=True))}
        for b in (1, 7, 32)
    }
    rows = {
        "one_by_one": {"seconds": t_one, "tok_per_s": one.stats.new_tokens / t_one},
        "batched": {"seconds": t_bat, "tok_per_s": bat.stats.new_tokens / t_bat},
        "deterministic": {"seconds": t_det, "tok_per_s": det.stats.new_tokens / t_det,
                          "tokens_verified": det.stats.tokens_verified,
                          "rollbacks": det.stats.rollbacks,
                          "regenerated": det.stats.regenerated_tokens},
    }
    result = {
        "prompts": len(prompts), "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size, "model": model.model_id, "rows": rows,
        "speedup_batched_vs_one_by_one": t_one / t_bat,
        "deterministic_cost_vs_batched": t_det / t_bat,
        "deterministic_cost_vs_one_by_one": t_det / t_one,
        "divergence_without_verifier": divergence,
        "deterministic_batch7_equals_batch16": det_other == verified,
        "injected_noise": eps,
        "divergence_under_injected_fault": fault,
        "deterministic_cost": cost,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"{len(prompts)} prompts × {args.max_new_tokens} new tokens, greedy, {model.device}\n")
    print("| mode | seconds | tokens/s | × one-by-one time | × batched time |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['seconds']:.1f} | {r['tok_per_s']:.1f} | "
              f"{r['seconds'] / t_one:.2f} | {r['seconds'] / t_bat:.2f} |")
    print(f"\nbatched speed-up over one-by-one: {t_one / t_bat:.1f}×")
    print(f"deterministic: verified {det.stats.tokens_verified}, rollbacks "
          f"{det.stats.rollbacks}, regenerated {det.stats.regenerated_tokens}; "
          f"batch 7 == batch {args.batch_size}: {det_other == verified}")
    print("\n| batch size | diverged vs one-by-one | diverged vs verified |")
    print("|---:|---:|---:|")
    for b, d in divergence.items():
        print(f"| {b} | {d['vs_one_by_one']}/{len(prompts)} | {d['vs_verified']}/{len(prompts)} |")
    print(f"\nunder --inject-batch-noise {eps}: sequences differing from batch size 1")
    print("| batch size | plain | deterministic |")
    print("|---:|---:|---:|")
    for b, d in fault.items():
        print(f"| {b} | {d['plain_vs_batch1']}/{len(prompts)} | "
              f"{d['deterministic_vs_batch1']}/{len(prompts)} |")


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of this process)."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def _run(model: Any, prompts: list[str], n: int, batch: int, mode: str, w: int) -> Any:
    """One generate call; ``mode``: plain | kv (the KV-cached verifier, default rows) |
    full (the previous verifier, re-reading the whole sequence every window, with its
    defaults then: 8 rows)."""
    engine._VERIFIER = "full" if mode == "full" else "kv"  # pyright: ignore[reportPrivateUsage]
    rows = {"verify_batch": 8} if mode == "full" else {}
    try:
        return generate(model, prompts, max_new_tokens=n, batch_size=batch,
                        deterministic=mode != "plain", verify_every=w, progress=False, **rows)
    finally:
        engine._VERIFIER = "kv"  # pyright: ignore[reportPrivateUsage]


def deterministic_cost(
    model: Any, prompts: list[str], lengths: list[int], sweep: list[int], batch: int,
    repeats: int,
) -> dict[str, Any]:
    """Deterministic / plain batched time per length: the KV-cached verifier at the
    default --verify-every, the previous verifier (its defaults: W = 8, 8 rows), and
    the KV-cached one at each W of ``sweep``. Every configuration runs once per
    repeat, interleaved; medians."""
    w0 = engine.GenerationConfig().verify_every
    configs = [("plain", w0), ("kv", w0), ("full", 8)] + [("kv", w) for w in sweep if w != w0]
    out: dict[str, Any] = {}
    for n in lengths:
        wall: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        texts: dict[str, list[str]] = {}
        for _ in range(repeats):
            for mode, w in configs:
                key = mode if mode == "plain" else f"{mode} W={w}"
                res, dw, dc = _timed(lambda m=mode, w=w, n=n: _run(model, prompts, n, batch, m, w))
                wall.setdefault(key, []).append(dw)
                cpu.setdefault(key, []).append(dc)
                texts[key] = res.texts
                print(f"  {n} tokens, {key}: {dw:.1f} s wall, {dc:.1f} s CPU", file=sys.stderr)
        base_w, base_c = statistics.median(wall["plain"]), statistics.median(cpu["plain"])
        out[str(n)] = {
            key: {"wall_s": statistics.median(wall[key]), "cpu_s": statistics.median(cpu[key]),
                  "x_plain_wall": statistics.median(wall[key]) / base_w,
                  "x_plain_cpu": statistics.median(cpu[key]) / base_c,
                  "wall_runs": wall[key], "same_texts_as_kv": texts[key] == texts[f"kv W={w0}"]}
            for key in wall
        }
    return out


def print_cost(cost: dict[str, Any], n_prompts: int, batch: int, repeats: int) -> None:
    print(f"deterministic / plain batched, batch size {batch}, {n_prompts} prompts, "
          f"{torch.get_num_threads()} threads, median of {repeats} interleaved runs\n")
    print("| new tokens | mode | wall s | × plain (wall) | CPU s | × plain (CPU) |")
    print("|---:|---|---:|---:|---:|---:|")
    for n, rows in cost.items():
        for key, r in rows.items():
            print(f"| {n} | {key} | {r['wall_s']:.1f} | {r['x_plain_wall']:.2f} | "
                  f"{r['cpu_s']:.1f} | {r['x_plain_cpu']:.2f} |")
    print()


if __name__ == "__main__":
    main()

