"""run_autointerp on the tiny random model (fast): the pipeline's invariants, its controls
and its bad inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from saes.autointerp import AutoInterpConfig, run_autointerp
from saes.autointerp.contexts import feature_examples, planted_activations
from saes.autointerp.explain import derangement
from saes.autointerp.metrics import auroc, balanced_accuracy, paired_difference
from saes.autointerp.scoring import marked_text
from saes.sae import SAEConfig, SparseAutoencoder
from tests.support.bad_inputs import (
    Case,
    Ctx,
    M,
    _sae_artifact,
    _text,
    _tiny_sae,
    _tiny_transcoders,
)
from tests.support.text_fixtures import TINY_TEXT

DOCS = [s.strip() + "." for s in TINY_TEXT.split(".") if s.strip()] * 20
CFG = dict(features="alive:4", tokens=1200, seq_len=40, ctx_len=8, n_explain=4, n_score=8,
           n_hard=2, planted=2, planted_concepts=0, n_boot=100, batch_size=8,
           methods="detection,fuzzing")


@pytest.fixture(scope="module")
def ai_sae(tiny_model) -> SparseAutoencoder:
    s = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=32,
                                    hook_point=tiny_model.resid_hook(1), layer=1,
                                    model_id=tiny_model.model_id))
    s.init_weights(torch.Generator().manual_seed(0))
    ids = pack_windows(tiny_model, DOCS, seq_len=40, n_windows=30, seed=0)
    x = forward_with_hooks(tiny_model, ids, None, [s.cfg.hook_point])[0][s.cfg.hook_point]
    with torch.no_grad():  # each feature fires on about 3% of tokens
        pre = s.pre_acts(x[:, 1:].reshape(-1, x.shape[-1]))
        s.b_enc -= pre.quantile(0.97, dim=0)
        s.b_enc[3] = -1e4  # dead
    return s


@pytest.fixture(scope="module")
def ai_result(tiny_model, ai_sae):
    return run_autointerp(tiny_model, ai_sae, DOCS, AutoInterpConfig(**CFG), progress=False)


def test_groups_scores_and_controls(ai_result):
    groups = {f.group for f in ai_result.features}
    assert groups == {"sae", "random", "planted"}
    scored = [f for f in ai_result.features if f.skipped is None]
    for f in scored:
        assert f.shuffled_from is not None
        assert (f.shuffled_group, f.shuffled_from) != (f.group, f.feature)
        assert f.explanations["programmatic"]
    # every scored feature × explainer × scorer × method has a row, and only those
    # programmatic explainer (and the planted features' reference) × (programmatic, self)
    # scorers × (detection, fuzzing)
    n_planted = sum(f.group == "planted" for f in scored)
    assert len(ai_result.scores) == (len(scored) + n_planted) * 2 * 2
    for r in ai_result.scores:
        assert r.difference == pytest.approx(r.auroc - r.shuffled_auroc)
        lo, hi = r.difference_ci95
        assert lo <= hi
        assert 0 < r.p_value <= 1 and r.explained == (r.q_value <= 0.05)
    assert {(s.group, s.method) for s in ai_result.summary} == \
        {(g, m) for g in groups for m in ("detection", "fuzzing")}
    # the random-weight control is the SAE's size (4 features each)
    assert sum(f.group == "random" for f in scored) == sum(f.group == "sae" for f in scored)
    # a control per scorer × method; the tiny random model cannot pass it
    assert {(c.scorer, c.method) for c in ai_result.controls} == \
        {(sn, m) for sn in ("programmatic", "self") for m in ("detection", "fuzzing")}
    data = json.loads(json.dumps(ai_result.to_dict()))
    assert data["planted_named_n"] == len(ai_result.planted)
    back = type(ai_result).from_dict(data)
    assert json.dumps(back.to_dict()["summary"]) == json.dumps(data["summary"])
    assert back.controls == ai_result.controls


def test_programmatic_explainer_names_planted_tokens(ai_result):
    """A planted feature fires exactly on its tokens: the programmatic explainer names them
    (the explain contexts hold every firing occurrence and negatives for precision)."""
    assert ai_result.planted
    for p in ai_result.planted:
        assert p.named, (p.tokens, p.explanation)
        for t in p.tokens:
            assert repr(t) in p.explanation


def test_planted_features_score_far_above_their_shuffled_control(ai_result):
    """The programmatic scorer matches the named tokens: a planted feature's own
    explanation detects its held-out contexts perfectly, another feature's does not."""
    rows = [r for r in ai_result.scores if r.group == "planted" and r.scorer == "programmatic"
            and r.method == "detection"]
    assert rows
    for r in rows:
        assert r.auroc == 1.0
        assert r.shuffled_auroc < 0.9 and r.explained
    assert all(p.recovered("programmatic") for p in ai_result.planted)
    assert ai_result.scorer_ids["programmatic"].startswith("token match")
    control = ai_result.control("programmatic", "detection")
    assert control is not None and control.passed, control


