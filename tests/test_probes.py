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


# ---------------------------------------------------------------- real model
@pytest.mark.slow
def test_capitals_probe_beats_controls(model):
    """Default true/false set: best layer ≥ 0.2 over the best control and > 3 seed-std;
    the shuffled-label probe stays at chance ± 0.05."""
    res = run_probe(model, load_probe_dataset(), layers=[15, 18], seeds=5, progress=False)
    d = res.to_dict()
    i = d["layers"].index(d["best_layer"])
    margin = d["test_accuracy_mean"][i] - d["control_accuracy_mean"][i]
    print(f"best layer {d['best_layer']}: test {d['test_accuracy_mean'][i]:.3f} ± "
          f"{d['test_accuracy_std'][i]:.3f}, control {d['control_accuracy_mean'][i]:.3f}")
    assert margin >= 0.2
    assert margin > 3 * d["test_accuracy_std"][i]
    assert all(abs(s - 0.5) <= 0.05 for s in d["shuffled_accuracy_mean"])


@pytest.mark.slow
def test_sentiment_mean_difference_ablation_removes_the_logit_gap(model):
    """Split by adjective; ablating the class-mean difference at layer 24 removes ≥ 80%
    of the model's own " good" − " bad" separation, with KL above every
    variance-matched random direction.

    Measured here on the same 96 examples (fraction removed; KL vs the random max):
    layer 12: 0.39, 0.42 vs 0.64; layer 15: 0.76, 0.39 vs 0.82; layer 21: 0.95, 0.10 vs
    0.16; layer 24: 0.96, 0.093 vs 0.079. The gap removal is specific from layer 15 on
    (random directions remove ≤ 0.4 of it), but only from layer 24 does the KL also beat
    every random direction: earlier, some variance-matched directions lean on
    high-variance axes whose removal disturbs the whole distribution.
    """
    from interp.activations.capture import capture
    from interp.runs.paths import shipped_dataset

    full = load_probe_dataset(shipped_dataset("probes/sentiment.jsonl"))
    rng = np.random.default_rng(0)
    idx = np.sort(np.concatenate([rng.choice(np.flatnonzero(full.labels == c), 48,
                                             replace=False) for c in (0, 1)]))
    texts = [full.texts[i] for i in idx]
    labels, groups = full.labels[idx], [full.groups[i] for i in idx]
    x = capture(model, texts, layers=[24], progress=False)[24].float().numpy()
    u = x[labels == 1].mean(0) - x[labels == 0].mean(0)
    res = run_ablation(model, texts, labels, {"mean_difference": u}, layer=24, x_layer=x,
                       groups=groups, targets=full.target_tokens, n_random=10,
                       progress=False)
    d = res.to_dict()["mean_difference"]
    print(f"removed {d['logit_diff_removed_fraction']:.2f} of the gap; KL {d['kl']:.3f} vs "
          f"random max {max(d['random']['kl']):.3f}")
    assert d["logit_diff_removed_fraction"] >= 0.8
    assert d["kl"] > max(d["random"]["kl"])


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
    from tests.cli_runner import run

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
