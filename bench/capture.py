"""Benchmark: capturing one layer's resid_post vs a bare forward and TL run_with_cache.

Times are ratios against a bare forward of the *same* batches measured in the same
run (interleaved repeats, median), because shared CI machines are noisy.

    .venv/bin/python bench/capture.py [--layer 6] [--batch-size 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.runs.paths import shipped_dataset  # noqa: E402


def load_prompts() -> list[str]:
    path = shipped_dataset("prompts/mixed_256.jsonl")
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layer", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "capture.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    model = interp.load(args.model, device=args.device)
    prompts = load_prompts()
    tok = model.tokenizer
    lens = [len(x) for x in tok(prompts, add_special_tokens=False)["input_ids"]]
    order = sorted(range(len(prompts)), key=lambda i: -lens[i])  # same batches as capture
    batches = []
    for s in range(0, len(order), args.batch_size):
        enc = tok([prompts[i] for i in order[s : s + args.batch_size]], return_tensors="pt",
                  padding=True, add_special_tokens=False, padding_side="left")
        batches.append((enc["input_ids"].to(model.device), enc["attention_mask"].to(model.device)))
    n_tokens = sum(lens)
    hook = model.resid_hook(args.layer)
    hf = model.bridge.original_model

    def bare_forward() -> None:
        for ids, mask in batches:
            model.bridge(ids, attention_mask=mask, return_type="logits")

    def capture_one() -> None:
        interp.capture(model, prompts, layers=[args.layer], batch_size=args.batch_size,
                       progress=False)

    def capture_last_layer() -> None:
        interp.capture(model, prompts, layers=[model.n_layers - 1],
                       batch_size=args.batch_size, progress=False)

    def capture_all_layers() -> None:
        interp.capture(model, prompts, layers="all", batch_size=args.batch_size,
                       progress=False)

    def tl_run_with_cache() -> None:
        for ids, mask in batches:
            _, cache = model.bridge.run_with_cache(ids, attention_mask=mask)
            del cache

    def tl_run_with_cache_filtered() -> None:
        for ids, mask in batches:
            _, cache = model.bridge.run_with_cache(ids, attention_mask=mask, names_filter=[hook])
            del cache

    def tl_run_with_cache_stop() -> None:
        for ids, mask in batches:
            _, cache = model.bridge.run_with_cache(
                ids, attention_mask=mask, names_filter=[hook], stop_at_layer=args.layer + 1
            )
            del cache

    def hf_hidden_states() -> None:
        for ids, mask in batches:
            hf(input_ids=ids, attention_mask=mask, output_hidden_states=True)

    cases = {
        "bare forward (bridge, no hooks)": bare_forward,
        f"interp.capture layer {args.layer} (stops after block {args.layer})": capture_one,
        f"interp.capture layer {model.n_layers - 1} (full depth)": capture_last_layer,
        f"interp.capture all {model.n_layers} layers": capture_all_layers,
        "TL run_with_cache, no filter": tl_run_with_cache,
        f"TL run_with_cache, names_filter={hook}": tl_run_with_cache_filtered,
        f"TL run_with_cache, same filter, stop_at_layer={args.layer + 1}": tl_run_with_cache_stop,
        "HF forward, output_hidden_states=True": hf_hidden_states,
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    with torch.inference_mode():
        bare_forward()  # warm-up
        for r in range(args.repeats):
            for name, fn in cases.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
            print(f"repeat {r + 1}/{args.repeats} done", file=sys.stderr)
    base = statistics.median(times["bare forward (bridge, no hooks)"])
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        rows.append({"case": name, "median_s": med, "ratio_to_bare_forward": med / base,
                     "tokens_per_s": n_tokens / med, "times_s": ts})
    result = {
        "prompts": len(prompts), "tokens": n_tokens, "batch_size": args.batch_size,
        "layer": args.layer, "device": str(model.device), "threads": torch.get_num_threads(),
        "model": model.model_id, "torch": torch.__version__, "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"{len(prompts)} prompts, {n_tokens} tokens, batch {args.batch_size}, "
          f"{torch.get_num_threads()} threads, {model.device}\n")
    print("| case | median s | × bare forward | tokens/s |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['median_s']:.2f} | {r['ratio_to_bare_forward']:.2f} | "
              f"{r['tokens_per_s']:.0f} |")


if __name__ == "__main__":
    main()
