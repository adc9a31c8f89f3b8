"""Benchmark: where a constitutional-AI run spends its time, and what determinism costs.

    .venv/bin/python bench/constitutional.py [--prompts 8] [--max-new-tokens 32]

Times each stage of :func:`evals.constitutional.critique_revise` (answer, critique,
revision: one batched generation call each) and the two-order judge, first on the fast
paths, then with ``deterministic=True`` (decode–verify–rollback generation, fixed-shape
scoring); checks that a deterministic run at batch size 1 gives the same texts and letter
log-probs as at the default batch size.
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
from evals.constitutional import (  # noqa: E402
    build_pairs,
    conversation,
    critique_revise,
    load_constitution,
    load_prompts,
)
from evals.judge import judge_pairs_logprobs  # noqa: E402

STAGES = ("answer", "critique", "revision")


def run(model, items, con, *, tokens: int, batch: int, det: bool) -> dict:
    times: list[float] = []
    n_tok: list[int] = []

    def gen(texts: list[str]) -> list[str]:
        t0 = time.perf_counter()
        res = interp.generate(model, texts, max_new_tokens=tokens, batch_size=batch,
                              deterministic=det, progress=False)
        times.append(time.perf_counter() - t0)
        n_tok.append(res.stats.new_tokens)
        return res.texts

    chains = critique_revise(items, con, gen, lambda m: conversation(model, m), rounds=1)
    pairs = build_pairs(chains, con)
    t0 = time.perf_counter()
    fwd, rev = judge_pairs_logprobs(model, pairs, con, batch_size=batch, deterministic=det)
    t_judge = time.perf_counter() - t0
    return {"stage_s": dict(zip(STAGES, times, strict=True)),
            "stage_new_tokens": dict(zip(STAGES, n_tok, strict=True)),
            "judge_s": t_judge, "judge_texts": 2 * len(pairs),
            "total_s": sum(times) + t_judge,
            "texts": [c.sft_record() for c in chains], "lp": [fwd.tolist(), rev.tolist()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--skip-batch-1", action="store_true",
                    help="Skip the deterministic batch-size-1 rerun.")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                         "constitutional.json"))
    args = ap.parse_args()
    model = interp.load()
    con = load_constitution()
    items = load_prompts()[: args.prompts]
    kw = {"tokens": args.max_new_tokens}
    fast = run(model, items, con, batch=args.batch_size, det=False, **kw)
    det = run(model, items, con, batch=args.batch_size, det=True, **kw)
    same_b1 = None
    if not args.skip_batch_1:
        one = run(model, items, con, batch=1, det=True, **kw)
        same_b1 = one["texts"] == det["texts"] and one["lp"] == det["lp"]
    out = {"prompts": len(items), "max_new_tokens": args.max_new_tokens,
           "batch_size": args.batch_size,
           "fast": {k: v for k, v in fast.items() if k not in ("texts", "lp")},
           "deterministic": {k: v for k, v in det.items() if k not in ("texts", "lp")},
           "deterministic_cost": det["total_s"] / fast["total_s"],
           "fast_equals_deterministic_texts": fast["texts"] == det["texts"],
           "deterministic_batch1_identical": same_b1}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"{len(items)} prompts, 1 round, {args.max_new_tokens} new tokens, greedy, batch "
          f"{args.batch_size}\n")
    print("| stage | fast s | deterministic s |")
    print("|---|---:|---:|")
    for s in STAGES:
        print(f"| {s} | {fast['stage_s'][s]:.1f} | {det['stage_s'][s]:.1f} |")
    print(f"| judge ({fast['judge_texts']} texts) | {fast['judge_s']:.1f} | "
          f"{det['judge_s']:.1f} |")
    print(f"| total | {fast['total_s']:.1f} | {det['total_s']:.1f} |")
    print(f"\ndeterministic costs {out['deterministic_cost']:.2f}× the fast path; fast texts "
          f"equal deterministic texts: {out['fast_equals_deterministic_texts']}; "
          f"deterministic at batch 1 identical: {same_b1}")


if __name__ == "__main__":
    main()
