"""``interp tuned-lens train|eval``: train per-layer translators, compare them to the logit lens."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

import click

from interp.cli.common import (
    json_safe,
    load_model,
    log,
    make_model_options,
    manifest_for,
    open_out,
    text_options,
    throughput_text,
    write_run_results,
)
from interp.runs.outdir import OutDir, check_creatable

_window_options = make_model_options(batch_size=4, batch_help="Text windows per forward pass.")


@click.group(name="tuned-lens")
def tuned_lens() -> None:
    """Tuned lens: learned per-layer translators read early layers reliably."""


@tuned_lens.command("train")
@text_options
@click.option("--tokens", default=250_000, show_default=True, type=click.IntRange(min=1),
              help="Training tokens streamed through the model.")
@click.option("--seq-len", default=128, show_default=True, type=click.IntRange(min=3))
@click.option("--positions-per-window", default=64, show_default=True,
              type=click.IntRange(min=1), help="Positions per window in the loss (never 0).")
@click.option("--optimizer", default="adam", show_default=True,
              type=click.Choice(["adam", "sgd"]), help="Adam, or the paper's Nesterov SGD.")
@click.option("--lr", default=None, type=float,
              help="Learning rate [default: 1e-4 for adam, 1.0 for sgd].")
@click.option("--weight-decay", default=1e-3, show_default=True, type=float,
              help="Decay of A toward 0, i.e. of each translator toward the identity.")
@click.option("--init", default="lstsq", show_default=True,
              type=click.Choice(["lstsq", "zero"]),
              help="Start from the least-squares map (default) or the identity (the paper).")
@click.option("--init-tokens", default=32_768, show_default=True, type=click.IntRange(min=1))
@click.option("--checkpoint-every", default=10, show_default=True, type=click.IntRange(min=1),
              help="Steps between checkpoints.")
@click.option("--unembed-dtype", default="bfloat16", show_default=True,
              type=click.Choice(["bfloat16", "float32"]),
              help="dtype of the unembedding matmul in the loss.")
@click.option("--stop-at", default=None, type=click.IntRange(min=0),
              help="Stop after this many steps in all (resumable later).")
@_window_options
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Run folder [default: $INTERP_CACHE/lenses/<model>/latest]; rerun to resume.")
def train(
    text_file: str | None, hf_dataset: str | None, tokens: int, seq_len: int,
    positions_per_window: int, optimizer: str, lr: float | None, weight_decay: float,
    init: str, init_tokens: int, checkpoint_every: int, unembed_dtype: str,
    stop_at: int | None, model_name: str | None, device: str, dtype: str, batch_size: int,
    seed: int, out_dir: str | None,
) -> None:
    """Train a tuned lens on the corpus's train split (or --text); resumes if interrupted."""
    from interp.data.corpus import text_source
    from interp.lenses.training import TrainConfig, train_tuned_lens
    from interp.lenses.tuned import default_lens_dir

    cfg = TrainConfig(
        tokens=tokens, seq_len=seq_len, batch_size=batch_size,
        positions_per_window=positions_per_window, optimizer=optimizer, lr=lr,
        weight_decay=weight_decay, checkpoint_every=checkpoint_every, seed=seed,
        unembed_dtype=unembed_dtype, init=init, init_tokens=init_tokens,
    )
    docs, data = text_source("train", text_file=text_file, hf_dataset=hf_dataset)
    if out_dir is not None:
        check_creatable(out_dir)
    model = load_model(model_name, device, dtype, seed)
    out = out_dir or str(check_creatable(default_lens_dir(model)))
    man = manifest_for(model, seed, docs[:0], asdict(cfg))
    man["dataset_hash"] = data["sha256"]
    man["data_source"] = data["source"]
    log(f"training a tuned lens: {cfg.steps} steps of {cfg.batch_size}×{cfg.seq_len} tokens "
        f"({cfg.positions_per_window} positions per window) from {data['source']} into {out}")
    res = train_tuned_lens(model, docs, out, cfg, data=data, stop_at=stop_at, manifest=man)
    if res.resumed_from and res.resumed_from < res.steps_done:
        log(f"resumed from step {res.resumed_from}")
    if res.complete and res.resumed_from >= res.steps_total:
        log(f"already trained ({res.steps_total} steps): {res.lens_path}")
    click.echo(
        f"steps {res.steps_done}/{res.steps_total}  loss (sum over layers, last 10 steps) "
        f"{res.final_loss:.3f}  {throughput_text(res.tokens_per_s, res.mfu, res.peak_flops)}  "
        + (f"lens: {res.lens_path}" if res.complete else "unfinished: rerun to resume")
    )
    write_run_results(out, {**res.to_dict(), "manifest": man})


