"""Automatic interpretation's controls can fail (tiny model, fast): each control fires on a
method broken on purpose, beside the real (or a constructed correct) method passing it.

* the planted control refuses a scorer that ignores the explanation (even one that finds
  the planted features from the texts alone), and passes a scorer that reads it;
* the programmatic scorer passes the token-level planted features and fails the
  concept-level ones (a token matcher cannot pass them by construction);
* an explainer that answers random words is not distinguishable from shuffled;
* Benjamini–Hochberg on known p-values; the paired permutation test's null rate on a null
  construction is near the nominal level;
* the SAE-vs-random-weight comparison (Mann–Whitney) fires on a real gap only.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.stats.tests import benjamini_hochberg
from saes.autointerp import AutoInterpConfig, run_autointerp
from saes.autointerp import explain as ai_run
from saes.autointerp.metrics import compare_groups, difference_p_value
from saes.autointerp.results import FeatureScore
from saes.autointerp.token_scorer import parse_cues, token_scores
from saes.sae import SAEConfig, SparseAutoencoder
from tests.support.text_fixtures import paragraphs

#: Concepts whose words the synthetic paragraphs hold (tests/support/text_fixtures.WORDS);
#: each is several tokens for the tiny tokenizer, so the multi-token path runs too.
CONCEPTS = {"colours": ("red", "blue"), "numbers written as words": ("seven", "twelve"),
            "landforms": ("river", "mountain")}
DOCS = paragraphs(400, seed=5)
CFG = dict(features="alive:5", tokens=3200, seq_len=40, ctx_len=8, n_explain=6, n_score=8,
           n_hard=2, planted=5, planted_concepts=3, n_boot=100, batch_size=8,
           methods="detection")


@pytest.fixture(scope="module")
def sae(tiny_model) -> SparseAutoencoder:
    s = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=32,
                                    hook_point=tiny_model.resid_hook(1), layer=1,
                                    model_id=tiny_model.model_id))
    s.init_weights(torch.Generator().manual_seed(0))
    ids = pack_windows(tiny_model, DOCS, seq_len=40, n_windows=40, seed=0)
    x = forward_with_hooks(tiny_model, ids, None, [s.cfg.hook_point])[0][s.cfg.hook_point]
    with torch.no_grad():  # each feature fires on about 5% of tokens
        s.b_enc.data -= s.pre_acts(x[:, 1:].reshape(-1, x.shape[-1])).quantile(0.95, dim=0)
    return s


def _ends(model, words) -> list[tuple[str, ...]]:  # noqa: ANN001
    """Each word's spellings (" red", " Red") as their token strings."""
    return [tuple(model.token_strs(model.encode_continuation(v)))
            for w in words for v in (f" {w}", f" {w.capitalize()}")]


def _holds(tokens: list[str], spellings: list[tuple[str, ...]]) -> float:
    """1 where a spelling ends in the context (its last tokens, cut at the context's start)."""
    for sp in spellings:
        for j in range(len(tokens)):
            k = min(len(sp), j + 1)
            if tuple(tokens[j + 1 - k:j + 1]) == sp[len(sp) - k:]:
                return 1.0
    return 0.0


def _concept_oracle(model, explanation: str, fe) -> torch.Tensor:  # noqa: ANN001
    """A scorer that READS the explanation: a concept's name scores the contexts holding
    any of its words (held-out ones included); a token list scores its tokens' matches."""
    if explanation in CONCEPTS:
        sp = _ends(model, CONCEPTS[explanation])
        return torch.tensor([_holds(c.tokens, sp) for c in fe.scoring])
    return token_scores(explanation, fe.scoring) if parse_cues(explanation) else \
        torch.zeros(len(fe.scoring))


def _text_only(model, fe) -> torch.Tensor:  # noqa: ANN001
    """A scorer that IGNORES the explanation but finds every concept feature's contexts
    from the text alone (any concept word): the same score for every explanation."""
    sp = _ends(model, [w for ws in CONCEPTS.values() for w in ws])
    return torch.tensor([_holds(c.tokens, sp) for c in fe.scoring])


def _run(tiny_model, sae, monkeypatch, scorer=None, explainer=None, **over):  # noqa: ANN001, ANN202
    """run_autointerp with the 'self' scorer replaced by ``scorer(explanation, fe)`` and/or
    the programmatic explainer by ``explainer(contexts)`` (methods broken on purpose)."""
    real = ai_run._score
    if scorer is not None:
        monkeypatch.setattr(ai_run, "_score", lambda sc, expl, fe, mth, marks, bs: (
            scorer(expl, fe) if sc is not None else real(sc, expl, fe, mth, marks, bs)))
    if explainer is not None:
        monkeypatch.setattr(ai_run, "programmatic_explanation", explainer)
    return run_autointerp(tiny_model, sae, DOCS, AutoInterpConfig(**{**CFG, **over}),
                          concepts=CONCEPTS, progress=False)


