"""Benchmark: what a steering sweep costs per generated token over plain generation.

    .venv/bin/python bench/steering.py [--prompts 8] [--layers 6,10] [--alphas=-4,0,4,8]
    .venv/bin/python bench/steering.py --mode loops [--skip-per-text]   # the older table

``--mode overhead`` (default), in one run, interleaved repeats, medians:

* **sweep**: :func:`interp.steering.sweep.run_sweep` as ``interp steer sweep`` runs it
  (a vector trained per layer from ``--pairs``; per layer one generation call over every
  (prompt, α) row with a per-request α); its ``result.stats`` times the generation
  calls apart from the vector training and from each metric stage (VADER, perplexity
  pass, distinct-2, side-effect KL);
* **sweep, before**: the same with the steering hook of git ``68c50d7`` (copied below),
  its vectors built as then (one capture pass per layer) and its side-effect KL as then
  (one pass per α);
* **generate + no-op hook**: :func:`interp.generate` of the same rows (each prompt
  repeated once per α, one call per layer, same ``max_new_tokens`` and batch size) with
  a hook that returns its input at the same hook point: the machinery's own cost is
  sweep ÷ this;
* **generate, no hook**: the same rows with no hook at all (sweep ÷ this = the total
  cost, bridge hook dispatch included: with no hook live the engine may skip the bridge);
* **generate, no hook, bridge path**: the same with ``INTERP_FORWARD_PATH=bridge`` set
  (forces the bridge where the engine has a direct path; otherwise the same as above).

The ratios are per generated token (seconds ÷ new tokens; steered rows may stop early).
``--mode loops``: the batched sweep vs one generation call per (layer, α) and per
(layer, α, prompt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402
from torch import Tensor  # noqa: E402

import interp  # noqa: E402
import interp.steering.sweep as sweep_mod  # noqa: E402
import interp.steering.vectors as vectors_mod  # noqa: E402
from interp.models.forward import PATH_ENV  # noqa: E402
from interp.models.loading import Model  # noqa: E402
from interp.runs.paths import shipped_dataset  # noqa: E402
from interp.steering.sweep import (  # noqa: E402
    METRIC_STAGES,
    SWEEP_STAGES,
    run_sweep,
    side_effect_kl,
    sweep_prompts,
)
from interp.steering.vectors import (  # noqa: E402
    SteeringVector,
    load_pairs,
    steer,
    train_vector,
    train_vectors,
)


# ----------------------------------------------------------------------------- before
@contextmanager
def steer_before(model: Model, vector: SteeringVector, layer: int, alpha: Any,
                 positions: str = "all") -> Iterator[None]:
    """``interp.steering.vectors.steer`` as of git 68c50d7 (its checks left out): the
    hook indexes α with ``a[rows.cpu()]`` and moves it per call."""
    from interp.generation.engine import current_generated, current_rows

    a = torch.as_tensor(alpha, dtype=torch.float32)
    v = vector.vector.to(device=model.device, dtype=torch.float32)

    def hook(h: Tensor, hook: Any) -> Tensor:  # noqa: ARG001
        if a.ndim == 0:
            coef = a
        else:
            rows = current_rows.get()
            assert rows is not None and rows.numel() == h.shape[0]
            coef = a[rows.cpu()].view(-1, *([1] * (h.ndim - 1)))
        add = coef.to(h.device) * v
        if positions != "all" and h.ndim == 3:
            gen = current_generated.get()
            if gen is None:
                gen = torch.zeros(h.shape[:2], dtype=torch.bool, device=h.device)
            keep = gen if positions == "generated" else ~gen
            add = add * keep.to(device=h.device, dtype=add.dtype).unsqueeze(-1)
        return h + add.to(h.dtype)

    with model.bridge.hooks(fwd_hooks=[(model.resid_hook(layer), hook)]):
        yield


def train_vectors_before(model: Model, pairs: Any, layers: list[int], **kw: Any,
                         ) -> dict[int, SteeringVector]:
    """The vectors as ``run_sweep`` built them before: one capture pass per layer."""
    return {layer: train_vector(model, pairs, layer, **kw) for layer in layers}


@torch.no_grad()
def side_effect_kl_before(model: Model, vector: SteeringVector, layer: int,
                          alphas: list[float], ids: Tensor, mask: Tensor, clean: Tensor,
                          **_: Any) -> list[list[float]]:
    """The side-effect KL as ``run_sweep`` measured it before: one pass per α."""
    from interp.lenses.logit import kl_divergence

    out = []
    for a in alphas:
        with steer_before(model, vector, layer, a):
            lp = torch.log_softmax(model.logits(ids, mask)[:, -1].float(), -1)
        out.append(kl_divergence(clean, lp).tolist())
    return out


@contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextmanager
def env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# --------------------------------------------------------------------------- overhead
def overhead(args: argparse.Namespace, model: Model) -> None:
    prompts = sweep_prompts(n=args.prompts)  # the shipped neutral prompts, as the CLI
    layers = [int(x) for x in args.layers.split(",")]
    alphas = [float(x) for x in args.alphas.split(",")]
    if 0.0 not in alphas:
        alphas = [0.0, *alphas]  # run_sweep adds it: the baselines get the same rows
    pairs = load_pairs(args.pairs)
    rows = [p for p in prompts for _ in alphas]
    gen_kw = {"max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
              "progress": False}
    hook_seconds = [0.0]

    def timed_hook(*a: Any, **k: Any) -> Callable[[Tensor, Any], Tensor]:
        fn = real_hook(*a, **k)

        def wrapper(h: Tensor, hook: Any) -> Tensor:
            t0 = time.perf_counter()
            try:
                return fn(h, hook)
            finally:
                hook_seconds[0] += time.perf_counter() - t0
        return wrapper

    real_hook = vectors_mod.steering_hook

    def sweep(before: bool = False) -> dict[str, Any]:
        hook_seconds[0] = 0.0
        with patched(sweep_mod, "steer", steer_before if before else steer), \
                patched(sweep_mod, "train_vectors",
                        train_vectors_before if before else train_vectors), \
                patched(sweep_mod, "side_effect_kl",
                        side_effect_kl_before if before else side_effect_kl), \
                patched(vectors_mod, "steering_hook", timed_hook):
            res = run_sweep(model, prompts, layers=layers, alphas=alphas, pairs=pairs,
                            max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                            progress=False)
        st = res.stats
        return {"seconds": st.seconds["generate"], "tokens": st.new_tokens,
                "stages": dict(st.seconds), "total": st.total, "texts": [t.text for t in res.texts],
                "side_kl": [x for row in res.side_kl for x in row],
                "hook_seconds": hook_seconds[0] if not before else float("nan")}

    def plain(mode: str) -> dict[str, Any]:
        seconds, tokens, passes, texts = 0.0, 0, 0, []
        for layer in layers:
            t0 = time.perf_counter()
            if mode == "noop":
                with model.bridge.hooks(fwd_hooks=[(model.resid_hook(layer),
                                                    lambda h, hook: h)]):  # noqa: ARG005
                    res = interp.generate(model, rows, **gen_kw)
            elif mode == "bridge":
                with env(PATH_ENV, "bridge"):
                    res = interp.generate(model, rows, **gen_kw)
            else:
                res = interp.generate(model, rows, **gen_kw)
            seconds += time.perf_counter() - t0
            tokens += res.stats.new_tokens
            passes += res.stats.forward_passes
            texts += res.texts
        return {"seconds": seconds, "tokens": tokens, "passes": passes, "texts": texts}

    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "sweep": sweep,
        "sweep_before": lambda: sweep(before=True),
        "generate_noop_hook": lambda: plain("noop"),
        "generate_no_hook": lambda: plain("none"),
        "generate_no_hook_bridge": lambda: plain("bridge"),
    }
    labels = {
        "sweep": "sweep, generation part (this branch)",
        "sweep_before": "sweep, generation part (hook of 68c50d7)",
        "generate_noop_hook": "`interp.generate`, no-op hook at the same point",
        "generate_no_hook": "`interp.generate`, no hook",
        "generate_no_hook_bridge": f"`interp.generate`, no hook, {PATH_ENV}=bridge",
    }
    print(f"warm-up ({len(cases)} cases)...", flush=True)
    for fn in cases.values():
        fn()
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in cases}
    names = list(cases)
    for rep in range(args.repeats):
        order = names[rep % len(names):] + names[: rep % len(names)]  # rotate the order
        for k in order:
            runs[k].append(cases[k]())
            r = runs[k][-1]
            print(f"  rep {rep} {k}: {r['seconds']:.2f} s, {r['tokens']} tokens", flush=True)

    def per_token(r: dict[str, Any]) -> float:
        return r["seconds"] / r["tokens"]

    def ratio(a: str, b: str) -> float:  # median over repeats of the paired ratio
        return statistics.median(per_token(x) / per_token(y)
                                 for x, y in zip(runs[a], runs[b], strict=True))

    def spread(a: str, b: str) -> tuple[float, float]:
        rs = [per_token(x) / per_token(y) for x, y in zip(runs[a], runs[b], strict=True)]
        return min(rs), max(rs)

    def secs_vector(rs: list[dict[str, Any]]) -> float:
        return statistics.median(r["stages"]["vector"] for r in rs)

    tok_s = {k: statistics.median(r["tokens"] / r["seconds"] for r in v) for k, v in runs.items()}
    n_rows = len(rows) * len(layers)
    print(f"\n{n_rows} rows ({len(layers)} layers × {len(alphas)} α × {len(prompts)} prompts), "
          f"{args.max_new_tokens} new tokens, greedy, batch size {args.batch_size}, "
          f"{torch.get_num_threads()} threads, {args.repeats} interleaved repeats (median)\n")
    print("| run | tokens/s | s/token ÷ no-op hook | s/token ÷ no hook |")
    print("|---|---:|---:|---:|")
    for k in names:
        lo, hi = spread(k, "generate_no_hook")
        print(f"| {labels[k]} | {tok_s[k]:.1f} | {ratio(k, 'generate_noop_hook'):.3f} | "
              f"{ratio(k, 'generate_no_hook'):.3f} ({lo:.2f}–{hi:.2f}) |")
    hook_share = statistics.median(r["hook_seconds"] / r["seconds"] for r in runs["sweep"])
    print(f"\nsteering hook's own time: {100 * hook_share:.2f}% of the sweep's generation time")
    same = runs["sweep"][0]["texts"] == runs["sweep_before"][0]["texts"]
    print(f"sweep texts equal with the old hook: {same}")
    kl_diff = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(
        runs["sweep"][0]["side_kl"], runs["sweep_before"][0]["side_kl"], strict=True))
    print(f"side-effect KL, largest relative difference to one pass per α: {kl_diff:.1e}")

    # where the whole sweep call goes (this branch)
    totals = [r["total"] for r in runs["sweep"]]
    shares = {s: statistics.median(r["stages"][s] / r["total"] for r in runs["sweep"])
              for s in SWEEP_STAGES}
    secs = {s: statistics.median(r["stages"][s] for r in runs["sweep"]) for s in SWEEP_STAGES}
    vec_before = secs_vector(runs["sweep_before"])
    print("\nwhole `run_sweep` call, by stage (median; before = the sweep_before runs):\n")
    before = {s: statistics.median(r["stages"][s] for r in runs["sweep_before"])
              for s in SWEEP_STAGES}
    shares_before = {s: statistics.median(r["stages"][s] / r["total"]
                                          for r in runs["sweep_before"]) for s in SWEEP_STAGES}
    print("| stage | seconds | share of the call | before: seconds | before: share |")
    print("|---|---:|---:|---:|---:|")
    for s in SWEEP_STAGES:
        print(f"| {s}{' (metric)' if s in METRIC_STAGES else ''} | {secs[s]:.2f} | "
              f"{100 * shares[s]:.1f}% | {before[s]:.2f} | {100 * shares_before[s]:.1f}% |")

    def metric_share(rs: list[dict[str, Any]]) -> float:
        return statistics.median(sum(r["stages"][s] for s in METRIC_STAGES) / r["total"]
                                 for r in rs)
    print(f"| all metric stages | {sum(secs[s] for s in METRIC_STAGES):.2f} | "
          f"{100 * metric_share(runs['sweep']):.1f}% | "
          f"{sum(before[s] for s in METRIC_STAGES):.2f} | "
          f"{100 * metric_share(runs['sweep_before']):.1f}% |")
    print(f"| whole call | {statistics.median(totals):.2f} | 100% | "
          f"{statistics.median(r['total'] for r in runs['sweep_before']):.2f} | 100% |")

    out = {"mode": "overhead", "rows": n_rows, "layers": layers, "alphas": alphas,
           "prompts": len(prompts), "max_new_tokens": args.max_new_tokens,
           "batch_size": args.batch_size, "threads": torch.get_num_threads(),
           "repeats": args.repeats, "tokens_per_s": tok_s,
           "ratio_vs_noop_hook": {k: ratio(k, "generate_noop_hook") for k in names},
           "ratio_vs_no_hook": {k: ratio(k, "generate_no_hook") for k in names},
           "hook_share_of_generation": hook_share, "texts_equal_old_hook": same,
           "side_kl_max_rel_diff": kl_diff, "stage_seconds_before": before,
           "stage_seconds": secs, "stage_shares": shares, "vector_seconds_before": vec_before,
           "runs": {k: [{kk: vv for kk, vv in r.items() if kk != "texts"} for r in v]
                    for k, v in runs.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))


# ------------------------------------------------------------------------------ loops
def loops(args: argparse.Namespace, model: Model) -> None:
    """The batched sweep vs naive loops over (layer, α) (generation only)."""
    prompts = sweep_prompts(n=args.prompts)
    layers = [int(x) for x in args.layers.split(",")]
    alphas = [float(x) for x in args.alphas.split(",")]
    pairs = load_pairs(args.pairs)
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
    out = {"mode": "loops", "prompts": len(prompts), "layers": layers, "alphas": alphas,
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


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--mode", choices=["overhead", "loops"], default="overhead")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=None,
                    help="Default: 24 (the CLI's) for overhead, 16 for loops.")
    ap.add_argument("--layers", default="6,10")
    ap.add_argument("--alphas", default=None, help="Default: -4,0,4,8 (overhead), -2,0,2,4 "
                    "(loops).")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--pairs", default=str(shipped_dataset("steering/sentiment.jsonl")))
    ap.add_argument("--repeats", type=int, default=5, help="Interleaved repeats (overhead).")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: "
                    "torch's own).")
    ap.add_argument("--skip-per-text", action="store_true",
                    help="loops: skip the slowest naive loop (one call per text).")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.max_new_tokens is None:
        args.max_new_tokens = 24 if args.mode == "overhead" else 16
    if args.alphas is None:
        args.alphas = "-4,0,4,8" if args.mode == "overhead" else "-2,0,2,4"
    if args.out is None:
        name = "steering.json" if args.mode == "loops" else "steering_overhead.json"
        args.out = str(Path(__file__).parent / "results" / name)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = interp.load()
    (overhead if args.mode == "overhead" else loops)(args, model)


if __name__ == "__main__":
    main()
