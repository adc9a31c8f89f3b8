"""``interp lens PROMPT``: the logit lens (or a tuned lens) over every layer."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from interp.cli.common import (
    json_safe,
    load_model,
    log,
    manifest_for,
    model_options,
    open_out,
)
from interp.cli.tuned_lens import tuned_lens_option
from interp.errors import InterpError
from interp.runs.outdir import OutDir


@click.command()
@click.argument("prompt")
@model_options
@click.option("--top-k", default=5, show_default=True, type=click.IntRange(min=1),
              help="Tokens kept per cell.")
@click.option("--layer", "layers", default="all", show_default=True,
              help="Layers to read: comma-separated (0-based, resid_post) or 'all'.")
@click.option("--chat", is_flag=True, help="Wrap the prompt in the model's chat template.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html and results.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
@click.option("--columns", "max_cols", default=6, show_default=True,
              type=click.IntRange(min=1), help="The table shows this many last positions.")
@tuned_lens_option
def lens(
    prompt: str, model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    top_k: int, layers: str, chat: bool, out_dir: str | None, as_json: bool, max_cols: int,
    tuned_path: str | None,
) -> None:
    """Logit lens (and --tuned lens): what each layer would predict next, at every position."""
    from interp.lenses.readout import LensConfig, run_lenses

    del batch_size  # one prompt: a single forward pass
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    cfg = LensConfig(top_k=top_k, layers=layers, chat=chat, tuned=tuned_path)
    out = open_out(out_dir)
    with out:
        model = load_model(model_name, device, dtype, seed)
        result = run_lenses(model, prompt, cfg)
        config: dict[str, Any] = {"top_k": top_k, "layers": layers, "chat": chat}
        if result.tuned is not None:
            config["tuned_lens"] = str(result.tuned_path)
        man = manifest_for(model, seed, [prompt], config)
        data = {**result.to_dict(), "manifest": man}
        if isinstance(out, OutDir):
            from reports.lens import lens_report

            out.write_json("results.json", json_safe(data))
            lens_report(result, man).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_lens_table(data, max_cols)
        if "tuned" in data:
            _print_lens_table(data["tuned"], max_cols)
    if out_dir is not None:
        log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_lens_table(data: dict[str, Any], max_cols: int) -> None:
    from rich.console import Console
    from rich.table import Table

    from reports.html import visible_token

    tokens = data["tokens"]
    first = max(0, len(tokens) - max_cols)
    title = f"{data['lens']} lens · {data['model']} · top-1 next token per layer"
    table = Table(title=title, title_justify="left")
    table.add_column("layer", justify="right")
    for p in range(first, len(tokens)):
        table.add_column(f"{p}:{visible_token(tokens[p])}", overflow="fold")
    table.add_column("p (last)", justify="right")
    table.add_column("KL (last)", justify="right")
    table.add_column("H (last)", justify="right")
    for li, layer in enumerate(data["layers"]):
        cells = [visible_token(data["top1"][li][p]) for p in range(first, len(tokens))]
        table.add_row(
            str(layer), *cells, f"{data['top1_prob'][li][-1]:.3f}",
            f"{data['kl'][li][-1]:.3f}", f"{data['entropy'][li][-1]:.3f}",
        )
    table.add_row(
        "model", *[visible_token(t) for t in data["final_top1"][first:]],
        f"{data['final_top1_prob'][-1]:.3f}", "0", f"{data['final_entropy'][-1]:.3f}",
        style="bold",
    )
    Console(soft_wrap=False, width=max(120, 14 * (len(tokens) - first) + 40)).print(table)