@pytest.fixture(scope="module")
def real(tiny_model, sae):
    """The real programmatic path, and a concept-reading scorer as 'self'."""
    with pytest.MonkeyPatch.context() as mp:
        return _run(tiny_model, sae, mp, scorer=lambda e, fe: _concept_oracle(tiny_model, e, fe),
                    scorers="programmatic,self")


def test_concept_features_are_planted_with_held_out_words(real):
    """Every concept is planted; its scored contexts hold only held-out words and its
    explain contexts only the words shown."""
    assert {c.reference for c in real.concepts} == set(CONCEPTS)
    for c in real.concepts:
        assert c.level == "concept" and c.held_out and c.tokens
        assert not set(c.held_out) & set(c.tokens)
        f = real.feature("concept", c.feature)
        assert f is not None and f.skipped is None and f.explanations["reference"] == c.reference


def test_programmatic_scorer_passes_tokens_and_fails_concepts(real):
    """The real programmatic path recovers every token-level planted feature and none of
    the concept-level ones: the concept's name quotes no token (AUROC 0.5 exactly), and the
    programmatic explanation names only words shown, which no scored context holds."""
    for method in ("detection",):
        c = real.control("programmatic", method)
        assert c is not None and c.passed, c
        assert c.token_recovered == c.token_n == len(real.planted) > 0
        assert c.concept_n == len(real.concepts) > 0 and c.concept_recovered == 0
    for p in real.concepts:
        assert p.auroc["programmatic · detection"] == 0.5
    own = [r for r in real.scores if r.group == "concept" and r.scorer == "programmatic"
           and r.explainer == "programmatic"]
    info = [(real.feature("concept", r.feature).explanations["programmatic"], r.auroc,  # type: ignore[union-attr]
             r.p_value) for r in own]
    assert own and not any(r.explained for r in own), info


def test_a_scorer_that_reads_the_explanation_passes(real):
    """The control can pass: a scorer that reads the concept's name recovers the concept
    features on held-out words, and its rows are summarised as language-model rows."""
    c = real.control("self", "detection")
    assert c is not None and c.kind == "language model"
    assert c.passed, c
    assert c.concept_recovered == c.concept_n > 0
    assert any(s.scorer == "self" and s.scorer_passed for s in real.summary)
    assert any(row[3] == "self" for row in real.headline().table)


def test_a_scorer_that_ignores_the_explanation_is_refused(tiny_model, sae, monkeypatch):
    """A scorer whose score does not depend on the explanation, even one that finds every
    planted feature's contexts (AUROC near 1 for the true explanation), scores a shuffled
    explanation the same: it recovers no planted feature, fails its control, and none of its
    rows reaches the headline's table, the verdict or the explanations file's labels."""
    from saes.autointerp.store import explanation_lines

    res = _run(tiny_model, sae, monkeypatch, scorer=lambda e, fe: _text_only(tiny_model, fe),
               scorers="programmatic,self")
    c = res.control("self", "detection")
    assert c is not None and not c.passed
    assert c.token_recovered == 0 and c.concept_recovered == 0
    ref = [r for r in res.scores if r.scorer == "self" and r.explainer == "reference"
           and r.group == "concept"]
    assert ref and min(r.auroc for r in ref) > 0.7  # it finds them: AUROC alone would pass
    assert all(r.difference == 0 and not r.explained for r in ref)
    assert not any(s.scorer_passed for s in res.summary if s.scorer == "self")
    assert all(row[3] != "self" for row in res.headline().table)
    verdict = res.headline().verdict or ""
    assert verdict.startswith("No finding about the features") and "self · detection" in verdict
    for line in explanation_lines(res)[1:]:
        assert all(s["scorer_passed"] is False for s in line["scores"] if s["scorer"] == "self")
    # beside it the programmatic scorer still passes its own (token-level) control
    prog = res.control("programmatic", "detection")
    assert prog is not None and prog.passed


