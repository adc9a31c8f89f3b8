"""``interp attention PROMPT --layer L``: one layer's attention patterns on one prompt."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from interp.circuits.results import AttentionConfig
from interp.cli.common import json_safe, load_model, log, make_model_options
from interp.cli.options import build_config, config_options
from interp.errors import InterpError


@click.command("attention")
@click.argument("prompt")
@config_options(AttentionConfig)
@make_model_options(AttentionConfig)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write report.html, figures/ and results.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def attention(prompt: str, model_name: str | None, device: str, dtype: str, batch_size: int,
              seed: int, out_dir: str, as_json: bool, **settings: Any) -> None:
    """Attention patterns of one layer's heads on PROMPT (query × key, per head)."""
    from interp.circuits.attention import run_attention
    from interp.runs.outdir import OutDir
    from reports.attention import attention_report

    del batch_size  # one prompt: a single forward pass
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    cfg = build_config(AttentionConfig, settings, prompt=prompt, seed=seed)
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_attention(model, cfg)
        data: dict[str, Any] = json_safe(result.to_dict())
        out.write_json("results.json", data)
        attention_report(result).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        result.headline().print()
    log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")
