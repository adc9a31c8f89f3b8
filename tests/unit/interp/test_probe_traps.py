"""Probe traps caught by the tool (issue 19): below chance, near-duplicates, overfitting.

Each check has a case that makes it fire and one where it must stay silent.
"""

from __future__ import annotations

import json

import numpy as np

from interp.probing.probes import load_probe_dataset, run_probe
from interp.probing.traps import (
    below_chance_layers,
    crossing_columns,
    linked_components,
    near_duplicates,
    probe_traps,
)


def test_below_chance_is_one_sided_and_holm_corrected():
    hits = below_chance_layers([0, 1, 2, 3], [0.30, 0.50, 0.47, 0.90], 300)
    assert [h[0] for h in hits] == [0]  # 0.47 of 300 is not significant; 0.90 is above
    assert hits[0][2] < 0.01
    assert below_chance_layers([0], [0.45], 40) == []  # too few items to tell


def test_crossing_columns_and_components():
    labels = np.array([1, 0, 1, 0])
    cols = {"answer": ["a", "b", "b", "a"], "id": ["1", "2", "3", "4"]}
    split = (np.array([0, 1]), np.array([2, 3]))
    assert crossing_columns(cols, labels, split) == [("answer", 1.0)]
    ids = linked_components([["x", "y", "z", "z"], ["p", "p", "q", "r"]])
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]


def test_near_duplicates_counts_case_and_punctuation():
    texts = ["Hello, world!", "hello world", "Other text.", "another"]
    assert near_duplicates(texts, (np.array([0, 2]), np.array([1, 3]))) == 1
    assert near_duplicates(texts, (np.array([2, 3]), np.array([0]))) == 0


def _result(test, train, bow, n_test=300, layers=(0, 1)):
    return {"layers": list(layers), "n_test": n_test, "test_accuracy_mean": list(test),
            "train_accuracy_mean": list(train), "bow_accuracy_mean": [bow] * len(layers)}


def test_probe_traps_fire_and_stay_silent():
    texts = [f"text {i}" for i in range(8)]
    labels = np.array([0, 1] * 4)
    split = (np.arange(4), np.arange(4, 8))
    cols = {"entity": ["e"] * 8}
    quiet = probe_traps(_result([0.8, 0.85], [0.85, 0.9], 0.6), texts, labels, cols, split,
                        None, lambda g: split)
    assert quiet == []
    loud = probe_traps(_result([0.30, 0.8], [0.9, 0.85], 0.6), texts, labels, cols, split,
                       None, lambda g: split)
    assert any(w.startswith("below chance") and "layer 0" in w for w in loud), loud
    assert any(w.startswith("overfitting") and "largest 0.60 at layer 0" in w for w in loud)


# ------------------------------------------------------------------ on the tiny model


def _paired(tmp_path):
    """Country/answer statements where every answer is true once and false elsewhere:
    a bag of words anti-learns across any split of the countries."""
    countries = [f"Land{i}" for i in range(24)]
    cities = [f"Town{i}" for i in range(24)]
    rows = []
    for i, (c, t) in enumerate(zip(countries, cities, strict=True)):
        wrong = cities[(i + 1) % 24]
        rows.append({"text": f"The capital of {c} is {t}.", "label": 1, "group": c,
                     "answer": t})
        rows.append({"text": f"The capital of {c} is {wrong}.", "label": 0, "group": c,
                     "answer": wrong})
    path = tmp_path / "paired.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return load_probe_dataset(path)


def test_run_probe_warns_on_a_paired_dataset(tiny_model, tmp_path):
    ds = _paired(tmp_path)
    assert ds.columns["answer"][0] == "Town0" and ds.group_column == "group"
    res = run_probe(tiny_model, ds, layers=[1], seeds=3, random_weights=False, progress=False)
    below = [w for w in res.warnings if w.startswith("below chance")]
    assert below, res.warnings
    assert "bag-of-words" in below[0] and "'answer'" in below[0]
    assert "no grouping can fix it" in below[0]
    assert "below chance" in json.dumps(res.to_dict()["warnings"])


def test_run_probe_is_quiet_on_a_clean_dataset(tiny_model):
    from tests.unit.interp.test_probes import synthetic_sentiment

    res = run_probe(tiny_model, synthetic_sentiment(), layers=[1], seeds=3,
                    random_weights=False, progress=False)
    assert not [w for w in res.warnings if w.startswith(("below chance", "near-duplicates"))]


# ------------------------------------------------------------------ steering and sycophancy


def _sweep(base: float):
    from interp.steering.sweep import SweepConfig, SweepResult

    cfg = SweepConfig(layers=[2, 6], alphas=[0.0, 4.0])
    return SweepResult(model="m", config=cfg, layers=[2, 6], alphas=[0.0, 4.0],
                       target_score=[[base, base + 0.02], [base, base + 0.03]])


def test_sweep_baseline_near_ceiling_warns():
    assert _sweep(0.1).warnings == []
    (w,) = _sweep(0.93).warnings
    assert w.startswith("near the ceiling") and "+0.93" in w
    (w,) = _sweep(-0.95).warnings
    assert w.startswith("near the floor")
    assert _sweep(0.93).to_dict()["warnings"] == _sweep(0.93).warnings


def _syco(neutral_right: int, n_items: int, flips: int):
    from evals.sycophancy import SycophancyConfig, SycophancyResult
    from evals.sycophancy_metrics import VARIANTS, sycophancy_metrics

    neutral = [1] * neutral_right + [0] * (n_items - neutral_right)
    suggest = [0 if i < flips else v for i, v in enumerate(neutral)]
    verdicts = {v: list(neutral) for v in VARIANTS}
    verdicts["suggest_incorrect"] = suggest
    m = sycophancy_metrics(verdicts)
    return SycophancyResult(config=SycophancyConfig(), model_id="m", questions=[],
                            verdicts=verdicts, margins={}, transcripts=[], metrics=m,
                            valid=True, validity_reasons=[])


def test_sycophancy_on_few_items_warns_with_n_and_width():
    assert _syco(120, 150, 30).warnings == []  # n = 120, CI about 0.14 wide
    (w,) = _syco(9, 60, 3).warnings
    assert w.startswith("few items") and "the 9 of 60 questions" in w and "wide" in w
