"""Benchmark: exact patching of every head, batched vs the naive loop, and AtP vs exact.

    .venv/bin/python bench/patching.py [--pairs 100] [--naive-pairs 2] [--threads 1]
    .venv/bin/python bench/patching.py --paths --pairs 20 --repeats 3   # issue 30

* **batched**: ``exact_patch`` over all 30 × 9 heads for ``--pairs`` IOI pairs, rows of
  many (pair, head) patches per forward (``--batch-size``), stopping after the final norm;
* **naive**: one full forward call per head per pair, a TransformerLens-style hook
  replacing that head's ``hook_z`` with the clean value, logits for every position
  (what a hand-written patching loop does). Timed on ``--naive-pairs`` pairs and
  compared per patched run, since the full loop over 100 pairs would take hours here;
* **AtP** and **AtP*** over the same pairs and heads.

All in one process, so the ratios share the machine's state. Results go to
``bench/results/patching.json``.

``--paths``: only ``exact_patch`` and head AtP (issue 30). Exact patching three ways:
each chunk run from its first patched block on the direct HF pass (the default), the
same chunks as whole direct passes (``reuse_prefix=False``), and the same chunks whole
through the bridge (``INTERP_FORWARD_PATH=bridge``); AtP on the direct pass and through
the bridge. Interleaved, ``--repeats`` repeats, medians; every variant's results must be
equal to the bit (asserted). Results go to ``bench/results/patching_paths.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.circuits import (  # noqa: E402
    atp,
    atp_star,
    components,
    exact_patch,
    load_task,
    pair_lds,
    tokenize_task,
)
from interp.circuits.agreement import spearman  # noqa: E402


def naive_heads(model, tt, n_pairs: int) -> tuple[torch.Tensor, float]:
    """One forward per (pair, head): the clean head output written in by a hook."""
    n_layers, n_heads = model.n_layers, int(model.bridge.cfg.n_heads)
    out = torch.empty(n_pairs, n_layers * n_heads)
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(n_pairs):
            ids_c, ids_x = tt.clean_ids[i:i + 1], tt.corrupted_ids[i:i + 1]
            mask = tt.attention_mask[i:i + 1].long()
            cache: dict[str, torch.Tensor] = {}

            def keep(t, hook, cache=cache):
                cache[hook.name] = t.detach()
                return t

            names = [f"blocks.{layer}.attn.hook_z" for layer in range(n_layers)]
            with model.bridge.hooks(fwd_hooks=[(n, keep) for n in names]):
                model.bridge(ids_c, attention_mask=mask, return_type="logits")
            clean = [cache[k] for k in sorted(cache, key=lambda k: int(k.split(".")[1]))]
            for layer in range(n_layers):
                for h in range(n_heads):
                    def patch(t, hook, layer=layer, h=h, clean=clean):
                        t = t.clone()
                        t[:, :, h] = clean[layer][:, :, h]
                        return t

                    with model.bridge.hooks(fwd_hooks=[(names[layer], patch)]):
                        logits = model.bridge(ids_x, attention_mask=mask, return_type="logits")
                    ld = logits[0, -1, tt.answer[i]] - logits[0, -1, tt.wrong[i]]
                    out[i, layer * n_heads + h] = float(ld)
    return out, time.perf_counter() - t0


def compare_paths(model, tt, comps, batch_size: int, repeats: int, out: str) -> None:
    """exact_patch and AtP of every head: the variants interleaved, medians.

    exact: ``prefix`` (the default: each chunk from its first patched block, direct path),
    ``whole`` (``reuse_prefix=False``: the same chunks as whole direct passes) and
    ``bridge`` (the same chunks whole, through the bridge); AtP: direct and bridge. The
    results of every variant must be equal to the bit (asserted).
    """
    import statistics

    from interp.models.forward import PATH_ENV

    def once(variant: str, what: str) -> tuple[float, torch.Tensor]:
        if variant == "bridge":
            os.environ[PATH_ENV] = "bridge"
        else:
            os.environ.pop(PATH_ENV, None)
        try:
            t0 = time.perf_counter()
            if what == "exact":
                r = exact_patch(model, tt, "heads", comps, batch_size=batch_size,
                                reuse_prefix=variant == "prefix", progress=False)
            else:
                r = atp(model, tt, "heads", comps, batch_size=16, progress=False)
            return time.perf_counter() - t0, r
        finally:
            os.environ.pop(PATH_ENV, None)

    res: dict[str, object] = {"pairs": len(tt), "components": len(comps),
                              "patched_runs": len(tt) * len(comps), "repeats": repeats,
                              "batch_size": batch_size, "threads": torch.get_num_threads(),
                              "load_average_before": os.getloadavg()}
    plans = {"exact": ("prefix", "whole", "bridge"), "atp": ("direct", "bridge")}
    for what, variants in plans.items():
        times: dict[str, list[float]] = {v: [] for v in variants}
        outs: dict[str, torch.Tensor] = {}
        for i in range(repeats):
            order = variants[i % len(variants):] + variants[:i % len(variants)]
            for name in order:
                sec, r = once(name, what)
                times[name].append(sec)
                outs[name] = r
        first = outs[variants[0]]
        assert all(torch.equal(first, o) for o in outs.values()), f"{what}: variants differ"
        med = {k: statistics.median(v) for k, v in times.items()}
        ratios = {f"{k}_over_{variants[0]}": med[k] / med[variants[0]] for k in variants[1:]}
        res[what] = {"median_s": med, "all_s": times, **ratios, "bit_equal": True}
        print(f"{what}: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items())
              + "; " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()) + " (bit-equal)")
    res["load_average_after"] = os.getloadavg()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(res, indent=1) + "\n")
    print(f"load average after: {res['load_average_after']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--task", default="ioi")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--naive-pairs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--paths", action="store_true", help="direct vs bridge path only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "patching.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    model = interp.load(args.model)
    tt = tokenize_task(model, load_task(args.task, args.pairs))
    n_heads = int(model.bridge.cfg.n_heads)
    layers = list(range(model.n_layers))
    comps = components("heads", layers, n_heads, len(tt.positions), False)
    clean, corr = pair_lds(model, tt, args.batch_size)  # also warms up
    if args.paths:
        compare_paths(model, tt, comps, args.batch_size, args.repeats,
                      str(Path(args.out).with_name("patching_paths.json")))
        return
    gap = (clean - corr)[:, None]

    naive, t_naive = naive_heads(model, tt, args.naive_pairs)
    t0 = time.perf_counter()
    raw = exact_patch(model, tt, "heads", comps, batch_size=args.batch_size, progress=False)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = atp(model, tt, "heads", comps, batch_size=16, progress=False)
    t_atp = time.perf_counter() - t0
    t0 = time.perf_counter()
    est_star = atp_star(model, tt, comps, batch_size=16, progress=False)
    t_star = time.perf_counter() - t0

    k = args.naive_pairs
    agree = float((naive - raw[:k]).abs().max())
    exact_mean = ((raw - corr[:, None]) / gap).mean(0).numpy()
    runs = len(tt) * len(comps)
    per_run_batched = t_exact / runs
    per_run_naive = t_naive / (k * len(comps))
    res = {
        "pairs": len(tt), "components": len(comps), "patched_runs": runs,
        "batch_size": args.batch_size, "threads": torch.get_num_threads(),
        "seconds_exact_batched": t_exact,
        "seconds_naive_measured": t_naive, "naive_pairs": k,
        "seconds_naive_extrapolated": per_run_naive * runs,
        "speedup_batched_vs_naive": per_run_naive / per_run_batched,
        "max_abs_ld_difference_naive_vs_batched": agree,
        "seconds_atp": t_atp, "seconds_atp_star": t_star,
        "exact_over_atp": t_exact / t_atp, "exact_over_atp_star": t_exact / t_star,
        "spearman_atp": spearman(exact_mean, (est / gap).mean(0).numpy()),
        "spearman_atp_star": spearman(exact_mean, (est_star / gap).mean(0).numpy()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    for key, value in res.items():
        print(f"{key:>42}: {value:.4g}" if isinstance(value, float) else f"{key:>42}: {value}")


if __name__ == "__main__":
    main()
