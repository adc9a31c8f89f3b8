"""Interchange interventions and DAS on the tiny random model (fast)."""

from __future__ import annotations

import pytest
import torch

from interp.causal import (
    interchange,
    interchange_lds,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.circuits import components, exact_patch, pair_lds, tokenize_task
from interp.errors import InterpError
from tests.support.bad_inputs import Case, M, _pair, _probe_rows, _sae_artifact
from tests.unit.interp.test_circuits import _task, tiny_pair_list


@pytest.fixture(scope="module")
def tt(tiny_model):
    return tokenize_task(tiny_model, _task(tiny_pair_list()))


def test_full_interchange_is_exact_resid_patching(tiny_model, tt):
    """With the identity basis the intervention is exact patching of the residual stream
    at that position; with no basis (k = 0) it is the base run."""
    d = tiny_model.d_model
    where = position_mask(tt, "animal")
    _, corr = pair_lds(tiny_model, tt, 8)
    for layer in range(tiny_model.n_layers - 1):
        base, source = residuals(tiny_model, tt, layer)
        full = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                               torch.eye(d))
        comps = components("resid", [layer], 4, len(tt.positions), False)
        ref = exact_patch(tiny_model, tt, "resid", comps, batch_size=8, progress=False)
        torch.testing.assert_close(full, ref[:, tt.positions.index("animal")], atol=1e-4,
                                   rtol=1e-4)
        none = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                               torch.zeros(d, 1))
        torch.testing.assert_close(none, corr, atol=1e-4, rtol=1e-4)


def test_interchange_only_moves_the_subspace():
    g = torch.Generator().manual_seed(0)
    base, source = torch.randn(3, 5, 8, generator=g), torch.randn(3, 5, 8, generator=g)
    where = torch.zeros(3, 5, dtype=torch.bool)
    where[:, 2] = True
    basis = random_basis(8, 2, seed=1)
    torch.testing.assert_close(basis.T @ basis, torch.eye(2), atol=1e-6, rtol=0)
    out = interchange(base, source, where, basis)
    assert torch.equal(out[:, [0, 1, 3, 4]], base[:, [0, 1, 3, 4]])
    proj = basis @ basis.T
    torch.testing.assert_close(out[:, 2] @ proj, source[:, 2] @ proj, atol=1e-5, rtol=0)
    torch.testing.assert_close(out[:, 2] - out[:, 2] @ proj, base[:, 2] - base[:, 2] @ proj,
                               atol=1e-5, rtol=0)


def test_das_learns_a_direction_that_beats_random(tiny_model, tt):
    """On two pairs, DAS's one direction moves the logit difference towards the source's
    label far more than a random direction does, and its basis stays orthonormal."""
    layer = 0
    base, source = residuals(tiny_model, tt, layer)
    where = position_mask(tt, "animal")
    basis, losses = train_das(tiny_model, tt, [0, 1], layer, base, source, where, dim=1,
                              steps=60, lr=0.05, seed=0)
    assert basis.shape == (tiny_model.d_model, 1)
    torch.testing.assert_close(basis.T @ basis, torch.eye(1), atol=1e-5, rtol=0)
    assert losses[-1] < losses[0]
    _, corr = pair_lds(tiny_model, tt, 8)
    das = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where, basis)
    rand = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                           random_basis(tiny_model.d_model, 1, seed=3))
    assert ((das - corr) - (rand - corr)).min() > 0
    with pytest.raises(InterpError, match="dim"):
        train_das(tiny_model, tt, [0], layer, base, source, where, dim=tiny_model.d_model)
    with pytest.raises(InterpError, match="unknown position"):
        position_mask(tt, "nowhere")


