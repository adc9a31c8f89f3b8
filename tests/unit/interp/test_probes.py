"""interp.probing: honest held-out probes, baselines, ablation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from interp.errors import InterpError
from interp.probing.ablation import (
    direction_variance,
    projection_hook,
    run_ablation,
    variance_matched_directions,
)
from interp.probing.probes import (
    ProbeDataset,
    control_task_labels,
    control_task_types,
    fit_probe,
    load_probe_dataset,
    run_probe,
    save_probe,
    split_indices,
)
from tests.support.bad_inputs import Case, M, _probe_rows, _under_file

POS = ["good", "great", "nice", "fine", "happy", "lovely", "superb", "kind"]
NEG = ["bad", "awful", "sad", "poor", "ugly", "nasty", "dull", "rude"]
NOUNS = ["food", "film", "book", "room", "song", "game", "car", "view", "town", "park"]


def synthetic_sentiment() -> ProbeDataset:
    texts, labels, groups = [], [], []
    for adj in POS + NEG:
        for noun in NOUNS:
            texts.append(f"The {noun} was {adj}. Overall it was")
            labels.append(int(adj in POS))
            groups.append(adj)
    return ProbeDataset(texts, np.array(labels), groups, {0: " bad", 1: " good"},
                        "synthetic", ["0", "1"])


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------- data & splits
def test_shipped_default_dataset_loads():
    ds = load_probe_dataset()
    assert len(ds) >= 1000 and set(ds.labels.tolist()) == {0, 1}
    assert ds.groups is not None and ds.source.endswith("capitals_truefalse.jsonl")


@pytest.mark.parametrize(
    "rows, kwargs, message",
    [
        ([{"text": f"t{i}", "label": 1} for i in range(20)], {}, "single class"),
        ([{"text": f"t{i}", "label": i % 2} for i in range(6)], {}, "at least 10"),
        ([{"text": f"t{i}", "y": i % 2} for i in range(20)], {}, "no column 'label'"),
        ([{"text": f"t{i}", "label": i % 3} for i in range(30)], {}, "3 classes"),
        ([{"body": f"t{i}", "label": i % 2} for i in range(20)], {}, "no column 'text'"),
    ],
)
def test_dataset_errors(tmp_path, rows, kwargs, message):
    with pytest.raises(InterpError, match=message):
        load_probe_dataset(write_jsonl(tmp_path / "d.jsonl", rows), **kwargs)


def test_string_labels_and_custom_columns(tmp_path):
    rows = [{"sentence": f"s{i}", "y": "pos" if i % 2 else "neg"} for i in range(20)]
    ds = load_probe_dataset(write_jsonl(tmp_path / "d.jsonl", rows), text_column="sentence",
                            label_column="y")
    assert ds.label_names == ["neg", "pos"] and ds.labels.sum() == 10 and ds.groups is None


def test_subset_keeps_every_column_in_order(tmp_path):
    rows = [{"text": f"t{i}", "label": i % 2, "group": f"g{i // 4}", "city": f"c{i}"}
            for i in range(24)]
    ds = load_probe_dataset(write_jsonl(tmp_path / "d.jsonl", rows))
    keep = [i for i, g in enumerate(ds.groups or []) if g in {"g1", "g4"}][::-1]
    sub = ds.subset(keep)
    assert sub.texts == [f"t{i}" for i in keep]
    assert sub.labels.tolist() == [i % 2 for i in keep]
    assert sub.groups == [f"g{i // 4}" for i in keep] and sub.group_column == "group"
    assert sub.columns["city"] == [f"c{i}" for i in keep]
    assert sub.label_names == ds.label_names and sub.source == ds.source
    assert len(ds) == 24  # the original is untouched
    for bad in ([], [24]):
        with pytest.raises(InterpError, match="empty subset|out of range"):
            ds.subset(bad)


def test_group_split_holds_out_whole_groups():
    ds = synthetic_sentiment()
    for seed in range(5):
        tr, te = split_indices(ds.labels, ds.groups, seed)
        assert not {ds.groups[i] for i in tr} & {ds.groups[i] for i in te}
        assert set(ds.labels[tr]) == set(ds.labels[te]) == {0, 1}


def test_fit_probe_reads_a_real_signal_and_shuffling_kills_it():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 40)).astype(np.float32)
    y = (x[:, 0] + 0.3 * rng.standard_normal(600) > 0).astype(int)
    tr, te = np.arange(450), np.arange(450, 600)
    assert fit_probe(x, y, tr, te).test_accuracy > 0.8  # Bayes rate ≈ 0.91
    shuffled = fit_probe(x, y, tr, te, y_train=rng.permutation(y[tr]))
    assert abs(shuffled.test_accuracy - 0.5) < 0.12


def test_control_task_labels_are_per_word_type():
    texts = ["a cat", "the cat", "a dog", "my dog", "big bird"]
    types = control_task_types(texts, None)
    assert types == ["cat", "cat", "dog", "dog", "bird"]
    lab = control_task_labels(types, 0)
    assert lab[0] == lab[1] and lab[2] == lab[3] and set(lab.tolist()) == {0, 1}
    # texts that all end on the same cue fall back to the group
    same = ["x is good. it was", "y is bad. it was"]
    assert control_task_types(same, ["good", "bad"]) == ["good", "bad"]


# ---------------------------------------------------------------------- ablation
def test_projection_hook_removes_the_component():
    u = torch.randn(16)
    h = torch.randn(3, 5, 16)
    out = projection_hook(u)(h, None)
    assert torch.allclose(out @ (u / u.norm()), torch.zeros(3, 5), atol=1e-5)
    w = torch.randn(16)
    w = w - (w @ u) / (u @ u) * u  # orthogonal to u: untouched
    assert torch.allclose(out @ w, h @ w, atol=1e-4)


def test_random_directions_are_variance_matched():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 32)) * np.linspace(0.1, 5, 32)
    u = rng.standard_normal(32)
    target = direction_variance(x, u)
    dirs = variance_matched_directions(x, u, 12, seed=0)
    assert len(dirs) == 12
    for r in dirs:
        assert abs(np.linalg.norm(r) - 1) < 1e-5
        assert direction_variance(x, r) == pytest.approx(target, rel=1e-3)
    # they are not all the same direction
    assert np.abs(np.corrcoef(np.stack(dirs))[np.triu_indices(12, 1)]).max() < 0.9


# ------------------------------------------------------------- end to end (tiny)
def test_run_probe_tiny_schema(tiny_model, tmp_path):
    ds = synthetic_sentiment()
    res = run_probe(tiny_model, ds, layers="all", seeds=3, progress=False)
    d = res.to_dict()
    assert d["layers"] == [0, 1, 2]
    for key in ("test_accuracy_mean", "test_accuracy_std", "control_accuracy_mean",
                "control_task_accuracy_mean", "selectivity", "shuffled_accuracy_mean",
                "train_accuracy_mean", "random_weights_accuracy_mean", "bow_accuracy_mean"):
        assert len(d[key]) == 3, key
    assert d["control_accuracy_mean"][0] == max(d["shuffled_accuracy_mean"][0],
                                                d["random_weights_accuracy_mean"][0],
                                                d["bow_accuracy_mean"][0])
    assert res.warnings  # 120 training examples < 2 x d_model
    from interp.runs.artifacts import load_artifact

    path = save_probe(res, 1, tmp_path / "probe", {"seed": 0})
    art = load_artifact(path, kind="probe", d_model=tiny_model.d_model)
    assert art.tensors["direction"].shape == (tiny_model.d_model,)
    assert art.hook_point == "blocks.1.hook_resid_post"


def test_ablation_tiny(tiny_model):
    from interp.activations.capture import capture

    ds = synthetic_sentiment()
    x = capture(tiny_model, ds.texts, layers=[1])[1].numpy()
    u = x[ds.labels == 1].mean(0) - x[ds.labels == 0].mean(0)
    res = run_ablation(tiny_model, ds.texts, ds.labels, {"mean_difference": u}, layer=1,
                       x_layer=x, groups=ds.groups, n_random=3, later_layer=2,
                       progress=False)
    d = res.to_dict()["mean_difference"]
    assert d["kl"] > 0 and len(d["random"]["kl"]) == 3
    assert all(v == pytest.approx(d["variance"], rel=1e-3) for v in d["random"]["variance"])
    assert 0 <= d["percentile"] <= 100
    assert d["logit_diff_change"] is None  # no target tokens given


def test_leace_erases_the_concept_tiny(tiny_model):
    """LEACE, fitted on a layer's activations, leaves the label linearly unreadable there."""
    from interp.activations.capture import capture
    from interp.probing.ablation import leace_hook

    ds = synthetic_sentiment()
    x = capture(tiny_model, ds.texts, layers=[1])[1].numpy().astype(np.float64)
    hook, eraser = leace_hook(x, ds.labels)
    erased = eraser(torch.from_numpy(x)).numpy()
    # no linear function of the erased activations correlates with the label
    xc = erased - erased.mean(0)
    yc = ds.labels - ds.labels.mean()
    assert np.abs(xc.T @ yc).max() < 1e-6 * len(yc)
    res = run_ablation(tiny_model, ds.texts, ds.labels,
                       {"mean_difference": x[ds.labels == 1].mean(0) - x[ds.labels == 0].mean(0)},
                       layer=1, x_layer=x.astype(np.float32), groups=ds.groups, n_random=2,
                       later_layer=2, leace=True, progress=False)
    d = res.to_dict()["leace"]
    assert d["kl"] >= 0 and len(d["random"]["kl"]) == 2


