"""Benchmark: interp.generate vs Hugging Face ``generate`` at batch 1 and batch 16.

Greedy, on the same converted checkpoint, ``--new-tokens`` new tokens per prompt from
``datasets/prompts/mixed_256.jsonl``: batch 1 on the first ``--prompts-b1`` prompts
(one call per prompt for both), batch 16 on the first ``--prompts-b16`` (HF gets the
same batches as interp: prompts sorted by token length, left-padded). Three variants
per batch size, after a warm-up; each repeat runs every batch through every variant in
turn (interleaved at the grain of one batch: one prompt at batch 1), ``--repeats``
repeats, median of the per-repeat totals:

* ``interp, bridge``: ``interp.generate`` forced through the TransformerLens bridge
  (``INTERP_FORWARD_PATH=bridge``; the engine before issue 16);
* ``interp``: ``interp.generate`` on its default path (a direct HF pass when no hook
  is live, ``interp/models/forward.py``);
* ``interp, steered``: ``interp.generate`` inside ``steer(model, v, layer=6, alpha=0)``
  (the steering hook runs at every pass and adds 0·v, so the tokens are the plain ones):
  the hook is routed onto the direct HF pass (issue 30); ``interp, steered, bridge`` is
  the same forced through the bridge (before issue 30);
* ``HF generate``: ``transformers`` ``model.generate(do_sample=False)``, the checkpoint
  loaded with ``AutoModelForCausalLM.from_pretrained`` (its default attention, ``sdpa``);
  ``HF generate, eager``: the same with ``attn_implementation="eager"`` (the attention
  the bridge, and so interp's direct pass, runs).

Also counts the prompts whose greedy tokens are identical to HF's.

    .venv/bin/python bench/generate_hf.py [--repeats 5] [--threads N] [--batches 1,16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.generation.engine import generate  # noqa: E402
from interp.models.forward import PATH_ENV  # noqa: E402
from interp.runs.paths import shipped_dataset  # noqa: E402
from interp.steering.vectors import steer  # noqa: E402


def eos_ids(tok) -> list[int]:  # type: ignore[no-untyped-def]
    """The engine's stop tokens: EOS plus the chat end markers the vocabulary has."""
    eos = {tok.eos_token_id}
    for special in ("<|endoftext|>", "<|im_end|>", "<|eot_id|>"):
        tid = tok.convert_tokens_to_ids(special)
        if isinstance(tid, int) and tid != tok.unk_token_id:
            eos.add(tid)
    return sorted(int(t) for t in eos if t is not None)


def batches_of(model: interp.Model, prompts: list[str], batch: int) -> list[list[int]]:
    """interp's batches: prompt indices sorted by token length (longest first)."""
    tok = model.tokenizer
    lengths = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: -lengths[i])
    return [order[s : s + batch] for s in range(0, len(order), batch)]


def hf_runner(model: interp.Model, new_tokens: int, attn: str | None = None,
              ) -> Callable[[list[str]], list[list[int]]]:
    """``fn(prompts) -> new token ids per prompt``: HF generate, one left-padded batch."""
    from transformers import AutoModelForCausalLM

    kw = {} if attn is None else {"attn_implementation": attn}
    hf: Any = AutoModelForCausalLM.from_pretrained(model.path, dtype=model.dtype, **kw)
    hf = hf.to(model.device).eval()
    tok = model.tokenizer
    stops = eos_ids(tok)

    def run(prompts: list[str]) -> list[list[int]]:
        ids, mask = model.tokenize(prompts)
        with torch.no_grad():
            gen = hf.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                do_sample=False, eos_token_id=stops, pad_token_id=tok.pad_token_id,
            )
        out = []
        for j in range(len(prompts)):
            toks = gen[j, ids.shape[1]:].tolist()
            cut = next((k + 1 for k, t in enumerate(toks) if t in stops), len(toks))
            out.append(toks[:cut])
        return out

    return run


def interp_runner(model: interp.Model, new_tokens: int, path: str | None,
                  steered: bool = False) -> Callable[[list[str]], list[list[int]]]:
    """``fn(prompts) -> new token ids``: one ``interp.generate`` call over one batch
    (``steered``: inside ``steer(..., layer=6, alpha=0)``)."""
    v = torch.randn(model.d_model, generator=torch.Generator().manual_seed(0))

    def run(prompts: list[str]) -> list[list[int]]:
        if path is None:
            os.environ.pop(PATH_ENV, None)
        else:
            os.environ[PATH_ENV] = path
        try:
            with steer(model, v, layer=6, alpha=0.0) if steered else nullcontext():
                res = generate(model, prompts, max_new_tokens=new_tokens,
                               batch_size=len(prompts), progress=False)
        finally:
            os.environ.pop(PATH_ENV, None)
        return [g.token_ids for g in res.generations]
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--prompts-b1", type=int, default=8)
    ap.add_argument("--prompts-b16", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--batches", default="1,16", help="batch sizes to run (1 and/or 16)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "generate_hf.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = interp.load(args.model)
    lines = shipped_dataset("prompts/mixed_256.jsonl").read_text().splitlines()
    all_prompts = [json.loads(x)["text"] for x in lines]
    variants = {
        "interp, bridge (before)": interp_runner(model, args.new_tokens, "bridge"),
        "interp (after)": interp_runner(model, args.new_tokens, None),
        "interp, steered, bridge": interp_runner(model, args.new_tokens, "bridge", True),
        "interp, steered": interp_runner(model, args.new_tokens, None, True),
        "HF generate": hf_runner(model, args.new_tokens),
        "HF generate, eager": hf_runner(model, args.new_tokens, "eager"),
    }
    wanted = {int(b) for b in args.batches.split(",")}
    report: dict[str, dict[str, object]] = {}
    for batch, n in ((1, args.prompts_b1), (16, args.prompts_b16)):
        if batch not in wanted:
            continue
        prompts = all_prompts[:n]
        groups = batches_of(model, prompts, batch)
        outputs: dict[str, list[list[int]]] = {name: [[] for _ in prompts] for name in variants}
        for g in groups:  # warm-up, and the outputs
            for name, fn in variants.items():
                for i, toks in zip(g, fn([prompts[i] for i in g]), strict=True):
                    outputs[name][i] = toks
        # interleaved at the grain of one batch, so a burst of load elsewhere on the
        # machine lands on every variant alike
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeats):
            total = dict.fromkeys(variants, 0.0)
            for g in groups:
                for name, fn in variants.items():
                    t0 = time.perf_counter()
                    fn([prompts[i] for i in g])
                    total[name] += time.perf_counter() - t0
            for name in variants:
                times[name].append(total[name])
        hf_ids = outputs["HF generate"]
        hf_med = statistics.median(times["HF generate"])
        print(f"\nbatch {batch}: {n} prompts x {args.new_tokens} new tokens, "
              f"median of {args.repeats}", file=sys.stderr)
        rows = {}
        for name in variants:
            med = statistics.median(times[name])
            same = sum(a == b for a, b in zip(outputs[name], hf_ids, strict=True))
            rows[name] = {"median_s": med, "x_hf": med / hf_med, "same_as_hf": same,
                          "all_s": times[name]}
            print(f"  {name:26s} {med:7.2f} s  {med / hf_med:5.2f}x HF  "
                  f"same tokens as HF: {same}/{n}", file=sys.stderr)
        report[f"batch_{batch}"] = rows
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(
        {"threads": torch.get_num_threads(), "new_tokens": args.new_tokens,
         "load_average": os.getloadavg(), **report}, indent=2))
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