def _tiny_task_file(tmp_path, binary: bool = False) -> str:
    """Six pairs in three templates; ``binary``: every pair the fox one (two labels)."""
    import json

    rows = []
    for i in range(6):
        p = tiny_pair_list()[0 if binary else i % 2]
        rows.append({"clean": p.clean, "corrupted": p.corrupted, "answer": p.answer,
                     "wrong": p.wrong, "labels": [list(x) for x in p.labels or []],
                     "template": i % 3})
    path = tmp_path / f"t{int(binary)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_run_das_on_tiny(tiny_model, tmp_path):
    """run_das end to end on a tiny task file: every pair held out once, every rate with
    its interval over the templates, the controls present, the result's table and figure,
    bad settings refused."""
    from interp.causal import DASConfig, run_das
    from interp.schema import ConfigError

    path = _tiny_task_file(tmp_path)
    res = run_das(tiny_model, DASConfig(task=str(path), layers=[0, 1], position="animal",
                                        steps=5, seeds=2, folds=3), progress=False)
    assert [r.layer for r in res.layers] == [0, 1]
    assert res.n_pairs == 6 and res.split == "3 folds by template, 3 templates"
    assert res.n_clusters == 3 and "3 templates" in res.intervals_text()
    for r in res.layers:
        for rate in (r.das, r.random, r.full, r.none, r.in_span):
            assert rate is not None and 0 <= rate.value <= 1 and rate.n == 6
            assert rate.clusters == 3
            lo, hi = rate.ci95
            assert lo is not None and hi is not None and lo <= rate.value <= hi
        assert len(r.das_seeds) == 2 and r.das_seeds[0] == r.das.value
        # both pair types occur in every fold's training pairs: all six are scored
        assert r.control is not None and r.control.n == 6 and r.control_types == 2
        assert r.control_chance is not None and 0.5 <= r.control_chance <= 1
        assert r.selectivity is not None and r.span_gap is not None
        assert r.span_share is not None and 0 <= r.span_share <= 1 + 1e-6
    d = res.to_dict()
    assert d["layers"][0]["das"]["iia_ci95"] == res.layers[0].das.ci95
    assert d["layers"][0]["das"]["iia_clusters"] == 3
    assert list(res.to_frame()["layer"]) == [0, 1]
    assert "best layer" in (res.headline().verdict or "")
    assert res.figure() is not None
    assert res.layers[0].probe_accuracy is None  # four label tokens: no binary concept
    binary = run_das(tiny_model, DASConfig(task=_tiny_task_file(tmp_path, True), layers=[1],
                                           position="animal", steps=3, folds=3,
                                           control=False), progress=False)
    (r,) = binary.layers
    assert r.probe_accuracy is not None and r.probe_accuracy.n == 2 * binary.n_pairs
    assert r.probe_direction is not None and r.mean_difference is not None
    assert r.control is None and r.selectivity is None
    assert "probe direction" in binary.headline().columns
    with pytest.raises(ConfigError, match="folds"):
        DASConfig(folds=1)
    with pytest.raises(ConfigError, match="span_variance"):
        DASConfig(span_variance=0.0)
    with pytest.raises(InterpError, match="dim"):
        run_das(tiny_model, task=str(path), dim=tiny_model.d_model)
    with pytest.raises(InterpError, match="unknown position"):
        run_das(tiny_model, task=str(path), position="nowhere", progress=False)


def test_cli_causal_das_writes_report_and_results(tiny_model_dir, tmp_path, capsys):
    """The verb is glue: its results.json is run_das's, its report holds the figure."""
    import json

    from tests.support.cli_runner import run

    out = tmp_path / "out"
    code, stdout, err = run(["causal", "das", "--model", str(tiny_model_dir), "--task",
                             _tiny_task_file(tmp_path), "--layers", "0,1", "--position",
                             "animal", "--steps", "3", "--folds", "3", "--out",
                             str(out)], capsys)
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    assert [x["layer"] for x in data["layers"]] == [0, 1]
    assert data["manifest"]["config"]["steps"] == 3
    page = (out / "report.html").read_text()
    assert 'data-figure="iia"' in page and "Held-out IIA by layer" in page
    assert (out / "figures").is_dir()
    assert "best layer" in stdout


def test_concept_directions_are_unit_and_separate_the_labels(tiny_model, tmp_path):
    """The probe and class-mean directions are unit vectors; the mean difference points
    from the base prompts' label to the source's (projections ordered on training data)."""
    from interp.causal.das import concept_directions
    from interp.circuits import load_task

    tt2 = tokenize_task(tiny_model, load_task(_tiny_task_file(tmp_path, True)))
    base, source = residuals(tiny_model, tt2, 1)
    where = position_mask(tt2, "animal")
    got = concept_directions(tt2, base, source, where, [0, 1, 2, 3], [4, 5], seed=0)
    assert got is not None
    right, probe, diff = got
    assert right.shape == (4,) and set(right.tolist()) <= {0.0, 1.0}  # 2 pairs × 2 prompts
    for v in (probe, diff):
        assert v.shape == (tiny_model.d_model, 1)
        assert abs(float(v.norm()) - 1) < 1e-5
    pooled = lambda h: (h * where[..., None]).sum(1) / where.sum(1, keepdim=True)  # noqa: E731
    sign = 1 if int(tt2.answer[0]) > int(tt2.wrong[0]) else -1  # y = 1 is the larger id
    gap = sign * ((pooled(source) - pooled(base))[:4] @ diff).mean()
    assert float(gap) > 0
    tt4 = tokenize_task(tiny_model, load_task(_tiny_task_file(tmp_path)))
    b4, s4 = residuals(tiny_model, tt4, 1)
    assert concept_directions(tt4, b4, s4, position_mask(tt4, "animal"), [0, 1], [2], 0) is None


