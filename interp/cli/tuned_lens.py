"""``interp tuned-lens train|eval``: train per-layer translators, compare them to the logit lens."""

from __future__ import annotations

import os
from typing import Any

import click
from rich.console import Console

from interp.cli.common import (
    json_safe,
    load_model,
    log,
    make_model_options,
    open_out,
    out_option,
    stop_at_option,
    text_options,
    throughput_text,
    write_run_results,
)
from interp.cli.options import build_config, config_options
from interp.lenses.evaluation import LensEvalConfig
from interp.lenses.training import TunedLensTrainConfig
from interp.runs.outdir import OutDir, check_creatable

_WINDOWS = "Text windows per forward pass."


@click.group(name="tuned-lens")
def tuned_lens() -> None:
    """Tuned lens: learned per-layer translators read early layers reliably."""


@tuned_lens.command("train")
@text_options
@config_options(TunedLensTrainConfig, only=[
    "tokens", "seq_len", "positions_per_window", "optimizer", "lr", "weight_decay", "init",
    "init_tokens", "checkpoint_every", "unembed_dtype"])
@stop_at_option
@make_model_options(TunedLensTrainConfig, batch_help=_WINDOWS)
@out_option("Run folder [default: $INTERP_CACHE/lenses/<model>/latest]; rerun to resume.")
def train(
    text_file: str | None, hf_dataset: str | None, stop_at: int | None,
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    out_dir: str | None, **settings: Any,
) -> None:
    """Train a tuned lens on the corpus's train split (or --text); resumes if interrupted."""
    from interp.data.corpus import text_source
    from interp.lenses.training import check_memory, check_text, train_tuned_lens
    from interp.lenses.tuned import default_lens_dir

    cfg = build_config(TunedLensTrainConfig, settings, batch_size=batch_size, seed=seed)
    docs, data = text_source("train", text_file=text_file, hf_dataset=hf_dataset)
    if out_dir is not None:
        check_creatable(out_dir)
    model = load_model(model_name, device, dtype, seed)
    out = out_dir or str(check_creatable(default_lens_dir(model)))
    check_memory(model, cfg)  # before the line that says it starts
    check_text(model, docs, cfg)
    log(f"training a tuned lens: {cfg.steps} steps of {cfg.batch_size}×{cfg.seq_len} tokens "
        f"({cfg.positions_per_window} positions per window) from {data['source']} into {out}")
    res = train_tuned_lens(model, docs, out, cfg, data=data, stop_at=stop_at)
    if res.resumed_from and res.resumed_from < res.steps_done:
        log(f"resumed from step {res.resumed_from}")
    if res.complete and res.resumed_from >= res.steps_total:
        log(f"already trained ({res.steps_total} steps): {res.lens_path}")
    click.echo(
        f"steps {res.steps_done}/{res.steps_total}  loss (sum over layers, last 10 steps) "
        f"{res.final_loss:.3f}  {throughput_text(res.tokens_per_s, res.mfu, res.peak_flops)}  "
        + (f"lens: {res.lens_path}" if res.complete else "unfinished: rerun to resume")
    )
    write_run_results(out, res.to_dict())


@tuned_lens.command("eval")
@click.option("--lens", "lens_path", default=None, type=click.Path(),
              help="Lens or training-run folder [default: $INTERP_CACHE/lenses/<model>/latest].")
@text_options
@config_options(LensEvalConfig)
@make_model_options(LensEvalConfig, batch_help=_WINDOWS)
@out_option("Write results.json and report.html here.")
def eval_cmd(
    lens_path: str | None, text_file: str | None, hf_dataset: str | None,
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    out_dir: str | None, **settings: Any,
) -> None:
    """Held-out KL, cross-entropy, entropy and top-1 agreement per layer, both lenses."""
    from interp.data.corpus import text_source
    from interp.lenses.evaluation import evaluate_tuned_lens
    from interp.lenses.tuned import load_tuned_lens, resolve_lens_path

    cfg = build_config(LensEvalConfig, settings, batch_size=batch_size, seed=seed)
    if lens_path is not None:
        resolve_lens_path(lens_path, None)  # a missing lens fails before anything slow
        if out_dir is not None:  # a run folder's own results.json is not to be replaced
            check_creatable(out_dir, inputs=(lens_path,))
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        tuned = load_tuned_lens(lens_path, model)
        ev = evaluate_tuned_lens(model, tuned, docs, cfg, data=data)
        if isinstance(out, OutDir):
            from reports.tuned_lens import tuned_lens_report

            out.write_json("results.json", json_safe(ev.to_dict()))
            tuned_lens_report(ev).write(out)
    ev.headline().print(Console(soft_wrap=False, width=120))
    if out_dir is not None:
        log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")
