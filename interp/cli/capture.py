"""``interp capture``: save activations at hook points as an artifact."""

from __future__ import annotations

import os
from typing import Any

import click

from interp.activations.capture import CaptureConfig
from interp.cli.common import (
    json_safe,
    layer_option,
    load_model,
    log,
    make_model_options,
    out_option,
    prompt_file_option,
    prompts_from_args,
)
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.runs.outdir import OutDir

#: Said once on stderr when ``--layer`` is given a list or 'all' (its old meaning).
LAYER_NOTE = "note: --layer takes one layer; a list means --layers"


def _one_layer(spec: str) -> bool:
    """Whether ``spec`` names one layer (an integer), not a list or 'all'."""
    try:
        int(spec.strip())
    except ValueError:
        return False
    return True


@click.command()
@click.argument("prompts", nargs=-1)
@prompt_file_option
@config_options(CaptureConfig, only=["text_column"])
@make_model_options(CaptureConfig)
@layer_option("One layer (resid_post); for several, or 'all', use --layers.")
@config_options(CaptureConfig, only=["layers", "hooks", "positions", "drop_first", "chat",
                                     "dtype", "max_memory_gb"])
@out_option("Folder for activations/ (artifact), results.json and report.html.", required=True)
def capture(
    prompts: tuple[str, ...], file_: str | None, model_name: str | None, device: str,
    dtype: str, batch_size: int, seed: int, layer: str | None, out_dir: str, **settings: Any,
) -> None:
    """Capture activations for PROMPTS (or --file) and save them as an artifact."""
    from interp.activations.capture import run_capture
    from interp.runs.artifacts import save_artifact
    from reports.capture import capture_report

    note = None
    if layer is not None:
        if settings["layers"] is not None:
            raise InterpError("give --layer or --layers, not both")
        settings["layers"] = layer
        # the old meaning, still accepted; said after the run, so an error stays one line
        note = None if _one_layer(layer) else LAYER_NOTE
    config = build_config(CaptureConfig, settings, batch_size=batch_size, seed=seed,
                          dataset=file_ or "(command line)")
    texts = prompts_from_args(prompts, file_, config.text_column)
    if config.layers is None and not config.hooks:
        raise InterpError("nothing to capture: give --layer and/or --hook")
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_capture(model, texts, config)
        hook_points = result.activations.hook_points
        save_artifact(
            out.stage_dir(result.artifact), result.tensors(), kind="activations",
            config=config.to_dict(), model_id=model.model_id, d_model=model.d_model,
            hook_point=hook_points[0] if len(hook_points) == 1 else None,
            manifest=result.manifest,
        )
        out.write_json("results.json", json_safe(result.to_dict()))
        capture_report(result).write(out)

    result.headline().print()
    log(f"wrote {os.path.join(out_dir, 'activations')}/, results.json and report.html")
    if note is not None:
        log(note)
