"""Benchmark: deterministic generation over prompts of spread lengths, the verifier's span
rule against a fixed 32-slot step, in one run.

Every verifier pass has ``verify_batch`` rows and only requests of one span share a pass
(``interp.generation.engine``). Prompts a few tokens apart got a span each under a fixed
32-slot step, so each prefill pass computed mostly rows that are thrown away; the current
rule (:func:`~interp.generation.engine.verifier_span`) rounds longer pasts more coarsely.
This times both on the same prompts, interleaved, and checks that each rule is still
batch-invariant (batch 1 against the whole batch).

    .venv/bin/python bench/verifier_spans.py [--prompts 8] [--min-tokens 280] \\
        [--max-tokens 700] [--max-new-tokens 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import torch  # noqa: E402

import interp  # noqa: E402
import interp.generation.engine as engine  # noqa: E402
from interp.data.corpus import load_texts  # noqa: E402
from interp.generation.engine import generate  # noqa: E402
from interp.mfu.peak import cpu_features, device_name  # noqa: E402


def fixed_step(past: int) -> int:
    """The earlier rule: every past rounded up to a multiple of 32 slots."""
    return -(-past // 32) * 32


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--min-tokens", type=int, default=280)
    ap.add_argument("--max-tokens", type=int, default=700)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2, help="interleaved repeats (median)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "verifier_spans.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = os.getloadavg()
    model = interp.load(args.model)
    tok = model.tokenizer
    ids = tok(" ".join(load_texts("heldout")[:600]))["input_ids"]
    n = args.prompts
    step = (args.max_tokens - args.min_tokens) // max(1, n - 1)
    prompts = [tok.decode(ids[1000 * i: 1000 * i + args.min_tokens + step * i])
               for i in range(n)]
    lengths = [len(tok(p)["input_ids"]) for p in prompts]
    kw = {"max_new_tokens": args.max_new_tokens, "deterministic": True, "progress": False}
    rules = {"fixed 32-slot step": fixed_step, "verifier_span": engine.verifier_span}
    times: dict[str, list[float]] = {name: [] for name in rules}
    passes: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    real = engine.verifier_span
    try:
        for _ in range(args.repeats):
            for name, rule in rules.items():
                engine.verifier_span = rule  # type: ignore[assignment]
                t = time.perf_counter()
                res = generate(model, prompts, batch_size=args.batch_size, **kw)
                times[name].append(time.perf_counter() - t)
                passes[name] = res.stats.verifier_passes
                texts[name] = res.texts
        invariant = {}
        for name, rule in rules.items():
            engine.verifier_span = rule  # type: ignore[assignment]
            one = generate(model, prompts, batch_size=1, **kw)
            invariant[name] = one.texts == texts[name]
    finally:
        engine.verifier_span = real  # type: ignore[assignment]
    med = {name: statistics.median(v) for name, v in times.items()}
    spans = {name: sorted({rule((n + args.max_new_tokens - 2) // 16 * 16 + 1)
                           for n in lengths}) for name, rule in rules.items()}
    out = {"prompt_tokens": lengths, "max_new_tokens": args.max_new_tokens,
           "batch_size": args.batch_size, "repeats": args.repeats, "seconds": times,
           "median_s": med, "verifier_passes": passes, "spans": spans,
           "batch_invariant": invariant,
           "speedup": med["fixed 32-slot step"] / med["verifier_span"],
           "threads": torch.get_num_threads(),
           "cpu": f"{device_name(torch.device('cpu'))}; {cpu_features()}",
           "load_avg_start": load_start, "load_avg_end": os.getloadavg()}
    for name in rules:
        print(f"{name:>20}: {med[name]:6.1f} s (median of {args.repeats}), "
              f"{passes[name]} verifier passes, spans {spans[name]}, "
              f"batch 1 = batch {args.batch_size}: {invariant[name]}")
    print(f"speedup {out['speedup']:.2f}x; prompts of {min(lengths)}–{max(lengths)} tokens; "
          f"{out['cpu']}; {out['threads']} threads; load {load_start[0]:.2f} → "
          f"{out['load_avg_end'][0]:.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
