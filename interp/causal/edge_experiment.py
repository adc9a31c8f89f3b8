"""``run_edges``: edge attribution on a task, checked against exact path patching.

Reads and tokenizes the pairs and leaves out those whose clean − corrupted gap is too
small (as ``interp patch`` does); scores every edge by EAP and EAP-IG; patches a sample
of edges exactly (the ``top`` edges by either approximation, plus a random sample
stratified by receiver layer, seeded); compares each approximation with exact patching
on the sample (Spearman and recall@k, bootstrap CIs over pairs, and Spearman on the
random part alone, where the top edges cannot carry it); draws the faithfulness curves
(circuits of the top-n edges of each method, and of ``random_draws`` random edge sets of
each size); saves the pruned circuit of the best method; groups the top sampled edges'
exact effects by the task's template (or a named column).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.causal.edges import circuit_lds, edge_attribution, exact_edges, graph_of
from interp.causal.graph import Graph
from interp.causal.results import (
    Circuit,
    CircuitEdge,
    EdgeAgreement,
    EdgeConfig,
    EdgeResult,
    FaithCurve,
    SampledEdge,
)
from interp.circuits.agreement import recall_at_k, spearman
from interp.circuits.experiment import group_column
from interp.circuits.groups import group_effects
from interp.circuits.patching import ld_direction, pair_lds, run_ld
from interp.circuits.results import TaskSummary
from interp.circuits.tasks import load_task, tokenize_task
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import run_manifest
from interp.stats.intervals import bootstrap_ci, mean_ci

#: Edge counts on the faithfulness curve (those up to ``max_edges``, and ``max_edges``).
CURVE = (1, 3, 10, 30, 100, 200, 300, 500, 1000, 3000, 10000)


def check_sample(graph: Graph, n: int) -> None:
    """A sample of ``n`` edges fits the graph (a one-line error otherwise)."""
    if n > graph.n_edges:
        raise InterpError(f"--sample {n} is larger than the model's {graph.n_edges} edges")


def sample_edges(
    graph: Graph, scores: list[Tensor], n: int, top: int, seed: int
) -> tuple[Tensor, list[str]]:
    """``n`` edge indices: the ``top`` with the largest ``|score|`` under any of ``scores``
    (each scaled by its largest), then a random sample of the rest stratified by receiver
    layer (proportional allocation, largest remainders); and each one's origin."""
    check_sample(graph, n)
    chosen: list[int] = []
    if scores and top:
        rel = torch.stack([s.abs() / s.abs().max().clamp_min(1e-12) for s in scores]).amax(0)
        chosen = torch.argsort(rel, descending=True, stable=True)[:top].tolist()
    origin = ["top"] * len(chosen)
    rest = n - len(chosen)
    _, rcv = graph.edge_index
    layer = graph.receiver_layer()[rcv]
    free = torch.ones(graph.n_edges, dtype=torch.bool)
    free[chosen] = False
    strata = [torch.nonzero(free & (layer == v)).squeeze(1) for v in range(graph.n_layers + 1)]
    sizes = np.array([len(s) for s in strata], dtype=np.float64)
    want = sizes / sizes.sum() * rest
    take = np.floor(want).astype(int)
    for i in np.argsort(-(want - take), kind="stable")[: rest - int(take.sum())]:
        take[i] += 1
    g = torch.Generator().manual_seed(seed)
    for s, k in zip(strata, take, strict=True):
        if k:
            pick = s[torch.randperm(len(s), generator=g)[:k]]
            chosen += pick.tolist()
            origin += ["random"] * int(k)
    return torch.tensor(chosen, dtype=torch.long), origin


def agreement(
    method: str, approx: Float[Tensor, "pairs k"], exact: Float[Tensor, "pairs k"],
    origin: list[str], k: int, n_boot: int, seed: int,
) -> EdgeAgreement:
    """Spearman and recall@k of ``approx`` against ``exact`` (per-pair effects on the
    sample), with percentile-bootstrap CIs over pairs."""
    a, e = approx.double().numpy(), exact.double().numpy()
    k = min(k, a.shape[1])
    rho = spearman(a.mean(0), e.mean(0))
    rec = recall_at_k(e.mean(0), a.mean(0), 0.0, k)
    rho_ci = bootstrap_ci(lambda i: spearman(a[i].mean(0), e[i].mean(0)), a.shape[0],
                          n_resamples=n_boot, seed=seed)
    rec_ci = bootstrap_ci(lambda i: recall_at_k(e[i].mean(0), a[i].mean(0), 0.0, k),
                          a.shape[0], n_resamples=n_boot, seed=seed)
    rand = np.array([o == "random" for o in origin])
    rho_r = spearman(a[:, rand].mean(0), e[:, rand].mean(0)) if rand.sum() > 2 else math.nan
    return EdgeAgreement(method, a.shape[1], rho, rho_ci, k, rec, rec_ci, rho_r)


