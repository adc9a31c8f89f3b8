"""The batched torch probe fit against scikit-learn on every layer, seed and probe.

    .venv/bin/python scripts/compare_probe_solvers.py [--seeds 5] [--layers all]

For the shipped capitals and sentiment sets: one capture pass per model (the model and
its random-weights twin), then for every layer × seed the task, shuffled-label,
control-task and random-weights probes, fitted by
:func:`interp.probing.logistic.fit_logistic` (all at once) and by scikit-learn
(``newton-cholesky``, float64, tol 1e-8, one fit each, the reference). Prints the
largest held-out accuracy difference per set and probe kind; exits 1 if any differs by
more than 0.005. Run by ``make accept``; minutes on a CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import interp  # noqa: E402
from interp.activations.capture import capture  # noqa: E402
from interp.probing.logistic import fit_logistic  # noqa: E402
from interp.probing.probes import (  # noqa: E402
    control_task_labels,
    control_task_types,
    fit_probe,
    load_probe_dataset,
    random_weights_model,
    split_indices,
)
from interp.runs.paths import shipped_dataset  # noqa: E402

SETS = ("probes/capitals_truefalse.jsonl", "probes/sentiment.jsonl")
TOLERANCE = 0.005


def compare(model: interp.Model, rmodel: interp.Model, path: str, layers: list[int],
            seeds: int, C: float) -> dict[str, float]:
    """Largest |torch − sklearn| held-out accuracy per probe kind on one set."""
    ds = load_probe_dataset(shipped_dataset(path))
    y, n = ds.labels, len(ds)
    acts = capture(model, ds.texts, layers=layers, progress=False)
    racts = capture(rmodel, ds.texts, layers=layers, progress=False)
    splits = [split_indices(y, ds.groups, s) for s in range(seeds)]
    types = control_task_types(ds.texts, ds.groups)
    problems: list[tuple[str, int, np.ndarray]] = []  # kind, seed, labels
    for s, (tr, _) in enumerate(splits):
        shuffled = y.copy()
        shuffled[tr] = y[tr][np.random.default_rng(s).permutation(len(tr))]
        problems += [("task", s, y), ("shuffled", s, shuffled)]
        if types is not None:
            cy = control_task_labels(types, s)
            if len(set(cy[tr].tolist())) == 2:
                problems.append(("control task", s, cy))
    train = np.zeros((len(problems), n), dtype=bool)
    for j, (_, s, _) in enumerate(problems):
        train[j, splits[s][0]] = True
    labels = torch.from_numpy(np.stack([p[2] for p in problems]))
    g = len(layers)
    t0 = time.perf_counter()
    x = torch.stack([acts[layer].float() for layer in layers])
    dec = fit_logistic(x, labels.expand(g, -1, -1), torch.from_numpy(train).expand(g, -1, -1),
                       C=C).decision.numpy()
    xr = torch.stack([racts[layer].float() for layer in layers])
    rtrain = np.zeros((seeds, n), dtype=bool)
    for s, (tr, _) in enumerate(splits):
        rtrain[s, tr] = True
    rdec = fit_logistic(xr, torch.from_numpy(y).expand(g, seeds, -1),
                        torch.from_numpy(rtrain).expand(g, -1, -1), C=C).decision.numpy()
    t_torch = time.perf_counter() - t0
    worst: dict[str, float] = {}
    t0 = time.perf_counter()
    for i, layer in enumerate(layers):
        xl = x[i].numpy().astype(np.float64)
        xrl = xr[i].numpy().astype(np.float64)
        for j, (kind, s, lab) in enumerate(problems):
            tr, te = splits[s]
            ref = fit_probe(xl, lab, tr, te, C=C, tol=1e-8).test_accuracy
            got = float(((dec[i, j, te] > 0) == lab[te]).mean())
            worst[kind] = max(worst.get(kind, 0.0), abs(got - ref))
            if abs(got - ref) > TOLERANCE:
                print(f"  {path} layer {layer} seed {s} {kind}: sklearn {ref:.4f} "
                      f"torch {got:.4f}")
        for s, (tr, te) in enumerate(splits):
            ref = fit_probe(xrl, y, tr, te, C=C, tol=1e-8).test_accuracy
            got = float(((rdec[i, s, te] > 0) == y[te]).mean())
            worst["random weights"] = max(worst.get("random weights", 0.0), abs(got - ref))
    t_sk = time.perf_counter() - t0
    print(f"{path}: {len(problems) * g + seeds * g} probes; torch {t_torch:.1f} s, "
          f"scikit-learn {t_sk:.1f} s")
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--layers", default="all")
    ap.add_argument("--C", type=float, default=0.1)
    args = ap.parse_args()
    model = interp.load(args.model)
    rmodel = random_weights_model(model)
    layers = model.parse_layers(args.layers)
    ok = True
    for path in SETS:
        worst = compare(model, rmodel, path, layers, args.seeds, args.C)
        for kind, diff in worst.items():
            passed = diff <= TOLERANCE
            ok &= passed
            print(f"{'PASS' if passed else 'FAIL'}  {path} {kind}: largest held-out "
                  f"accuracy difference {diff:.4f} (≤ {TOLERANCE})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
