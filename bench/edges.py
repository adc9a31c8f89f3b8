"""Benchmark: edge attribution's cost, and exact path patching against a one-edge loop.

    .venv/bin/python bench/edges.py [--task ioi] [--pairs 8] [--edges 96] [--steps 20]
                                    [--repeats 3]

* **every edge, each estimator alone**: ``edge_attribution`` on one batch of ``--pairs``
  pairs for ``eap-corrupted`` (one step), ``eap-clean`` (the gradient at the clean run)
  and ``eap-ig`` at ``--steps`` (the default run's), in forward-equivalents: its wall time
  over one unpatched forward pass of the same batch, timed in the same run;
* **exact path patching**: ``--edges`` edges (a random sample stratified as ``run_edges``
  draws it, seeded) on ``--pairs`` pairs, batched (``exact_edges``: a pair's edges sorted
  by receiver layer, chunks sharing one prefix pass) against a one-edge-at-a-time loop
  (the same function with one edge per call and batch 1: one whole base pass per edge);
  interleaved, ``--repeats`` repeats, medians; both must agree (asserted, 1e-4).

Results go to ``bench/results/edges.json``; give the load average with the figures.
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
from interp.causal.edge_effects import edge_attribution, exact_edges, graph_of  # noqa: E402
from interp.causal.edges import sample_edges  # noqa: E402
from interp.causal.results import EdgeConfig  # noqa: E402
from interp.circuits import load_task, tokenize_task  # noqa: E402
from interp.circuits.patching import ld_direction, run_ld  # noqa: E402


def one_at_a_time(model, tt, edges):
    """The reference loop: every (pair, edge) its own batch-1 call, run whole."""
    out = torch.empty(len(tt), len(edges))
    for j, e in enumerate(edges.tolist()):
        out[:, j] = exact_edges(model, tt, torch.tensor([e]), batch_size=1,
                                reuse_prefix=False, progress=False)[:, 0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="ioi")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--edges", type=int, default=96)
    ap.add_argument("--steps", type=int, default=EdgeConfig.ig_steps)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    model = interp.load("smollm2-135m-instruct")
    tt = tokenize_task(model, load_task(args.task, args.pairs))
    g = graph_of(model)
    d = ld_direction(model, tt.answer, tt.wrong)

    def fwd() -> None:
        with torch.no_grad():
            run_ld(model, tt.clean_ids, tt.attention_mask, d)

    edges, _ = sample_edges(g, [], args.edges, 0, seed=0)
    times: dict[str, list[float]] = {"forward": [], "eap-corrupted": [], "eap-clean": [],
                                     "eap-ig": [], "batched": [], "loop": []}
    fwd()
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        fwd()
        times["forward"].append(time.perf_counter() - t0)
        for name, steps in (("eap-corrupted", 1), ("eap-clean", 1), ("eap-ig", args.steps)):
            t0 = time.perf_counter()
            edge_attribution(model, tt, steps=steps, methods=(name,), batch_size=args.pairs,
                             progress=False)
            times[name].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        a = exact_edges(model, tt, edges, batch_size=32, progress=False)
        times["batched"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = one_at_a_time(model, tt, edges)
        times["loop"].append(time.perf_counter() - t0)
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4), (a - b).abs().max()
    med = {k: statistics.median(v) for k, v in times.items()}
    res = {
        "task": args.task, "pairs": args.pairs, "edges_sampled": args.edges,
        "ig_steps": args.steps, "n_edges": g.n_edges, "seconds": med,
        "eap_corrupted_forward_equivalents": med["eap-corrupted"] / med["forward"],
        "eap_clean_forward_equivalents": med["eap-clean"] / med["forward"],
        "eap_ig_forward_equivalents": med["eap-ig"] / med["forward"],
        "exact_speedup": med["loop"] / med["batched"],
        "load_average": os.getloadavg(), "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    out = Path(__file__).parent / "results" / "edges.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