@tuned_lens.command("eval")
@click.option("--lens", "lens_path", default=None, type=click.Path(),
              help="Lens or training-run folder [default: $INTERP_CACHE/lenses/<model>/latest].")
@text_options
@click.option("--tokens", default=4096, show_default=True, type=click.IntRange(min=3),
              help="Held-out tokens to evaluate.")
@click.option("--seq-len", default=128, show_default=True, type=click.IntRange(min=3))
@click.option("--summary-last", default=20, show_default=True, type=click.IntRange(min=0),
              help="The headline ratio averages KL over layers 0…this.")
@_window_options
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write results.json and report.html here.")
def eval_cmd(
    lens_path: str | None, text_file: str | None, hf_dataset: str | None, tokens: int,
    seq_len: int, summary_last: int, model_name: str | None, device: str, dtype: str,
    batch_size: int, seed: int, out_dir: str | None,
) -> None:
    """Held-out KL, cross-entropy, entropy and top-1 agreement per layer, both lenses."""
    from interp.data.corpus import text_source
    from interp.lenses.evaluation import EvalConfig, evaluate_tuned_lens
    from interp.lenses.tuned import load_tuned_lens, resolve_lens_path

    cfg = EvalConfig(tokens=tokens, seq_len=seq_len, batch_size=batch_size, seed=seed,
                     summary_last=summary_last)
    if lens_path is not None:
        resolve_lens_path(lens_path, None)  # a missing lens fails before anything slow
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        tuned = load_tuned_lens(lens_path, model)
        ev = evaluate_tuned_lens(model, tuned, docs, cfg, data=data)
        man = manifest_for(model, seed, docs[:0], {**asdict(cfg), "lens": str(tuned.path)})
        man["dataset_hash"] = data["sha256"]
        man["lens_manifest"] = {k: tuned.manifest.get(k) for k in
                                ("git_commit", "timestamp", "dataset_hash", "seed", "config")}
        res = {**ev.to_dict(), "manifest": man}
        if isinstance(out, OutDir):
            from reports.tuned_lens import tuned_lens_report

            out.write_json("results.json", json_safe(res))
            tuned_lens_report(ev, man).write(out)
    _print_eval(res)
    if out_dir is not None:
        log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_eval(res: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"tuned lens vs logit lens · {res['model']} · held-out, "
                  f"{res['n_positions']} positions", title_justify="left")
    for col in ("layer", "KL logit", "KL tuned", "CE logit", "CE tuned", "top-1 logit",
                "top-1 tuned"):
        table.add_column(col, justify="right")
    for i, layer in enumerate(res["layers"]):
        table.add_row(
            str(layer), f"{res['kl_logit_lens'][i]:.3f}", f"{res['kl_tuned_lens'][i]:.3f}",
            f"{res['ce_logit_lens'][i]:.3f}", f"{res['ce_tuned_lens'][i]:.3f}",
            f"{res['top1_agreement_logit_lens'][i]:.3f}",
            f"{res['top1_agreement_tuned_lens'][i]:.3f}",
        )
    Console(soft_wrap=False, width=120).print(table)
    lo, hi = res["kl_ratio_ci95"]
    layers = res["summary_layers"]
    click.echo(
        f"mean KL layers {layers[0]}–{layers[-1]}: logit {res['mean_kl_logit_lens']:.3f}, "
        f"tuned {res['mean_kl_tuned_lens']:.3f} nats; ratio {res['kl_ratio']:.2f}× "
        f"(95% CI {lo:.2f}–{hi:.2f}); model CE {res['model_ce']:.3f}"
    )


def tuned_lens_option(fn):  # noqa: ANN001, ANN202
    """``--tuned PATH`` for ``interp lens``."""
    return click.option(
        "--tuned", "tuned_path", default=None, type=click.Path(),
        help="Also read every layer through this tuned lens ('default' for "
        "$INTERP_CACHE/lenses/<model>/latest); the report shows both lenses side by side.",
    )(fn)
