"""`interp seeds` on the real model's layer-6 probe."""

from __future__ import annotations

import json

from tests.support.cli_runner import run


def test_seeds_probe_layer6_real_model(model, tmp_path, capsys):
    """Issue 19's check: `interp seeds 3 -- probe --layer 6` and `interp compare` on the
    embedded model; the three seeds give different splits."""
    out = tmp_path / "runs"
    code, _, err = run(["seeds", "3", "--out", str(out), "--", "probe", "--layer", "6",
                        "--seeds", "2", "--no-random-weights"], capsys)
    assert code == 0, err
    runs = [json.loads((out / f"seed-{s}" / "results.json").read_text()) for s in range(3)]
    tests = [r["per_seed"]["6"]["test_accuracy"] for r in runs]
    assert len({tuple(t) for t in tests}) == 3, tests
    summary = json.loads((out / "results.json").read_text())
    assert summary["metrics"]["test_accuracy_mean[0]"]["std"] > 0
    code, stdout, err = run(["compare", str(out / "seed-0"), str(out / "seed-2"), "--all"],
                            capsys)
    assert code == 0, err
    # two seeds of the same settings: no held-out metric may differ beyond its noise
    assert "test_accuracy_mean[0]" in stdout
    line = next(x for x in stdout.splitlines() if "test_accuracy_mean[0]" in x)
    assert "within noise" in line, line

