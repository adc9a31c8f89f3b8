"""``run_autointerp``: contexts → explanations → scores, beside their null controls.

1. One model pass over held-out text keeps the residual stream at the SAE's hook
   (:func:`~saes.autointerp.contexts.scan`); the SAE's features, a random-weight SAE's (as
   many as the SAE's) and planted features (token-level and concept-level) are all read
   from it.
2. Each feature's contexts (:func:`~saes.autointerp.contexts.feature_examples`): the
   explainer sees only the explain half of the windows, the scorers only the score half.
3. Explanations: the programmatic baseline always, and a language-model explainer when
   one is named (one batched generation call).
4. Every explanation is scored on the feature's held-out texts by each scorer and method,
   and so is a **shuffled** explanation (another feature's of the same group, a seeded
   derangement) on the same texts: the difference of the two AUROCs, with its bootstrap
   interval over the texts and its paired permutation p-value, is the feature's score.
   A second shuffled explanation (the derangement applied twice) against the first is
   the null control of "explained" (Benjamini–Hochberg over a group's features).
5. Planted features' reference explanations (their tokens; their concept's name) are
   scored too: each scorer × method that does not recover them **failed its planted
   control** (:func:`planted_controls`), and its rows are marked as not findings.
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
from interp.stats.tests import benjamini_hochberg
from saes.autointerp.contexts import (
    FeatureExamples,
    concept_activations,
    explain_half,
    feature_examples,
    plant_concepts,
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
    tokens_text,
)
from saes.autointerp.metrics import (
    auroc,
    balanced_accuracy,
    compare_groups,
    difference_p_value,
    mean_ci,
    paired_difference,
)
from saes.autointerp.results import (
    GROUPS,
    PLANTED_LEVELS,
    PROGRAMMATIC,
    REFERENCE,
    AutoInterpConfig,
    AutoInterpResult,
    ExplainedFeature,
    FeatureScore,
    PlantedRecovery,
    ScorerControl,
    ScoreSummary,
)
from saes.autointerp.scoring import PROMPTS, marked_text, scores
from saes.autointerp.token_scorer import token_scores
from saes.loading import LoadedSAE, check_sae, unpack_sae
from saes.results import select_features
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
    """``name``'s model: the explained model for 'self' (or its own id), else loaded once,
    on the explained model's device and in its dtype (``--dtype`` sets all of them)."""
    if name in (SELF, model.model_id):
        return model
    if name not in loaded:
        loaded[name] = load(name, device=model.device, dtype=model.dtype)
    return loaded[name]


