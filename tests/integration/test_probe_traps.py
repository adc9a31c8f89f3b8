"""A probe trap on the real model: splitting capitals by country falls below chance, by trio
does not."""

from __future__ import annotations

from interp.probing.probes import load_probe_dataset, run_probe


def test_capitals_split_by_country_falls_below_chance_and_by_trio_does_not(model):
    """In the shipped capitals set a city is the true answer for its country and a
    false one for another country of its trio. Split by country, a held-out city was
    seen in training with the other label: the early layers, which read the answer
    word, anti-learn and the trap fires, naming 'group' as the fix. Split by the
    shipped trios (the default) it stays silent."""
    by_country = load_probe_dataset(group_column="country")
    res = run_probe(model, by_country, layers=[2, 6], seeds=2,
                    random_weights=False, progress=False)
    below = [w for w in res.warnings if w.startswith("below chance")]
    print(res.to_dict()["test_accuracy_mean"], res.warnings)
    assert below and "layer 2" in below[0] and "'group'" in below[0], res.warnings
    assert res.to_dict()["test_accuracy_mean"][0] < 0.4

    res = run_probe(model, load_probe_dataset(), layers=[2, 6], seeds=2,
                    random_weights=False, progress=False)
    print(res.to_dict()["test_accuracy_mean"], res.warnings)
    assert not [w for w in res.warnings if w.startswith("below chance")], res.warnings

