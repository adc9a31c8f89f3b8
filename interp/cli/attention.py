"""``interp attention PROMPT --layer L``: one layer's attention patterns on one prompt."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click

from interp.cli.common import json_safe, load_model, log, manifest_for, model_options
from interp.errors import InterpError

if TYPE_CHECKING:
    from interp.circuits.results import AttentionResult


def _heads(spec: str | None) -> list[int] | None:
    """``--head 3`` or ``--head 1,4`` → ``[1, 4]``; none → every head."""
    if spec is None or spec.strip().lower() == "all":
        return None
    items = [s.strip() for s in spec.split(",")]
    try:
        heads = [int(s) for s in items]
    except ValueError:
        raise InterpError(f"bad --head {spec!r}: use integers separated by commas, or 'all'"
                          ) from None
    return heads


@click.command("attention")
@click.argument("prompt")
@click.option("--layer", required=True, type=int,
              help="0-based layer (negative counts from the end).")
@click.option("--head", "head_spec", default=None, metavar="H[,H...]",
              help="Heads to show, comma-separated (default: every head of the layer).")
@click.option("--chat", is_flag=True, help="Wrap the prompt in the model's chat template.")
@model_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write report.html, figures/ and results.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def attention(prompt: str, layer: int, head_spec: str | None, chat: bool,
              model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
              out_dir: str, as_json: bool) -> None:
    """Attention patterns of one layer's heads on PROMPT (query × key, per head)."""
    from interp.circuits.attention import run_attention
    from interp.circuits.results import AttentionConfig
    from interp.runs.outdir import OutDir
    from reports.attention import attention_report

    del batch_size  # one prompt: a single forward pass
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    cfg = AttentionConfig(prompt=prompt, layer=layer, heads=_heads(head_spec), chat=chat)
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_attention(model, cfg)
        result.manifest = manifest_for(model, seed, [prompt], cfg.to_dict())
        data: dict[str, Any] = {**result.to_dict(), "manifest": result.manifest}
        out.write_json("results.json", json_safe(data))
        attention_report(result).write(out)
    if as_json:
        click.echo(json.dumps(json_safe(data), indent=2, ensure_ascii=False))
    else:
        _print_table(result)
    log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_table(result: AttentionResult) -> None:
    from rich.console import Console
    from rich.table import Table

    from reports.attention import top_keys
    from reports.html import visible_token

    last = len(result.tokens) - 1
    table = Table(title=f"attention · {result.model_id} · layer {result.layer} · where the "
                  f"last token {visible_token(result.tokens[last])!r} looks",
                  title_justify="left")
    table.add_column("head", justify="right")
    for k in range(1, 4):
        table.add_column(f"key {k}", overflow="fold")
        table.add_column("weight", justify="right")
    for i, h in enumerate(result.heads):
        cells: list[str] = []
        for pos, w in top_keys(result, i, last, 3):
            cells += [f"{pos}:{visible_token(result.tokens[pos])}", f"{w:.3f}"]
        cells += [""] * (6 - len(cells))
        table.add_row(str(h), *cells)
    Console(soft_wrap=False, width=120).print(table)
