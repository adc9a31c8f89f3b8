"""Benchmark: ``interp sae eval``'s spliced CE, prefix once vs four full forwards per window.

    .venv/bin/python bench/sae_eval.py [--tokens 16384] [--layer 6] [--d-sae 4608]

Both cases evaluate the same SAE on the same held-out windows of the embedded model, in
the same process, interleaved (the machine is shared):

* ``before``: the algorithm ``interp sae eval`` used until this change, kept here as the
  reference: a reconstruction pass stopped at the hook, then per batch four full bridge
  forwards (clean, SAE, zero and mean ablation spliced at positions 1…), each scored with
  two log-softmaxes over the vocabulary;
* ``after``: :func:`saes.metrics.evaluate_sae` with the baseline cache off (a first,
  cold evaluation): the hook activations kept from the reconstruction pass, the four
  variants run from the hook on (the plain HF model where its path is verified) and
  scored with one log-sum-exp each;
* ``warm``: the same with the zero- and mean-ablation passes read from the baseline
  cache (:mod:`saes.baselines`, filled once before the timing, in a temporary
  ``INTERP_CACHE``): every later evaluation at that layer on that text, e.g. the
  frontier's or a sweep's, runs two suffixes per batch instead of four.

The SAE is freshly initialised (the cost does not depend on what it learned); the
metrics of the three cases must agree to 1e-4 relative, which the script checks. Writes
``bench/results/sae_eval.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import numpy as np  # noqa: E402
import torch  # noqa: E402

RESULTS = Path(__file__).parent / "results"


@torch.no_grad()
def before(model, sae, windows, n_rec: int, n_ce: int,  # noqa: ANN001
           batch: int) -> dict[str, float]:
    """The previous algorithm (reconstruction pass over the first ``n_rec`` windows for the
    mean, then 4 full forwards on the first ``n_ce`` windows)."""
    from interp.activations.capture import forward_with_hooks
    from saes.splice import logits_with, mean_replacement, sae_replacement, zero_replacement

    hook = sae.cfg.hook_point
    total, n = torch.zeros(model.d_model, dtype=torch.float64), 0
    for i in range(0, n_rec, batch):
        acts, _ = forward_with_hooks(model, windows[i:min(i + batch, n_rec)], None, [hook])
        x = acts[hook][:, 1:].float()
        sae.encode(x)
        total += x.double().sum((0, 1))
        n += x.shape[0] * x.shape[1]
    mean = (total / n).float()
    variants = {"sae": sae_replacement(sae), "zero": zero_replacement(),
                "mean": mean_replacement(mean)}
    sums = {k: 0.0 for k in ("clean", "sae", "zero", "mean", "kl_sae", "kl_zero", "kl_mean")}
    count = 0
    for i in range(0, n_ce, batch):
        ids = windows[i:min(i + batch, n_ce)]
        targets = ids[:, 2:]
        clean_lp = torch.log_softmax(logits_with(model, ids, hook, None)[:, 1:-1], -1)
        sums["clean"] += float(-clean_lp.gather(-1, targets.unsqueeze(-1)).sum())
        for name, fn in variants.items():
            lp = torch.log_softmax(logits_with(model, ids, hook, fn)[:, 1:-1], -1)
            sums[name] += float(-lp.gather(-1, targets.unsqueeze(-1)).sum())
            sums[f"kl_{name}"] += float((clean_lp.exp() * (clean_lp - lp)).sum())
        count += targets.numel()
    return {"ce_clean": sums["clean"] / count, "ce_sae": sums["sae"] / count,
            "ce_zero_ablation": sums["zero"] / count, "ce_mean_ablation": sums["mean"] / count,
            "kl_sae": sums["kl_sae"] / count, "kl_zero_ablation": sums["kl_zero"] / count,
            "kl_mean_ablation": sums["kl_mean"] / count}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--tokens", type=int, default=16_384)
    ap.add_argument("--layer", type=int, default=6)
    ap.add_argument("--d-sae", type=int, default=4608)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    import interp
    from interp.data.corpus import load_texts
    from interp.data.windows import pack_windows
    from saes.metrics import SAEEvalConfig, evaluate_sae
    from saes.sae import SAEConfig, SparseAutoencoder

    torch.manual_seed(0)
    model = interp.load()
    cfg = SAEEvalConfig(tokens=args.tokens, ce_tokens=args.tokens, batch_size=args.batch_size,
                        n_bootstrap=10)
    sae = SparseAutoencoder(SAEConfig(d_in=model.d_model, d_sae=args.d_sae,
                                      hook_point=model.resid_hook(args.layer),
                                      layer=args.layer, model_id=model.model_id))
    sae.init_weights(torch.Generator().manual_seed(0), 0.1)
    sae.eval()
    docs = load_texts("heldout")
    windows = pack_windows(model, docs, seq_len=cfg.seq_len,
                           n_windows=max(cfg.n_windows, cfg.n_ce_windows), seed=cfg.seed)
    os.environ["INTERP_CACHE"] = tempfile.mkdtemp(prefix="sae-eval-bench-")
    cold_cfg = replace(cfg, cache_baselines=False)
    evaluate_sae(model, sae, docs, replace(cfg, n_bootstrap=1), progress=False)  # fill
    times: dict[str, list[float]] = {"before": [], "after": [], "warm": []}
    out: dict[str, dict[str, float]] = {}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out["before"] = before(model, sae, windows, cfg.n_windows, cfg.n_ce_windows,
                               args.batch_size)
        times["before"].append(time.perf_counter() - t0)
        for name, c in (("after", cold_cfg), ("warm", cfg)):
            t0 = time.perf_counter()
            res = evaluate_sae(model, sae, docs, c, progress=False)
            times[name].append(time.perf_counter() - t0)
            assert res.baselines_cached is (name == "warm")
            out[name] = {k: float(getattr(res, k)) for k in out["before"]}
    for name in ("after", "warm"):
        for key, value in out["before"].items():
            got = out[name][key]
            assert abs(got - value) <= 1e-4 * max(1.0, abs(value)), (name, key, value, got)
    b, a, w = (float(np.median(times[k])) for k in ("before", "after", "warm"))
    summary = {"tokens": args.tokens, "layer": args.layer, "d_sae": args.d_sae,
               "windows": int(windows.shape[0]), "before_s": b, "after_s": a, "warm_s": w,
               "ratio_after_over_before": a / b, "ratio_warm_over_before": w / b,
               "times": times, "metrics": out, "threads": torch.get_num_threads()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sae_eval.json").write_text(json.dumps(summary, indent=2))
    print(f"sae eval, {args.tokens} tokens at layer {args.layer} ({windows.shape[0]} windows): "
          f"before {b:.1f} s, after (cold) {a:.1f} s, warm (baselines cached) {w:.1f} s; "
          f"after/before {a / b:.2f}, warm/before {w / b:.2f}")


if __name__ == "__main__":
    main()
