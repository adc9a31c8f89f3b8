"""``interp transcoder train|train-clt|eval``: transcoders (MLP input → output) and
cross-layer transcoders from the command line.

Each verb's settings are its config's fields
(:class:`~saes.transcoders.train.TranscoderTrainConfig`,
:class:`~saes.transcoders.crosslayer_train.CLTTrainConfig`,
:class:`~saes.transcoders.evaluate.TranscoderEvalConfig`); the architecture options come
from the SAE registry (TopK by default).
"""

from __future__ import annotations

import os
from typing import Any

import click

from interp.cli.common import (
    json_option,
    json_safe,
    layers_option,
    load_model,
    log,
    make_model_options,
    out_option,
    show_result,
    text_options,
    throughput_text,
    write_run_results,
)
from interp.cli.options import build_config, config_options
from interp.cli.sae import (
    _join_training,
    _processes,
    _TrainCommand,
    _training_options,
    build_architecture,
)
from interp.runs.outdir import OutDir, check_creatable
from saes.transcoders.crosslayer_train import CLTTrainConfig
from saes.transcoders.evaluate import TranscoderEvalConfig
from saes.transcoders.train import TranscoderTrainConfig


class _TranscoderTrainCommand(_TrainCommand):
    default_arch = "topk"


@click.group(name="transcoder")
def transcoder_group() -> None:
    """Transcoders: sparse replacements of the MLPs, trained and evaluated."""


@transcoder_group.command("train", cls=_TranscoderTrainCommand)
@layers_option("The MLPs to replace: one transcoder per layer, all from one pass over the "
               "text, each into OUT/layer-L.", default="all", dest="layers_spec",
               metavar="all|L1,L2,…")
@config_options(TranscoderTrainConfig, only=["d_sae", "skip", "tokens", "lr", "dead_window",
                                             "seq_len", "windows_per_chunk", "data_shards"])
@_training_options(TranscoderTrainConfig,
                   "Run folder (layer-L/checkpoint, layer-L/transcoder); rerun to resume.")
def train(layers_spec: str, architecture: str, cache_dir: str | None, stop_at: int | None,
          text_file: str | None, hf_dataset: str | None, model_name: str | None, device: str,
          dtype: str, batch_size: int, seed: int, out_dir: str, **settings: Any) -> None:
    """Train transcoders for several layers' MLPs from one pass; resumes if interrupted."""
    from saes.train import check_memory, check_text
    from saes.transcoders.train import train_transcoders

    arch = build_architecture(architecture, settings)
    rank, world = _join_training(device, settings)
    cfg = build_config(TranscoderTrainConfig, settings, arch=arch, batch_size=batch_size,
                       seed=seed)
    docs, data, model, layers = _training_inputs(text_file, hf_dataset, out_dir, cache_dir,
                                                 model_name, device, dtype, seed, layers_spec)
    check_memory(model, cfg, n_saes=len(layers))
    check_text(model, docs, cfg)
    if rank == 0:
        log(f"training {len(layers)} × {arch.knob_text()} transcoder"
            f"{'s' if len(layers) > 1 else ''} (layers {layers_spec}, one forward for all): "
            f"d_sae {cfg.d_sae}, {cfg.steps} steps of {batch_size} tokens from "
            f"{data['source']} into {out_dir}{_processes(world)}")
    results = train_transcoders(model, docs, out_dir, layers, cfg, data=data,
                                cache_dir=cache_dir, stop_at=stop_at)
    if rank:
        return
    for layer, res in results.items():
        click.echo(f"layer {layer}: " + _run_line(res, "EV (train)"))
    first = results[layers[0]]
    write_run_results(out_dir, {"layers": {str(li): {k: v for k, v in r.to_dict().items()
                                                     if k != "manifest"}
                                           for li, r in results.items()},
                                "manifest": first.manifest})


@transcoder_group.command("train-clt", cls=_TranscoderTrainCommand)
@layers_option("The layers the cross-layer transcoder covers: each layer's features read there "
               "and write to that MLP's output and every later one (or as many as --reach "
               "says).", default="all",
               dest="layers_spec", metavar="all|L1,L2,…")
@config_options(CLTTrainConfig, only=["d_sae", "skip", "reach", "tokens", "lr", "dead_window",
                                      "seq_len", "windows_per_chunk", "data_shards",
                                      "shard_features"])
