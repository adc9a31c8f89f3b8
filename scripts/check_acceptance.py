"""Check the issues' acceptance figures from the results.json files `make accept` writes.

Prints each figure with PASS/FAIL and exits 1 if any fails. Never used by the test
suite (these runs take minutes); see the Makefile's `accept` target.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(root: str = "accept-out") -> int:
    ok = True

    def check(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}")

    cap = json.loads((Path(root) / "capitals" / "results.json").read_text())
    i = cap["layers"].index(cap["best_layer"])
    test, std = cap["test_accuracy_mean"][i], cap["test_accuracy_std"][i]
    margin = test - cap["control_accuracy_mean"][i]
    check("capitals: best layer beats control by ≥ 0.2 and > 3 seed-std",
          margin >= 0.2 and margin > 3 * std,
          f"layer {cap['best_layer']}: {test:.3f} ± {std:.3f} vs control "
          f"{cap['control_accuracy_mean'][i]:.3f} (margin {margin:.3f})")
    worst = max(abs(s - 0.5) for s in cap["shuffled_accuracy_mean"])
    check("capitals: shuffled-label probe within chance ± 0.05", worst <= 0.05,
          f"max |shuffled − 0.5| = {worst:.3f}")
    sent = json.loads((Path(root) / "sentiment" / "results.json").read_text())
    md = sent["ablation"]["mean_difference"]
    check("sentiment: mean-difference ablation removes ≥ 80% of the logit gap",
          (md["logit_diff_removed_fraction"] or 0) >= 0.8,
          f"removed {md['logit_diff_removed_fraction']:.3f} at layer {sent['ablation']['layer']}")
    check("sentiment: KL above every variance-matched random direction",
          md["kl"] > max(md["random"]["kl"]),
          f"KL {md['kl']:.4f} vs random max {max(md['random']['kl']):.4f}")
    l6 = json.loads((Path(root) / "layer6" / "results.json").read_text())
    n = len(l6["ablation"]["probe"]["random"]["kl"])
    check("layer 6: probe direction compared with ≥ 10 random directions", n >= 10,
          f"{n} random directions, probe KL percentile {l6['ablation']['probe']['percentile']:.0f}")
    tl_path = Path(root) / "tuned-lens" / "results.json"
    if tl_path.exists():
        _check_tuned_lens(json.loads(tl_path.read_text()), check)
    patch_path = Path(root) / "patch-ioi-heads" / "results.json"
    if patch_path.exists():
        _check_patching(json.loads(patch_path.read_text()), check)
    sae_path = Path(root) / "sae" / "results.json"
    if sae_path.exists():
        _check_sae(json.loads(sae_path.read_text()), check)
    steer_path = Path(root) / "steer" / "results.json"
    if steer_path.exists():
        _check_steering(json.loads(steer_path.read_text()), check)
    for name in ("das-pronoun", "das-capitals"):
        path = Path(root) / name / "results.json"
        if path.exists():
            _check_das(name, json.loads(path.read_text()), check)
    edges_path = Path(root) / "edges-ioi" / "results.json"
    if edges_path.exists():
        _check_edges(json.loads(edges_path.read_text()), check)
    ai_path = Path(root) / "autointerp" / "results.json"
    if ai_path.exists():
        _check_autointerp(json.loads(ai_path.read_text()), check)
    _check_graphs(Path(root), check)
    return 0 if ok else 1


def _check_graphs(root: Path, check) -> None:  # noqa: ANN001
    """Issue 31: the transcoders' table, the 20-token graph (exact, ≤ 5 minutes, its scores)
    and the real-model agreement on the three tasks (goal: Spearman ≥ 0.8, sign ≥ 90%)."""
    ev_path = root / "transcoders-eval" / "results.json"
    if ev_path.exists():
        ev = json.loads(ev_path.read_text())
        for m in ev["layers"]:
            print(f"      layer {m['layer']:2d}: NMSE {m['nmse']:.3f}  L0 {m['l0']:.1f}  dead "
                  f"{m['dead_fraction']:.3f}  CE score alone {m['ce_loss_score']:.3f}")
        lo, hi = ev["ce_loss_score_all_ci95"]
        check("transcoders: every layer trained and evaluated", len(ev["layers"]) == 30,
              f"{len(ev['layers'])} layers; CE-loss score with all replaced "
              f"{ev['ce_loss_score_all']:.3f} [{lo:.3f}, {hi:.3f}]")
    g_path = root / "graph" / "results.json"
    if g_path.exists():
        g = json.loads(g_path.read_text())
        exact = (abs(g["target_replacement"] - g["target_real"]) <= 1e-4
                 and abs(g["target_edge_sum"] - g["target_real"]) <= 1e-4)
        check("graph: the replacement model and the edges reproduce the real target (1e-4)",
              exact, f"real {g['target_real']:.5f}, replacement {g['target_replacement']:.5f}"
                     f", Σ edges {g['target_edge_sum']:.5f}")
        check("graph: a 20-token prompt in ≤ 5 minutes", len(g["tokens"]) >= 20
              and g["elapsed_s"] <= 300, f"{len(g['tokens'])} tokens, {g['elapsed_s']:.0f} s; "
              f"replacement score {g['replacement_score']:.3f}, completeness "
              f"{g['completeness_score']:.3f}")
    for task in ("capitals", "ioi", "pronoun"):
        path = root / f"graph-{task}" / "results.json"
        if not path.exists():
            continue
        s = json.loads(path.read_text())["summary"]
        lo, hi = s["spearman_real_ci95"]
        slo, shi = s["sign_real_ci95"]
        check(f"graph {task}: Spearman ≥ 0.8 and sign agreement ≥ 90% in the real model",
              s["spearman_real"] >= 0.8 and s["sign_real"] >= 0.9,
              f"Spearman {s['spearman_real']:.3f} [{lo:.3f}, {hi:.3f}], sign "
              f"{s['sign_real']:.3f} [{slo:.3f}, {shi:.3f}]; frozen replacement "
              f"{s['spearman_replacement']:.3f}")


def _check_autointerp(r: dict, check) -> None:  # noqa: ANN001
    """Issue 32: planted features recovered (named, detection AUROC ≥ 0.9) by ≥ 90%; per
    explainer × scorer, true against shuffled detection AUROC on the SAE's features, and
    the goal of a difference ≥ 0.15 with its CI above 0 for the best pair."""
    planted = r["planted"]
    for scorer in r["scorer_ids"]:
        got = sum(p["named"] and p["detection_auroc"].get(scorer, 0) >= 0.9 for p in planted)
        check(f"autointerp: planted features recovered with scorer {scorer} (≥ 90%)",
              bool(planted) and got >= 0.9 * len(planted), f"{got} of {len(planted)}")
    rows = [s for s in r["summary"] if s["group"] == "sae"]
    for s in rows:
        print(f"      {s['explainer']} × {s['scorer']} ({s['method']}): AUROC {s['auroc']:.3f}, "
              f"shuffled {s['shuffled_auroc']:.3f}, difference {s['difference']:+.3f} "
              f"{[round(x, 3) for x in s['difference_ci95']]} over {s['n_features']} features")
    best = max(rows, key=lambda s: s["difference_ci95"][0], default=None)
    check("autointerp: best explainer × scorer beats shuffled by ≥ 0.15 AUROC, CI above 0",
          best is not None and best["difference"] >= 0.15 and best["difference_ci95"][0] > 0,
          "none" if best is None else
          f"{best['explainer']} × {best['scorer']} ({best['method']}): "
          f"{best['difference']:+.3f} {[round(x, 3) for x in best['difference_ci95']]}")


def _check_das(name: str, r: dict, check) -> None:  # noqa: ANN001
    """DAS figures: held-out IIA ≥ 0.8 at the best layer at k = 1, the random direction
    ≤ 0.55 there; the control task by type not fitted (its interval not wholly above its
    chance) with selectivity above zero; no subspace illusion flagged at that layer."""
    best = max(r["layers"], key=lambda x: x["das"]["iia"])
    check(f"{name}: DAS held-out IIA ≥ 0.8 at the best layer (k = 1)", best["das"]["iia"] >= 0.8,
          f"layer {best['layer']}: {best['das']['iia']:.2f} {best['das']['iia_ci95']}, full "
          f"interchange {best['full']['iia']:.2f}")
    check(f"{name}: random direction ≤ 0.55 there", best["random"]["iia"] <= 0.55,
          f"{best['random']['iia']:.2f} {best['random']['iia_ci95']}")
    if best.get("control") is not None:
        lo = best["control"]["iia_ci95"][0]
        check(f"{name}: control task by type not fitted (interval not above its chance)",
              lo is None or lo <= best["control_chance"],
              f"{best['control']['iia']:.2f} {best['control']['iia_ci95']} (chance "
              f"{best['control_chance']:.2f})")
        sel = best.get("selectivity") or {}
        check(f"{name}: selectivity above zero", (sel.get("ci95") or [None])[0] is not None
              and sel["ci95"][0] > 0, f"{sel.get('value')} {sel.get('ci95')}")
    gap = best.get("span_gap") or {}
    check(f"{name}: no subspace illusion at the best layer (DAS keeps its IIA in the "
          "observed span)", not ((gap.get("ci95") or [None])[0] or 0) > 0,
          f"in span {best.get('in_span', {}).get('iia')}, gap {gap.get('value')} "
          f"{gap.get('ci95')}")


def _check_edges(r: dict, check) -> None:  # noqa: ANN001
    """Edge figures on IOI: each estimator's top-200 circuit against its matched baseline
    (n of its own next ranks; the test of a circuit), against 200 edges drawn from all (the
    weak baseline), and eap-ig's per-edge Spearman against exact path patching on the
    sample (issue 33's target, a local check)."""
    at = {v["method"]: v for v in r["versus"] if v["n"] == 200}
    for m, v in at.items():
        lo, hi = v["difference_ci95"]
        check(f"edges: the top-200 {m} edges keep more of the gap than their matched "
              "baseline", lo > 0, f"{v['kept']:.2f} vs matched {v['matched']:.2f}, "
              f"difference {v['difference']:+.2f} [{lo:+.2f}, {hi:+.2f}]; exact top 200 "
              f"(reference) {v['exact']}")
    curves = {(c["kind"], c["method"]): c for c in r["faithfulness"]}
    top, rand = curves["top", "eap-ig"], curves["random", "random"]
    i, j = top["n"].index(200), rand["n"].index(200)
    check("edges: the top-200 eap-ig edges keep more of the gap than 200 edges drawn from "
          "all (the weak baseline)", top["ci95"][i][0] > rand["ci95"][j][1],
          f"{top['mean'][i]:.2f} {top['ci95'][i]} vs {rand['mean'][j]:.2f} {rand['ci95'][j]}")
    by = {a["method"]: a for a in r["agreement"]}
    ig = by["eap-ig"]
    check("edges: eap-ig Spearman ≥ 0.8 against exact path patching (local check)",
          ig["spearman"] >= 0.8, ", ".join(
              f"{m} {a['spearman']:.3f} {a['spearman_ci95']}" for m, a in by.items())
          + f" on {ig['n_edges']} edges")


def _check_steering(r: dict, check) -> None:  # noqa: ANN001
    """Issue 7's figures from `interp steer sweep` results (paired per prompt)."""
    import numpy as np

    texts = r["texts"]

    def deltas(layer: int, alpha: float) -> np.ndarray:
        base = {t["prompt"]: t["target_score"] for t in texts
                if t["layer"] == layer and t["alpha"] == 0.0}
        return np.array([t["target_score"] - base[t["prompt"]] for t in texts
                         if t["layer"] == layer and t["alpha"] == alpha])

    best = None
    for layer in r["layers"]:
        for alpha in r["alphas"]:
            if alpha <= 0:
                continue
            d = deltas(layer, alpha)
            lo = d.mean() - 1.96 * d.std(ddof=1) / np.sqrt(len(d))
            if d.mean() >= 0.25 and lo > 0 and (best is None or d.mean() > best[2]):
                best = (layer, alpha, float(d.mean()), float(lo), float(d.std(ddof=1)))
    check("steering: a layer where mean VADER rises ≥ 0.25 above α=0, 95% CI above 0",
          best is not None,
          "none" if best is None else f"layer {best[0]}, α={best[1]:g}: {best[2]:+.3f} "
          f"(CI low {best[3]:+.3f}, sd over prompts {best[4]:.3f})")
    top = max(r["alphas"])
    base_i, top_i = r["alphas"].index(0.0), r["alphas"].index(top)
    ratios = [r["perplexity"][li][top_i] / r["perplexity"][li][base_i]
              for li in range(len(r["layers"]))]
    collapsed = [r["collapse"][li][top_i] for li in range(len(r["layers"]))]
    check("steering: at the largest α, perplexity ≥ 1.5× α=0 or collapse (measured)",
          any(x >= 1.5 for x in ratios) or any(c > 0 for c in collapsed),
          "perplexity ratios " + ", ".join(f"L{layer}: {x:.1f}×"
                                           for layer, x in zip(r["layers"], ratios, strict=True)))
    if -1.0 in r["alphas"]:
        neg = r["alphas"].index(-1.0)
        falls = [r["target_score"][li][neg] < r["target_score"][li][base_i]
                 for li in range(len(r["layers"]))]
        check("steering: α = −1 lowers VADER below α = 0", all(falls),
              f"{sum(falls)}/{len(falls)} layers")




def _check_tuned_lens(res: dict, check) -> None:  # noqa: ANN001
    layers, logit, tuned = res["layers"], res["kl_logit_lens"], res["kl_tuned_lens"]
    worse = [la for la, lg, t in zip(layers[:-1], logit, tuned, strict=False) if t >= lg]
    check("tuned lens: lower held-out KL than the logit lens at every layer but the last",
          not worse, f"layers where it is not lower: {worse or 'none'}")
    check("tuned lens: both lenses ≈ 0 at the last layer", max(logit[-1], tuned[-1]) < 1e-3,
          f"logit {logit[-1]:.2e}, tuned {tuned[-1]:.2e} nats")
    lo, hi = res["kl_ratio_ci95"]
    check("tuned lens: mean KL over layers 0–20 at least 3× lower", res["kl_ratio"] >= 3.0,
          f"ratio {res['kl_ratio']:.2f}× (95% CI {lo:.2f}–{hi:.2f}); logit "
          f"{res['mean_kl_logit_lens']:.3f} vs tuned {res['mean_kl_tuned_lens']:.3f} nats")
    minutes = (res.get("training") or {}).get("elapsed_s", float("nan")) / 60
    check("tuned lens: trained in ≤ 30 CPU minutes", minutes <= 30,
          f"{minutes:.1f} min of training")


def _check_patching(r: dict, check) -> None:  # noqa: ANN001
    """Issue 17's figures from `interp patch --task ioi --family heads --method both`."""
    half = r["split_half"]
    check("patching: IOI top-10 heads overlap across disjoint halves of the pairs well above "
          "chance", half["overlap"] >= 5,
          f"{half['overlap']}/{half['k']} (chance {half['chance']:.2f}; {half['n_a']} and "
          f"{half['n_b']} pairs): {half['top_a']} vs {half['top_b']}")
    lo = r["spearman_ci95"][0]
    check("patching: AtP ranks heads like exact patching (Spearman CI above 0.5)", lo > 0.5,
          f"Spearman {r['spearman']:.3f} (95% CI {lo:.3f}–{r['spearman_ci95'][1]:.3f}), "
          f"recall@10 {r['recall_at_10']:.2f}, recall@30 {r['recall_at_30']:.2f}; "
          f"{r['seconds_exact']:.0f} s exact vs {r['seconds_atp']:.1f} s AtP")
    check("patching: DLA sums to the logit difference", r["dla"]["max_sum_error"] < 1e-3,
          f"max |sum - LD| = {r['dla']['max_sum_error']:.1e}")


def _check_sae(r: dict, check) -> None:  # noqa: ANN001
    """Issue 5's figures from `interp sae eval` on the layer-6 SAE."""

    def ci(key: str) -> str:
        lo, hi = r.get(f"{key}_ci95") or (float("nan"), float("nan"))
        return f"{r[key]:.3f} (95% CI {lo:.3f}–{hi:.3f})"

    train = (r.get("training") or {}).get("train") or {}
    check("SAE: layer 6, d_sae = 8 × 576", r["layer"] == 6 and r["d_sae"] == 8 * 576,
          f"layer {r['layer']}, d_sae {r['d_sae']}, "
          f"λ {(train.get('arch') or {}).get('l1_coefficient')}, "
          f"{train.get('tokens')} tokens, {r['n_tokens']} held-out tokens")
    check("SAE: explained variance ≥ 0.7", r["explained_variance"] >= 0.7,
          ci("explained_variance"))
    check("SAE: mean L0 ≤ 100", r["l0"] <= 100, ci("l0"))
    check("SAE: dead fraction ≤ 0.3", r["dead_fraction"] <= 0.3,
          f"{r['dead_fraction']:.4f} (dense {r['dense_fraction']:.4f})")
    check("SAE: CE loss score (zero ablation) ≥ 0.8", r["ce_loss_score"] >= 0.8,
          f"{ci('ce_loss_score')}; mean ablation {ci('ce_loss_score_mean_ablation')}; "
          f"ΔCE {ci('delta_ce')} nats")
    minutes = (r.get("training") or {}).get("elapsed_s") or float("nan")
    check("SAE: trained in ≤ 45 CPU minutes", minutes / 60 <= 45, f"{minutes / 60:.1f} min")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
