"""Check the issues' acceptance figures from the results.json files `make accept` writes.

Prints each figure with PASS/FAIL and exits 1 if any fails. Never used by the test
suite (these runs take minutes); see the Makefile's `accept` target.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(root: str = "accept-out") -> int:
    ok = True

    def check(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}")

    cap = json.loads((Path(root) / "capitals" / "results.json").read_text())
    i = cap["layers"].index(cap["best_layer"])
    test, std = cap["test_accuracy_mean"][i], cap["test_accuracy_std"][i]
    margin = test - cap["control_accuracy_mean"][i]
    check("capitals: best layer beats control by ≥ 0.2 and > 3 seed-std",
          margin >= 0.2 and margin > 3 * std,
          f"layer {cap['best_layer']}: {test:.3f} ± {std:.3f} vs control "
          f"{cap['control_accuracy_mean'][i]:.3f} (margin {margin:.3f})")
    worst = max(abs(s - 0.5) for s in cap["shuffled_accuracy_mean"])
    check("capitals: shuffled-label probe within chance ± 0.05", worst <= 0.05,
          f"max |shuffled − 0.5| = {worst:.3f}")
    sent = json.loads((Path(root) / "sentiment" / "results.json").read_text())
    md = sent["ablation"]["mean_difference"]
    check("sentiment: mean-difference ablation removes ≥ 80% of the logit gap",
          (md["logit_diff_removed_fraction"] or 0) >= 0.8,
          f"removed {md['logit_diff_removed_fraction']:.3f} at layer {sent['ablation']['layer']}")
    check("sentiment: KL above every variance-matched random direction",
          md["kl"] > max(md["random"]["kl"]),
          f"KL {md['kl']:.4f} vs random max {max(md['random']['kl']):.4f}")
    l6 = json.loads((Path(root) / "layer6" / "results.json").read_text())
    n = len(l6["ablation"]["probe"]["random"]["kl"])
    check("layer 6: probe direction compared with ≥ 10 random directions", n >= 10,
          f"{n} random directions, probe KL percentile {l6['ablation']['probe']['percentile']:.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