def test_token_scorer_reads_the_programmatic_explanations():
    from saes.autointerp.explainers import Cue
    from saes.autointerp.token_scorer import parse_cues, token_scores
    from saes.results import FeatureContext

    cues = [Cue(" bank", " river", 0.5, 1.0), Cue("'s", None, 0.2, 0.9), Cue('"', None, 0, 1)]
    text = "the tokens " + ", ".join(c.text() for c in cues)
    assert parse_cues(text) == [(" bank", " river"), ("'s", None), ('"', None)]
    assert parse_cues("words about cooking") == []
    ctx = [FeatureContext([" the", " river", " bank"], [0, 0, 1.0]),
           FeatureContext([" the", " city", " bank"], [0, 0, 0.0])]
    assert token_scores(text, ctx).tolist() == [1.0, 0.0]
    assert token_scores(text, ctx, [[False, False, True], [False, False, True]]).tolist() \
        == [0.5, -0.5]
    assert token_scores("words about rivers", ctx).tolist() == [0.0, 0.0]


def test_contexts_split_and_labels(tiny_model, ai_result):
    """Explain and score contexts come from disjoint windows; positives fire, negatives do
    not, hard negatives hold a top token."""
    ids = pack_windows(tiny_model, DOCS, seq_len=40, n_windows=30, seed=0)
    acts = planted_activations(ids, [[int(ids[0, 5])]])
    (fe,) = feature_examples(tiny_model, ids, acts, [0], ctx_len=8, n_explain=4, n_score=4,
                             n_hard=2, n_quantiles=2, seed=0)
    shown = {c.window for c in fe.explain + fe.explain_negatives}
    held = {c.window for c in fe.scoring}
    assert shown and held and not shown & held
    assert all(max(c.acts) > 0 for c in fe.positives)
    assert all(max(c.acts) == 0 for c in fe.negatives + fe.hard)
    top = {tiny_model.decode_token(t) for t in fe.top_tokens}
    assert all(top & set(c.tokens) for c in fe.hard)
    assert fe.labels == [1] * len(fe.positives) + [0] * (len(fe.negatives) + len(fe.hard))


def test_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40)
    s = rng.normal(size=40) + y
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s))
    assert auroc(y, np.round(s)) == pytest.approx(roc_auc_score(y, np.round(s)))
    assert np.isnan(auroc([1, 1], [0.1, 0.2]))
    assert balanced_accuracy([1, 1, 0, 0], [1.0, -1.0, -1.0, -1.0]) == pytest.approx(0.75)
    at, ab, d, (lo, hi) = paired_difference(list(y), list(s), list(-s), n_boot=200, seed=0)
    assert d == pytest.approx(at - ab) and lo <= d <= hi and lo > 0


def test_derangement_has_no_fixed_point():
    for n in (2, 3, 10):
        for seed in range(5):
            p = derangement(n, seed)
            assert sorted(p) == list(range(n)) and all(p[i] != i for i in range(n))


def test_marked_text():
    assert marked_text([" a", " b", " c", " d"], [False, True, True, False]) == " a<< b c>> d"
    assert marked_text([" a", " b"], [False, True]) == " a<< b>>"


def test_bad_inputs(tiny_model, ai_sae):
    with pytest.raises(InterpError, match="never fires"):
        run_autointerp(tiny_model, ai_sae, DOCS, AutoInterpConfig(**{**CFG, "features": "3,4"}),
                       progress=False)
    with pytest.raises(InterpError, match="out of range"):
        run_autointerp(tiny_model, ai_sae, DOCS, AutoInterpConfig(**{**CFG, "features": "99"}),
                       progress=False)
    with pytest.raises(InterpError):
        AutoInterpConfig(methods="detection,simulation")


def hostile(result):  # noqa: ANN001, ANN201
    """A copy of ``result`` whose first SAE feature's explanation is a script tag."""
    import copy

    out = copy.deepcopy(result)
    f = next(f for f in out.features if f.group == "sae" and f.explanations)
    f.explanations["programmatic"] = "<script>alert(1)</script>"
    return out, f


def test_report_and_explanations_file(ai_result, tmp_path):
    """The report renders every explanation escaped; explanations.jsonl reads back."""
    from reports.autointerp import autointerp_report
    from saes.autointerp.store import explanations_text, read_explanations

    ai_result, f = hostile(ai_result)
    page = autointerp_report(ai_result).html
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    (tmp_path / "explanations.jsonl").write_text(explanations_text(ai_result))
    got = read_explanations(tmp_path, d_sae=ai_result.d_sae)
    assert set(got) == {g.feature for g in ai_result.features
                        if g.group == "sae" and g.explanations}
    assert got[f.feature].explanations["programmatic"] == "<script>alert(1)</script>"
    with pytest.raises(InterpError, match="d_sae"):
        read_explanations(tmp_path, d_sae=ai_result.d_sae + 1)
    (tmp_path / "bad.jsonl").write_text('{"kind": "feature"}\n')
    with pytest.raises(InterpError, match="line 1"):
        read_explanations(tmp_path / "bad.jsonl")


