"""What a prompt's attribution graph writes and shows beside its result: the full adjacency
file, the kept features' top contexts from held-out text, and the features' explanations
found beside the transcoders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from saes.graphs.results import AttributionGraph

#: The adjacency file's name in a graph's folder.
ADJACENCY_FILE = "adjacency.safetensors"


def adjacency_bytes(result: AttributionGraph) -> bytes | None:
    """The full direct-effect matrix as safetensors (rows: targets, columns: sources, node
    order as :mod:`saes.graphs.attribution` says); None when the run kept none."""
    from safetensors.torch import save

    if result.adjacency is None:
        return None
    return save({"adjacency": result.adjacency.contiguous()},
                metadata={"rows": "targets", "columns": "sources",
                          "order": "features, errors, biases, embeddings, targets"})


def graph_contexts(model: Any, transcoders: Any,
                   result: AttributionGraph) -> dict[str, list[dict[str, Any]]]:
    """Each kept feature's top activating contexts from the held-out text (for the viewer)."""
    from interp.data.corpus import text_source
    from saes.graphs.contexts import feature_contexts

    feats = {(n["layer"], n["feature"]) for n in result.nodes if n["kind"] == "feature"}
    docs, _ = text_source("heldout")
    return feature_contexts(model, transcoders, sorted(feats), docs)


def transcoder_explanations(folder: str | Path, transcoders: Any) -> dict[str, str]:
    """Labels ``"layer:feature"`` of the transcoders' features, where an
    ``explanations.jsonl`` sits beside a layer's transcoder (``layer-L/transcoder/``, as
    ``interp sae explain`` writes beside an SAE)."""
    from saes.autointerp.store import explanations_beside
    from saes.transcoders.files import layer_folders
    from saes.transcoders.train import TRANSCODER_SUBDIR

    labels: dict[str, str] = {}
    for layer, d in layer_folders(Path(folder).expanduser()).items():
        if layer not in transcoders:
            continue
        found = explanations_beside(d / TRANSCODER_SUBDIR, transcoders[layer].cfg.d_sae) or {}
        for feat, exp in found.items():
            labels[f"{layer}:{feat}"] = exp.label
    return labels


__all__ = ["ADJACENCY_FILE", "adjacency_bytes", "graph_contexts", "transcoder_explanations"]
