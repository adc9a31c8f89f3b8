"""``interp generate``: batched, KV-cached generation (``--deterministic`` for batch invariance)."""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli.common import (
    json_flag,
    json_safe,
    load_model,
    log,
    make_model_options,
    open_out,
    out_option,
    prompt_file_options,
    prompts_from_args,
)
from interp.cli.options import build_config, config_options
from interp.generation.engine import GenerationConfig
from interp.runs.outdir import OutDir


@click.command(name="generate")
@click.argument("prompts", nargs=-1)
@prompt_file_options
@make_model_options(GenerationConfig)
@config_options(GenerationConfig)
@json_flag("Print a JSON list of {prompt, text, ...} and nothing else on stdout.")
@out_option("Write report.html and results.json into this folder.")
def generate_cmd(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, as_json: bool, out_dir: str | None,
    **settings: Any,
) -> None:
    """Generate continuations of PROMPTS (or --file), batched and KV-cached."""
    from interp.generation.engine import generate

    texts = prompts_from_args(prompts, file_, text_column)
    # built (and checked) before the model loads
    config = build_config(GenerationConfig, settings, batch_size=batch_size, seed=seed)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = generate(model, texts, config)
        if isinstance(out, OutDir):
            from reports.generate import generate_report

            out.write_json("results.json", json_safe(result.to_dict()))
            generate_report(result).write(out)
    if as_json:
        click.echo(json.dumps(
            [{"prompt": g.prompt, "text": g.text, "stop_reason": g.stop_reason,
              "token_ids": g.token_ids} for g in result.generations],
            ensure_ascii=False, indent=2,
        ))
    else:
        result.headline().print()
    st = result.stats
    msg = f"{st.new_tokens} tokens in {st.seconds:.1f} s ({st.tokens_per_second:.1f} tok/s)"
    if config.deterministic:
        msg += (f"; verified {st.tokens_verified}, rollbacks {st.rollbacks}, "
                f"regenerated {st.regenerated_tokens}")
    log(msg)
