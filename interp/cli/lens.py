"""``interp lens PROMPT``: the logit lens (or a tuned lens) over every layer."""

from __future__ import annotations

import json
import os
from typing import Any

import click
from click.core import ParameterSource

from interp.cli.common import (
    json_option,
    json_safe,
    layer_option,
    load_model,
    log,
    model_options,
    open_out,
    out_option,
)
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.lenses.readout import LensConfig
from interp.runs.outdir import OutDir

#: Said once on stderr when ``--layer`` is given a list (its old meaning).
LAYER_NOTE = "note: --layer takes one layer; a list means --layers"


@click.command()
@click.argument("prompt")
@model_options
@config_options(LensConfig, only=["top_k"])
@layer_option("One layer to read (0-based, resid_post). A list here still works, as "
              "--layers.", metavar="L")
@config_options(LensConfig, only=["layers", "chat"])
@out_option("Write report.html and results.json into this folder.")
@json_option
@click.option("--columns", "max_cols", default=6, show_default=True,
              type=click.IntRange(min=1), help="The table shows this many last positions.")
@config_options(LensConfig, only=["tuned"])
def lens(
    prompt: str, model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    layer: str | None, out_dir: str | None, as_json: bool, max_cols: int, **settings: Any,
) -> None:
    """Logit lens (and --tuned lens): what each layer would predict next, at every position."""
    from interp.lenses.readout import run_lens

    del batch_size  # one prompt: a single forward pass
    note = None
    if layer is not None:
        source = click.get_current_context().get_parameter_source("layers")
        if source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP):
            raise InterpError("give --layer or --layers, not both")
        if not _one_layer(layer):
            note = LAYER_NOTE  # the old meaning: said after the run, so errors stay one line
        settings["layers"] = layer
    config = build_config(LensConfig, settings, seed=seed)
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    out = open_out(out_dir)
    with out:
        model = load_model(model_name, device, dtype, seed)
        result = run_lens(model, prompt, config)
        data = result.to_dict()
        if isinstance(out, OutDir):
            from reports.lens import lens_report

            out.write_json("results.json", json_safe(data))
            lens_report(result).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        from rich.console import Console

        n_cols = min(max_cols, len(result.logit.tokens))
        console = Console(soft_wrap=False, width=max(120, 14 * n_cols + 40))
        for read in result.results():
            read.headline(columns=max_cols).print(console)
    if out_dir is not None:
        log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")
    if note is not None:
        log(note)


def _one_layer(spec: str) -> bool:
    """Whether ``spec`` names one layer (an integer), not a list or 'all'."""
    try:
        int(spec.strip())
    except ValueError:
        return False
    return True
