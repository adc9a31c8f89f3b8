"""Profile: where a batch-1 decode step goes, interp.generate vs Hugging Face generate.

Plain ``torch.profiler`` (op table) plus ``cProfile`` (Python functions) over greedy
generation of one prompt, after a warm-up, for three runs on the same converted
checkpoint: ``interp.generate`` through the TransformerLens bridge (the path before
issue 16, forced with ``INTERP_FORWARD_PATH=bridge``), ``interp.generate`` on its
default path (the direct HF pass when no hook is live, see
``interp/models/forward.py``), and ``transformers`` ``model.generate``.

    .venv/bin/python bench/profile_decode.py [--max-new-tokens 32] [--threads 1] [--top 12]

Per run it prints the milliseconds per generated token, the share of the wall time
spent inside aten ops (the model's arithmetic) vs everything else (Python: hook
dispatch, wrappers, the engine), the top ops by self CPU time and the top Python
functions by their own time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import interp  # noqa: E402
from interp.generation.engine import generate  # noqa: E402
from interp.models.forward import PATH_ENV  # noqa: E402

PROMPT = "Once upon a time, in a small village by the sea,"


@contextlib.contextmanager
def path(value: str | None) -> Iterator[None]:
    """Set ``INTERP_FORWARD_PATH`` for the duration (``None``: the default path)."""
    old = os.environ.pop(PATH_ENV, None)
    if value is not None:
        os.environ[PATH_ENV] = value
    try:
        yield
    finally:
        os.environ.pop(PATH_ENV, None)
        if old is not None:
            os.environ[PATH_ENV] = old


def load_hf(model: interp.Model) -> Callable[[int], list[int]]:
    """HF ``generate`` (greedy) on the same converted checkpoint, as ``fn(n) -> ids``."""
    from transformers import AutoModelForCausalLM

    hf: Any = AutoModelForCausalLM.from_pretrained(model.path, dtype=model.dtype)
    hf = hf.to(model.device).eval()
    ids, mask = model.tokenize([PROMPT])

    def run(n: int) -> list[int]:
        with torch.no_grad():
            out = hf.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                do_sample=False, pad_token_id=model.tokenizer.pad_token_id,
            )
        return out[0, ids.shape[1]:].tolist()

    return run


def report(name: str, fn: Callable[[], object], n_tokens: int, top: int) -> None:
    fn()  # warm-up
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = prof.key_averages()
    # self time of aten ops only: the arithmetic (and its dispatch inside C++)
    aten_us = sum(e.self_cpu_time_total for e in events if e.key.startswith("aten::"))
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    print(f"\n=== {name}: {wall / n_tokens * 1e3:.1f} ms per token "
          f"({n_tokens} tokens, unprofiled wall {wall:.2f} s)")
    print(f"aten ops' self time: {aten_us / 1e3 / n_tokens:.1f} ms per token (profiled); "
          f"the rest of the wall time, {(wall - aten_us / 1e6) / n_tokens * 1e3:.1f} ms per "
          "token, is Python: the engine, hook dispatch, wrappers")
    print(events.table(sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=40))
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    lines = s.getvalue().splitlines()
    start = next((i for i, x in enumerate(lines) if "ncalls" in x), 0)
    print("\n".join(lines[start : start + top + 1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = interp.load(args.model)
    n = args.max_new_tokens
    hf = load_hf(model)

    def ours() -> object:
        r = generate(model, PROMPT, max_new_tokens=n, batch_size=1, progress=False)
        assert len(r.generations[0].token_ids) == n, "stopped early: pick another prompt"
        return r

    with path("bridge"):
        report("interp.generate, bridge path (before)", ours, n, args.top)
    with path(None):
        report("interp.generate, default path (direct HF pass)", ours, n, args.top)
    report("transformers generate", lambda: hf(n), n, args.top)


if __name__ == "__main__":
    main()
