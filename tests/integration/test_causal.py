"""Distributed alignment search on the real model: a real causal direction."""

from __future__ import annotations

from interp.causal import DASConfig, run_das


def test_real_das_finds_the_gender_direction(model):
    """Pronoun pairs (a name swapped for one of the other gender): at the name's position
    in layer 8, one learned direction carries the swap (held-out IIA ≥ 0.8, as the full
    interchange does) while a random direction does nothing (≤ 0.2)."""
    res = run_das(model, DASConfig(task="pronoun", layers=[8], position="name", limit=48,
                                   steps=40, control=False), progress=False)
    (r,) = res.layers
    assert r.full.iia >= 0.9
    assert r.das.iia >= 0.8, r.das
    assert r.random.iia <= 0.2, r.random
    lo = r.das.iia_ci95[0]
    hi = r.random.iia_ci95[1]
    assert lo is not None and hi is not None and lo > hi  # apart beyond the noise
    assert r.none.iia == 0.0  # the base runs all prefer the base's pronoun
