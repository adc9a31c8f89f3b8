"""`--profile` on the real model."""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runner import run


@pytest.mark.parametrize("verb", [
    ["probe", "--layer", "6", "--seeds", "2", "--no-random-weights"],
    ["generate", "The capital of France is", "--max-new-tokens", "16", "--batch-size", "1"],
])
def test_profile_real_model(verb, model, tmp_path, capsys):
    """Issue 19's check: the trace and the verdict exist, and the phase timers cover at
    least 90% of the run's wall time."""
    prof = tmp_path / "prof"
    code, _, err = run([*verb, "--profile", str(prof)], capsys)
    assert code == 0, err
    data = json.loads((prof / "profile.json").read_text())
    print(verb[0], data["verdict"], data["evidence"], data["phase_coverage"], data["phases"])
    assert data["verdict"] and data["evidence"]
    assert data["phase_coverage"] >= 0.9, data["phases"]
    assert json.loads((prof / "trace.json").read_text())["traceEvents"]

