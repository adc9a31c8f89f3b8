"""``run_autointerp``: contexts → explanations → scores, beside their null controls.

1. One model pass over held-out text keeps the residual stream at the SAE's hook
   (:func:`~saes.autointerp.contexts.scan`); the SAE's features, a random-weight SAE's and
   planted features are all read from it.
2. Each feature's contexts (:func:`~saes.autointerp.contexts.feature_examples`): the
   explainer sees only the explain half of the windows, the scorers only the score half.
3. Explanations: the programmatic baseline always, and a language-model explainer when
   one is named (one batched generation call).
4. Every explanation is scored on the feature's held-out texts by each scorer and method,
   and so is a **shuffled** explanation (another feature's of the same group, a seeded
   derangement) on the same texts: the difference of the two AUROCs, with its bootstrap
   interval over the texts, is the feature's score.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from interp.data.windows import require_text
from interp.errors import InterpError
from interp.models.loading import Model, load
from interp.runs.manifest import model_manifest, sha256_texts
from interp.runs.progress import make_progress
from interp.stats.intervals import wilson
from saes.autointerp.contexts import (
    FeatureExamples,
    feature_examples,
    plant_token_sets,
    planted_activations,
    sae_activations,
    scan,
)
from saes.autointerp.explainers import (
    check_explainer,
    lm_explanations,
    programmatic_explanation,
    token_cues,
)
from saes.autointerp.metrics import balanced_accuracy, mean_ci, paired_difference
from saes.autointerp.results import (
    GROUPS,
    PROGRAMMATIC,
    AutoInterpConfig,
    AutoInterpResult,
    ExplainedFeature,
    FeatureScore,
    PlantedRecovery,
    ScoreSummary,
)
from saes.autointerp.scoring import PROMPTS, marked_text, scores
from saes.autointerp.token_scorer import token_scores
from saes.browser import check_sae, select_features
from saes.loading import LoadedSAE, unpack_sae
from saes.sae import SparseAutoencoder

#: Shown per feature in the report and the result.
N_EXAMPLES_SHOWN = 3
SELF = "self"
#: What the programmatic scorer is recorded as.
TOKEN_MATCH = "token match (no model)"


def random_sae(sae: SparseAutoencoder, resid: torch.Tensor, seed: int) -> SparseAutoencoder:
    """An SAE of the same architecture and size with random weights (the training
    initialisation, the decoder bias at the data mean): features of noise."""
    rand = type(sae)(sae.cfg, sae.train_cfg)
    rand.init_weights(torch.Generator().manual_seed(seed + 1))
    rand.init_b_dec(resid[:, 1:].reshape(-1, resid.shape[-1])[:65536].float())
    return rand.to(sae.W_enc.device).eval()


def check_features(spec_features: Sequence[int], fires: torch.Tensor, n_tokens: int) -> None:
    """A named feature that never fired on the scan has nothing to explain."""
    dead = [i for i in spec_features if int(fires[i]) == 0]
    if dead:
        raise InterpError(f"feature {dead[0]} never fires on the {n_tokens:,} scanned tokens "
                          "(a dead feature has nothing to explain): pick live ones, e.g. "
                          "--features alive:20")


def derangement(n: int, seed: int) -> list[int]:
    """A seeded permutation of ``range(n)`` with no fixed point (``n ≥ 2``): a rotation of a
    random order, so each item takes the next one's place."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    out = [0] * n
    for a, b in zip(order, order[1:] + order[:1], strict=True):
        out[a] = b
    return out


def _scorable(fe: FeatureExamples) -> str | None:
    if not fe.explain:
        return "no activating context in the explain half"
    if len(fe.positives) < 2:
        return f"{len(fe.positives)} held-out activating context(s): at least 2 are needed"
    if len(fe.negatives) + len(fe.hard) < 2:
        return "fewer than 2 held-out non-activating contexts"
    return None


