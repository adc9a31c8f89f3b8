"""Top activating contexts of a graph's feature nodes, for the viewer's panel.

One pass over held-out text windows (:func:`interp.data.windows.pack_windows`), capturing
the MLP input of every layer that has a feature node, encoding it with that layer's
transcoder and keeping, per (layer, feature), the ``top`` windows where it fires most
(position 0 left out, as in training), cut to ``width`` tokens either side of the peak.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.models.loading import Model


@torch.no_grad()
def feature_contexts(
    model: Model, transcoders: Any, features: Iterable[tuple[int, int]], docs: list[str], *,
    tokens: int = 16_384, seq_len: int = 64, top: int = 6, width: int = 10, batch: int = 8,
) -> dict[str, list[dict[str, Any]]]:
    """``{"layer:feature": [{"tokens": [...], "acts": [...]}, …]}``, the strongest first."""
    wanted: dict[int, list[int]] = {}
    for layer, feat in features:
        wanted.setdefault(int(layer), []).append(int(feat))
    if not wanted:
        return {}
    n_windows = max(1, -(-tokens // (seq_len - 1)))
    windows = pack_windows(model, docs, seq_len=seq_len, n_windows=n_windows)
    from saes.transcoders.files import as_replacement

    rep = as_replacement(transcoders)
    resid_read = "hook_resid_pre" if model.anatomy.family.parallel else "hook_resid_mid"
    hooks = {layer: f"blocks.{layer}." + ("mlp.hook_in" if rep.reads_normed(layer)
                                          else resid_read) for layer in wanted}
    heaps: dict[tuple[int, int], list[tuple[float, int, int]]] = {
        (layer, f): [] for layer, fs in wanted.items() for f in fs}
    acts_of: dict[tuple[int, int, int], list[float]] = {}
    for s in range(0, windows.shape[0], batch):
        ids = windows[s:s + batch].to(model.device)
        acts, _ = forward_with_hooks(model, ids, None, list(hooks.values()))
        for layer, feats in wanted.items():
            idx = torch.tensor(feats)
            f = rep.encode(layer, acts[hooks[layer]].float())[..., idx]  # [b, t, k]
            f[:, 0] = 0
            peak, where = f.max(dim=1)  # [b, k]
            for b in range(f.shape[0]):
                for j, feat in enumerate(feats):
                    v = float(peak[b, j])
                    if v <= 0:
                        continue
                    heap = heaps[(layer, feat)]
                    item = (v, s + b, int(where[b, j]))
                    if len(heap) < top:
                        heapq.heappush(heap, item)
                    elif v > heap[0][0]:
                        heapq.heapreplace(heap, item)
                    else:
                        continue
                    acts_of[(layer, feat, s + b)] = f[b, :, j].tolist()
    out: dict[str, list[dict[str, Any]]] = {}
    for (layer, feat), heap in heaps.items():
        ctxs = []
        for v, w, pos in sorted(heap, reverse=True):
            lo, hi = max(1, pos - width), min(windows.shape[1], pos + width + 1)
            ids = windows[w, lo:hi].tolist()
            a = acts_of[(layer, feat, w)][lo:hi]
            ctxs.append({"tokens": model.token_strs(ids), "acts": [round(x, 4) for x in a],
                         "max": round(v, 4)})
        out[f"{layer}:{feat}"] = ctxs
    return out


__all__ = ["feature_contexts"]