# ------------------------------------------------- the CLI equals a library script
def test_probe_ablate_cli_equals_the_library_script(tiny_model_dir, tmp_path, capsys):
    """``interp probe --ablate`` is the README's short script: same results.json."""
    from interp.cli.common import json_safe
    from tests.support.cli_runner import run

    ds0 = synthetic_sentiment()
    assert ds0.groups is not None
    rows = [{"text": t, "label": int(y), "group": g}
            for t, y, g in zip(ds0.texts, ds0.labels, ds0.groups, strict=True)]
    data = write_jsonl(tmp_path / "s.jsonl", rows)
    out = tmp_path / "cli"
    code, _, stderr = run(["probe", "--model", str(tiny_model_dir), "--dataset", str(data),
                           "--layers", "1,2", "--seeds", "2", "--ablate", "--random-directions",
                           "2", "--ablate-examples", "40", "--out", str(out)], capsys)
    assert code == 0, stderr
    cli = json.loads((out / "results.json").read_text())

    # the script (README, "Python equivalents"), on the tiny model
    import interp
    from interp.probing import AblationConfig, ProbeConfig, ablate_probe

    model = interp.load(str(tiny_model_dir))
    ds = load_probe_dataset(str(data))
    result = run_probe(model, ds, ProbeConfig(layers=[1, 2], seeds=2))
    result.ablation = ablate_probe(model, ds, result, AblationConfig(n_random=2, n_examples=40))
    lib = json.loads(json.dumps(json_safe(result.to_dict())))

    # the result carries its own manifest now; the CLI writes that one
    assert lib.pop("manifest")["config"] == lib["config"]
    assert cli.pop("artifact") == "probe" and cli.pop("manifest")["config"] == lib["config"]
    assert cli == lib
    assert lib["ablation"]["n_examples"] == 40 and list(lib)[-2:] == ["dataset", "ablation"]
    for name in ("accuracy", "ablation-probe", "ablation-mean_difference"):
        assert (out / "figures" / f"{name}.svg").is_file()
        assert (out / "figures" / f"{name}.png").is_file()


