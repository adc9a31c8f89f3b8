"""IOI with both name orders: do the top heads act alike on ABBA and BABA prompts?

The shipped ``ioi`` task is ABBA only ("When Mary and John ..., John gave a drink to":
the indirect object first). This script writes a task of the first ``--limit`` shipped
pairs and their BABA twins (:func:`interp.circuits.tasks.name_order_twins`: the first
mentions of the two names swapped), grouped by an ``order`` column, and runs ``interp
patch`` on every head with ``group_by="order"``.

    .venv/bin/python scripts/ioi_orders.py [--limit 12] [--out ioi-orders-out]

Prints the headline and every looked-at head per order; the report is in ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--limit", type=int, default=12, help="shipped pairs (twice as many rows)")
    ap.add_argument("--out", default="ioi-orders-out")
    args = ap.parse_args()

    import interp
    from interp.circuits import PatchConfig, run_patch
    from interp.circuits.tasks import load_task, name_order_twins
    from reports.patching import patching_report

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task = name_order_twins(load_task("ioi", args.limit)).write(out / "ioi_orders.jsonl")
    model = interp.load()
    res = run_patch(model, PatchConfig(task=str(task), family="heads", group_by="order",
                                       top_heads=2))
    patching_report(res).save(out)
    print(res.headline().text())
    g = res.groups
    assert g is not None
    for c in g.components:
        print(g.describe(c) + (f"  [differs in {c.kind}, Holm p = {c.p_holm:.2g}]"
                               if c.differs else ""))


if __name__ == "__main__":
    main()