@_training_options(CLTTrainConfig, "Run folder (checkpoint/, then clt/); rerun to resume.")
def train_clt_cmd(layers_spec: str, architecture: str, cache_dir: str | None,
                  stop_at: int | None, text_file: str | None, hf_dataset: str | None,
                  model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
                  out_dir: str, **settings: Any) -> None:
    """Train one cross-layer transcoder over several layers from one pass; resumes if
    interrupted."""
    from saes.transcoders.crosslayer_train import prepare_clt, train_clt

    arch = build_architecture(architecture, settings)
    rank, world = _join_training(device, settings)
    cfg = build_config(CLTTrainConfig, settings, arch=arch, batch_size=batch_size, seed=seed)
    docs, data, model, layers = _training_inputs(text_file, hf_dataset, out_dir, cache_dir,
                                                 model_name, device, dtype, seed, layers_spec)
    cfg = prepare_clt(model, docs, layers, cfg)
    if rank == 0:
        log(f"training a {arch.knob_text()} cross-layer transcoder over {len(layers)} layers "
            f"({layers_spec}): d_sae {cfg.d_sae} per layer, {cfg.steps} steps of {batch_size} "
            f"tokens from {data['source']} into {out_dir}{_processes(world)}")
    res = train_clt(model, docs, out_dir, layers, cfg, data=data, cache_dir=cache_dir,
                    stop_at=stop_at)
    if rank:
        return
    click.echo(_run_line(res, "EV (train, mean over layers)"))
    write_run_results(out_dir, {k: v for k, v in res.to_dict().items() if k != "manifest"}
                      | {"manifest": res.manifest})


def _training_inputs(text_file: str | None, hf_dataset: str | None, out_dir: str,
                     cache_dir: str | None, model_name: str | None, device: str, dtype: str,
                     seed: int, layers_spec: str) -> tuple[Any, dict[str, Any], Any, list[int]]:
    """A training verb's text, its folders checked, the model and the layers asked for."""
    from interp.data.corpus import text_source

    docs, data = text_source("train", text_file=text_file, hf_dataset=hf_dataset)
    check_creatable(out_dir)
    if cache_dir is not None:
        check_creatable(cache_dir)
    model = load_model(model_name, device, dtype, seed)
    return docs, data, model, sorted(set(model.parse_layers(layers_spec)))


def _run_line(res: Any, ev_label: str) -> str:
    """A training run's line: steps, the mean EV of the last 20 steps, the dead fraction,
    throughput, and where the result is (or that it is unfinished)."""
    h = res.history
    k = min(20, len(h["loss"]))
    ev = sum(h["explained_variance"][-k:]) / k if k else float("nan")
    return (f"steps {res.steps_done}/{res.steps_total}  {ev_label} {ev:.3f}  "
            f"dead {h['dead_fraction'][-1] if k else float('nan'):.3f}  "
            f"{throughput_text(res.tokens_per_s, res.mfu, res.peak_flops)}  "
            + (f"→ {res.sae_path}" if res.complete else "unfinished: rerun to resume"))


@transcoder_group.command("eval")
@click.argument("transcoders_dir", type=click.Path())
@layers_option("Only these layers' transcoders [default: every one in the folder].",
               dest="layers_spec", metavar="L1,L2,…")
@text_options
@config_options(TranscoderEvalConfig, only=["tokens", "seq_len", "one_at_a_time"])
@make_model_options(TranscoderEvalConfig, batch_help="Text windows per forward pass.")
@out_option("Write results.json, report.html and figures/ here [default: the folder].")
@json_option
def eval_cmd(transcoders_dir: str, layers_spec: str | None, text_file: str | None,
             hf_dataset: str | None, model_name: str | None, device: str, dtype: str,
             batch_size: int, seed: int, out_dir: str | None, as_json: bool,
             **settings: Any) -> None:
    """NMSE, L0, dead latents and the CE-loss score, every layer at once and each alone."""
    from interp.data.corpus import text_source
    from reports.transcoder import transcoder_report
    from saes.transcoders.evaluate import evaluate_transcoders
    from saes.transcoders.files import load_transcoders

    cfg = build_config(TranscoderEvalConfig, settings, batch_size=batch_size, seed=seed)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    target = transcoders_dir if out_dir is None else out_dir
    check_creatable(target)
    model = load_model(model_name, device, dtype, seed)
    layers = None if layers_spec is None else model.parse_layers(layers_spec)
    tcs = load_transcoders(transcoders_dir, model, layers=layers, device=device)
    with OutDir(target) as out:
        res = evaluate_transcoders(model, tcs, docs, cfg, data=data)
        data = json_safe(res.to_dict())
        out.write_json("results.json", data)
        transcoder_report(res).write(out)
    show_result(res, data, as_json, f"wrote {os.path.join(target, 'report.html')} and "
                                    "results.json")


__all__ = ["transcoder_group"]
