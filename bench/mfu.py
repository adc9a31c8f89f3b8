"""Benchmark: model FLOPs utilisation of a forward pass, SAE training and tuned-lens training.

    .venv/bin/python bench/mfu.py [--remeasure]

The peak is this machine's, measured in the same run (``interp peak --remeasure``: the
best of five 2048² matmuls per dtype). Each workload runs under the profiler
(:func:`interp.profile`), so the table says where the time that is not peak FLOPs goes:
the share of wall time per operator category in the steady state.

* ``forward``: SmolLM2's forward with logits, batch 8 × 128 tokens, float32, 6 batches;
* ``SAE training``: ``train_sae`` at layer 6, d_sae 4,608, batch 4,096 tokens, 12 steps,
  activations made by the model as it goes (chunks of 64 windows): model forward to
  layer 6 plus the SAE's six matmuls per step (:func:`interp.mfu.sae_step_flops`);
* ``SAE training, cached``: the same steps rerun on its on-disk activation cache
  (no model forward);
* ``tuned-lens training``: ``train_tuned_lens``, batch 4 × 128, 64 positions per window,
  4 steps from the identity (no least-squares init), unembedding in bfloat16.

MFU = counted FLOPs / wall seconds / peak (the peak of each part's dtype). Results go to
``bench/results/mfu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.data.corpus import load_texts  # noqa: E402
from interp.data.windows import pack_windows  # noqa: E402
from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens  # noqa: E402
from interp.mfu import ModelShape, Work, device_peak, forward_flops  # noqa: E402
from interp.profiling.results import ProfileConfig  # noqa: E402
from interp.schema import to_data  # noqa: E402
from saes.train import SAETrainConfig, train_sae  # noqa: E402


def _where(result) -> dict[str, float]:  # noqa: ANN001
    return {k: round(v, 3) for k, v in sorted(result.categories.items(), key=lambda kv: -kv[1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remeasure", action="store_true", help="measure the peak again")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mfu.json"))
    args = ap.parse_args()

    peaks = {d: device_peak("cpu", d, remeasure=args.remeasure) for d in ("float32",
                                                                          "bfloat16")}
    print(f"peak: {peaks['float32'].flops / 1e9:,.0f} GFLOP/s float32, "
          f"{peaks['bfloat16'].flops / 1e9:,.0f} bfloat16 ({peaks['float32'].device}, "
          f"{torch.get_num_threads()} threads)")
    peak = {d: p.flops for d, p in peaks.items()}
    model = interp.load()
    shape = ModelShape.of(model)
    docs = load_texts("train")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-mfu-"))

    # forward pass
    ids = pack_windows(model, docs, seq_len=128, n_windows=8 * 7, seed=0)
    with torch.no_grad():
        model.bridge(ids[:8])  # warm-up
        with interp.profile(tmp / "p-forward", ProfileConfig(skip_steps=1, active_steps=5)) as p:
            t0 = time.perf_counter()
            for i in range(1, 7):
                model.bridge(ids[8 * i: 8 * i + 8])
                interp.profiling.step()
            took = time.perf_counter() - t0
    work = Work({"float32": 6 * forward_flops(shape, 8 * 128, 128)})
    s = work.summary(took, peak, tokens=6 * 8 * 128)
    rows.append({"workload": "forward (batch 8 × 128)", **s, "where": _where(p.result),
                 "verdict": p.result.verdict, "evidence": p.result.evidence})

    # SAE training, the model making activations, then on the cache
    cfg = SAETrainConfig(layer=6, d_sae=4608, tokens=4096 * 12, batch_size=4096,
                         windows_per_chunk=64, checkpoint_every=1000)
    for name, run in (("SAE training (model + SAE)", "a"), ("SAE training, cached", "b")):
        with interp.profile(tmp / f"p-sae-{run}", ProfileConfig(skip_steps=2,
                                                                 active_steps=8)) as p:
            res = train_sae(model, docs, tmp / f"sae-{run}", cfg, cache_dir=tmp / "cache",
                            progress=False)
        rows.append({"workload": name, "tokens_per_s": res.tokens_per_s, "flops": res.flops,
                     "mfu": res.mfu, "peak_flops": res.peak_flops, "where": _where(p.result),
                     "verdict": p.result.verdict, "evidence": p.result.evidence})

    # tuned-lens training
    lcfg = TunedLensTrainConfig(tokens=4 * 128 * 4, batch_size=4, seq_len=128,
                                positions_per_window=64, init="zero", checkpoint_every=1000)
    with interp.profile(tmp / "p-lens", ProfileConfig(skip_steps=1, active_steps=3)) as p:
        res = train_tuned_lens(model, docs, tmp / "lens", lcfg, progress=False)
    rows.append({"workload": "tuned-lens training", "tokens_per_s": res.tokens_per_s,
                 "flops": res.flops, "mfu": res.mfu, "peak_flops": res.peak_flops,
                 "where": _where(p.result), "verdict": p.result.verdict,
                 "evidence": p.result.evidence})

    for r in rows:
        top = ", ".join(f"{k} {v:.0%}" for k, v in list(r["where"].items())[:4])
        print(f"{r['workload']:<28} {r['tokens_per_s']:>9,.0f} tok/s  "
              f"MFU {100 * (r['mfu'] or 0):5.1f}% of {(r['peak_flops'] or 0) / 1e9:,.0f} "
              f"GFLOP/s  | {top}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"peaks": {d: to_data(p) for d, p in peaks.items()},
                               "threads": torch.get_num_threads(), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
