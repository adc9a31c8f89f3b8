"""``interp graph``: an attribution graph of one prompt on transcoders, checked against the
real model; or, with ``--task``, the check over a task's pairs."""

from __future__ import annotations

import os
from typing import Any

import click

from interp.cli.common import json_option, json_safe, load_model, make_model_options, out_option
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.runs.outdir import OutDir, check_creatable
from saes.graphs.tasks import GraphTaskConfig


@click.command("graph")
@click.argument("prompt", required=False)
@click.option("--transcoders", "transcoders_dir", required=True, type=click.Path(),
              help="A folder of transcoders: interp transcoder train's --out, or sparsify's or "
                   "circuit-tracer's per-layer files.")
@click.option("--task", default=None, metavar="capitals|ioi|pronoun|FILE",
              help="Instead of PROMPT: a graph per pair of this task, target logit(answer) − "
                   "logit(wrong), and the agreement with the real model over the pairs.")
@config_options(GraphTaskConfig, exclude=["task"])
@click.option("--save-adjacency", is_flag=True,
              help="Also write adjacency.safetensors, the full [n, n] direct-effect matrix "
                   "(4·n² bytes: 1.3 GB for a 20-token prompt on 30 layers).")
@click.option("--contexts/--no-contexts", default=True, show_default=True,
              help="Collect each kept feature's top activating contexts from held-out text "
                   "for the viewer (one prompt only).")
@make_model_options(GraphTaskConfig, batch_help="Graph rows (targets) per backward pass.")
@out_option("Write report.html (the viewer), results.json and figures/ here.", required=True)
@json_option
def graph(prompt: str | None, transcoders_dir: str, task: str | None, save_adjacency: bool,
          contexts: bool,
          model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
          out_dir: str, as_json: bool, **settings: Any) -> None:
    """Build a prompt's attribution graph on transcoders and check it in the real model."""
    from interp.cli.common import show_result
    from saes.transcoders.files import load_transcoders

    if (prompt is None) == (task is None):
        raise InterpError("give a PROMPT or --task, not both" if prompt else
                          "give a PROMPT (or --task capitals|ioi|pronoun|FILE)")
    cfg = build_config(GraphTaskConfig, settings, batch_size=batch_size, seed=seed,
                       **({"task": task} if task else {}))
    if task is not None:
        from interp.circuits.tasks import load_task

        for flag, given in (("--target", cfg.target is not None),
                            ("--save-adjacency", save_adjacency)):
            if given:  # refused rather than ignored
                raise InterpError(f"{flag} is for one PROMPT's graph, not --task (each of a "
                                  "task's pairs sets its own target)")
        load_task(cfg.task, cfg.limit)  # a missing task fails before the model loads
    check_creatable(out_dir)
    model = load_model(model_name, device, dtype, seed)
    tcs = load_transcoders(transcoders_dir, model, device=device)
    with OutDir(out_dir) as out:
        if task is not None:
            from reports.graph_task import graph_task_report
            from saes.graphs.tasks import run_graph_task

            result: Any = run_graph_task(model, tcs, cfg)
            data = json_safe(result.to_dict())
            out.write_json("results.json", data)
            graph_task_report(result).write(out)
        else:
            assert prompt is not None
            from reports.graph import graph_report
            from saes.graphs.graph import run_attribution
            from saes.graphs.outputs import (
                ADJACENCY_FILE,
                adjacency_bytes,
                graph_contexts,
                transcoder_explanations,
            )
            from saes.graphs.results import AttributionConfig

            acfg = AttributionConfig(**{k: v for k, v in cfg.to_dict().items()
                                        if k in AttributionConfig.settings()})
            result = run_attribution(model, tcs, prompt, acfg)
            data = json_safe(result.to_dict())
            out.write_json("results.json", data)
            adjacency = adjacency_bytes(result) if save_adjacency else None
            if adjacency is not None:
                out.write_bytes(ADJACENCY_FILE, adjacency)
            ctx = graph_contexts(model, tcs, result) if contexts else None
            graph_report(result, ctx, transcoder_explanations(transcoders_dir, tcs)).write(out)
    show_result(result, data, as_json, f"wrote {os.path.join(out_dir, 'report.html')}")


__all__ = ["graph"]
