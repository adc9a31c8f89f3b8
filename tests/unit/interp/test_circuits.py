"""Activation patching, AtP, AtP*, DLA: tiny random model (fast) and the real model (slow)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from interp.circuits import (
    PatchConfig,
    Task,
    atp,
    atp_star,
    components,
    direct_logit_attribution,
    exact_patch,
    load_task,
    pair_lds,
    run_patch,
    tokenize_task,
)
from interp.circuits.attribution import key_path
from interp.circuits.patching import EMBED, ld_direction, run_ld
from interp.circuits.tasks import Pair
from interp.errors import InterpError
from tests.support.bad_inputs import Case, Ctx, M, _pair

# Tiny-model pairs: one word differs (one position); the prompts differ in length.
FOX = ("The quick brown fox jumps over the lazy", "The quick brown dog jumps over the lazy")


def _task(pairs: list[Pair]) -> Task:
    return Task("test", "test", "0" * 64, pairs)


@pytest.fixture(scope="module")
def tiny_pairs() -> list[Pair]:
    return tiny_pair_list()


def tiny_pair_list() -> list[Pair]:
    """Two pairs for the tiny model: one word differs; the prompts differ in length."""
    fox = Pair(FOX[0], FOX[1], " dog", " fox",
               [("start", 0, 15), ("animal", 15, 19), ("rest", 19, 34), ("END", 34, 39)])
    cap = Pair("The capital of France is the", "The capital of Italy is the", " Paris", " Rome",
               [("start", 0, 14), ("animal", 14, 21), ("rest", 21, 24), ("END", 24, 28)])
    return [fox, cap]


@pytest.fixture(scope="module")
def tiny_tt(tiny_model, tiny_pairs):
    return tokenize_task(tiny_model, _task(tiny_pairs))


def _write(tmp_path: Path, rows: list[dict], name: str = "pairs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------- tasks (fast)
def test_positions_follow_labels_and_end_is_last(tiny_tt):
    assert tiny_tt.positions == ["start", "animal", "rest", "END"]
    assert tiny_tt.lengths[0] != tiny_tt.lengths[1]  # different lengths align by role
    # every real token belongs to exactly one position; END is the final token only
    counts = tiny_tt.position_mask.sum(1)
    assert torch.equal(counts.bool(), tiny_tt.attention_mask)
    assert (counts <= 1).all()
    assert tiny_tt.position_mask[:, -1].sum(-1).tolist() == [1, 1]
    assert tiny_tt.position_mask[:, -1, -1].all()


def test_unlabelled_pairs_count_positions_from_the_end(tiny_model, tiny_pairs):
    pairs = [replace(p, labels=None) for p in tiny_pairs]
    tt = tokenize_task(tiny_model, _task(pairs))
    shortest = min(tt.lengths)
    assert tt.positions[-1] == "END" and tt.positions[0] == f"END-{shortest - 1}"
    assert len(tt.positions) == shortest


@pytest.mark.parametrize(("row", "message"), [
    ({"clean": "The capital of France is", "corrupted": "The capital of the Italy is",
      "answer": " Paris", "wrong": " Rome"}, "tokenize to 5 and 6 tokens"),
    ({"clean": "The capital of France is", "corrupted": "The capital of Italy is",
      "answer": " Parisian", "wrong": " Rome"}, "must be one token"),
    ({"clean": "The capital of France is", "corrupted": "The capital of France is",
      "answer": " Paris", "wrong": " Rome"}, "are the same tokens"),
])
def test_bad_pairs_fail_with_one_line(tiny_model, tmp_path, row, message):
    task = load_task(str(_write(tmp_path, [row])))
    with pytest.raises(InterpError, match=message) as err:
        tokenize_task(tiny_model, task)
    assert "\n" not in str(err.value)


def test_bad_task_files(tmp_path):
    with pytest.raises(InterpError, match="holds no pairs"):
        load_task(str(_write(tmp_path, [], "empty.jsonl")))
    with pytest.raises(InterpError, match="unknown task"):
        load_task("no-such-task")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(InterpError, match="not valid JSON"):
        load_task(str(bad))
    with pytest.raises(InterpError, match="contiguous"):
        load_task(str(_write(tmp_path, [{
            "clean": "ab cd", "corrupted": "ab ce", "answer": " x", "wrong": " y",
            "labels": [["a", 0, 2], ["END", 3, 5]]}], "gap.jsonl")))


# ------------------------------------------------------- exact patching (fast)
def _normalised(raw, clean, corr):
    return (raw - corr[:, None]) / (clean - corr)[:, None]


def test_ld_is_the_models_own_logit_difference(tiny_model, tiny_tt):
    d = ld_direction(tiny_model, tiny_tt.answer, tiny_tt.wrong)
    ld, _ = run_ld(tiny_model, tiny_tt.clean_ids, tiny_tt.attention_mask, d)
    logits = tiny_model.logits(tiny_tt.clean_ids, tiny_tt.attention_mask)[:, -1]
    rows = torch.arange(len(tiny_tt))
    ref = logits[rows, tiny_tt.answer] - logits[rows, tiny_tt.wrong]
    torch.testing.assert_close(ld, ref, atol=1e-5, rtol=1e-5)


def test_patching_anchors(tiny_model, tiny_tt):
    """Embedding at the differing position = 1; last layer's resid at END = clean run."""
    clean, corr = pair_lds(tiny_model, tiny_tt, 8)
    last = tiny_model.n_layers - 1
    comps = components("resid", [EMBED, last], 4, len(tiny_tt.positions), False)
    raw = exact_patch(tiny_model, tiny_tt, "resid", comps, batch_size=5, progress=False)
    norm = _normalised(raw, clean, corr).reshape(2, 2, -1)  # pairs, layer, position
    animal, end = tiny_tt.positions.index("animal"), tiny_tt.positions.index("END")
    torch.testing.assert_close(norm[:, 0, animal], torch.ones(2), atol=1e-4, rtol=0)
    torch.testing.assert_close(raw.reshape(2, 2, -1)[:, 1, end], clean, atol=1e-4, rtol=0)
    # positions where clean and corrupted agree change nothing
    same = [i for i, p in enumerate(tiny_tt.positions) if p != "animal"]
    assert norm[:, 0, same].abs().max() < 1e-4
    # noising: the last layer's END from the corrupted run gives the corrupted LD
    raw_n = exact_patch(tiny_model, tiny_tt, "resid", comps, direction="noise",
                        batch_size=3, progress=False)
    torch.testing.assert_close(raw_n.reshape(2, 2, -1)[:, 1, end], corr, atol=1e-4, rtol=0)