def run_autointerp(
    model: Model,
    sae: SparseAutoencoder | LoadedSAE,
    docs: Sequence[str],
    config: AutoInterpConfig | None = None,
    *,
    data: Mapping[str, Any] | None = None,
    models: Mapping[str, Model] | None = None,
    concepts: Mapping[str, Sequence[str]] | None = None,
    progress: bool | None = None,
    **settings: Any,
) -> AutoInterpResult:
    """Explain and score SAE features against null controls (see the module doc).

    ``docs``: held-out text. ``models``: explainer and scorer models already loaded, by
    the names the config uses (others are loaded with :func:`interp.load`). ``concepts``:
    the concepts to plant (name → member words; default
    :data:`~saes.autointerp.contexts.CONCEPTS`). Settings come from ``config`` or keyword
    arguments named as its fields.
    """
    cfg = AutoInterpConfig.resolve(config, settings)
    sae, loaded_sae = unpack_sae(sae)
    check_sae(model, sae)
    pool: dict[str, Model] = dict(models or {})
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    warnings: list[str] = []
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
    kw: dict[str, Any] = dict(ctx_len=cfg.ctx_len, n_explain=cfg.n_explain, n_score=cfg.n_score,
              n_hard=cfg.n_hard, n_quantiles=cfg.n_quantiles, seed=cfg.seed)
    groups: dict[str, list[FeatureExamples]] = {}
    acts, _ = sae_activations(sae, s.resid, features)
    assert acts is not None
    groups["sae"] = feature_examples(model, s.ids, acts, features, **kw)
    n_random = (sum(_scorable(fe) is None for fe in groups["sae"])
                if cfg.random_features is None else cfg.random_features)
    if n_random:  # as many scorable features as asked, of a seeded sample of 3× as many
        rand = random_sae(sae, s.resid, cfg.seed)
        _, rfires = sae_activations(rand, s.resid)
        rfeat = select_features(f"alive:{3 * n_random}", rfires, cfg.seed)
        racts, _ = sae_activations(rand, s.resid, rfeat)
        assert racts is not None
        rex = feature_examples(model, s.ids, racts, rfeat, **kw) if rfeat else []
        groups["random"] = ([fe for fe in rex if _scorable(fe) is None][:n_random]
                            or rex[:n_random])
        del rand, racts
    planted_sets = plant_token_sets(model, s.ids, cfg.planted, cfg.seed) if cfg.planted else []
    if planted_sets:
        pacts = planted_activations(s.ids, planted_sets)
        groups["planted"] = feature_examples(model, s.ids, pacts,
                                             list(range(len(planted_sets))), **kw)
    planted_cons = (plant_concepts(model, s.ids, cfg.planted_concepts,
                                   dict(concepts) if concepts is not None else None)
                    if cfg.planted_concepts else [])
    if planted_cons:
        half = explain_half(s.ids.shape[0], torch.Generator().manual_seed(cfg.seed))
        cacts, excl = concept_activations(model, s.ids, planted_cons, half)
        groups["concept"] = feature_examples(model, s.ids, cacts,
                                             list(range(len(planted_cons))), exclude=excl, **kw)
    for what, asked, got in (("token-level planted", cfg.planted, len(planted_sets)),
                             ("concept-level planted", cfg.planted_concepts,
                              len(planted_cons))):
        if got < asked:
            warnings.append(f"{got} of the {asked} {what} features asked for could be planted "
                            "in the scanned text")
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
                ef.explanations[REFERENCE] = tokens_text([repr(t) for t in ef.planted_tokens])
            if g == "concept":
                c = planted_cons[fe.feature]
                ef.concept, ef.planted_tokens, ef.held_out_tokens = c.name, c.shown, c.held_out
                ef.explanations[REFERENCE] = c.name
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

    # ---- shuffled controls: a derangement within each group (across groups when alone);
    # the null control's second shuffle is the derangement applied twice (a single cycle,
    # so with 3 or more members it is neither the feature nor its first shuffle)
    scored = [e for e in explained if e.skipped is None]
    for g in GROUPS:
        members = [e for e in scored if e.group == g]
        others = [e for e in scored if e not in members]
        if len(members) >= 2:
            perm = derangement(len(members), cfg.seed + GROUPS.index(g))
            for i, m in enumerate(members):
                d = members[perm[i]]
                m.shuffled_from, m.shuffled_group = d.feature, d.group
                if len(members) >= 3:
                    d2 = members[perm[perm[i]]]
                    m.null_from, m.null_group = d2.feature, d2.group
        else:  # a group of one borrows from the others (none: the check below refuses)
            for m in members:
                if others:
                    d = others[cfg.seed % len(others)]
                    m.shuffled_from, m.shuffled_group = d.feature, d.group
    if len(scored) < 2:
        raise InterpError(f"{len(scored)} feature(s) have enough contexts to score, and the "
                          "shuffled-explanation control needs at least 2: raise --tokens or "
                          "ask for more features")
    n_sae = sum(e.group == "sae" for e in scored)
    n_rand = sum(e.group == "random" for e in scored)
    if n_random and n_rand != n_sae:
        warnings.append(f"the random-weight control has {n_rand} scored features against "
                        f"{n_sae} of the SAE's: not the same size")

    # ---- scores
    t2 = time.perf_counter()
    ex = {(g, fe.feature): fe for g in GROUPS for fe in groups.get(g, [])}
    jobs = [(sn, mth, xp, e) for sn in scorer_models for mth in cfg.method_list
            for e in scored for xp in cfg.explainers_of(e.group) if xp in e.explanations]
    rows: list[FeatureScore] = []
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("scoring", total=len(jobs), info="")
        for k, (sn, mth, xp, e) in enumerate(jobs):
            fe = ex[(e.group, e.feature)]
            donor = by_key[(e.shuffled_group or e.group, e.shuffled_from or 0)]
            marks = fuzz_marks(fe, cfg.seed + e.feature)
            sc = scorer_models[sn]
            labels = fe.labels
            a = _score(sc, e.explanations[xp], fe, mth, marks, cfg.batch_size).tolist()
            b = _score(sc, _text_of(donor, xp), fe, mth, marks, cfg.batch_size).tolist()
            at, ab, diff, ci = paired_difference(labels, a, b, n_boot=cfg.n_boot,
                                                 seed=cfg.seed + k)
            row = FeatureScore(
                group=e.group, feature=e.feature, explainer=xp, scorer=sn, method=mth,
                auroc=at, shuffled_auroc=ab, difference=diff, difference_ci95=ci,
                balanced_accuracy=balanced_accuracy(labels, a),
                n_positive=sum(labels), n_negative=len(labels) - sum(labels),
                p_value=difference_p_value(labels, a, b, n_resamples=cfg.n_permutations,
                                           seed=cfg.seed + k))
            if e.null_from is not None:
                d2 = by_key[(e.null_group or e.group, e.null_from)]
                c = _score(sc, _text_of(d2, xp), fe, mth, marks, cfg.batch_size).tolist()
                row.null_difference = ab - auroc(labels, c)
                row.null_p_value = difference_p_value(labels, b, c,
                                                      n_resamples=cfg.n_permutations,
                                                      seed=cfg.seed + k + 1)
            rows.append(row)
            bar.update(task, advance=1, info=f"{sn} {mth} {xp}")
    seconds["score"] = time.perf_counter() - t2

    summary = summarize(rows, cfg)
    kinds = {n: "token match" if m is None else "language model"
             for n, m in scorer_models.items()}
    planted, concept_rec, controls = planted_controls(explained, rows, ex, cfg, kinds)
    for srow in summary:
        srow.scorer_passed = any(c.passed for c in controls
                                 if (c.scorer, c.method) == (srow.scorer, srow.method))
    seconds["total"] = time.perf_counter() - t0
    sae_path = str(loaded_sae.path) if loaded_sae is not None else None
    recorded: dict[str, Any] = {**cfg.to_dict(), **({"sae": sae_path} if sae_path else {})}
    result = AutoInterpResult(
        config=cfg, model_id=model.model_id, hook_point=sae.cfg.hook_point,
        layer=sae.cfg.layer, d_sae=sae.cfg.d_sae, n_tokens=s.n_tokens, features=explained,
        scores=rows, summary=summary, planted=planted, concepts=concept_rec,
        controls=controls,
        scorer_ids={n: m.model_id if m is not None else TOKEN_MATCH
                    for n, m in scorer_models.items()},
        explainer_id=explainer.model_id if explainer is not None else None,
        seconds=seconds, sae_path=sae_path, data=dict(data) if data is not None else None,
        manifest=model_manifest(model, seed=cfg.seed, config=recorded,
                                dataset_hash=(data or {}).get("sha256") or sha256_texts(docs)),
    )
    for w in warnings:
        result.warn(w)
    return result


