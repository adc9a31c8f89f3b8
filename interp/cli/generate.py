"""``interp generate``: batched, KV-cached generation (``--deterministic`` for batch invariance)."""

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
    prompts_from_args,
)
from interp.runs.outdir import OutDir


@click.command(name="generate")
@click.argument("prompts", nargs=-1)
@click.option("--file", "file_", default=None, type=click.Path(dir_okay=False),
              help="Read prompts from a JSONL/JSON/CSV/TSV/TXT file.")
@click.option("--text-column", default="text", show_default=True)
@model_options
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template.")
@click.option("--max-new-tokens", default=64, show_default=True, type=int)
@click.option("--temperature", default=0.0, show_default=True, type=float,
              help="0 = greedy.")
@click.option("--top-p", default=1.0, show_default=True, type=float)
@click.option("--stop", multiple=True, help="Stop string (repeatable).")
@click.option("--deterministic", is_flag=True,
              help="Decode-verify-rollback: outputs independent of batch size.")
@click.option("--verify-every", default=16, show_default=True, type=int,
              help="With --deterministic: tokens proposed per request between "
                   "verifications (1: the fixed-shape verifier decodes alone).")
@click.option("--inject-batch-noise", default=0.0, show_default=True, type=float,
              help="Testing aid: perturb logits by a fixed function of the batch shape.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of {prompt, text, ...} and nothing else on stdout.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html and results.json into this folder.")
def generate_cmd(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, chat: bool, max_new_tokens: int,
    temperature: float, top_p: float, stop: tuple[str, ...], deterministic: bool,
    verify_every: int, inject_batch_noise: float, as_json: bool, out_dir: str | None,
) -> None:
    """Generate continuations of PROMPTS (or --file), batched and KV-cached."""
    from interp.generation.engine import GenerationConfig, generate

    texts = prompts_from_args(prompts, file_, text_column)
    GenerationConfig(  # validate before loading the model
        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, stop=stop,
        batch_size=batch_size, verify_every=verify_every,
        inject_batch_noise=inject_batch_noise,
    ).check()
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = generate(
            model, texts, max_new_tokens=max_new_tokens, temperature=temperature,
            top_p=top_p, seed=seed, stop=stop, chat=chat, batch_size=batch_size,
            deterministic=deterministic, verify_every=verify_every,
            inject_batch_noise=inject_batch_noise,
        )
        if isinstance(out, OutDir):
            from reports.generate import generate_report

            data = result.to_dict()
            man = manifest_for(model, seed, texts, data["config"])
            out.write_json("results.json", json_safe({**data, "manifest": man}))
            generate_report(result, man).write(out)
    if as_json:
        click.echo(json.dumps(
            [{"prompt": g.prompt, "text": g.text, "stop_reason": g.stop_reason,
              "token_ids": g.token_ids} for g in result.generations],
            ensure_ascii=False, indent=2,
        ))
    else:
        _print_generations(result.generations)
    st = result.stats
    msg = f"{st.new_tokens} tokens in {st.seconds:.1f} s ({st.tokens_per_second:.1f} tok/s)"
    if deterministic:
        msg += (f"; verified {st.tokens_verified}, rollbacks {st.rollbacks}, "
                f"regenerated {st.regenerated_tokens}")
    log(msg)


def _print_generations(gens: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("prompt", overflow="fold")
    table.add_column("continuation", overflow="fold")
    table.add_column("stop")
    from rich.text import Text

    for g in gens:  # Text(): user strings are never parsed as rich markup
        table.add_row(str(g.index), Text(g.prompt), Text(g.text), g.stop_reason)
    Console(soft_wrap=False, width=120).print(table)
