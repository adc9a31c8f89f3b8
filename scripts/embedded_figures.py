"""The embedded models' figures from the tools that read a model's anatomy, to compare two
commits after a structural change: ``snapshot`` writes them, ``compare`` says how far two
snapshots differ.

    python scripts/embedded_figures.py snapshot OUT.json       # the checkout on PYTHONPATH
    python scripts/embedded_figures.py compare BEFORE.json AFTER.json

Figures (small settings, on SmolLM2-135M and Gemma-3-270M): the logit lens of a prompt
(every layer × position), exact head patching, AtP and AtP* and direct logit attribution
on IOI pairs (SmolLM2) and residual patching on capitals (Gemma-3), every edge score of
``causal edges`` with exact path patching of a sample, and an attribution graph's target
values with random transcoders (seed fixed). Each runs through the command line (``--json``)
or a stable call, so a snapshot of an older commit is taken by the same script. Run it
from a checkout whose package is first on ``PYTHONPATH``; it prints which ``interp`` it
imported.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

PROMPT = "The capital of France is Paris. The capital of Italy is"
SMOL, GEMMA = "smollm2-135m-instruct", "gemma3-270m"

#: name → CLI arguments (each printed as JSON with --json)
RUNS: dict[str, list[str]] = {
    "lens-smollm2": ["lens", PROMPT, "--model", SMOL],
    "lens-gemma3": ["lens", PROMPT, "--model", GEMMA],
    "patch-heads-smollm2": ["patch", "--task", "ioi", "--family", "heads", "--method", "both",
                            "--limit", "3", "--min-gap", "0", "--bootstrap", "100",
                            "--model", SMOL],
    "patch-resid-gemma3": ["patch", "--task", "capitals", "--family", "resid", "--limit", "3",
                           "--min-gap", "0", "--bootstrap", "100", "--model", GEMMA],
    "edges-smollm2": ["causal", "edges", "--task", "ioi", "--limit", "3", "--sample", "20",
                      "--top", "5", "--ig-steps", "2", "--min-gap", "0", "--bootstrap", "100",
                      "--model", SMOL],
}

#: keys whose values differ from run to run by nature (paths, versions; and every time)
VOLATILE = {"manifest", "out", "path", "created", "git_commit", "versions", "timing",
            "timings"}


def _volatile(key: str) -> bool:
    return key in VOLATILE or "seconds" in key or key.endswith("_s")


def _graph() -> dict[str, Any]:
    """An attribution graph on SmolLM2 with random transcoders at three layers."""
    import interp
    from saes.graphs import AttributionConfig, run_attribution
    from tests.support.transcoders import random_transcoders

    model = interp.load(SMOL)
    tcs = random_transcoders(model, [2, 10, 20], skip=True)
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5,
                                                              control_graphs=0),
                        progress=False)
    return {"target_real": g.target_real, "target_replacement": g.target_replacement,
            "target_edge_sum": g.target_edge_sum, "replacement_score": g.replacement_score,
            "completeness_score": g.completeness_score,
            "n_active_features": g.n_active_features}


def snapshot(out: Path) -> None:
    import interp

    print(f"interp from {Path(interp.__file__).parent}", file=sys.stderr)
    data: dict[str, Any] = {}
    for name, args in RUNS.items():
        print(f"{name}: interp {' '.join(args)}", file=sys.stderr)
        proc = subprocess.run([sys.executable, "-c", "from interp.cli import main; main()",
                               *args, "--json"],
                              capture_output=True, text=True, check=True)
        data[name] = json.loads(proc.stdout)
    data["graph-smollm2"] = _graph()
    out.write_text(json.dumps(data))


def _diffs(a: Any, b: Any, path: str, out: list[tuple[str, float, float]]) -> None:
    """Append (path, |a − b|, |a|) for every number in both, walking dicts and lists."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            if not _volatile(k):
                _diffs(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diffs(x, y, f"{path}[{i}]", out)
    elif (isinstance(a, int | float) and isinstance(b, int | float)
          and not isinstance(a, bool) and not isinstance(b, bool)):
        if math.isfinite(a) and math.isfinite(b):
            out.append((path, abs(a - b), abs(a)))


def compare(before: Path, after: Path) -> None:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    for name in a:
        diffs: list[tuple[str, float, float]] = []
        _diffs(a[name], b.get(name), name, diffs)
        if not diffs:
            print(f"{name}: no common numbers")
            continue
        worst = max(diffs, key=lambda d: d[1])
        equal = sum(d[1] == 0 for d in diffs)
        print(f"{name}: {len(diffs)} numbers, {equal} equal to the bit; largest difference "
              f"{worst[1]:.3g} at {worst[0]} (|value| {worst[2]:.3g})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["snapshot"]:
        snapshot(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"]:
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(__doc__)
