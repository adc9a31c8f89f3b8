"""``interp capture``: save activations at hook points as an artifact."""

from __future__ import annotations

import os
from typing import Any, cast

import click

from interp.cli.common import (
    json_safe,
    load_model,
    log,
    manifest_for,
    model_options,
    prompts_from_args,
)
from interp.errors import InterpError
from interp.runs.outdir import OutDir


@click.command()
@click.argument("prompts", nargs=-1)
@click.option("--file", "file_", default=None, type=click.Path(dir_okay=False),
              help="Read prompts from a JSONL/JSON/CSV/TSV/TXT file.")
@click.option("--text-column", default="text", show_default=True,
              help="Column holding the prompt text in --file.")
@model_options
@click.option("--layer", "layers", default=None,
              help="Layers (resid_post): comma-separated or 'all'.")
@click.option("--hook", "hooks", multiple=True,
              help="Any TransformerLens hook point (repeatable), e.g. blocks.3.attn.hook_z.")
@click.option("--positions", default="last", show_default=True,
              help="last, mean, all, or a token index (0 = first, -1 = last).")
@click.option("--drop-first", is_flag=True,
              help="Leave each prompt's first token out of mean/all (its norm is an outlier).")
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template.")
@click.option("--save-dtype", default="float32", show_default=True,
              type=click.Choice(["float32", "bfloat16", "float16"]),
              help="dtype of the saved activations.")
@click.option("--max-memory-gb", default=None, type=float,
              help="Refuse captures needing more memory [default: $INTERP_MAX_MEMORY_GB or "
              "half the RAM].")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for activations/ (artifact), results.json and report.html.")
def capture(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, layers: str | None,
    hooks: tuple[str, ...], positions: str, drop_first: bool, chat: bool, save_dtype: str,
    max_memory_gb: float | None, out_dir: str,
) -> None:
    """Capture activations for PROMPTS (or --file) and save them as an artifact."""
    from dataclasses import asdict

    from interp.activations.capture import CaptureConfig, Position, run_capture
    from interp.runs.artifacts import save_artifact
    from reports.capture import capture_report

    texts = prompts_from_args(prompts, file_, text_column)
    try:
        pos = cast(Position, positions if positions in ("last", "mean", "all")
                   else int(positions))
    except ValueError:
        raise InterpError(
            f"bad --positions {positions!r}: use last, mean, all or an integer"
        ) from None
    if layers is None and not hooks:
        raise InterpError("nothing to capture: give --layer and/or --hook")
    cfg = CaptureConfig(
        layers=layers, hooks=list(hooks), positions=pos,
        drop_first=drop_first, chat=chat, batch_size=batch_size, dtype=save_dtype,
        max_memory_gb=max_memory_gb, dataset=file_ or "(command line)",
        text_column=text_column,
    )
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_capture(model, texts, cfg)
        man = manifest_for(model, seed, texts, cfg.to_dict())
        hook_points = result.activations.hook_points
        save_artifact(
            out.stage_dir(result.artifact), result.tensors(), kind="activations",
            config=cfg.to_dict(), model_id=model.model_id, d_model=model.d_model,
            hook_point=hook_points[0] if len(hook_points) == 1 else None, manifest=man,
        )
        out.write_json("results.json", json_safe({**result.to_dict(), "manifest": man}))
        capture_report(result, man).write(out)

    _print_capture_table([asdict(h) for h in result.hooks])
    log(f"wrote {os.path.join(out_dir, 'activations')}/, results.json and report.html")


def _print_capture_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="captured activations", title_justify="left")
    for col in ("hook point", "shape", "mean ‖h‖", "95% CI", "n"):
        table.add_column(col, justify="left" if col == "hook point" else "right")
    for r in rows:
        lo, hi = r["norm_ci95"]
        table.add_row(r["hook"], "×".join(map(str, r["shape"])), f"{r['norm_mean']:.2f}",
                      f"[{lo:.2f}, {hi:.2f}]", str(r["norm_n"]))
    Console(soft_wrap=False, width=120).print(table)
