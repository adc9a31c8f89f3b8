"""``interp probe``: held-out linear probes with controls, and ``--ablate``."""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli.common import (
    json_option,
    json_safe,
    layer_option,
    layers_option,
    load_model,
    log,
    make_model_options,
    open_out,
    out_option,
    probe_dataset_options,
)
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.probing.results import AblationConfig, ProbeConfig
from interp.profiling.session import phase


@click.command()
@make_model_options(ProbeConfig)
@layer_option("One layer (0-based resid_post).")
@layers_option("Layer sweep: comma-separated or 'all' (one capture pass).")
@probe_dataset_options("Hold out whole groups (the deciding word) when the column exists.")
@config_options(ProbeConfig)
@click.option("--ablate", is_flag=True,
              help="Ablation check at the layer (the best layer of a sweep).")
@config_options(AblationConfig)
@out_option("Write report.html, results.json and the probe artifact here.")
@json_option
def probe(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    layer: str | None, layers: str | None, dataset: str | None, text_column: str,
    label_column: str, group_column: str, ablate: bool, out_dir: str | None, as_json: bool,
    **settings: Any,
) -> None:
    """Linear probes with held-out accuracy, controls, seed noise and an ablation check."""
    from interp.probing.ablation import ablate_probe
    from interp.probing.probes import load_probe_dataset, run_probe, save_probe
    from interp.runs.outdir import OutDir

    if layer is not None and layers is not None:
        raise InterpError("give --layer or --layers, not both")
    if settings["leace"] and not ablate:
        raise InterpError("--leace needs --ablate")
    config = build_config(ProbeConfig, settings, batch_size=batch_size, seed=seed)
    ablation = build_config(AblationConfig, settings, seed=seed)
    ds = load_probe_dataset(dataset, text_column=text_column, label_column=label_column,
                            group_column=group_column or None)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        spec = layers if layers is not None else (layer if layer is not None else "all")
        config = config.replace(layers=model.parse_layers(spec))  # before any heavy work
        res = run_probe(model, ds, config)
        if ablate:
            res.ablation = ablate_probe(model, ds, res, ablation)
        with phase("write outputs"):  # selectivity intervals import scipy.stats
            data = res.to_dict()
        if isinstance(out, OutDir):
            from reports.probe import probe_report

            save_probe(res, res.best_layer(), out.stage_dir("probe"), res.manifest or {})
            data["artifact"] = "probe"
            out.write_json("results.json", json_safe(data))  # NaN/inf → null: strict JSON
            probe_report(res).write(out)
    if as_json:
        click.echo(json.dumps(json_safe(data), indent=2))
    else:
        res.headline().print()
        if res.ablation is not None:
            res.ablation.headline().print()
    for w in res.warnings:
        log(f"warning: {w}")


