"""``interp causal das`` (distributed alignment search over layers, against its controls) and
``interp causal edges`` (edge attribution against exact path patching)."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from interp.causal.results import DASConfig, EdgeConfig
from interp.cli.common import (
    json_option,
    json_safe,
    load_model,
    make_model_options,
    out_option,
    show_result,
)
from interp.cli.options import build_config, config_options


@click.group("causal")
def causal_group() -> None:
    """Causal validation: interchange interventions, DAS, and edge attribution."""


@causal_group.command("das")
@config_options(DASConfig)
@make_model_options(DASConfig, batch_help="Pairs per training step and scoring pass.")
@out_option("Write report.html, results.json and figures/ here.", required=True)
@json_option
def das(model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
        out_dir: str, as_json: bool, **settings: Any) -> None:
    """Learn a subspace per layer whose interchange makes the output follow the source."""
    from interp.causal.das import run_das
    from interp.causal.pairs import is_probe_set
    from interp.circuits.tasks import load_task
    from interp.runs.outdir import OutDir
    from reports.causal import das_report

    config = build_config(DASConfig, settings, batch_size=batch_size, seed=seed)
    if not is_probe_set(config.task):  # a missing or empty task fails before the model loads
        load_task(config.task, config.limit)
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        subspaces = {}
        if config.sae is not None:
            from saes.features.subspace import latent_subspace
            from saes.loading import load_sae

            subspaces[f"SAE latents ({config.sae_latents})"] = latent_subspace(
                load_sae(config.sae, model), config.sae_latents)
        result = run_das(model, config, subspaces=subspaces)
        data: dict[str, Any] = json_safe(result.to_dict())
        out.write_json("results.json", data)
        das_report(result).write(out)
    show_result(result, data, as_json,
                f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


@causal_group.command("edges")
@config_options(EdgeConfig)
@make_model_options(EdgeConfig, batch_help="Pairs per gradient pass (exact path patching "
                                             "runs 4x as many rows).")
@out_option("Write report.html, results.json, circuit.json, edge_scores.safetensors "
            "and figures/ here.", required=True)
@json_option
def edges(model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
          out_dir: str, as_json: bool, **settings: Any) -> None:
    """Score every edge by eap-clean, eap-corrupted and eap-ig; test each one's circuits
    against edge sets matched in score, and check a sample against exact path patching."""
    from interp.causal.edge_effects import graph_of
    from interp.causal.edges import run_edges
    from interp.circuits.pairs import check_task
    from interp.runs.outdir import OutDir
    from reports.causal import edges_report

    config = build_config(EdgeConfig, settings, batch_size=batch_size, seed=seed)
    check_task(config.task, config.limit, config.group_by)  # before the model loads
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_edges(model, config)
        data: dict[str, Any] = json_safe(result.to_dict())
        out.write_json("results.json", data)
        if result.circuit is not None:
            out.write_json("circuit.json", result.circuit.to_json())
        if result.scores:
            out.write_bytes("edge_scores.safetensors", edge_scores_file(result))
        g = graph_of(model)
        edges_report(result, g.n_layers, g.n_heads, g.n_kv).write(out)
    show_result(result, data, as_json, f"wrote {os.path.join(out_dir, 'report.html')}, "
                                       "results.json and circuit.json")


def edge_scores_file(result: Any) -> bytes:
    """Every method's per-pair scores (``[pairs, edges]``; exact: ``[pairs, sample]``) as
    safetensors, with the run's config as metadata."""
    from safetensors.torch import save

    tensors = {k.replace("-", "_"): v.contiguous() for k, v in result.scores.items()}
    return save(tensors, metadata={"config": json.dumps(json_safe(result.config.to_dict())),
                                   "model_id": result.model_id})


__all__ = ["causal_group"]