def test_counterfactual_spelling_and_probe_set_pairs(tiny_model, tmp_path):
    """base/source rows read as corrupted/clean pairs; a probe set's minimal pairs become
    a counterfactual task grouped by the deciding word pair (unpaired rows skipped)."""
    import json

    from interp.causal.pairs import pairs_from_probe_set
    from interp.circuits import load_task

    cf = tmp_path / "cf.jsonl"
    cf.write_text(json.dumps({"base": "The capital of Italy is the", "source":
                              "The capital of France is the", "base_label": " Rome",
                              "source_label": " Paris", "family": "capitals"}) + "\n")
    (p,) = load_task(str(cf)).pairs
    assert (p.clean, p.corrupted, p.answer, p.wrong) == (
        "The capital of France is the", "The capital of Italy is the", " Paris", " Rome")
    assert p.columns == {"family": "capitals"}
    targets = {"0": " fox", "1": " dog"}
    rows = [
        {"text": "The quick brown fox jumps", "label": 1, "group": "brown",
         "target_tokens": targets},
        {"text": "The quick lazy fox jumps", "label": 0, "group": "lazy",
         "target_tokens": targets},
        {"text": "A row with no partner", "label": 1, "group": "x", "target_tokens": targets},
        {"text": "The lazy dog sat", "label": 0, "group": "lazy", "target_tokens": targets},
        {"text": "The quick dog sat", "label": 1, "group": "quick", "target_tokens": targets},
    ]
    path = tmp_path / "probe.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = pairs_from_probe_set(path, tiny_model, solved=False)
    assert [(q.clean, q.corrupted) for q in task.pairs] == [
        ("The quick brown fox jumps", "The quick lazy fox jumps"),
        ("The quick dog sat", "The lazy dog sat")]
    assert [q.columns["template"] for q in task.pairs] == ["lazy/brown", "lazy/quick"]
    assert all((q.answer, q.wrong) == (" dog", " fox") for q in task.pairs)
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps(rows[2]) + "\n")
    with pytest.raises(InterpError, match="no minimal pairs"):
        pairs_from_probe_set(empty, tiny_model)
    # run_das and its verb take the probe set itself (the pairs the model solves)
    from interp.causal.pairs import is_probe_set, load_counterfactual_task

    assert is_probe_set(str(path)) and not is_probe_set(str(cf)) and not is_probe_set("ioi")
    assert load_counterfactual_task(str(cf), tiny_model).pairs[0].answer == " Paris"
    with pytest.raises(InterpError, match="no minimal pairs"):
        load_counterfactual_task(str(empty), tiny_model)


def test_das_above_the_full_interchange_is_flagged():
    """A layer whose DAS interval lies wholly above the full interchange's is an illusion,
    warned about; overlapping intervals are not."""
    from interp.causal import DASConfig, DASResult, LayerIIA
    from interp.causal.das import rate

    def layer(i: int, das: int, full: int) -> LayerIIA:
        r = [rate(torch.tensor([1.0] * k + [0.0] * (40 - k))) for k in (das, 0, full, 0)]
        return LayerIIA(i, r[0], [r[0].value], r[1], r[2], r[3], None, 0.0)

    res = DASResult(DASConfig(), "t", "0" * 64, "END", 40, "random",
                    layers=[layer(4, 20, 2), layer(8, 6, 3), layer(22, 40, 39)])
    assert [r.layer for r in res.illusions()] == [4]
    res.add_warnings()
    assert len(res.warnings) == 1 and res.warnings[0].startswith("layer 4: DAS's IIA 0.50")


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("causal-das-dim-too-large", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--dim", "64",
        "--out", c.out], "must be below d_model (64)"),
    Case("causal-das-unknown-position", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--position",
        "country", "--out", c.out], "unknown position 'country'"),
    Case("causal-das-one-fold", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--folds", "1",
        "--out", c.out], "1 is not in the range x>=2"),
    Case("causal-das-span-variance-zero", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--span-variance",
        "0", "--out", c.out], "span-variance must be above 0 and at most 1"),
    Case("causal-das-unknown-task", lambda c: [
        "causal", "das", *M(c), "--task", "no-such-task", "--out", c.out], "unknown task"),
    Case("causal-das-sae-of-another-model", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sae",
        str(_sae_artifact(c, "sae-other", 64, "other-model")), "--out", c.out],
        "was trained on model 'other-model'"),
    Case("causal-das-sae-latents-too-many", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sae",
        str(_sae_artifact(c, "sae-tiny", 64, c.tiny)), "--sae-latents", "64",
        "--out", c.out], "--sae-latents 64 must be between 1 and d_in − 1 (63)"),
    Case("causal-das-probe-set-without-pairs", lambda c: [
        "causal", "das", *M(c), "--task", c.file("p.jsonl", _probe_rows([0, 1, 0, 1])),
        "--out", c.out], "no minimal pairs"),
]
