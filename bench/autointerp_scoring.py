"""Benchmark: detection scoring with the shared prompt prefix run once, against whole prompts.

    .venv/bin/python bench/autointerp_scoring.py [--texts 64] [--batch-size 16] [--repeats 3]

One explanation, ``--texts`` texts (the sentences of ``datasets/probes/sentiment.jsonl``,
half of them with the word "because" spliced in), scored by SmolLM2-135M-Instruct:

* **shared prefix** (``scores``): the prompt's common token prefix (instructions,
  few-shot examples, the explanation) runs once into a KV cache; each batch runs only
  its texts;
* **whole prompts** (``share_prefix=False``): every prompt run from its start, left-padded.

Interleaved, ``--repeats`` repeats, medians; the scores must agree (1e-3, asserted). As a
sanity check of the scorer itself (not a feature benchmark), the AUROC of the explanation
'the word "because"' on the texts with and without it is printed.

Results go to ``bench/results/autointerp_scoring.json``; give the load average with them.
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
from sklearn.metrics import roc_auc_score  # noqa: E402

import interp  # noqa: E402
from saes.autointerp import scores, scoring_prompts, shared_prefix_length  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def texts(n: int) -> tuple[list[str], list[int]]:
    rows = [json.loads(line)["text"] for line in
            (ROOT / "datasets" / "probes" / "sentiment.jsonl").read_text().splitlines()
            if line.strip()]
    out, labels = [], []
    for i, t in enumerate(rows[:n]):
        if i % 2:
            out.append(t.rstrip(".") + " because it was so.")
            labels.append(1)
        else:
            out.append(t)
            labels.append(0)
    return out, labels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    model = interp.load("smollm2-135m-instruct")
    xs, labels = texts(args.texts)
    expl = 'the word "because"'
    rows = scoring_prompts(model, expl, xs)
    k = shared_prefix_length(rows)
    times: dict[str, list[float]] = {"shared": [], "whole": []}
    scores(model, expl, xs[:2])
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        a = scores(model, expl, xs, batch_size=args.batch_size)
        times["shared"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = scores(model, expl, xs, batch_size=args.batch_size, share_prefix=False)
        times["whole"].append(time.perf_counter() - t0)
        assert torch.allclose(a, b, atol=1e-3, rtol=1e-3), (a - b).abs().max()
    med = {k2: statistics.median(v) for k2, v in times.items()}
    res = {
        "texts": len(xs), "batch_size": args.batch_size, "prefix_tokens": k,
        "mean_prompt_tokens": sum(len(r) for r in rows) / len(rows), "seconds": med,
        "speedup": med["whole"] / med["shared"],
        "max_abs_diff": float((a - b).abs().max()),
        "sanity_auroc_because": float(roc_auc_score(labels, a.numpy())),
        "load_average": os.getloadavg(), "torch": torch.__version__,
    }
    out = ROOT / "bench" / "results" / "autointerp_scoring.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