def _text_of(donor: ExplainedFeature, explainer: str) -> str:
    """A shuffled control's text: the donor's explanation by the same explainer (its
    programmatic one where the donor, of another group, has no reference)."""
    return donor.explanations.get(explainer) or donor.explanations[PROGRAMMATIC]


def summarize(rows: Sequence[FeatureScore], cfg: AutoInterpConfig) -> list[ScoreSummary]:
    """Per group × explainer × scorer × method: mean AUROCs and difference (bootstrap CIs
    over features); each feature explained by Benjamini–Hochberg at ``cfg.fdr`` over the
    group's features, the share explained (Wilson CI) and the same share on the null
    control (its null rate); for the SAE's features, the comparison with the random-weight
    SAE's differences (Mann–Whitney). Sets each row's q-values and ``explained``."""
    out = []
    keys = sorted({(r.group, r.explainer, r.scorer, r.method) for r in rows},
                  key=lambda k: (GROUPS.index(k[0]), [*cfg.explainers, REFERENCE].index(k[1]),
                                 cfg.scorer_list.index(k[2]), k[3]))
    for i, (g, xp, sn, mth) in enumerate(keys):
        part = [r for r in rows if (r.group, r.explainer, r.scorer, r.method) == (g, xp, sn, mth)]
        rej, q = benjamini_hochberg([r.p_value for r in part], cfg.fdr)
        nrej, nq = benjamini_hochberg([r.null_p_value for r in part], cfg.fdr)
        for r, a, b, c, d in zip(part, rej, q, nrej, nq, strict=True):
            r.explained, r.q_value, r.null_explained, r.null_q_value = a, b, c, d
        seed = cfg.seed + 7919 * (i + 1)
        au, au_ci = mean_ci([r.auroc for r in part], n_boot=cfg.n_boot, seed=seed)
        sh, sh_ci = mean_ci([r.shuffled_auroc for r in part], n_boot=cfg.n_boot, seed=seed)
        df, df_ci = mean_ci([r.difference for r in part], n_boot=cfg.n_boot, seed=seed)
        k = sum(r.explained for r in part)
        n_null = sum(r.null_p_value == r.null_p_value for r in part)
        k_null = sum(r.null_explained for r in part)
        vs, vs_p = float("nan"), float("nan")
        if g == "sae":
            rand = [r.difference for r in rows
                    if (r.group, r.explainer, r.scorer, r.method) == ("random", xp, sn, mth)]
            if rand:
                vs, vs_p = compare_groups([r.difference for r in part], rand)
        out.append(ScoreSummary(
            group=g, explainer=xp, scorer=sn, method=mth, n_features=len(part), auroc=au,
            auroc_ci95=au_ci, shuffled_auroc=sh, shuffled_auroc_ci95=sh_ci, difference=df,
            difference_ci95=df_ci, explained=k / len(part) if part else float("nan"),
            explained_ci95=list(wilson(k, len(part))), explained_n=len(part),
            null_explained=k_null / n_null if n_null else float("nan"),
            null_explained_ci95=list(wilson(k_null, n_null)) if n_null else
            [float("nan")] * 2, null_explained_n=n_null, vs_random=vs, vs_random_p=vs_p))
    return out