def test_random_word_explainer_is_not_distinguishable(tiny_model, sae, monkeypatch, real):
    """An explainer that answers random words of its contexts scores at chance: its
    planted features' difference over shuffled holds 0 and the row says 'not
    distinguishable from shuffled', where the real explainer's planted row is explained."""
    rng = random.Random(0)
    ids = pack_windows(tiny_model, DOCS, seq_len=40, n_windows=40, seed=0)
    pool = sorted({t for t in tiny_model.token_strs(ids.flatten().unique()) if t.strip()})

    def random_words(contexts, **_):  # noqa: ANN001, ANN202
        """Two words of the text at random, whatever the contexts."""
        return "the tokens " + ", ".join(repr(t) for t in rng.sample(pool, 2))

    broken = _run(tiny_model, sae, monkeypatch, explainer=random_words, scorers="programmatic")
    row = broken.summary_of("planted", "programmatic", "programmatic", "detection")
    good = real.summary_of("planted", "programmatic", "programmatic", "detection")
    assert row is not None and good is not None and row.n_features == good.n_features >= 5
    assert good.verdict == "explained" and good.difference_ci95[0] > 0.3
    lo, hi = row.difference_ci95
    assert lo <= 0 <= hi, (row.difference, row.difference_ci95)
    assert row.verdict == "not distinguishable from shuffled"
    assert row.explained <= 0.2


def test_benjamini_hochberg_on_known_p_values():
    """q_(i) = min over j ≥ i of p_(j)·m/j, by hand; NaN left out of the family."""
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
    rej, q = benjamini_hochberg(p, 0.05)
    want = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.0845714, 0.205]
    assert q == pytest.approx(want, rel=1e-5)
    assert rej == [True, True] + [False] * 6
    # every p below 0.05, none survives: p_(i) > i·α/m for every i
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.04, 0.05, 0.5])[0] == [False] * 6
    rej, q = benjamini_hochberg([0.001, float("nan"), 0.9])
    assert rej == [True, False, False] and q[0] == pytest.approx(0.002) and q[1] != q[1]


def test_null_rate_of_explained_is_near_nominal_on_a_null_construction():
    """Scores that do not depend on the explanation (fresh noise per explanation and text):
    the paired permutation test rejects about 5% of features uncorrected, and after
    Benjamini–Hochberg about none: the criterion's false-positive rate is at most nominal.
    Beside it, a real effect (the true explanation shifts the positives) is found."""
    rng = np.random.default_rng(0)
    labels = [1] * 10 + [0] * 15
    null_p, real_p = [], []
    for i in range(400):
        a, b = rng.normal(size=25), rng.normal(size=25)
        null_p.append(difference_p_value(labels, a.tolist(), b.tolist(), n_resamples=999,
                                         seed=i))
        real_p.append(difference_p_value(labels, (a + 1.5 * np.array(labels)).tolist(), b.tolist(),
                                         n_resamples=999, seed=i))
    raw = float(np.mean(np.array(null_p) <= 0.05))
    assert 0.02 <= raw <= 0.09, raw  # nominal 0.05 (binomial sd 0.011 at n = 400)
    assert np.mean(benjamini_hochberg(null_p, 0.05)[0]) <= 0.05
    assert np.mean(benjamini_hochberg(real_p, 0.05)[0]) > 0.5


def test_random_weight_comparison_fires_on_a_gap_only():
    """Mann–Whitney between SAE and random-weight features' differences: a real gap gives
    p < 0.05, two draws of one distribution do not; an SAE row above shuffled but not above
    random-weight features is not called explained."""
    from saes.autointerp.explain import summarize

    rng = np.random.default_rng(1)
    same = compare_groups(rng.normal(0.1, 0.1, 40).tolist(), rng.normal(0.1, 0.1, 40).tolist())
    gap = compare_groups(rng.normal(0.3, 0.1, 40).tolist(), rng.normal(0.1, 0.1, 40).tolist())
    assert same[1] > 0.05 and gap[1] < 1e-6 and gap[0] > 0.1

    def rows(group: str, mean: float) -> list[FeatureScore]:
        return [FeatureScore(group=group, feature=i, explainer="programmatic",
                             scorer="programmatic", method="detection", auroc=0.5 + d,
                             shuffled_auroc=0.5, difference=d, difference_ci95=[d, d],
                             balanced_accuracy=0.5, n_positive=10, n_negative=15, p_value=0.5)
                for i, d in enumerate(rng.normal(mean, 0.05, 30).tolist())]

    cfg = AutoInterpConfig(scorers="programmatic", n_boot=200)
    tied = {s.group: s for s in summarize(rows("sae", 0.2) + rows("random", 0.2), cfg)}
    apart = {s.group: s for s in summarize(rows("sae", 0.2) + rows("random", 0.0), cfg)}
    assert tied["sae"].difference_ci95[0] > 0
    assert tied["sae"].verdict == "above shuffled, not distinguishable from random-weight features"
    assert apart["sae"].verdict == "explained" and apart["sae"].vs_random_p < 0.05
