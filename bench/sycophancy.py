"""Benchmark: the cloze sycophancy evaluation of 300 questions vs same-run baselines.

    .venv/bin/python bench/sycophancy.py [--questions 300] [--batch-size 16]

Cases, all on the same first N questions of the shipped set, in one process:

* baseline: the neutral variant alone, scored with ``score_continuations`` (one batched,
  KV-cached pass: prompt once, both answers from the cache);
* naive neutral: the same scores with one plain forward per (prompt, answer), no batch,
  no cache (what a first implementation does);
* deterministic neutral: the fixed-shape, batch-invariant path;
* the full evaluation as ``interp eval sycophancy`` runs it: 6 variants, the
  are-you-sure second turn, metrics, and the "knows but agrees" probe (one capture of
  4 texts per question to layer 20).

Times are ratios to the baseline, because the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402

import interp  # noqa: E402
from evals.scoring import score_continuations  # noqa: E402
from evals.sycophancy import (  # noqa: E402
    Templates,
    chat_text,
    conversation,
    load_questions,
    run_sycophancy,
)


def _neutral(model, qs):  # noqa: ANN001, ANN202
    t = Templates()
    pre, _ = t.reply_prefix()
    prompts = [chat_text(model, conversation(t, "neutral", q)) + pre for q in qs]
    conts = [[t.continuation(q.correct), t.continuation(q.incorrect)] for q in qs]
    return prompts, conts


def _naive(model, prompts, conts) -> torch.Tensor:  # noqa: ANN001
    tok = model.tokenizer
    out = torch.zeros(len(prompts), 2)
    for i, (p, cs) in enumerate(zip(prompts, conts, strict=True)):
        pi = tok(p, add_special_tokens=False)["input_ids"]
        for j, c in enumerate(cs):
            ci = tok(c, add_special_tokens=False)["input_ids"]
            lp = model.logits(torch.tensor([pi + ci])).float().log_softmax(-1)[0]
            out[i, j] = sum(lp[len(pi) - 1 + k, ci[k]] for k in range(len(ci)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--skip-deterministic", action="store_true")
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "sycophancy.json"))
    args = ap.parse_args()

    model = interp.load(args.model)
    qs = load_questions(limit=args.questions)
    prompts, conts = _neutral(model, qs)
    score_continuations(model, prompts[:4], conts[:4], progress=False)  # warm-up
    times: dict[str, float] = {}

    def timed(name: str, fn):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        res = fn()
        times[name] = time.perf_counter() - t0
        print(f"{name}: {times[name]:.1f} s", flush=True)
        return res

    base = timed("neutral_batched", lambda: score_continuations(
        model, prompts, conts, batch_size=args.batch_size, progress=False))
    max_diff = {}
    if not args.skip_deterministic:
        det = timed("neutral_deterministic", lambda: score_continuations(
            model, prompts, conts, batch_size=args.batch_size, deterministic=True,
            progress=False))
        max_diff["deterministic_vs_batched"] = float((det.logprob - base.logprob).abs().max())
    if not args.skip_naive:
        naive = timed("neutral_naive_unbatched", lambda: _naive(model, prompts, conts))
        max_diff["naive_vs_batched"] = float((naive - base.logprob).abs().max())
    d: dict = {}
    if not args.skip_full:
        full = timed("full_eval", lambda: run_sycophancy(
            model, qs, batch_size=args.batch_size, probe=True, progress=False))
        d = full.to_dict()
    out = {
        "questions": len(qs), "batch_size": args.batch_size, "threads": torch.get_num_threads(),
        "seconds": times,
        "ratio_to_neutral_batched": {k: v / times["neutral_batched"] for k, v in times.items()},
        "max_abs_logprob_diff": max_diff,
        "metrics": {k: v for k, v in d.items() if k not in ("items", "config")},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    from interp.cli.common import json_safe

    Path(args.out).write_text(json.dumps(json_safe(out), indent=2))
    print(json.dumps(json_safe({k: v for k, v in out.items() if k != "metrics"}), indent=2))


if __name__ == "__main__":
    main()
