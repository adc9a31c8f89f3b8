"""Sweep a steering vector over layers × coefficients and measure every cell.

For each layer, one :func:`interp.generate` call runs every (prompt, α) pair as rows of
the same batches, with a per-request α (see :func:`interp.steering.vectors.steer`). Each
continuation gets:

* **target score**: VADER's compound sentiment of the continuation only (``vader``),
  a lexicon scorer independent of the model;
* **perplexity** of the continuation given the prompt under the *unsteered* model;
* **distinct-2**: share of distinct token bigrams in the continuation (loops → low);
* **collapse**: distinct-2 < 0.5 or perplexity > 10× the layer's α = 0 value;
* **side effect**: KL(unsteered ‖ steered) of the next-token distribution on neutral,
  off-target prompts.

Every cell reports mean and standard deviation over prompts (and sampling seeds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from interp.errors import InterpError
from interp.generation.engine import generate
from interp.lenses.logit import kl_divergence
from interp.models.loading import Model
from interp.runs.progress import make_progress
from interp.steering.vectors import ContrastPairs, SteeringVector, distinct_n, steer, train_vector

DEFAULT_ALPHAS = (-4.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
SIDE_EFFECT_PROMPTS = (
    "The capital of France is",
    "Water boils at a temperature of",
    "The largest planet in the solar system is",
    "2 + 2 =",
    "The opposite of up is",
    "A week has seven",
)


def vader_scores(texts: Sequence[str]) -> list[float]:
    """VADER compound score in [-1, 1] of each text."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return [float(analyzer.polarity_scores(t)["compound"]) for t in texts]


