"""``interp patch``: activation patching, attribution patching and DLA over a task."""

from __future__ import annotations

from typing import Any

import click

from interp.circuits.results import PatchConfig
from interp.cli.common import json_safe, load_model, log, make_model_options, out_option
from interp.cli.options import build_config, config_options


@click.command()
@config_options(PatchConfig)
@make_model_options(PatchConfig, batch_help="Patched runs (rows) per forward pass.")
@out_option("Write report.html, results.json and figures/ here.", required=True)
def patch(model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
          out_dir: str, **settings: Any) -> None:
    """Patch every component of a family over clean/corrupted pairs; compare AtP with exact."""
    from interp.circuits.pairs import check_task
    from interp.circuits.patch import run_patch
    from interp.runs.outdir import OutDir
    from reports.patching import patching_report

    config = build_config(PatchConfig, settings, batch_size=batch_size, seed=seed)
    check_task(config.task, config.limit, config.group_by)  # before the model loads
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_patch(model, config)
        out.write_json("results.json", json_safe(result.to_dict()))
        patching_report(result).write(out)
    t = result.task
    log(f"{t.name}: {t.n_used} of {t.n_read} pairs used ({t.n_left_out} left out: "
        f"{t.left_out_reason})")
    if result.dla_skipped:
        log(f"direct logit attribution skipped: {result.dla_skipped}")
    for w in result.warnings:
        log(f"warning: {w}")
    result.headline().print()


__all__ = ["patch"]