def prune(graph: Graph, edges: list[int]) -> list[int]:
    """The edges left once every edge whose sender is not fed by another kept edge (or
    is the input), or whose receiver's node feeds no kept edge (or is the logits), is
    dropped, repeatedly."""
    snd, rcv = graph.edge_index
    keep = list(edges)
    while True:
        fed = {"input"}
        feeds = {"logits"}
        for e in keep:
            fed.update(graph.receiver_node(int(rcv[e])))
            feeds.add(graph.senders[int(snd[e])])
        new = [e for e in keep if graph.senders[int(snd[e])] in fed
               and any(n in feeds for n in graph.receiver_node(int(rcv[e])))]
        if len(new) == len(keep):
            return new
        keep = new


def _faith(lds: Float[Tensor, "pairs circuits"], clean: Tensor, corr: Tensor) -> Tensor:
    return (lds - corr[:, None]) / (clean - corr)[:, None]


def run_edges(model: Model, config: EdgeConfig | None = None, *, progress: bool | None = None,
              **settings: Any) -> EdgeResult:
    """Run one edge-attribution experiment (see the module docstring)."""
    config = EdgeConfig.resolve(config, settings)
    task = load_task(config.task, config.limit)
    column = group_column(task, config.group_by)
    tt_all = tokenize_task(model, task)
    graph = graph_of(model)
    check_sample(graph, config.sample)  # before any pass
    bs = config.batch_size
    clean_all, corr_all = pair_lds(model, tt_all, bs)
    gap = clean_all - corr_all
    keep = [i for i in range(len(tt_all)) if abs(float(gap[i])) >= config.min_gap]
    if not keep:
        raise InterpError(f"every pair's clean − corrupted logit difference gap is below "
                          f"{config.min_gap}; nothing to normalise")
    tt = tt_all.subset(keep)
    clean, corr = clean_all[keep].cpu(), corr_all[keep].cpu()
    denoise = config.direction == "denoise"
    base_ld = corr if denoise else clean
    seconds: dict[str, float] = {}
    scores: dict[str, Tensor] = {}

    with torch.no_grad():  # one plain pass of a batch: the unit of forward-equivalents
        sl = slice(0, bs)
        d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
        run_ld(model, tt.clean_ids[sl], tt.attention_mask[sl], d)
        t0 = time.perf_counter()
        run_ld(model, tt.clean_ids[sl], tt.attention_mask[sl], d)
        fwd = time.perf_counter() - t0
    if config.method in ("eap", "eap-ig", "all"):
        steps = 1 if config.method == "eap" else config.ig_steps
        t0 = time.perf_counter()
        eap, ig = edge_attribution(model, tt, steps=steps, direction=config.direction,
                                   batch_size=bs, progress=progress)
        spent = time.perf_counter() - t0
        scores["eap"] = eap
        if config.method == "eap":
            seconds["eap"] = spent
        else:
            scores["eap-ig"] = ig
            seconds["eap-ig"] = spent
    means = {m: s.mean(0) for m, s in scores.items()}

    def approx(e: int) -> tuple[float | None, float | None]:
        """Edge ``e``'s mean EAP and EAP-IG scores (None for a method not run)."""
        eap = float(means["eap"][e]) if "eap" in means else None
        return eap, float(means["eap-ig"][e]) if "eap-ig" in means else None

    sample, origin = sample_edges(graph, list(means.values()), config.sample,
                                  min(config.top, config.sample) if means else 0, config.seed)
    sampled: list[SampledEdge] = []
    agree: list[EdgeAgreement] = []
    exact_eff = None
    if config.method in ("exact", "all"):
        t0 = time.perf_counter()
        raw = exact_edges(model, tt, sample, direction=config.direction, batch_size=4 * bs,
                          progress=progress)
        seconds["exact"] = time.perf_counter() - t0
        exact_eff = raw - base_ld[:, None]
        scores["exact"] = exact_eff
        scores["exact_edges"] = sample  # the edge index of each of exact's columns
        for m, s in scores.items():
            if m in ("eap", "eap-ig"):
                agree.append(agreement(m, s[:, sample], exact_eff, origin, config.recall_k,
                                       config.n_boot, config.seed))
        em = exact_eff.mean(0)
        for j, e in enumerate(sample.tolist()):
            sampled.append(SampledEdge(graph.edge_name(e), origin[j], float(em[j]), *approx(e)))

    # faithfulness curves and the circuit
    curves: list[FaithCurve] = []
    circuit = None
    ranked = {m: torch.argsort(v.abs(), descending=True, stable=True)
              for m, v in means.items()}
    if ranked:
        counts = sorted({c for c in CURVE if c < min(config.max_edges, graph.n_edges)}
                        | {min(config.max_edges, graph.n_edges), config.circuit_edges})
        counts = [c for c in counts if c <= graph.n_edges]
        sets, labels = [], []
        for m, order in ranked.items():
            for c in counts:
                mask = torch.zeros(graph.n_edges, dtype=torch.bool)
                mask[order[:c]] = True
                sets.append(mask)
                labels.append((m, c))
        g = torch.Generator().manual_seed(config.seed + 1)
        for c in counts:
            for _ in range(config.random_draws):
                mask = torch.zeros(graph.n_edges, dtype=torch.bool)
                mask[torch.randperm(graph.n_edges, generator=g)[:c]] = True
                sets.append(mask)
                labels.append(("random", c))
        best = "eap-ig" if "eap-ig" in ranked else "eap"
        pruned = prune(graph, ranked[best][:config.circuit_edges].tolist())
        pmask = torch.zeros(graph.n_edges, dtype=torch.bool)
        pmask[pruned] = True
        sets.append(pmask)
        t0 = time.perf_counter()
        faith = _faith(circuit_lds(model, tt, sets, batch_size=2 * bs, progress=progress),
                       clean, corr)
        seconds["circuits"] = time.perf_counter() - t0
        for m in [*ranked, "random"]:
            n, mean, ci = [], [], []
            for c in counts:
                cols = [i for i, lab in enumerate(labels) if lab == (m, c)]
                mu, lo, hi = mean_ci(faith[:, cols].mean(1).double().numpy())
                n.append(c)
                mean.append(mu)
                ci.append([lo, hi])
            curves.append(FaithCurve(m, n, mean, ci))
        mu, lo, hi = mean_ci(faith[:, -1].double().numpy())
        snd, rcv = graph.edge_index
        circuit = Circuit(best, config.circuit_edges, [
            CircuitEdge(graph.senders[int(snd[e])], graph.receivers[int(rcv[e])],
                        float(means[best][e])) for e in pruned], mu, [lo, hi])

    top_edges = []
    if means:
        lead = "eap-ig" if "eap-ig" in means else "eap"
        for e in ranked[lead][:20].tolist():
            ex = None
            hit = (sample == e).nonzero()
            if exact_eff is not None and len(hit):
                ex = float(exact_eff[:, int(hit[0])].mean())
            top_edges.append(SampledEdge(graph.edge_name(e), "top",
                                         ex if ex is not None else math.nan, *approx(e)))

    summary = TaskSummary(
        name=task.name, source=task.source, sha256=task.sha256, n_read=len(tt_all),
        n_used=len(keep), n_left_out=len(tt_all) - len(keep),
        left_out_reason=f"|clean LD - corrupted LD| < {config.min_gap:g}",
        positions=list(tt.positions), clean_ld=clean.tolist(), corrupted_ld=corr.tolist())
    result = EdgeResult(
        config=config, task=summary, n_edges=graph.n_edges, n_senders=graph.n_senders,
        n_receivers=graph.n_receivers, seconds=seconds, forward_seconds=fwd,
        agreement=agree, faithfulness=curves, circuit=circuit, sample=sampled,
        top_edges=top_edges, model_id=model.model_id, scores=scores,
        manifest=run_manifest(model_id=model.model_id, seed=config.seed,
                              dataset_hash=task.sha256, config=config.to_dict()))
    if column is not None and exact_eff is not None:
        norm = exact_eff / (clean - corr)[:, None]
        labels_g = task.groups(column)
        result.groups = group_effects(
            norm, [s.edge for s in sampled], [labels_g[i] for i in keep], column=column,
            method="exact", baseline=0.0)
        for line in result.groups.warnings():
            result.warn(line)
    for a in agree:
        if a.spearman_ci95[1] < 0.8:
            result.warn(f"{a.method}: Spearman against exact path patching is "
                        f"{a.spearman:.2f}, its interval below 0.8: rank edges by it with care")
    return result