def fuzz_marks(fe: FeatureExamples, seed: int) -> list[list[bool]]:
    """The marks of fuzzing, per scoring context: a positive's own active tokens; a
    negative's at the positions of an activating example (drawn with ``seed``), as delphi's
    default fuzzing marks them."""
    g = torch.Generator().manual_seed(seed)
    pos = [[a > 0 for a in c.acts] for c in fe.positives]
    out = [list(m) for m in pos]
    for c in [*fe.negatives, *fe.hard]:
        m = pos[int(torch.randint(len(pos), (1,), generator=g))]
        out.append((list(m) + [False] * len(c.tokens))[:len(c.tokens)])
    return out


def _score(scorer: Model | None, explanation: str, fe: FeatureExamples, method: str,
           marks: list[list[bool]], batch_size: int) -> torch.Tensor:
    """One explanation's scores of a feature's held-out contexts: from the scorer model's
    log-odds, or (``scorer`` None) the programmatic scorer's token matches."""
    fuzz = method == "fuzzing"
    if scorer is None:
        return token_scores(explanation, fe.scoring, marks if fuzz else None)
    texts = ([marked_text(c.tokens, m) for c, m in zip(fe.scoring, marks, strict=True)]
             if fuzz else ["".join(c.tokens) for c in fe.scoring])
    return scores(scorer, explanation, texts, PROMPTS[method], batch_size=batch_size)


def _load(name: str, model: Model, loaded: dict[str, Model]) -> Model:
    """``name``'s model: the explained model for 'self' (or its own id), else loaded once."""
    if name in (SELF, model.model_id):
        return model
    if name not in loaded:
        loaded[name] = load(name, device=model.device)
    return loaded[name]