def planted_controls(
    explained: Sequence[ExplainedFeature], rows: Sequence[FeatureScore],
    ex: Mapping[tuple[str, int], FeatureExamples], cfg: AutoInterpConfig,
    kinds: Mapping[str, str],
) -> tuple[list[PlantedRecovery], list[PlantedRecovery], list[ScorerControl]]:
    """The planted features (token level, concept level) with what each scorer × method
    recovered, and each scorer × method's planted control (:class:`ScorerControl`): a
    planted feature is recovered when its reference explanation is explained (against a
    shuffled reference, Benjamini–Hochberg) with AUROC ≥ ``cfg.planted_auroc``."""
    ref = {(r.group, r.feature, r.scorer, r.method): r for r in rows if r.explainer == REFERENCE}
    recs: dict[str, list[PlantedRecovery]] = {"planted": [], "concept": []}
    for e in explained:
        if e.group not in PLANTED_LEVELS or e.planted_tokens is None:
            continue
        fe = ex[(e.group, e.feature)]
        cue_tokens = {c.token for c in token_cues([*fe.explain, *fe.explain_negatives])}
        want = (set(e.planted_tokens) if e.group == "planted" else
                {f" {w.split('/')[0]}" for w in e.planted_tokens})
        named = bool(want) and (want <= cue_tokens if e.group == "planted" else
                                all(t in cue_tokens or t.title() in cue_tokens for t in want))
        p = PlantedRecovery(feature=e.feature, tokens=list(e.planted_tokens),
                            explanation=e.explanations.get(PROGRAMMATIC, ""), named=named,
                            level=PLANTED_LEVELS[e.group],
                            reference=e.explanations.get(REFERENCE, ""),
                            held_out=list(e.held_out_tokens or []))
        for (g, f, sn, mth), r in ref.items():
            if (g, f) != (e.group, e.feature):
                continue
            key = f"{sn} · {mth}"
            p.auroc[key] = r.auroc
            p.recovered_by[key] = bool(r.explained and r.auroc >= cfg.planted_auroc)
            if mth == "detection":
                p.detection_auroc[sn] = r.auroc
        recs[e.group].append(p)
    controls = []
    for sn, kind in kinds.items():
        for mth in cfg.method_list:
            # the planted features scored (a feature with too few contexts is not)
            tok = [p for p in recs["planted"] if f"{sn} · {mth}" in p.auroc]
            con = [p for p in recs["concept"] if f"{sn} · {mth}" in p.auroc]
            kt, kc = sum(p.recovered(sn, mth) for p in tok), sum(p.recovered(sn, mth) for p in con)
            need = [("token", kt, len(tok))] + ([("concept", kc, len(con))]
                                                if kind == "language model" else [])
            missing = [lv for lv, _, n in need if n == 0]
            short = [f"{lv} level {k} of {n}" for lv, k, n in need if n and k < n]
            if missing:
                reason = ("no " + " or ".join(missing) + "-level planted feature was scored to "
                          "check it")
            elif short:
                reason = "recovered " + ", ".join(short) + " planted features"
            else:
                reason = "recovered every planted feature it is held to"
            if kind != "language model" and con:
                reason += (f"; concept level {kc} of {len(con)} (a token matcher is not held to "
                           "it)")
            controls.append(ScorerControl(
                scorer=sn, method=mth, kind=kind, token_recovered=kt, token_n=len(tok),
                concept_recovered=kc, concept_n=len(con), passed=not missing and not short,
                reason=reason))
    return recs["planted"], recs["concept"], controls


__all__ = ["check_features", "derangement", "fuzz_marks", "planted_controls", "random_sae",
           "run_autointerp", "summarize"]