@torch.no_grad()
def continuation_perplexity(
    model: Model, prompts: Sequence[str], token_ids: Sequence[Sequence[int]], chat: bool = False,
    batch_size: int = 16,
) -> list[float]:
    """exp(mean NLL) of each continuation's tokens given its prompt, unsteered model."""
    tok = model.tokenizer
    out: list[float] = []
    for s in range(0, len(prompts), batch_size):
        seqs, spans = [], []
        for p, cont in zip(prompts[s : s + batch_size], token_ids[s : s + batch_size],
                           strict=True):
            pid = tok(model.format_prompt(p, chat), add_special_tokens=False)["input_ids"]
            seqs.append(list(pid) + list(cont))
            spans.append((len(pid), len(cont)))
        width = max(len(x) for x in seqs)
        ids = torch.full((len(seqs), width), int(tok.pad_token_id), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, x in enumerate(seqs):  # right padding: positions stay 0..n-1
            ids[i, : len(x)] = torch.tensor(x)
            mask[i, : len(x)] = 1
        lp = torch.log_softmax(
            model.bridge(ids.to(model.device), attention_mask=mask.to(model.device),
                         return_type="logits").float(), -1).cpu()
        for i, (p_len, c_len) in enumerate(spans):
            if c_len == 0:
                out.append(math.nan)
                continue
            targets = ids[i, p_len : p_len + c_len]
            preds = lp[i, p_len - 1 : p_len + c_len - 1]
            nll = -preds.gather(1, targets.unsqueeze(1)).mean()
            out.append(float(torch.exp(nll)))
    return out


@dataclass
class SweepConfig:
    layers: list[int]
    alphas: list[float]
    max_new_tokens: int = 24
    temperature: float = 0.0
    seeds: list[int] = field(default_factory=lambda: [0])
    chat: bool = False
    batch_size: int = 32
    vector_source: str = ""
    method: str = "mean_diff"
    collapse_distinct2: float = 0.5
    collapse_ppl_factor: float = 10.0
    coherence_ppl_factor: float = 2.0
    positions: str = "all"


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    v = np.array([x for x in values if x == x], dtype=float)
    if len(v) == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def run_sweep(
    model: Model,
    prompts: Sequence[str],
    *,
    layers: Sequence[int],
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    pairs: ContrastPairs | None = None,
    vector: SteeringVector | None = None,
    method: str = "mean_diff",
    max_new_tokens: int = 24,
    temperature: float = 0.0,
    seeds: Sequence[int] = (0,),
    chat: bool = False,
    batch_size: int = 32,
    side_effect_prompts: Sequence[str] = SIDE_EFFECT_PROMPTS,
    positions: str = "all",
    progress: bool | None = None,
) -> dict[str, Any]:
    """Steer at every layer × α and score every continuation (see the module doc).

    Give ``pairs`` (a vector is trained at each swept layer) or ``vector`` (applied as it
    is at every swept layer). Returns the ``results.json`` dict: grids are
    ``[len(layers)][len(alphas)]``.
    """
    if (pairs is None) == (vector is None):
        raise InterpError("give contrast pairs or a vector, not both and not neither")
    if not prompts:
        raise InterpError("no prompts to steer")
    alphas = [float(a) for a in alphas]
    if not all(math.isfinite(a) for a in alphas):
        raise InterpError("alphas must be finite")
    if 0.0 not in alphas:
        alphas = [0.0, *alphas]  # the unsteered baseline of every layer
    layer_list = [model.check_layer(int(x)) for x in layers]
    cfg = SweepConfig(layer_list, alphas, max_new_tokens, temperature, list(seeds), chat,
                      batch_size, pairs.source if pairs is not None else vector.source, method,
                      positions=positions)
    n_a = len(alphas)
    rows_prompts = [p for p in prompts for _ in alphas]
    rows_alpha = [a for _ in prompts for a in alphas]
    keys = ("target_score", "perplexity", "distinct2", "collapse", "side_kl")
    grids: dict[str, list[list[float]]] = {f"{k}{s}": [] for k in keys for s in ("", "_std")}
    samples: list[list[list[str]]] = []
    norms: list[float] = []
    per_text: list[dict[str, Any]] = []
    side_ids, side_mask = model.tokenize(list(side_effect_prompts))
    with torch.no_grad():
        clean_side = torch.log_softmax(model.logits(side_ids, side_mask)[:, -1].float(), -1)
    bar = make_progress(enabled=progress if progress is not None else True)
    with bar:
        task = bar.add_task("steering sweep", total=len(layer_list) * len(seeds), info="")
        for layer in layer_list:
            vec = train_vector(model, pairs, layer, method=method, progress=False) \
                if pairs is not None else vector
            norms.append(vec.norm)
            cell: dict[tuple[int, str], list[float]] = {}
            cell_samples: list[list[str]] = [[] for _ in alphas]
            for seed in seeds:
                with steer(model, vec, layer=layer, alpha=rows_alpha, positions=positions):
                    res = generate(model, rows_prompts, max_new_tokens=max_new_tokens,
                                   temperature=temperature, seed=seed, chat=chat,
                                   batch_size=batch_size, progress=False)
                texts = res.texts
                ppl = continuation_perplexity(model, rows_prompts,
                                              [g.token_ids for g in res.generations], chat)
                vader = vader_scores(texts)
                d2 = [distinct_n(g.token_ids, 2) for g in res.generations]
                for i in range(len(texts)):
                    a_idx = i % n_a
                    cell.setdefault((a_idx, "target_score"), []).append(vader[i])
                    cell.setdefault((a_idx, "perplexity"), []).append(ppl[i])
                    cell.setdefault((a_idx, "distinct2"), []).append(d2[i])
                    if len(cell_samples[a_idx]) < 3:
                        cell_samples[a_idx].append(texts[i])
                    per_text.append({"layer": layer, "alpha": rows_alpha[i], "seed": seed,
                                     "prompt": rows_prompts[i], "text": texts[i],
                                     "target_score": vader[i], "perplexity": ppl[i],
                                     "distinct2": d2[i]})
                bar.update(task, advance=1, info=f"layer {layer}")
            base_idx = alphas.index(0.0)
            base_ppl = _mean_std(cell[(base_idx, "perplexity")])[0]
            for a_idx, alpha in enumerate(alphas):
                collapse = [
                    float((d == d and d < cfg.collapse_distinct2)
                          or (p == p and p > cfg.collapse_ppl_factor * base_ppl))
                    for d, p in zip(cell[(a_idx, "distinct2")], cell[(a_idx, "perplexity")],
                                    strict=True)
                ]
                cell[(a_idx, "collapse")] = collapse
                # a plain forward has no generated tokens: with positions="generated" the
                # side effect is measured steering every position (an upper bound)
                with steer(model, vec, layer=layer, alpha=alpha,
                           positions="all" if positions == "all" else "prompt"), \
                        torch.no_grad():
                    lp = torch.log_softmax(model.logits(side_ids, side_mask)[:, -1].float(),
                                           -1)
                cell[(a_idx, "side_kl")] = kl_divergence(clean_side, lp).tolist()
            for k in keys:
                stats = [_mean_std(cell[(a_idx, k)]) for a_idx in range(n_a)]
                grids[k].append([m for m, _ in stats])
                grids[f"{k}_std"].append([s for _, s in stats])
            samples.append(cell_samples)
    sweet = _sweet_spot(layer_list, alphas, grids, cfg)
    return {
        "model": model.model_id, "config": asdict(cfg), "layers": layer_list,
        "alphas": alphas, **grids, "vector_norms": norms, "samples": samples,
        "n_prompts": len(prompts), "sweet_spot": sweet, "texts": per_text,
        "side_effect_prompts": list(side_effect_prompts),
    }


def _sweet_spot(layers: list[int], alphas: list[float], g: dict, cfg: SweepConfig,
                ) -> dict[str, Any] | None:
    """The largest target-score change vs α = 0 whose coherence stays within tolerance:
    mean perplexity ≤ ``coherence_ppl_factor`` × the α = 0 value and no collapse."""
    base = alphas.index(0.0)
    best = None
    for li, layer in enumerate(layers):
        for ai, alpha in enumerate(alphas):
            if ai == base:
                continue
            ppl_ok = g["perplexity"][li][ai] <= cfg.coherence_ppl_factor * \
                g["perplexity"][li][base]
            if not ppl_ok or g["collapse"][li][ai] > 0.25:
                continue
            effect = g["target_score"][li][ai] - g["target_score"][li][base]
            if best is None or abs(effect) > abs(best["effect"]):
                best = {"layer": layer, "alpha": alpha, "effect": effect,
                        "effect_spread": g["target_score_std"][li][ai],
                        "tolerance": f"perplexity ≤ {cfg.coherence_ppl_factor}× α=0, "
                                     "collapse ≤ 25% of texts"}
    return best
