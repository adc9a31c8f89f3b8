"""Benchmark: how eap-ig's edge scores converge with its integration steps (picks the default).

    .venv/bin/python bench/edges_ig_steps.py [--task ioi] [--pairs 24]
                                             [--steps 1,2,5,10,20,30,60]

On SmolLM2 (70,651 edges), every edge of every pair is scored by eap-ig at each step count
m: the mean over k = 0 … m−1 of the score with the receivers' gradient taken at the input
e_corr + (k/m)(e_clean − e_corr), as ``hannamw/EAP-IG`` (m = 1 is eap-corrupted). Every m
divides the largest (the reference, R), so each m's points are among R's: the R gradient
passes per batch run once (the library's own passes, ``interp.causal.edge_effects``), each point's
scores are kept, and m's scores are the mean of its points' (the score is linear in the
gradient). The first batch is checked against ``edge_attribution`` at m = 2. Each m is
compared with R:

* **Spearman** of the mean scores over pairs, on every edge and on the reference's top
  1,000 edges by |score| (the ones a circuit is made of);
* **relative L2**: ``‖s_m − s_R‖ / ‖s_R‖`` over every (pair, edge) score;
* **top-200 overlap**: the share of the reference's top 200 edges (by |mean score|) among
  m's top 200 (the circuit the run would keep at its default size);
* **completeness**: integrated gradients' sum rule, per pair: the scores of every edge
  leaving the input sum to the clean − corrupted gap as m grows (``|Σ − gap| / |gap|``,
  mean and largest over pairs); it needs no reference.

Cost: m gradient passes (a forward and a backward) per batch, plus one clean pass; the
seconds per gradient pass are printed. Results go to ``bench/results/edges_ig_steps.json``;
a markdown table is printed. Give the load average with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import interp  # noqa: E402
from interp.causal.edge_effects import (  # noqa: E402
    _caps,
    _fresh,
    _group_scores,
    _prefix_cache,
    _receiver_grads,
    edge_attribution,
    first_difference,
    graph_of,
    graph_weights,
    sender_outputs,
)
from interp.circuits import load_task, pair_lds, tokenize_task  # noqa: E402
from interp.circuits.patching import ld_direction, run_ld  # noqa: E402


def point_scores(model, tt, fractions, batch_size):
    """``[points, pairs, edges]``: the score with the gradient at e_corr + f(e_clean − e_corr)
    for each fraction f (denoising: Δ = a(clean) − a(corrupted)), built from the passes
    ``edge_attribution`` runs (the same private steps, in the same order)."""
    graph = graph_of(model)
    w = graph_weights(model, graph)
    names = _caps(graph.n_layers)
    out = torch.empty(len(fractions), len(tt), graph.n_edges)
    for s in range(0, len(tt), batch_size):
        sl = slice(s, s + batch_size)
        clean_ids, corr_ids = tt.clean_ids[sl], tt.corrupted_ids[sl]
        mask = tt.attention_mask[sl]
        d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
        cut = min(first_difference(clean_ids, corr_ids), clean_ids.shape[1] - 1)
        prefix = _prefix_cache(model, corr_ids[:, :cut], mask[:, :cut]) if cut > 0 else None
        cut = cut if prefix is not None else 0
        with torch.no_grad():
            _, clean = run_ld(model, clean_ids[:, cut:], mask, d, capture=names,
                              cache=_fresh(prefix))
        grads0, corr = _receiver_grads(model, graph, w, corr_ids[:, cut:], mask, d, None,
                                       names, prefix)
        diff = sender_outputs(graph, w, clean) - sender_outputs(graph, w, corr)
        diff = diff * mask[:, cut:, None, None].to(diff.dtype)
        e0, e1 = corr["blocks.0.hook_resid_pre"], clean["blocks.0.hook_resid_pre"]
        for i, f in enumerate(fractions):
            grads = grads0 if f == 0 else _receiver_grads(
                model, graph, w, corr_ids[:, cut:], mask, d, e0 + f * (e1 - e0), (),
                prefix)[0]
            out[i, sl] = _group_scores(graph, diff, grads).cpu()
        print(f"batch {s // batch_size + 1}: done", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="ioi")
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--steps", default="1,2,5,10,20,30,60")
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    steps = sorted({int(x) for x in args.steps.split(",")})
    load_before = os.getloadavg()
    model = interp.load("smollm2-135m-instruct")
    tt = tokenize_task(model, load_task(args.task, args.pairs))
    g = graph_of(model)
    snd, _ = g.edge_index
    clean, corr = pair_lds(model, tt, args.batch_size)
    gap = (clean - corr).double()
    big = steps[-1]
    if any(big % m for m in steps):
        raise SystemExit(f"every step count must divide the largest ({big})")
    t0 = time.perf_counter()
    points = point_scores(model, tt, [k / big for k in range(big)], args.batch_size)
    spent = time.perf_counter() - t0
    per_pass = spent / (-(-len(tt) // args.batch_size) * (big + 1))
    scores = {m: points[[k * (big // m) for k in range(m)]].mean(0) for m in steps}
    first = tt.subset(list(range(min(args.batch_size, len(tt)))))
    check = edge_attribution(model, first, steps=2, methods=("eap-ig",),
                             batch_size=args.batch_size, progress=False)["eap-ig"]
    two = points[[0, big // 2], :len(first)].mean(0)
    err = float((check - two).abs().max() / check.abs().max())
    assert err < 1e-4, err
    ref = scores[steps[-1]].double()
    ref_mean = ref.mean(0)
    ref_order = torch.argsort(ref_mean.abs(), descending=True)
    top1000, top200 = ref_order[:1000], set(ref_order[:200].tolist())
    rows = []
    for m in steps:
        s = scores[m].double()
        mean = s.mean(0)
        complete = ((s[:, snd == 0].sum(1) - gap).abs() / gap.abs()).numpy()
        order = torch.argsort(mean.abs(), descending=True)
        rows.append({
            "steps": m,
            "spearman_all": float(spearmanr(mean.numpy(), ref_mean.numpy()).statistic),
            "spearman_top1000": float(spearmanr(mean[top1000].numpy(),
                                                ref_mean[top1000].numpy()).statistic),
            "relative_l2": float((s - ref).norm() / ref.norm()),
            "top200_overlap": len(top200 & set(order[:200].tolist())) / 200,
            "completeness_mean": float(np.mean(complete)),
            "completeness_max": float(np.max(complete)),
        })
    res = {"task": args.task, "pairs": len(tt), "n_edges": g.n_edges, "reference_steps":
           steps[-1], "direction": "denoise", "gap_mean": float(gap.mean()), "rows": rows,
           "seconds_per_gradient_pass": per_pass, "check_vs_edge_attribution": err,
           "load_average_before": load_before, "load_average_after": os.getloadavg(),
           "torch": torch.__version__, "threads": torch.get_num_threads()}
    out = Path(__file__).parent / "results" / "edges_ig_steps.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print("| m | Spearman, all edges | Spearman, top 1,000 | relative L2 | top-200 overlap "
          "| completeness, mean (max) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['steps']} | {r['spearman_all']:.4f} | {r['spearman_top1000']:.4f} | "
              f"{r['relative_l2']:.3f} | {r['top200_overlap']:.2f} | "
              f"{r['completeness_mean']:.3f} ({r['completeness_max']:.3f}) |")
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
