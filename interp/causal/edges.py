"""``run_edges``: edge attribution on a task, checked against exact path patching.

Reads and tokenizes the pairs and leaves out those whose clean − corrupted gap is too
small (as ``interp patch`` does); scores every edge by the gradient estimators
(eap-clean, eap-corrupted, eap-ig: :func:`interp.causal.edge_effects.edge_attribution`); patches
a sample of edges exactly (the ``top`` edges by any estimator, plus a random sample
stratified by receiver layer, seeded).

The test of a circuit is its **faithfulness** (Hanna et al. 2024): the share of the clean −
corrupted gap kept when only the circuit's edges carry clean values. For each estimator
and count n the curves hold its top n edges and its **matched baseline**: n edges drawn
(``random_draws`` times) from its own ranks n+1 … 3n (``EdgeConfig.match_pool``), whose
absolute score comes next, so that the baseline is as plausible as the top set and not zero by
construction; an estimator whose ranking carries nothing at the top (random scores) sits
on it. Beside them: n edges drawn from all 70,651 (the weak baseline, which keeps nothing
on IOI at any n up to 1,000) and the top n sampled edges by exact path patching (a
reference: the largest single-edge effects the sample holds, not an upper bound). Each
estimator is compared with its matched baseline at every n (:class:`FaithVersus`).

The per-edge comparison with exact patching (Spearman and recall@k, bootstrap CIs over
pairs, and Spearman on the random part alone) is a **local** check: each edge patched
alone, where the estimator whose gradient is taken at the base run is the first-order
expansion of that very patch and is favoured by construction.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Float, Int
from scipy import stats as sps
from torch import Tensor

from interp.causal.edge_effects import circuit_lds, edge_attribution, exact_edges, graph_of
from interp.causal.edge_graph import EdgeGraph
from interp.causal.results import (
    Circuit,
    CircuitEdge,
    EdgeAgreement,
    EdgeConfig,
    EdgeResult,
    FaithCurve,
    FaithVersus,
    SampledEdge,
)
from interp.circuits.agreement import recall_at_k, spearman, spearman_of_means_ci
from interp.circuits.groups import group_effects
from interp.circuits.pairs import prepare_pairs
from interp.circuits.patching import ld_direction, run_ld
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import run_manifest
from interp.stats.intervals import Z95, bootstrap_ci, mean_ci

#: Edge counts on the faithfulness curve (those up to ``max_edges``, and ``max_edges``).
CURVE = (1, 3, 10, 30, 100, 200, 300, 500, 1000, 3000, 10000)


def check_sample(graph: EdgeGraph, n: int) -> None:
    """A sample of ``n`` edges fits the graph (a one-line error otherwise)."""
    if n > graph.n_edges:
        raise InterpError(f"--sample {n} is larger than the model's {graph.n_edges} edges")


def sample_edges(
    graph: EdgeGraph, scores: list[Tensor], n: int, top: int, seed: int
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
    rho_ci = spearman_of_means_ci(a, e, n_boot=n_boot, seed=seed)
    rec_ci = bootstrap_ci(lambda i: recall_at_k(e[i].mean(0), a[i].mean(0), 0.0, k),
                          a.shape[0], n_resamples=n_boot, seed=seed)
    rand = np.array([o == "random" for o in origin])
    rho_r = spearman(a[:, rand].mean(0), e[:, rand].mean(0)) if rand.sum() > 2 else math.nan
    return EdgeAgreement(method, a.shape[1], rho, rho_ci, k, rec, rec_ci, rho_r)


def prune(graph: EdgeGraph, edges: list[int]) -> list[int]:
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


#: Differences of faithfulness smaller than this (a share of the gap) are not results: the
#: interval of :func:`versus_matched` is at least this wide each side.
RESOLUTION = 1e-3


def matched_sets(
    order: Int[Tensor, " edges"], n: int, draws: int, generator: torch.Generator
) -> list[Int[Tensor, " n"]]:
    """An estimator's matched baseline at ``n`` edges: ``draws`` sets of ``n`` edges, each
    drawn without replacement from ``order[n : (1 + match_pool)·n]`` (the ranks just below
    the top ``n`` by the estimator's ``|score|``, ``order`` being the edges by descending
    ``|score|``); none when fewer edges than that are left."""
    pool = order[n:(1 + EdgeConfig.match_pool) * n]
    if len(pool) < EdgeConfig.match_pool * n:
        return []
    return [pool[torch.randperm(len(pool), generator=generator)[:n]] for _ in range(draws)]


def versus_matched(
    method: str, n: int, top: Float[np.ndarray, " pairs"],
    matched: Float[np.ndarray, "pairs draws"], *, random: float | None = None,
    exact: float | None = None,
) -> FaithVersus:
    """An estimator's top-``n`` faithfulness per pair against its matched draws per pair:
    the difference of the means and its 95% interval ±√((1.96·SE)² + (t·s·√(1 + 1/R))²):
    SE over pairs of the per-pair difference (the R draws averaged), s the standard
    deviation of the R draws' means (the set-to-set noise; the top set is one more set
    of that spread) and t the t-quantile with R − 1 degrees of freedom; at least
    :data:`RESOLUTION` each side."""
    kept, lo, hi = mean_ci(top)
    per_pair = top - matched.mean(1)
    p, r = matched.shape
    se2 = float(per_pair.var(ddof=1)) / p if p > 1 else 0.0
    draws = matched.mean(0)
    s2 = float(draws.var(ddof=1)) if r > 1 else 0.0
    diff = float(per_pair.mean())
    t = float(sps.t.ppf(0.975, r - 1)) if r > 1 else 0.0
    # a floor for float rounding: sets that keep nothing differ by ~1e-8 with no spread
    half = max(math.sqrt(Z95**2 * se2 + t**2 * s2 * (1 + 1 / r)), RESOLUTION)
    return FaithVersus(method, n, kept, [lo, hi], float(draws.mean()),
                       [float(x) for x in draws], diff, [diff - half, diff + half],
                       random=random, exact=exact)


def faithfulness(
    model: Model, tt: TokenizedTask, scores: dict[str, Float[Tensor, " edges"]],
    config: EdgeConfig, clean: Float[Tensor, " pairs"], corr: Float[Tensor, " pairs"], *,
    exact_order: Int[Tensor, " k"] | None = None, extra: Sequence[Tensor] = (),
    progress: bool | None = None,
) -> tuple[list[FaithCurve], list[FaithVersus], Float[np.ndarray, "pairs extra"]]:
    """The faithfulness curves of every estimator in ``scores`` (its mean score per edge):
    its top n edges and its matched baseline (:func:`matched_sets`) at each count of
    :data:`CURVE` up to ``config.max_edges`` (and ``config.circuit_edges``); n edges drawn
    from all (the weak baseline); the first n of ``exact_order`` (the sampled edges by
    exact effect) where it holds n; each estimator against its matched baseline
    (:func:`versus_matched`); and the faithfulness per pair of the ``extra`` edge sets."""
    graph = graph_of(model)
    counts = sorted({c for c in CURVE if c < min(config.max_edges, graph.n_edges)}
                    | {min(config.max_edges, graph.n_edges), config.circuit_edges})
    counts = [c for c in counts if c <= graph.n_edges]
    sets: list[Tensor] = []
    labels: list[tuple[str, str, int]] = []  # (kind, method, n)

    def add(idx: Tensor, label: tuple[str, str, int]) -> None:
        mask = torch.zeros(graph.n_edges, dtype=torch.bool)
        mask[idx] = True
        sets.append(mask)
        labels.append(label)

    g = torch.Generator().manual_seed(config.seed + 1)
    ranked = {m: torch.argsort(v.abs(), descending=True, stable=True)
              for m, v in scores.items()}
    for m, order in ranked.items():
        for c in counts:
            add(order[:c], ("top", m, c))
            for idx in matched_sets(order, c, config.random_draws, g):
                add(idx, ("matched", m, c))
    for c in counts:
        for _ in range(config.random_draws):
            add(torch.randperm(graph.n_edges, generator=g)[:c], ("random", "random", c))
    if exact_order is not None:
        for c in counts:
            if c <= len(exact_order):
                add(exact_order[:c], ("exact", "exact", c))
    for i, idx in enumerate(extra):
        add(idx, ("extra", "", i))
    faith = _faith(circuit_lds(model, tt, sets, batch_size=2 * config.batch_size,
                               progress=progress), clean, corr).double().numpy()

    def cols(kind: str, m: str, c: int) -> Float[np.ndarray, "pairs draws"]:
        return faith[:, [i for i, lab in enumerate(labels) if lab == (kind, m, c)]]

    curves: list[FaithCurve] = []
    for kind, m in dict.fromkeys((k, m) for k, m, _ in labels if k != "extra"):
        n, mean, ci = [], [], []
        for c in counts:
            f = cols(kind, m, c)
            if f.shape[1]:
                mu, lo, hi = mean_ci(f.mean(1))
                n.append(c)
                mean.append(mu)
                ci.append([lo, hi])
        curves.append(FaithCurve(m, n, mean, ci, kind=kind))
    versus: list[FaithVersus] = []
    for m in ranked:
        for c in counts:
            f = cols("matched", m, c)
            if f.shape[1]:
                rand, ex = cols("random", "random", c), cols("exact", "exact", c)
                versus.append(versus_matched(
                    m, c, cols("top", m, c)[:, 0], f,
                    random=float(rand.mean()) if rand.size else None,
                    exact=float(ex.mean()) if ex.size else None))
    return curves, versus, faith[:, [i for i, lab in enumerate(labels) if lab[0] == "extra"]]


def run_edges(model: Model, config: EdgeConfig | None = None, *, progress: bool | None = None,
              **settings: Any) -> EdgeResult:
    """Run one edge-attribution experiment (see the module docstring)."""
    config = EdgeConfig.resolve(config, settings)
    graph = graph_of(model)
    bs = config.batch_size
    pairs = prepare_pairs(model, config.task, limit=config.limit, min_gap=config.min_gap,
                          group_by=config.group_by, batch_size=bs,
                          before_pass=lambda: check_sample(graph, config.sample))
    task, column, tt, keep = pairs.task, pairs.column, pairs.tokens, pairs.keep
    clean, corr = pairs.clean, pairs.corrupted
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
    estimators = config.estimators
    if estimators:
        t0 = time.perf_counter()
        scores.update(edge_attribution(model, tt, steps=config.ig_steps,
                                       direction=config.direction, methods=estimators,
                                       batch_size=bs, progress=progress))
        # one call scores them all: its time is eap-ig's when eap-ig is among them
        seconds["eap-ig" if "eap-ig" in estimators else estimators[0]] = (
            time.perf_counter() - t0)
    means = {m: s.mean(0) for m, s in scores.items()}

    def approx(e: int) -> dict[str, float]:
        """Edge ``e``'s mean score under each estimator run."""
        return {m.replace("-", "_"): float(v[e]) for m, v in means.items()}

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
        for m in estimators:
            agree.append(agreement(m, scores[m][:, sample], exact_eff, origin,
                                   config.recall_k, config.n_boot, config.seed))
        scores["exact"] = exact_eff
        scores["exact_edges"] = sample  # the edge index of each of exact's columns
        em = exact_eff.mean(0)
        for j, e in enumerate(sample.tolist()):
            sampled.append(SampledEdge(graph.edge_name(e), origin[j], float(em[j]),
                                       **approx(e)))

    curves: list[FaithCurve] = []
    versus: list[FaithVersus] = []
    circuit = None
    if means:
        best = "eap-ig" if "eap-ig" in means else next(iter(means))
        order = torch.argsort(means[best].abs(), descending=True, stable=True)
        pruned = prune(graph, order[:config.circuit_edges].tolist())
        t0 = time.perf_counter()
        exact_order = (sample[torch.argsort(exact_eff.mean(0).abs(), descending=True,
                                            stable=True)] if exact_eff is not None else None)
        curves, versus, extra = faithfulness(
            model, tt, means, config, clean, corr, exact_order=exact_order,
            extra=[torch.tensor(pruned, dtype=torch.long)], progress=progress)
        seconds["circuits"] = time.perf_counter() - t0
        mu, lo, hi = mean_ci(extra[:, 0])
        snd, rcv = graph.edge_index
        circuit = Circuit(best, config.circuit_edges, [
            CircuitEdge(graph.senders[int(snd[e])], graph.receivers[int(rcv[e])],
                        float(means[best][e])) for e in pruned], mu, [lo, hi])

    top_edges = []
    if means:
        lead = "eap-ig" if "eap-ig" in means else next(iter(means))
        for e in torch.argsort(means[lead].abs(), descending=True, stable=True)[:20].tolist():
            ex = None
            hit = (sample == e).nonzero()
            if exact_eff is not None and len(hit):
                ex = float(exact_eff[:, int(hit[0])].mean())
            top_edges.append(SampledEdge(graph.edge_name(e), "top",
                                         ex if ex is not None else math.nan, **approx(e)))

    summary = pairs.summary()
    result = EdgeResult(
        config=config, task=summary, n_edges=graph.n_edges, n_senders=graph.n_senders,
        n_receivers=graph.n_receivers, n_layers=graph.n_layers, n_heads=graph.n_heads,
        n_kv=graph.n_kv, seconds=seconds, forward_seconds=fwd,
        agreement=agree, faithfulness=curves, versus=versus, circuit=circuit, sample=sampled,
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
    for v in result.versus_at(config.circuit_edges):
        if v.verdict != "beats":
            result.warn(f"{v.method}: its top {v.n} edges keep {v.kept:.2f} of the gap, "
                        f"{v.matched:.2f} for edges matched in |score|: {v.verdict} of that "
                        "baseline; its ranking does not pick a more faithful circuit")
    for a in agree:
        if a.spearman_ci95[1] < 0.8:
            result.warn(f"{a.method}: Spearman against exact path patching, edge by edge "
                        f"(a local check), is {a.spearman:.2f}, its interval below 0.8")
    return result


def edge_scores_bytes(result: EdgeResult) -> bytes:
    """Every method's per-pair scores (``[pairs, edges]``; exact: ``[pairs, sample]``) as
    safetensors (``edge_scores.safetensors``), with the run's config as metadata."""
    import json

    from safetensors.torch import save

    from interp.schema.convert import json_safe

    tensors = {k.replace("-", "_"): v.contiguous() for k, v in result.scores.items()}
    return save(tensors, metadata={"config": json.dumps(json_safe(result.config.to_dict())),
                                   "model_id": result.model_id})