def run_autointerp(
    model: Model,
    sae: SparseAutoencoder | LoadedSAE,
    docs: Sequence[str],
    config: AutoInterpConfig | None = None,
    *,
    data: Mapping[str, Any] | None = None,
    models: Mapping[str, Model] | None = None,
    progress: bool | None = None,
    **settings: Any,
) -> AutoInterpResult:
    """Explain and score SAE features against null controls (see the module doc).

    ``docs``: held-out text. ``models``: explainer and scorer models already loaded, by
    the names the config uses (others are loaded with :func:`interp.load`). Settings come
    from ``config`` or keyword arguments named as its fields.
    """
    cfg = AutoInterpConfig.resolve(config, settings)
    sae, loaded_sae = unpack_sae(sae)
    check_sae(model, sae)
    pool: dict[str, Model] = dict(models or {})
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    n_windows = -(-cfg.tokens // cfg.seq_len)
    require_text(model, docs, need=n_windows * cfg.seq_len, what="automatic interpretation",
                 asked=f"tokens={cfg.tokens:,}",
                 reads=f"{n_windows:,} windows of seq_len={cfg.seq_len}",
                 fix="lower tokens or give more held-out text")
    # explainer and scorers load (and are checked) before the long pass
    explainer = None if cfg.explainer == PROGRAMMATIC else _load(cfg.explainer, model, pool)
    if explainer is not None:
        check_explainer(explainer)
    scorer_models: dict[str, Model | None] = {
        name: None if name == PROGRAMMATIC else _load(name, model, pool)
        for name in cfg.scorer_list}

    s = scan(model, docs, sae.cfg.hook_point, tokens=cfg.tokens, seq_len=cfg.seq_len,
             batch_size=cfg.batch_size, seed=cfg.seed, progress=progress)
    _, fires = sae_activations(sae, s.resid)
    features = select_features(cfg.features, fires, cfg.seed)
    check_features(features, fires, s.n_tokens)
    if not features:
        raise InterpError(f"no live feature among the SAE's {sae.cfg.d_sae}: nothing to explain")
    kw = dict(ctx_len=cfg.ctx_len, n_explain=cfg.n_explain, n_score=cfg.n_score,
              n_hard=cfg.n_hard, n_quantiles=cfg.n_quantiles, seed=cfg.seed)
    groups: dict[str, list[FeatureExamples]] = {}
    acts, _ = sae_activations(sae, s.resid, features)
    assert acts is not None
    groups["sae"] = feature_examples(model, s.ids, acts, features, **kw)
    planted_sets: list[list[int]] = []
    if cfg.random_features:
        rand = random_sae(sae, s.resid, cfg.seed)
        _, rfires = sae_activations(rand, s.resid)
        rfeat = select_features(f"alive:{cfg.random_features}", rfires, cfg.seed)
        racts, _ = sae_activations(rand, s.resid, rfeat)
        assert racts is not None
        groups["random"] = feature_examples(model, s.ids, racts, rfeat, **kw) if rfeat else []
        del rand, racts
    if cfg.planted:
        planted_sets = plant_token_sets(model, s.ids, cfg.planted, cfg.seed)
        if planted_sets:
            pacts = planted_activations(s.ids, planted_sets)
            groups["planted"] = feature_examples(model, s.ids, pacts,
                                                 list(range(len(planted_sets))), **kw)
    del acts
    s.resid = torch.empty(0)  # the contexts are read: free the residual stream
    seconds["contexts"] = time.perf_counter() - t0

    # ---- explanations
    t1 = time.perf_counter()
    explained: list[ExplainedFeature] = []
    for g in GROUPS:
        for fe in groups.get(g, []):
            ef = ExplainedFeature(
                group=g, feature=fe.feature, n_active=fe.n_active,
                top_tokens=[model.decode_token(t) for t in fe.top_tokens],
                examples=fe.explain[:N_EXAMPLES_SHOWN], n_positive=len(fe.positives),
                n_negative=len(fe.negatives), n_hard=len(fe.hard), skipped=_scorable(fe))
            if g == "planted":
                ef.planted_tokens = [model.decode_token(t) for t in planted_sets[fe.feature]]
            if fe.explain:
                ef.explanations[PROGRAMMATIC] = programmatic_explanation(
                    [*fe.explain, *fe.explain_negatives])
            explained.append(ef)
    by_key = {(e.group, e.feature): e for e in explained}
    if explainer is not None:
        todo = [(g, fe) for g in GROUPS for fe in groups.get(g, []) if fe.explain]
        texts = lm_explanations(explainer, [fe.explain for _, fe in todo],
                                max_new_tokens=cfg.max_explanation_tokens,
                                deterministic=cfg.deterministic,
                                batch_size=cfg.explain_batch_size,
                                progress=progress)
        for (g, fe), text in zip(todo, texts, strict=True):
            by_key[(g, fe.feature)].explanations[cfg.explainer] = text
    seconds["explain"] = time.perf_counter() - t1

    # ---- shuffled controls: a derangement within each group (across groups when alone)
    scored = [e for e in explained if e.skipped is None]
    for g in GROUPS:
        members = [e for e in scored if e.group == g]
        others = [e for e in scored if e not in members]
        if len(members) >= 2:
            perm = derangement(len(members), cfg.seed + GROUPS.index(g))
            pairs = [(m, members[perm[i]]) for i, m in enumerate(members)]
        else:  # a group of one borrows from the others (none: the check below refuses)
            pairs = [(m, others[cfg.seed % len(others)]) for m in members] if others else []
        for m, d in pairs:
            m.shuffled_from, m.shuffled_group = d.feature, d.group
    if len(scored) < 2:
        raise InterpError(f"{len(scored)} feature(s) have enough contexts to score, and the "
                          "shuffled-explanation control needs at least 2: raise --tokens or "
                          "ask for more features")

    # ---- scores
    t2 = time.perf_counter()
    ex = {(g, fe.feature): fe for g in GROUPS for fe in groups.get(g, [])}
    jobs = [(sn, mth, xp, e) for sn in scorer_models for mth in cfg.method_list
            for xp in cfg.explainers for e in scored]
    rows: list[FeatureScore] = []
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("scoring", total=len(jobs), info="")
        for k, (sn, mth, xp, e) in enumerate(jobs):
            fe = ex[(e.group, e.feature)]
            donor = by_key[(e.shuffled_group or e.group, e.shuffled_from or 0)]
            marks = fuzz_marks(fe, cfg.seed + e.feature)
            sc = scorer_models[sn]
            a = _score(sc, e.explanations[xp], fe, mth, marks, cfg.batch_size)
            b = _score(sc, donor.explanations[xp], fe, mth, marks, cfg.batch_size)
            labels = fe.labels
            at, ab, diff, ci = paired_difference(labels, a.tolist(), b.tolist(),
                                                 n_boot=cfg.n_boot, seed=cfg.seed + k)
            rows.append(FeatureScore(
                group=e.group, feature=e.feature, explainer=xp, scorer=sn, method=mth,
                auroc=at, shuffled_auroc=ab, difference=diff, difference_ci95=ci,
                balanced_accuracy=balanced_accuracy(labels, a.tolist()),
                n_positive=sum(labels), n_negative=len(labels) - sum(labels)))
            bar.update(task, advance=1, info=f"{sn} {mth} {xp}")
    seconds["score"] = time.perf_counter() - t2

    summary = summarize(rows, cfg)
    planted = []
    for e in explained:
        if e.group != "planted" or e.planted_tokens is None:
            continue
        fe = ex[("planted", e.feature)]
        cues = token_cues([*fe.explain, *fe.explain_negatives])
        named = {c.token for c in cues} >= set(e.planted_tokens)
        det = {r.scorer: r.auroc for r in rows if r.group == "planted" and
               r.feature == e.feature and r.explainer == PROGRAMMATIC and
               r.method == "detection"}
        planted.append(PlantedRecovery(feature=e.feature, tokens=e.planted_tokens,
                                       explanation=e.explanations.get(PROGRAMMATIC, ""),
                                       named=named, detection_auroc=det))
    seconds["total"] = time.perf_counter() - t0
    sae_path = str(loaded_sae.path) if loaded_sae is not None else None
    recorded: dict[str, Any] = {**cfg.to_dict(), **({"sae": sae_path} if sae_path else {})}
    result = AutoInterpResult(
        config=cfg, model_id=model.model_id, hook_point=sae.cfg.hook_point,
        layer=sae.cfg.layer, d_sae=sae.cfg.d_sae, n_tokens=s.n_tokens, features=explained,
        scores=rows, summary=summary, planted=planted,
        scorer_ids={n: m.model_id if m is not None else TOKEN_MATCH
                    for n, m in scorer_models.items()},
        explainer_id=explainer.model_id if explainer is not None else None,
        seconds=seconds, sae_path=sae_path, data=dict(data) if data is not None else None,
        manifest=model_manifest(model, seed=cfg.seed, config=recorded,
                                dataset_hash=(data or {}).get("sha256") or sha256_texts(docs)),
    )
    return result


def summarize(rows: Sequence[FeatureScore], cfg: AutoInterpConfig) -> list[ScoreSummary]:
    """Per group × explainer × scorer × method: mean AUROCs and difference (bootstrap CIs
    over features) and the share of features explained (Wilson CI)."""
    out = []
    keys = sorted({(r.group, r.explainer, r.scorer, r.method) for r in rows},
                  key=lambda k: (GROUPS.index(k[0]), cfg.explainers.index(k[1]),
                                 cfg.scorer_list.index(k[2]), k[3]))
    for i, (g, xp, sn, mth) in enumerate(keys):
        part = [r for r in rows if (r.group, r.explainer, r.scorer, r.method) == (g, xp, sn, mth)]
        seed = cfg.seed + 7919 * (i + 1)
        au, au_ci = mean_ci([r.auroc for r in part], n_boot=cfg.n_boot, seed=seed)
        sh, sh_ci = mean_ci([r.shuffled_auroc for r in part], n_boot=cfg.n_boot, seed=seed)
        df, df_ci = mean_ci([r.difference for r in part], n_boot=cfg.n_boot, seed=seed)
        k = sum(r.explained for r in part)
        out.append(ScoreSummary(
            group=g, explainer=xp, scorer=sn, method=mth, n_features=len(part), auroc=au,
            auroc_ci95=au_ci, shuffled_auroc=sh, shuffled_auroc_ci95=sh_ci, difference=df,
            difference_ci95=df_ci, explained=k / len(part) if part else float("nan"),
            explained_ci95=list(wilson(k, len(part))), explained_n=len(part)))
    return out


__all__ = ["check_features", "derangement", "fuzz_marks", "random_sae", "run_autointerp",
           "summarize"]
