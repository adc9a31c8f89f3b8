"""How well attribution patching recovers exact patching: every shipped task × family.

    .venv/bin/python scripts/atp_vs_exact.py [--limit 24] [--out accept-out/atp-vs-exact]

For each task and family, one ``run_patch(method="both")`` on the first ``--limit``
pairs: Spearman between AtP and exact effects over all components, recall of the exact
top-10 among AtP's top-10 and top-30 (bootstrap CIs over pairs), and both methods'
time (AtP* too for heads). Writes ``table.json`` and ``table.md`` (the README's table).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import interp  # noqa: E402
from interp.circuits import PatchConfig, run_patch, shipped_tasks  # noqa: E402

FAMILIES = ("resid", "attn", "mlp", "heads")


def _ci(lo_hi: list[float]) -> str:
    return f"[{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--limit", type=int, default=24)
    ap.add_argument("--tasks", default=",".join(shipped_tasks()))
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--out", default="accept-out/atp-vs-exact")
    args = ap.parse_args()
    model = interp.load()
    rows = []
    lines = [
        "| task | family | components | method | Spearman (95% CI) | recall@10 (95% CI) | "
        "recall@30 (95% CI) | tied at 10 / 30 | exact s | approx s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task in args.tasks.split(","):
        for family in args.families.split(","):
            res = run_patch(model, PatchConfig(task=task, family=family, method="both",  # type: ignore[arg-type]
                                               limit=args.limit, dla=False, top_heads=0))
            for a in res.agreement:
                rows.append({"task": task, "family": family, "pairs": res.task.n_used,
                             **a.to_dict()})
                lines.append(
                    f"| {task} | {family} | {a.n_components} | {a.method} | "
                    f"{a.spearman:.2f} {_ci(a.spearman_ci95)} | "
                    f"{a.recall_at_10:.2f} {_ci(a.recall_at_10_ci95)} | "
                    f"{a.recall_at_30:.2f} {_ci(a.recall_at_30_ci95)} | "
                    f"{a.tied_at_10} / {a.tied_at_30} | "
                    f"{a.seconds_exact:.0f} | {a.seconds_approx:.1f} |"
                )
                print(lines[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "table.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
