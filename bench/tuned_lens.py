"""Benchmark: tuned-lens training throughput, and how it scales with the number of layers.

    .venv/bin/python bench/tuned_lens.py [--repeats 3] [--batch-size 4] [--positions 64]
    .venv/bin/python bench/tuned_lens.py --dtypes-only --repeats 3   # issue 30: per dtype

One training step = one forward of ``batch × 128`` tokens of corpus text with every
layer hooked, then the KL loss at ``positions`` sampled positions per window, back-
propagated through the 49k-word unembedding for each trained layer. Cases, interleaved
and timed in the same run (median of repeats), because the machine is shared:

* ``forward``: the bare forward with logits (the floor of any step);
* ``step, k layers``: a training step with k translators (k = 1, 4, 8, 16, 29), bf16
  unembedding matmul (the default);
* ``step, 29 layers, fp32``: the same with a float32 unembedding;
* ``naive, 29 layers``: the plain PyTorch loss of the paper's code style, through the
  bridge's ``ln_final``/``unembed`` modules: ``log_softmax`` then ``KL`` via ``kl_div``;
* ``step, 29 layers, auto``: the dtype ``--unembed-dtype auto`` (the default) picks on
  this machine (:func:`interp.lenses.training.unembed_dtype_choice`, printed with its
  reason and the measurement's own seconds).

``--dtypes-only``: just the forward, the 29-layer step in bf16, in fp32 and auto.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.activations.capture import forward_with_hooks  # noqa: E402
from interp.data.corpus import load_texts  # noqa: E402
from interp.data.windows import pack_windows  # noqa: E402
from interp.lenses.training import (  # noqa: E402
    TunedLensTrainConfig,
    lens_loss_step,
    sample_positions,
    unembed_dtype_choice,
)
from interp.lenses.tuned import Translators  # noqa: E402
from interp.models.unembedding import Unembed  # noqa: E402


def naive_step(model, tr, ids, pos) -> None:  # noqa: ANN001
    names = [model.resid_hook(i) for i in range(tr.A.shape[0])]
    acts, logits = forward_with_hooks(model, ids, None, names, with_logits=True)
    rows = torch.arange(ids.shape[0]).unsqueeze(1).expand_as(pos)
    target = torch.log_softmax(logits[rows, pos].reshape(-1, logits.shape[-1]), -1)
    for i, name in enumerate(names):
        h = acts[name][rows, pos].reshape(-1, model.d_model)
        lp = torch.log_softmax(model.unembed(tr(h, i)).float(), -1)
        torch.nn.functional.kl_div(lp, target, log_target=True, reduction="batchmean").backward()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "tuned_lens.json"))
    ap.add_argument("--dtypes-only", action="store_true")
    args = ap.parse_args()

    model = interp.load(args.model)
    cfg = TunedLensTrainConfig(batch_size=args.batch_size, positions_per_window=args.positions)
    windows = pack_windows(model, load_texts("train"), seq_len=cfg.seq_len,
                           n_windows=args.batch_size * (args.repeats + 1), seed=0)
    unembed = Unembed(model)
    n_tr = model.n_layers - 1
    tr = Translators(n_tr, model.d_model)
    ks = [k for k in (1, 4, 8, 16, n_tr) if k <= n_tr and (not args.dtypes_only or k == n_tr)]
    t0 = time.perf_counter()
    choice = unembed_dtype_choice(model, unembed, "auto")
    print(f"auto: {choice.value} ({choice.source}: {choice.reason}; "
          f"{time.perf_counter() - t0:.2f} s; {choice.seconds})")
    auto_dtype = getattr(torch, choice.value)

    def batch(r: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = windows[r * args.batch_size : (r + 1) * args.batch_size]
        return ids, sample_positions(cfg, r, ids.shape[0])

    cases = {"forward": lambda ids, pos: forward_with_hooks(model, ids, None, [], with_logits=True)}
    for k in ks:
        layers = list(range(0, n_tr, max(1, n_tr // k)))[:k]
        cases[f"step, {k} layers"] = (lambda L: lambda ids, pos: lens_loss_step(
            model, tr, ids, pos, unembed, torch.bfloat16, layers=L))(layers)
    cases[f"step, {n_tr} layers, fp32"] = lambda ids, pos: lens_loss_step(
        model, tr, ids, pos, unembed, torch.float32)
    if not args.dtypes_only:
        cases[f"naive, {n_tr} layers"] = lambda ids, pos: naive_step(model, tr, ids, pos)
    cases[f"step, {n_tr} layers, auto ({choice.value})"] = lambda ids, pos: lens_loss_step(
        model, tr, ids, pos, unembed, auto_dtype)

    batch(0)
    cases["forward"](*batch(0))  # warm-up
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.repeats):
        for name, fn in cases.items():
            ids, pos = batch(r + 1)
            tr.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            fn(ids, pos)
            times[name].append(time.perf_counter() - t0)
    tokens = args.batch_size * cfg.seq_len
    base = statistics.median(times["forward"])
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        rows.append({"case": name, "median_s": med, "x_forward": med / base,
                     "tokens_per_s": tokens / med,
                     "positions_per_s": args.batch_size * cfg.positions_per_window / med})
    print("| case | median s | × forward | tokens/s | loss positions/s |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['case']} | {row['median_s']:.2f} | {row['x_forward']:.2f} | "
              f"{row['tokens_per_s']:.0f} | {row['positions_per_s']:.0f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "threads": torch.get_num_threads(),
                                          "choice": choice.to_dict(),
                                          "load_average": os.getloadavg(), "rows": rows},
                                         indent=2))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