def test_run_probe_takes_a_config_or_keywords_not_both(tiny_model):
    from interp.probing import ProbeConfig

    with pytest.raises(InterpError, match="not both"):
        run_probe(tiny_model, synthetic_sentiment(), ProbeConfig(layers=[1]), seeds=3)


def test_balanced_subsample():
    from interp.probing import balanced_subsample

    labels = np.array([0] * 30 + [1] * 10)
    idx = balanced_subsample(labels, 16, seed=0)
    assert list(idx) == sorted(idx) and (labels[idx] == 0).sum() == 8 == (labels[idx] == 1).sum()
    assert list(balanced_subsample(labels, 40)) == list(range(40))
    assert (balanced_subsample(labels, 30, seed=1) == balanced_subsample(labels, 30, seed=1)).all()


# ------------------------------------------------- batched torch solver vs sklearn
def _sklearn_reference(x, y, train):
    """scikit-learn's standardised newton-cholesky fit in float64 at tol 1e-8."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(x, dtype=np.float64)
    scaler = StandardScaler().fit(x[train])
    clf = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-8, max_iter=200)
    clf.fit(scaler.transform(x[train]), y[train])
    return scaler, clf


def test_fit_logistic_matches_sklearn_coefficients():
    """Two groups × three problems (different train rows, labels and class balance,
    a near-constant feature, a large-mean feature): coefficients, intercepts,
    scalers and decision values equal scikit-learn's float64 fit."""
    from interp.probing.logistic import fit_logistic

    rng = np.random.default_rng(0)
    g, n, d = 2, 300, 24
    x = rng.standard_normal((g, n, d)) * np.linspace(0.2, 3.0, d)
    x[:, :, 3] += 50.0  # large mean next to its spread
    x[:, :, 5] = 1.0  # constant: scikit-learn's scale 1, coefficient 0
    x[:, :, 7] += 0.1 * x[:, :, 0]
    labels = np.empty((g, 3, n), dtype=np.int64)
    train = np.zeros((g, 3, n), dtype=bool)
    for i in range(g):
        logit = x[i, :, 0] - 0.7 * x[i, :, 1] + 0.5 * x[i, :, 3] - 25.0
        labels[i, 0] = (logit + rng.standard_normal(n) > 0)
        labels[i, 1] = rng.permutation(labels[i, 0])
        labels[i, 2] = (x[i, :, 2] > 0.8).astype(np.int64)  # unbalanced
        train[i, 0, : 3 * n // 4] = True
        train[i, 1, n // 4:] = True
        train[i, 2, rng.permutation(n)[:200]] = True
    fit = fit_logistic(torch.from_numpy(x).float(), torch.from_numpy(labels),
                       torch.from_numpy(train), C=0.1)
    assert bool(fit.converged.all())
    for i in range(g):
        xi = x[i].astype(np.float32).astype(np.float64)  # what the solver saw
        for j in range(3):
            scaler, clf = _sklearn_reference(xi, labels[i, j], train[i, j])
            mean, scale = np.asarray(scaler.mean_), np.asarray(scaler.scale_)
            np.testing.assert_allclose(fit.mean[i, j].numpy(), mean, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(fit.scale[i, j].numpy(), scale, rtol=1e-10)
            np.testing.assert_allclose(fit.coef[i, j].numpy(), clf.coef_[0], atol=1e-6)
            intercept = float(np.asarray(clf.intercept_)[0])
            assert fit.intercept[i, j].item() == pytest.approx(intercept, abs=1e-6)
            ref = clf.decision_function(scaler.transform(xi))
            np.testing.assert_allclose(fit.decision[i, j].numpy(), ref, atol=1e-5)
            assert abs(fit.coef[i, j, 5].item()) < 1e-12
            w, b = fit.raw_coef()
            np.testing.assert_allclose(xi @ w[i, j].numpy() + b[i, j].item(), ref, atol=1e-5)


@pytest.mark.parametrize(
    "case, message",
    [("one class", "both classes"), ("nan", "NaN"), ("C", "positive"), ("shape", "shapes"),
     ("labels", "0 or 1")],
)
def test_fit_logistic_rejects_bad_input(case, message):
    from interp.probing.logistic import fit_logistic

    x = torch.randn(1, 20, 3)
    y = torch.tensor([[0, 1] * 10])
    train = torch.ones(1, 1, 20, dtype=torch.bool)
    C = 0.1
    if case == "one class":
        y = torch.zeros(1, 1, 20)
    elif case == "nan":
        x[0, 3, 1] = float("nan")
    elif case == "C":
        C = 0.0
    elif case == "labels":
        y = y * 2
    else:
        train = torch.ones(1, 1, 19, dtype=torch.bool)
    with pytest.raises(InterpError, match=message):
        fit_logistic(x, y.reshape(1, 1, -1) if case != "shape" else y[None], train, C=C)


def test_fit_logistic_takes_a_huge_C_on_fewer_rows_than_features():
    """Found by the CLI fuzzing (``probe --C 2147483648``): with 1/C below float32's
    resolution, the preconditioner of a rank-deficient problem was not positive definite and
    the fit died in a Cholesky factorisation; now it fits, separating the training rows."""
    from interp.probing.logistic import fit_logistic

    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 40, 64, generator=g)
    y = torch.tensor([[0.0, 1.0] * 20]).reshape(1, 1, -1)
    train = torch.ones(1, 1, 40, dtype=torch.bool)
    fit = fit_logistic(x, y, train, C=2147483648.0)
    pred = (fit.decision[0, 0] > 0).float()
    assert torch.isfinite(fit.decision).all() and bool((pred == y[0, 0]).all())


def test_run_probe_rejects_an_unknown_solver(tiny_model):
    with pytest.raises(InterpError, match="unknown solver 'bogus'"):
        run_probe(tiny_model, synthetic_sentiment(), layers=[1], solver="bogus",  # type: ignore[arg-type]
                  progress=False)


def test_run_probe_torch_solver_equals_sklearn_tiny(tiny_model):
    """The batched torch path and the per-fit scikit-learn path give the same numbers:
    held-out accuracies differ by at most one borderline example (sklearn's default
    path fits in float32 to tol 1e-4), final directions agree closely."""
    ds = synthetic_sentiment()
    kw = {"layers": "all", "seeds": 3, "progress": False}
    a = run_probe(tiny_model, ds, solver="torch", **kw)
    b = run_probe(tiny_model, ds, solver="sklearn", **kw)
    assert a.config.solver == "torch" and b.config.solver == "sklearn"
    one = 1 / a.n_test + 1e-9
    for sa, sb in zip(a.layers, b.layers, strict=True):
        for key in ("test_accuracy", "shuffled_accuracy", "random_weights_accuracy",
                    "control_task_accuracy", "bow_accuracy", "train_accuracy"):
            for va, vb in zip(sa.values[key], sb.values[key], strict=True):
                assert abs(va - vb) <= one or (np.isnan(va) and np.isnan(vb)), key
        np.testing.assert_allclose(sa.values["test_auroc"], sb.values["test_auroc"],
                                   atol=0.02)
        cos = float(a.directions[sa.layer] @ b.directions[sa.layer]
                    / np.linalg.norm(a.directions[sa.layer])
                    / np.linalg.norm(b.directions[sa.layer]))
        assert cos > 0.999
        np.testing.assert_allclose(a.scaler_mean[sa.layer], b.scaler_mean[sa.layer],
                                   rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("probe-single-class", lambda c: ["probe", *M(c), "--layer", "1", "--dataset", c.file(
        "one.jsonl", _probe_rows([1] * 40)), "--out", c.out], "class"),
    Case("probe-missing-dataset", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                             str(c.tmp / "no.jsonl"), "--out", c.out],
         "no such file"),
    Case("probe-malformed-jsonl", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                             c.file("m.jsonl", _probe_rows([0, 1]) + "\n{bad\n"),
                                             "--out", c.out], "line 3"),
    Case("probe-empty-dataset", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                           c.file("e.jsonl", ""), "--out", c.out], "empty"),
    Case("probe-layer-out-of-range", lambda c: ["probe", *M(c), "--layer", "9", "--dataset",
                                                c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                                "--out", c.out], "out of range"),
    Case("probe-nan-C", lambda c: ["probe", *M(c), "--layer", "1", "--C", "nan", "--dataset",
                                   c.file("p.jsonl", _probe_rows([0, 1] * 20)), "--out", c.out],
         "C"),
    Case("probe-unknown-solver", lambda c: [
        "probe", *M(c), "--layer", "1", "--solver", "adam", "--dataset",
        c.file("p.jsonl", _probe_rows([0, 1] * 20)), "--out", c.out], "solver"),
    Case("probe-missing-label-column", lambda c: ["probe", *M(c), "--layer", "1",
                                                  "--label-column", "y", "--dataset",
                                                  c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                                  "--out", c.out], "y"),
    Case("probe-unwritable-out", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                            c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                            "--out", _under_file(c)],
         "cannot create output folder"),
]
