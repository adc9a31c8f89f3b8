"""``interp causal das`` (distributed alignment search over layers, against its controls) and
``interp causal edges`` (edge attribution against exact path patching), declared as tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from interp.causal.results import DASConfig, EdgeConfig
from interp.cli.tool import Tool, tool_command

if TYPE_CHECKING:
    from interp.causal.results import DASResult, EdgeResult
    from interp.runs.outdir import OutDir


@click.group("causal")
def causal_group() -> None:
    """Causal validation: interchange interventions, DAS, and edge attribution."""


def run_das_with_saes(model: Any, config: DASConfig) -> DASResult:
    """:func:`~interp.causal.das.run_das`, with the latents of ``config.sae`` (an SAE,
    :mod:`saes`) scored as a subspace beside DAS: the composition the core cannot make."""
    from interp.causal.das import run_das

    subspaces = {}
    if config.sae is not None:
        from saes.features.subspace import latent_subspace
        from saes.loading import load_sae

        subspaces[f"SAE latents ({config.sae_latents})"] = latent_subspace(
            load_sae(config.sae, model), config.sae_latents)
    return run_das(model, config, subspaces=subspaces)


def _check_das(config: DASConfig) -> None:
    """A missing or empty task fails before the model loads."""
    from interp.causal.pairs import is_probe_set
    from interp.circuits.tasks import load_task

    if not is_probe_set(config.task):
        load_task(config.task, config.limit)


def _write_edges(result: EdgeResult, out: OutDir) -> None:
    from interp.causal.edges import edge_scores_bytes

    if result.circuit is not None:
        out.write_json("circuit.json", result.circuit.to_json())
    if result.scores:
        out.write_bytes("edge_scores.safetensors", edge_scores_bytes(result))


DAS = Tool(
    "das", DASConfig, run_das_with_saes, report="reports.causal:das_report", check=_check_das,
    out_required=True, batch_help="Pairs per training step and scoring pass.",
    help="Learn a subspace per layer whose interchange makes the output follow the source.")
EDGES = Tool(
    "edges", EdgeConfig, "interp.causal.edges:run_edges", report="reports.causal:edges_report",
    check="interp.circuits.pairs:check_task", write=_write_edges,
    files=("circuit.json", "edge_scores.safetensors"), out_required=True,
    batch_help="Pairs per gradient pass (exact path patching runs 4x as many rows).",
    help="Score every edge by eap-clean, eap-corrupted and eap-ig; test each one's circuits "
         "against edge sets matched in score, and check a sample against exact path patching.")

causal_group.add_command(tool_command(DAS))
causal_group.add_command(tool_command(EDGES))

__all__ = ["DAS", "EDGES", "causal_group", "run_das_with_saes"]
