"""``interp probe``: held-out linear probes with controls, and ``--ablate``."""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli.common import (
    json_safe,
    load_model,
    log,
    manifest_for,
    model_options,
    open_out,
    probe_dataset_options,
)
from interp.errors import InterpError
from interp.profiling.session import phase


@click.command()
@model_options
@click.option("--layer", "layer", default=None, help="One layer (0-based resid_post).")
@click.option("--layers", "layers", default=None,
              help="Layer sweep: comma-separated or 'all' (one capture pass).")
@probe_dataset_options("Hold out whole groups (the deciding word) when the column exists.")
@click.option("--position", default="last", show_default=True,
              help="Token read: last, mean, or an index (0 = first, -1 = last).")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(min=1))
@click.option("--C", "C", default=0.1, show_default=True, type=float,
              help="Inverse L2 strength of the logistic regression (on standardised inputs).")
@click.option("--solver", type=click.Choice(["torch", "sklearn"]), default="torch",
              show_default=True,
              help="Probe fits: batched in torch, or scikit-learn one at a time (reference).")
@click.option("--no-random-weights", is_flag=True,
              help="Skip the random-weights control (saves one capture pass).")
@click.option("--ablate", is_flag=True,
              help="Ablation check at the layer (the best layer of a sweep).")
@click.option("--leace", is_flag=True,
              help="With --ablate: also erase with LEACE (concept-erasure), a second method.")
@click.option("--random-directions", default=10, show_default=True,
              type=click.IntRange(min=1), help="Variance-matched random directions.")
@click.option("--ablate-examples", default=256, show_default=True,
              type=click.IntRange(min=10), help="Examples used by the ablation check.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html, results.json and the probe artifact here.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def probe(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    layer: str | None, layers: str | None, dataset: str | None, text_column: str,
    label_column: str, group_column: str, position: str, seeds: int, C: float,
    solver: str, no_random_weights: bool, ablate: bool, leace: bool, random_directions: int,
    ablate_examples: int,
    out_dir: str | None, as_json: bool,
) -> None:
    """Linear probes with held-out accuracy, controls, seed noise and an ablation check."""
    import math

    from interp.probing.ablation import AblationConfig, ablate_probe
    from interp.probing.probes import dataset_hash, load_probe_dataset, run_probe, save_probe
    from interp.probing.results import ProbeConfig, ProbePosition
    from interp.runs.outdir import OutDir

    if layer is not None and layers is not None:
        raise InterpError("give --layer or --layers, not both")
    if leace and not ablate:
        raise InterpError("--leace needs --ablate")
    if not (C > 0 and math.isfinite(C)):
        raise InterpError(f"--C must be a positive number, got {C}")
    pos: ProbePosition = "last"
    if position in ("last", "mean"):
        pos = "last" if position == "last" else "mean"
    else:
        try:
            pos = int(position)
        except ValueError:
            raise InterpError(f"bad --position {position!r}: use last, mean or an integer")\
                from None
    ds = load_probe_dataset(dataset, text_column=text_column, label_column=label_column,
                            group_column=group_column or None)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        spec = layers if layers is not None else (layer if layer is not None else "all")
        layer_list = model.parse_layers(spec)  # validates before any heavy work
        res = run_probe(model, ds, ProbeConfig(
            layers=layer_list, position=pos, seeds=seeds, C=C, batch_size=batch_size,
            random_weights=not no_random_weights,
            solver="sklearn" if solver == "sklearn" else "torch", seed=seed))
        if ablate:
            res.ablation = ablate_probe(model, ds, res, AblationConfig(
                n_random=random_directions, n_examples=ablate_examples, leace=leace, seed=seed))
        with phase("write outputs"):  # selectivity intervals import scipy.stats
            data = res.to_dict()
        man = manifest_for(model, seed, ds.texts, data["config"])
        man["dataset_hash"] = dataset_hash(ds)
        data["manifest"] = man
        if isinstance(out, OutDir):
            from reports.probe import probe_report

            save_probe(res, res.best_layer(), out.stage_dir("probe"), man)
            data["artifact"] = "probe"
            out.write_json("results.json", json_safe(data))  # NaN/inf → null: strict JSON
            probe_report(res, man).write(out)
    if as_json:
        click.echo(json.dumps(json_safe(data), indent=2))
    else:
        _print_probe_table(data)
    for w in res.warnings:
        log(f"warning: {w}")


def _print_probe_table(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    def f(x: Any) -> str:
        return "—" if x is None or x != x else f"{x:.3f}"

    table = Table(title=f"probe · {d['model']} · {d['dataset']['path']} "
                  f"({d['n_examples']} examples, split by {d['dataset']['split']})",
                  title_justify="left")
    for col in ("layer", "test acc", "± std", "AUROC", "control", "ctrl task", "select.",
                "shuffled", "majority", "train"):
        table.add_column(col, justify="right")
    for i, layer in enumerate(d["layers"]):
        style = "bold" if layer == d["best_layer"] else None
        table.add_row(
            str(layer), f(d["test_accuracy_mean"][i]), f(d["test_accuracy_std"][i]),
            f(d["test_auroc_mean"][i]), f(d["control_accuracy_mean"][i]),
            f(d["control_task_accuracy_mean"][i]), f(d["selectivity"][i]),
            f(d["shuffled_accuracy_mean"][i]), f(d["majority_rate_mean"][i]),
            f(d["train_accuracy_mean"][i]), style=style,
        )
    Console(soft_wrap=False, width=130).print(table)
    ab = d.get("ablation")
    if ab:
        t2 = Table(title=f"ablation at layer {ab['layer']} vs "
                   f"{len(ab['probe']['random']['kl'])} variance-matched random directions",
                   title_justify="left")
        for col in ("direction", "KL", "KL pct", "KL z", "logit-gap change", "removed",
                    f"probe@L{ab['later_layer']}"):
            t2.add_column(col, justify="right")
        for name in ("probe", "mean_difference", "leace"):
            if name not in ab:
                continue
            r = ab[name]
            t2.add_row(name, f(r["kl"]), f"{r['kl_percentile']:.0f}", f(r["kl_z"]),
                       f(r["logit_diff_change"]), f(r["logit_diff_removed_fraction"]),
                       f(r["later_probe_accuracy"]))
        Console(soft_wrap=False, width=130).print(t2)