@pytest.mark.parametrize("family", ["resid", "attn", "mlp", "heads"])
def test_patching_a_run_into_itself_changes_nothing(tiny_model, tiny_tt, family):
    same = replace(tiny_tt, corrupted_ids=tiny_tt.clean_ids)
    layers = list(range(tiny_model.n_layers))
    comps = components(family, layers, 4, len(same.positions), family == "heads")
    raw = exact_patch(tiny_model, same, family, comps, batch_size=len(comps), progress=False)
    for i in range(len(same)):  # a batch is one pair repeated: the reference is the same batch
        ids = same.clean_ids[[i] * len(comps)]
        d = ld_direction(tiny_model, same.answer[[i] * len(comps)], same.wrong[[i] * len(comps)])
        ref, _ = run_ld(tiny_model, ids, same.attention_mask[[i] * len(comps)], d)
        assert (raw[i] - ref).abs().max() < 1e-5


def test_batch_size_does_not_change_effects(tiny_model, tiny_tt):
    comps = components("heads", [0, 1, 2], 4, len(tiny_tt.positions), True)
    one = exact_patch(tiny_model, tiny_tt, "heads", comps, batch_size=1, progress=False)
    many = exact_patch(tiny_model, tiny_tt, "heads", comps, batch_size=16, progress=False)
    torch.testing.assert_close(one, many, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_prefix_reuse_is_bit_equal_and_skips_blocks(which, request, tiny_pairs, monkeypatch):
    """Chunks that run only from their first patched block equal whole passes of the same
    chunks to the bit (and the bridge path's), for every family and both directions; the
    blocks before a chunk's start run once per pair, not once per chunk."""
    from interp.models.forward import PATH_ENV, runner_for

    model = request.getfixturevalue(which)
    tt = tokenize_task(model, _task(tiny_pairs))
    n = model.n_layers
    shadow = runner_for(model.bridge).shadow
    assert shadow is not None
    ran = {"n": 0}
    handle = shadow.model.layers[0].register_forward_hook(
        lambda *a: ran.__setitem__("n", ran["n"] + 1))
    try:
        for family, layers, per_pos, direction in [
            ("heads", list(range(n)), False, "denoise"),
            ("heads", list(range(n)), True, "noise"),
            ("resid", [EMBED, *range(n)], False, "denoise"),
            ("attn", list(range(n)), False, "noise"),
            ("mlp", list(range(n)), False, "denoise"),
        ]:
            comps = components(family, layers, 4, len(tt.positions), per_pos)
            bs = max(1, len(comps) // 4)  # several chunks per pair, the last one padded
            kw = {"direction": direction, "batch_size": bs, "progress": False}
            ran["n"] = 0
            fast = exact_patch(model, tt, family, comps, **kw)
            fast_runs = ran["n"]
            ran["n"] = 0
            whole = exact_patch(model, tt, family, comps, reuse_prefix=False, **kw)
            whole_runs = ran["n"]
            label = f"{family} {direction}"
            assert torch.equal(fast, whole), label
            chunks = -(-len(comps) // bs)
            size = -(-len(comps) // chunks)
            firsts = sorted(max(c.layer, 0) for c in comps)[::size]  # each chunk's start
            # cache_run + every chunk whole, against cache_run + one prefix per pair and
            # the chunks that start at block 0
            assert whole_runs == 1 + len(tt) * chunks, label
            assert fast_runs == 1 + len(tt) * (1 + firsts.count(0)), label
            assert fast_runs < whole_runs, label
            monkeypatch.setenv(PATH_ENV, "bridge")
            bridge = exact_patch(model, tt, family, comps, **kw)
            monkeypatch.delenv(PATH_ENV)
            assert torch.equal(fast, bridge), label
    finally:
        handle.remove()
    # the patches still act: the last layer's resid at END gives the clean run's LD
    clean, _ = pair_lds(model, tt, 8)
    comps = components("resid", list(range(n)), 4, len(tt.positions), False)
    raw = exact_patch(model, tt, "resid", comps, batch_size=2, progress=False)
    end = tt.positions.index("END")
    torch.testing.assert_close(raw.reshape(2, n, -1)[:, -1, end], clean, atol=1e-4, rtol=0)


def test_heads_sum_of_positions_matches_all_positions_when_linear(tiny_model, tiny_tt):
    """Patching one head at every position moves the LD; at no position it does not."""
    clean, corr = pair_lds(tiny_model, tiny_tt, 8)
    comps = components("heads", [2], 4, len(tiny_tt.positions), False)
    raw = exact_patch(tiny_model, tiny_tt, "heads", comps, batch_size=8, progress=False)
    assert torch.isfinite(raw).all()
    assert (raw - corr[:, None]).abs().max() > 1e-4  # some head of the last layer matters


# ----------------------------------------------------------------- AtP (fast)
def test_atp_is_zero_when_source_equals_base(tiny_model, tiny_tt):
    same = replace(tiny_tt, corrupted_ids=tiny_tt.clean_ids)
    for family in ("resid", "heads"):
        comps = components(family, [0, 1, 2], 4, len(same.positions), False)
        est = atp(tiny_model, same, family, comps, progress=False)
        assert est.abs().max() == 0
    comps = components("heads", [0, 1, 2], 4, len(same.positions), True)
    assert atp_star(tiny_model, same, comps, progress=False).abs().max() < 1e-9


def test_atp_gradient_matches_finite_difference(tiny_model, tiny_tt):
    """AtP's gradient: LD(a + εv) − LD(a) ≈ ε ∇·v at the last layer's MLP output."""
    from interp.circuits.attribution import _gradients

    name = "blocks.1.hook_mlp_out"
    sl = slice(0, 2)
    shapes = {name: (2, tiny_tt.clean_ids.shape[1], tiny_model.d_model)}
    acts, grads, ld0 = _gradients(tiny_model, tiny_tt, sl, tiny_tt.corrupted_ids, [name], shapes)
    torch.manual_seed(0)
    v = torch.randn(shapes[name]) * tiny_tt.attention_mask[..., None]
    eps = 1e-3
    d = ld_direction(tiny_model, tiny_tt.answer, tiny_tt.wrong)
    with torch.no_grad():
        ld1, _ = run_ld(tiny_model, tiny_tt.corrupted_ids, tiny_tt.attention_mask, d,
                        [(name, lambda t, hook: t + eps * v)])
    fd = (ld1 - ld0) / eps
    pred = (grads[name] * v).sum((1, 2))
    torch.testing.assert_close(fd, pred, atol=2e-2, rtol=2e-2)
    assert acts[name].shape == shapes[name]


def test_key_path_closed_form_matches_recomputed_softmax():
    torch.manual_seed(0)
    b, h, q = 2, 3, 5
    scores = torch.randn(b, h, q, q, dtype=torch.float64) * 3
    allowed = torch.ones(q, q, dtype=torch.bool).tril()[None, None].expand(b, h, q, q)
    a0 = torch.softmax(scores.masked_fill(~allowed, -math.inf), -1)
    g = torch.randn(b, h, q, q, dtype=torch.float64)
    delta = torch.randn(b, h, q, q, dtype=torch.float64) * 4
    fast = key_path(g, a0, delta, allowed)
    for k in range(q):
        s = scores.clone()
        s[..., k] = s[..., k] + delta[..., k]
        a1 = torch.softmax(s.masked_fill(~allowed, -math.inf), -1)
        brute = ((a1 - a0) * g).sum(-1)
        brute = torch.where(allowed[..., k], brute, torch.zeros_like(brute))
        torch.testing.assert_close(fast[..., k], brute, atol=1e-10, rtol=1e-8)


def test_recall_and_ties():
    import numpy as np

    from interp.circuits.agreement import recall_at_k, tied_at_k

    exact = np.array([1.0, 0.999, 0.995, 0.5, 0.1, 0.0])
    approx = np.array([0.2, 0.1, 0.9, 0.8, 0.0, 0.0])
    assert recall_at_k(exact, approx, 0.0, 2) == 0.0  # exact top 2 = {0, 1}; approx = {2, 3}
    assert recall_at_k(exact, approx, 0.0, 4) == 1.0
    assert tied_at_k(exact, 0.0, 2) == 3  # 0.995 is within 0.01 of the 2nd largest
    assert tied_at_k(exact, 0.0, 4) == 1 + 3  # everything ≥ 0.49
    assert recall_at_k(exact, 1.0 - approx, 1.0, 2) == 0.0  # noising ranks by |effect - 1|


# ------------------------------------------------------------------ DLA (fast)
def test_dla_sums_to_the_logit_difference(tiny_model, tiny_tt):
    res = direct_logit_attribution(tiny_model, tiny_tt)
    assert res.heads.shape == (2, tiny_model.n_layers, 4)
    total = res.heads.sum((1, 2)) + res.mlp.sum(1) + res.embed
    torch.testing.assert_close(total, res.total, atol=1e-4, rtol=1e-4)
    assert res.max_sum_error < 1e-4


# -------------------------------------------------------- run_patch + CLI (fast)
def test_run_patch_both_on_tiny(tiny_model, tiny_pairs, tmp_path):
    rows = [{"clean": p.clean, "corrupted": p.corrupted, "answer": p.answer, "wrong": p.wrong,
             "labels": [list(x) for x in p.labels or []]} for p in tiny_pairs]
    path = _write(tmp_path, rows)
    res = run_patch(tiny_model, PatchConfig(task=str(path), family="heads", method="both",
                                            n_boot=100, top_heads=2), progress=False)
    d = res.to_dict()
    assert d["layers"] == [0, 1, 2] and d["heads"] == [0, 1, 2, 3]
    assert len(d["effect_mean"]) == 3 and len(d["effect_mean"][0]) == 4
    for key in ("spearman", "recall_at_10", "recall_at_30", "seconds_exact", "seconds_atp",
                "atp_effect_mean", "atp_star_spearman"):
        assert key in d, key
    assert len(res.attention) == 2
    # each component name stands for the component at its place in the effects' axes
    flat = res.primary.mean.flatten()
    for i, name in enumerate(res.component_names()):
        c = res.component(name)
        assert float(res.primary.mean[c.layer, c.head]) == float(flat[i]), name
    assert res.component("L2H3").layer == 2 and res.component("L2H3").head == 3
    with pytest.raises(InterpError, match="not a component of this result"):
        res.component("L9H0")
    res_r = run_patch(tiny_model, PatchConfig(task=str(path), family="resid", n_boot=100),
                      progress=False)
    dr = res_r.to_dict()
    assert dr["positions"] == ["start", "animal", "rest", "END"]
    assert dr["embed_effect"][1] == pytest.approx(1.0, abs=1e-4)
    c = res_r.component("resid1@animal")
    assert (c.layer, c.head, c.position) == (1, -1, 1)
    assert float(res_r.primary.mean[1, 1]) == dict(res_r.top_components(99))["resid1@animal"]


def test_config_errors(tiny_model):
    # the config checks itself when built, so a bad one fails before any model work
    for settings, msg in [
        ({"family": "neurons"}, "unknown family"),
        ({"method": "atp-star", "family": "resid"}, "heads only"),
        ({"direction": "sideways"}, "unknown direction"),
        ({"per_position": True, "family": "mlp"}, "per-position"),
    ]:
        with pytest.raises(InterpError, match=msg):
            run_patch(tiny_model, PatchConfig(**settings))
        with pytest.raises(InterpError, match=msg):
            run_patch(tiny_model, **settings)


def test_patch_config_checks_what_the_cli_checked():
    """The CLI's ranges (--limit ≥ 1, --min-gap ≥ 0, --bootstrap ≥ 100, --top-heads ≥ 0)
    are the config's own checks, named by field."""
    from interp.schema import ConfigError

    for settings, msg in [({"limit": 0}, "limit must be ≥ 1"),
                          ({"min_gap": -0.5}, "min_gap must be ≥ 0"),
                          ({"n_boot": 10}, "n_boot must be ≥ 100"),
                          ({"top_heads": -1}, "top_heads must be ≥ 0"),
                          ({"batch_size": 0}, "batch_size must be ≥ 1")]:
        with pytest.raises(ConfigError, match=msg):
            PatchConfig(**settings)
    cfg = PatchConfig(family="heads", method="atp-star", per_position=True)
    with pytest.raises(ConfigError, match="heads only"):
        cfg.replace(family="mlp")




# ------------------------------------------------------ effects by group (fast)
def _grouped(rng: torch.Generator, n: int, means: list[float], sd: float = 0.05) -> torch.Tensor:
    return torch.tensor(means)[None] + sd * torch.randn(n, len(means), generator=rng)


def test_group_effects_flags_sign_and_size_not_noise():
    """Two groups of 12 pairs, five components: A flips sign between the groups and
    cancels out overall (still looked at), B is alike in both, C differs in size, D and E
    are small noise; only A (sign) and C (size) differ beyond the noise."""
    from interp.circuits.groups import group_effects

    rng = torch.Generator().manual_seed(0)
    x = torch.cat([_grouped(rng, 12, [0.6, 0.5, 0.2, 0.0, 0.01]),
                   _grouped(rng, 12, [-0.6, 0.5, 0.9, 0.0, -0.01])])
    labels = ["abba"] * 12 + ["baba"] * 12
    g = group_effects(x, list("ABCDE"), labels, column="template", method="exact",
                      baseline=0.0, k=2)
    assert g.groups == ["abba", "baba"] and g.n_pairs == [12, 12]
    by = {c.component: c for c in g.components}
    assert abs(float(x[:, 0].mean())) < 0.05  # A cancels in the overall mean ...
    assert set(by) >= {"A", "B", "C"}  # ... and is looked at through its groups' top k
    assert by["A"].differs and by["A"].kind == "sign"
    assert by["C"].differs and by["C"].kind == "size"
    assert not by["B"].differs and by["B"].kind == ""
    assert by["A"].ci95[0] is not None and by["A"].ci95[0][0] > 0 > by["A"].ci95[1][1]
    assert [c.component for c in g.differing] == [c for c in by if by[c].differs]
    warnings = g.warnings()
    assert len(warnings) == 2
    assert any(w.startswith("A's exact effect differs in sign") for w in warnings)
    assert "2 of" in g.verdict() and "A (sign)" in g.verdict()


def test_group_effects_null_groups_and_edge_cases():
    """Groups that mean nothing flag (almost) nothing; constant groups and one-pair groups
    are handled."""
    from interp.circuits.groups import group_effects

    rng = torch.Generator().manual_seed(1)
    flagged = 0
    for _ in range(20):
        x = torch.randn(24, 30, generator=rng) + torch.linspace(-1, 1, 30)
        labels = [str(i % 3) for i in range(24)]
        g = group_effects(x, [f"c{i}" for i in range(30)], labels, column="random",
                          method="exact", baseline=0.0)
        flagged += bool(g.differing)
    assert flagged <= 3, flagged  # family-wise 5% per trial: ~1 of 20 expected
    # constant within groups: different values differ (p = 0), equal ones do not
    x = torch.tensor([[1.0, 2.0]] * 3 + [[1.0, 3.0]] * 3)
    g = group_effects(x, ["same", "diff"], ["a"] * 3 + ["b"] * 3, column="c",
                      method="exact", baseline=0.0)
    by = {c.component: c for c in g.components}
    assert by["same"].p_value == 1.0 and not by["same"].differs
    assert by["diff"].p_value == 0.0 and by["diff"].differs
    # a group of one pair has no interval and is left out of the test
    x = torch.randn(5, 2, generator=rng)
    g = group_effects(x, ["u", "v"], ["a", "a", "a", "a", "b"], column="c", method="exact",
                      baseline=0.0)
    assert all(c.ci95[1] is None and c.p_value is None for c in g.components)
    assert "too few pairs" in g.verdict()
    with pytest.raises(ValueError, match="do not match"):
        group_effects(x, ["u"], ["a"] * 5, column="c", method="exact", baseline=0.0)


def test_run_patch_groups_by_a_task_column(tiny_model, tiny_pairs, tmp_path):
    """``group_by`` names a column; ``auto`` takes ``template``; a missing column is one
    line before any pass; the groups round-trip through results.json."""
    from interp.circuits.pairs import group_column
    from interp.circuits.results import GroupEffects
    from interp.schema.convert import from_data

    rows = []
    for i in range(6):
        p = tiny_pairs[i % 2]
        rows.append({"clean": p.clean, "corrupted": p.corrupted, "answer": p.answer,
                     "wrong": p.wrong, "kind": ["fox", "capital"][i % 2], "template": i % 3,
                     "note": {"nested": "ignored"}})
    path = _write(tmp_path, rows)
    task = load_task(str(path))
    assert task.column_names() == ["kind", "template"]  # a non-scalar column is not one
    assert task.groups("template") == ["0", "1", "2", "0", "1", "2"]
    assert group_column(task, "auto") == "template" and group_column(task, "none") is None
    res = run_patch(tiny_model, PatchConfig(task=str(path), family="heads", group_by="kind",
                                            n_boot=100, top_heads=0, dla=False, min_gap=0),
                    progress=False)
    g = res.groups
    assert g is not None and g.column == "kind" and g.groups == ["fox", "capital"]
    assert g.n_pairs == [3, 3] and g.method == "exact"
    # each group's mean is the mean of its own pairs' effects
    c = g.components[0]
    j = res.component_names().index(c.component)
    flat = res.exact.normalised.reshape(6, -1) if res.exact is not None else None
    assert flat is not None
    assert c.mean[0] == pytest.approx(float(flat[0::2, j].double().mean()), abs=1e-9)
    verdict = (res.headline().verdict or "").split("\n")
    assert any(line.startswith("groups (kind)") for line in verdict)
    back = from_data(GroupEffects, json.loads(json.dumps(res.to_dict()))["groups"])
    assert back == g
    assert res.to_dict()["groups"]["groups"] == ["fox", "capital"]
    with pytest.raises(InterpError, match="group column 'family' is missing on pair 0"):
        run_patch(tiny_model, PatchConfig(task=str(path), group_by="family"), progress=False)
    no_groups = run_patch(tiny_model, PatchConfig(task=str(path), group_by="none",
                                                  family="heads", n_boot=100, top_heads=0,
                                                  dla=False), progress=False)
    assert no_groups.groups is None and "groups" not in no_groups.to_dict()


def test_name_order_twins_and_task_write(tmp_path):
    """Each shipped IOI pair gets its BABA twin (same tokens to predict), grouped by order;
    a task written to a file reads back the same, columns included."""
    from interp.circuits.tasks import name_order_twins

    task = load_task("ioi", 3)
    twins = name_order_twins(task)
    assert [p.columns["order"] for p in twins.pairs] == ["ABBA", "BABA"] * 3
    a, b = twins.pairs[0], twins.pairs[1]
    io, s = a.answer.strip(), a.wrong.strip()
    assert f"{io} and {s}" in a.clean and f"{s} and {io}" in b.clean
    assert b.clean.endswith(a.clean.split(",")[-1])  # the second clause is unchanged
    assert (b.answer, b.wrong) == (a.answer, a.wrong) and b.labels is None
    assert b.columns["template"] == a.columns["template"]
    back = load_task(str(twins.write(tmp_path / "twins.jsonl")))
    assert [(p.clean, p.corrupted, p.answer, p.wrong, p.columns) for p in back.pairs] == [
        (p.clean, p.corrupted, p.answer, p.wrong, p.columns) for p in twins.pairs]
    labelled = load_task(str(task.write(tmp_path / "same.jsonl")))
    assert labelled.pairs == task.pairs
    bad = Task("t", "t", "0" * 64, [Pair("A and B went", "B and A went", " C", " D")])
    with pytest.raises(InterpError, match="not ABBA"):
        name_order_twins(bad)


def test_a_folder_named_like_a_task_is_not_the_task(tmp_path, monkeypatch):
    """`interp patch --task ioi --out ioi/` creates the folder `ioi/` before the task is
    read; the shipped task is still the one meant (a folder is never a task file)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ioi").mkdir()
    assert len(load_task("ioi", limit=3).pairs) == 3
    (tmp_path / "nope").mkdir()
    with pytest.raises(InterpError, match="unknown task 'nope'"):
        load_task("nope")


# ------------------------------------------------------------------ bad inputs


def _binary(ctx: Ctx, name: str) -> str:
    (ctx.tmp / name).write_bytes(bytes(range(256)) * 4)
    return str(ctx.tmp / name)


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("patch-unequal-lengths", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair("The capital of the Italy is")),
        "--out", c.out], "tokenize to 5 and 6 tokens"),
    Case("patch-multi-token-answer", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair(answer=" Parisian")),
        "--out", c.out], "must be one token"),
    Case("patch-unknown-family", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--family", "neurons",
        "--out", c.out], "unknown family"),
    Case("patch-empty-task", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", ""), "--out", c.out], "holds no pairs"),
    Case("patch-unknown-task", lambda c: [
        "patch", *M(c), "--task", "no-such-task", "--out", c.out], "unknown task"),
    Case("patch-group-column-missing", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--group-by", "family",
        "--out", c.out], "group column 'family' is missing on pair 0"),
    Case("patch-atp-star-not-heads", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--method", "atp-star",
        "--out", c.out], "heads only"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("patch-binary-task", lambda c: [
        "patch", *M(c), "--task", _binary(c, "t.jsonl"), "--out", c.out], "not UTF-8 text"),
]
