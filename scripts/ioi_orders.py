"""IOI with both name orders: do the top heads act alike on ABBA and BABA prompts?

The shipped ``ioi`` task is ABBA only ("When Mary and John ..., John gave a drink to":
the indirect object first). This script writes a task mixing each of the first ``--limit``
shipped pairs with its BABA twin (the two names of the first clause swapped: "When John
and Mary ..., John gave a drink to", same answer and wrong token), without role labels
(the roles' order differs between the two), grouped by an ``order`` column, and runs
``interp patch`` on every head with ``--group-by order``.

    .venv/bin/python scripts/ioi_orders.py [--limit 12] [--out ioi-orders-out]

Prints the top heads overall and per order, and the heads whose effect differs between
the orders beyond the noise; the report is in ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from interp.circuits.tasks import load_task


def baba_twin(clean: str, corrupted: str, answer: str, wrong: str) -> tuple[str, str]:
    """The BABA prompts of an ABBA pair: the first mentions of the two names swapped."""
    io, s = answer.strip(), wrong.strip()
    first = f"{io} and {s}"
    if first not in clean or first not in corrupted:
        raise ValueError(f"not an ABBA prompt: {clean!r}")
    swapped = f"{s} and {io}"
    return clean.replace(first, swapped, 1), corrupted.replace(first, swapped, 1)


def write_mixed(path: Path, limit: int) -> Path:
    """The first ``limit`` shipped IOI pairs and their BABA twins, with an ``order`` column."""
    rows = []
    for p in load_task("ioi", limit).pairs:
        rows.append({"clean": p.clean, "corrupted": p.corrupted, "answer": p.answer,
                     "wrong": p.wrong, "order": "ABBA"})
        clean, corrupted = baba_twin(p.clean, p.corrupted, p.answer, p.wrong)
        rows.append({"clean": clean, "corrupted": corrupted, "answer": p.answer,
                     "wrong": p.wrong, "order": "BABA"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--limit", type=int, default=12, help="shipped pairs (twice as many rows)")
    ap.add_argument("--out", default="ioi-orders-out")
    args = ap.parse_args()

    import interp
    from interp.circuits import PatchConfig, run_patch
    from reports.patching import patching_report

    out = Path(args.out)
    task = write_mixed(out / "ioi_orders.jsonl", args.limit)
    model = interp.load()
    res = run_patch(model, PatchConfig(task=str(task), family="heads", group_by="order",
                                       top_heads=2))
    patching_report(res).save(out)
    print(res.headline().text())
    g = res.groups
    assert g is not None
    print(f"\n{g.verdict()}")
    for c in g.components:
        print(g.describe(c) + (f"  [differs in {c.kind}, Holm p = {c.p_holm:.2g}]"
                               if c.differs else ""))


if __name__ == "__main__":
    main()