def test_cli_sae_explain_writes_results_and_explanations_beside(tiny_model_dir, ai_sae,
                                                                 tmp_path, capsys):
    """`interp sae explain` on the tiny model: report, results, explanations.jsonl in --out
    and beside the SAE, which `interp sae browse` then shows."""
    from tests.support.cli_runner import run
    from tests.support.text_fixtures import paragraphs

    folder = ai_sae.save(tmp_path / "sae", manifest={})
    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(paragraphs(600, seed=3)))
    m = ["--model", str(tiny_model_dir), "--text", str(text)]
    code, out, err = run(["sae", "explain", str(folder), *m, "--tokens", "1200", "--seq-len",
                          "40", "--ctx-len", "8", "--n-explain", "4", "--n-score", "4",
                          "--features", "alive:4", "--scorer", "programmatic",
                          "--random-features", "2", "--planted", "2", "--bootstrap", "100",
                          "--out", str(tmp_path / "ex"), "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert {s["group"] for s in data["summary"]} >= {"sae", "planted"}
    for name in ("report.html", "results.json", "explanations.jsonl"):
        assert (tmp_path / "ex" / name).is_file()
    assert (folder / "explanations.jsonl").read_text() == \
        (tmp_path / "ex" / "explanations.jsonl").read_text()
    code, out, err = run(["sae", "browse", str(folder), *m, "--tokens", "400", "--seq-len",
                          "40", "--features", "all", "--out", str(tmp_path / "b")], capsys)
    assert code == 0, err
    assert "fb-expl" in (tmp_path / "b" / "browser.html").read_text()


def test_scorers_are_loaded_in_the_explained_models_dtype(tiny_model_dir):
    """A scorer named by path is loaded on the explained model's device and in its dtype
    (``--dtype bfloat16`` must reach a 7B scorer, not only the explained model)."""
    import torch

    import interp
    from saes.autointerp.explain import _load

    explained = interp.load(str(tiny_model_dir), dtype="bfloat16")
    loaded: dict = {}
    scorer = _load(str(tiny_model_dir) + "/", explained, loaded)
    assert scorer is not explained and scorer.dtype == torch.bfloat16
    assert _load("self", explained, loaded) is explained


# ------------------------------------------------------------------ bad inputs

_EXPLAIN = ["--tokens", "120", "--seq-len", "24", "--ctx-len", "8", "--n-score", "2",
            "--bootstrap", "100"]


def _dead_feature_sae(ctx: Ctx) -> str:
    """The tiny SAE with feature 2 unable to fire."""
    import torch

    from saes.loading import load_sae

    path = _sae_artifact(ctx, "dead_sae", 64, ctx.tiny)
    sae = load_sae(path).sae
    with torch.no_grad():
        sae.b_enc[2] = -1e4
    return str(sae.save(ctx.tmp / "dead_sae2", manifest={}))


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    # requests beyond the text: refused before the model runs
    Case("sae-explain-feature-out-of-range", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), *_EXPLAIN, "--features",
        "99", "--out", c.out], "feature index 99 is out of range"),
    Case("sae-explain-dead-feature", lambda c: [
        "sae", "explain", _dead_feature_sae(c), *M(c), "--text", _text(c), *_EXPLAIN,
        "--features", "0,2", "--out", c.out], "feature 2 never fires"),
    Case("sae-explain-base-explainer", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), *_EXPLAIN,
        "--explainer", c.no_template, "--out", c.out], "is not an instruct model"),
    Case("sae-explain-unknown-method", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--methods", "simulation",
        "--out", c.out], "detection, fuzzing or both"),
    Case("sae-explain-too-few-permutations", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--permutations", "10",
        "--out", c.out], "Invalid value for '--permutations': 10 is not in the range x>=99"),
    Case("sae-explain-tokens-beyond-text", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "automatic interpretation asks for tokens=65,536"),
    Case("sae-explain-transcoder-other-width", lambda c: [
        "sae", "explain", f"{_tiny_transcoders(c, [0], 32)}/layer-0", *M(c), "--text",
        _text(c), *_EXPLAIN, "--out", c.out], "reads activations of width d_in=32"),
    Case("sae-explain-transcoder-run-not-a-layer", lambda c: [
        "sae", "explain", _tiny_transcoders(c, [0, 1]), *M(c), "--text", _text(c),
        *_EXPLAIN, "--out", c.out], "holds transcoders for layers 0, 1: name one, e.g."),
]
