"""``interp steer train|generate|sweep``: steering vectors and α × layer sweeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import click

from interp.cli.common import (
    json_flag,
    json_safe,
    layer_option,
    layers_option,
    load_model,
    make_model_options,
    manifest_for,
    out_option,
    prompt_file_options,
    prompts_from_args,
    text_options,
)
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.generation.engine import GenerationConfig
from interp.steering.sweep import SweepConfig
from interp.steering.vectors import PairsFile
from saes.features.steering import FeatureVectorConfig


def pairs_option(help: str | None = None) -> Callable[[Callable], Callable]:  # noqa: A002
    """``--pairs FILE``: contrast pairs (:class:`PairsFile`'s field; ``help`` replaces its
    help text)."""
    return config_options(PairsFile, only=["pairs"], help=None if help is None else
                          {"pairs": help})


def vector_option(help: str, *, required: bool = False,  # noqa: A002 - click's word
                  ) -> Callable[[Callable], Callable]:
    """``--vector PATH``: a steering-vector artifact (``vector_path``)."""
    return click.option("--vector", "vector_path", required=required, default=None,
                        type=click.Path(), help=help)


@click.group()
def steer() -> None:
    """Steering vectors: build them from contrast pairs and generate with them."""


@steer.command("train")
@pairs_option()
@layer_option("0-based layer (resid_post); with --pairs.", type=int)
@config_options(SweepConfig, only=["method"])
@config_options(PairsFile, only=["positive_key", "negative_key"])
@click.option("--sae", "sae_dir", default=None, type=click.Path(),
              help="Instead of pairs: an SAE (run folder or SAE folder); with --feature.")
@config_options(FeatureVectorConfig, only=["feature", "tokens"], defaults={"feature": None},
                help={"feature": "The SAE latent whose decoder direction to steer along "
                                 "(with --sae).",
                      "tokens": "With --sae: held-out tokens that set the feature's typical "
                                "activation."})
@text_options
@make_model_options(FeatureVectorConfig, batch_help="Pairs (or, with --sae, text windows) "
                    "per forward pass.")
@out_option("Artifact folder for the vector (safetensors + config.json).", required=True)
def steer_train(pairs: str | None, layer: int | None, method: str, positive_key: str,
                negative_key: str, sae_dir: str | None, feature: int | None, tokens: int,
                text_file: str | None, hf_dataset: str | None,
                model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
                out_dir: str) -> None:
    """Build a steering vector: from contrast pairs at --layer, or from an SAE feature.

    With --sae DIR --feature N, α = 1 adds feature N's decoder direction at the feature's
    typical maximum activation on held-out text (see saes.features.steering).
    """
    from interp.steering.vectors import load_pairs, train_vector

    if sae_dir is not None or feature is not None:
        if pairs is not None or layer is not None:
            raise InterpError("give --pairs (with --layer) or --sae with --feature, not both")
        if sae_dir is None or feature is None:
            raise InterpError("--sae and --feature go together")
        _train_from_feature(sae_dir, feature, tokens, text_file, hf_dataset, model_name,
                            device, dtype, batch_size, seed, out_dir)
        return
    if pairs is None or layer is None:
        raise InterpError("give --pairs and --layer (or --sae DIR --feature N)")
    from interp.runs.outdir import check_out_place

    check_out_place(out_dir)
    cp = load_pairs(pairs, positive_key, negative_key)
    model = load_model(model_name, device, dtype, seed)
    vec = train_vector(model, cp, layer, method=method, batch_size=batch_size)
    man = manifest_for(model, seed, cp.positive + cp.negative,
                    {"layer": layer, "method": method, "pairs": pairs})
    path = vec.save(out_dir, man)
    click.echo(json.dumps({"vector": str(path), "layer": vec.layer, "method": vec.method,
                           "n_pairs": vec.n_pairs, "norm": vec.norm,
                           "scale": vec.scale_note}, indent=2))


def _train_from_feature(sae_dir: str, feature: int, tokens: int, text_file: str | None,
                        hf_dataset: str | None, model_name: str | None, device: str,
                        dtype: str, batch_size: int, seed: int, out_path: str) -> None:
    from interp.cli.sae import sae_path
    from interp.data.corpus import text_source
    from interp.runs.outdir import check_creatable
    from saes.features.steering import feature_vector
    from saes.loading import load_sae

    cfg = FeatureVectorConfig(feature=feature, tokens=tokens, batch_size=batch_size,
                              seed=seed)
    path = sae_path(sae_dir)
    check_creatable(out_path)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    model = load_model(model_name, device, dtype, seed)
    loaded = load_sae(path, model, device=device)
    vec = feature_vector(model, loaded, docs, cfg)
    man = manifest_for(model, seed, docs[:0], {"sae": str(loaded.path), **asdict(cfg)})
    man["dataset_hash"] = data["sha256"]
    man["data_source"] = data["source"]
    out = vec.save(out_path, man)
    click.echo(json.dumps({"vector": str(out), "layer": vec.layer, "method": vec.method,
                           "feature": vec.extra["feature"],
                           "typical_max_activation": vec.extra["typical_max_activation"],
                           "windows_fired": f"{vec.extra['windows_fired']}/"
                                            f"{vec.extra['windows']}",
                           "norm": vec.norm, "scale": vec.scale_note}, indent=2))


@steer.command("generate")
@click.argument("prompts", nargs=-1)
@vector_option("A steering-vector artifact from `interp steer train`.", required=True)
@click.option("--alpha", default=1.0, show_default=True, type=float,
              help="Coefficient: h ← h + alpha·v (negative steers the other way).")
@config_options(SweepConfig, only=["positions"])
@layer_option("Override the vector's layer.", type=int)
@prompt_file_options
@make_model_options(GenerationConfig)
@config_options(GenerationConfig, only=["chat", "max_new_tokens", "temperature"])
@json_flag("Print a JSON list of {prompt, alpha, layer, text, unsteered} instead of a table.")
def steer_generate(prompts: tuple[str, ...], vector_path: str, alpha: float, positions: str,
                   layer: int | None, file_: str | None, text_column: str,
                   model_name: str | None, device: str, dtype: str, batch_size: int,
                   seed: int, as_json: bool, **settings: Any) -> None:
    """Generate with a steering vector added at its layer, next to the unsteered text."""
    import math

    from interp.generation.engine import generate
    from interp.steering.vectors import load_vector
    from interp.steering.vectors import steer as steer_ctx

    if not math.isfinite(alpha):
        raise InterpError(f"--alpha must be finite, got {alpha}")
    config = build_config(GenerationConfig, settings, seed=seed, batch_size=batch_size)
    texts = prompts_from_args(prompts, file_, text_column)
    model = load_model(model_name, device, dtype, seed)
    vec = load_vector(vector_path, model)
    base = generate(model, texts, config)
    with steer_ctx(model, vec, layer=layer, alpha=alpha, positions=positions):
        steered = generate(model, texts, config)
    rows = [{"prompt": p, "alpha": alpha, "layer": vec.layer if layer is None else layer,
             "text": s, "unsteered": b}
            for p, s, b in zip(texts, steered.texts, base.texts, strict=True)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=True, title=f"steering at layer {rows[0]['layer']}, alpha {alpha}")
    for col in ("prompt", "unsteered", "steered"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(Text(r["prompt"]), Text(r["unsteered"]), Text(r["text"]))
    Console(soft_wrap=False, width=140).print(table)


@steer.command("sweep")
@vector_option("A steering-vector artifact, applied as it is at every swept layer.")
@pairs_option("Contrast pairs: a vector is built at each swept layer.")
@layers_option("Layers to sweep: comma-separated or 'all'.", default="2,6,10,14,18")
@config_options(SweepConfig, only=["alphas"])
@click.option("--prompts", "prompts_path", default=None, type=click.Path(dir_okay=False),
              help=".txt (one prompt per line) or JSONL with a 'prompt' field; default: "
              "shipped neutral prompts.")
@click.option("--n-prompts", default=20, show_default=True, type=click.IntRange(min=1),
              help="Use the first N prompts.")
@config_options(SweepConfig, only=["method", "max_new_tokens", "temperature", "seeds",
                                   "positions", "chat"])
@make_model_options(SweepConfig)
@out_option("Folder for results.json, report.html and figures/.", required=True)
def steer_sweep(vector_path: str | None, pairs: str | None, layers: str,
                prompts_path: str | None, n_prompts: int, model_name: str | None, device: str,
                dtype: str, batch_size: int, seed: int, out_dir: str, **settings: Any) -> None:
    """Sweep coefficient × layer; score target, perplexity, distinct-2, side effects."""
    from interp.runs.outdir import OutDir
    from interp.steering.sweep import run_sweep, sweep_prompts
    from interp.steering.vectors import load_pairs, load_vector
    from reports.steering import steering_report

    if (vector_path is None) == (pairs is None):
        raise InterpError("give --vector or --pairs (exactly one)")
    # checked before the model loads; the layers are parsed against the model
    config = build_config(SweepConfig, settings, layers=[], batch_size=batch_size, seed=seed)
    texts = sweep_prompts(prompts_path, n_prompts)
    cp = load_pairs(pairs) if pairs is not None else None
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        vec = load_vector(vector_path, model) if vector_path is not None else None
        config = config.replace(layers=model.parse_layers(layers))
        result = run_sweep(model, texts, config, pairs=cp, vector=vec)
        out.write_json("results.json", json_safe(result.to_dict()))
        steering_report(result).write(out)
    from rich.console import Console

    result.headline().print(Console(soft_wrap=False, width=160))
