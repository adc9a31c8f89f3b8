"""Transcoders on disk: one artifact per layer, and a folder of them as a set.

A training run writes ``OUT/layer-L/transcoder/`` for each layer (an
:mod:`interp.runs.artifacts` folder of kind ``"transcoder"``, see
:mod:`saes.transcoders.model`). :func:`load_transcoders` reads such a folder, a folder of
``layer-L`` artifacts, or files in sparsify's or circuit-tracer's layouts
(:mod:`saes.transcoders.formats`), into a :class:`TranscoderSet`: the transcoders by layer.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from interp.errors import InterpError
from saes.loading import LoadedSAE, load_sae
from saes.sae import SparseAutoencoder
from saes.transcoders.mlp_replacement import MLPReplacement
from saes.transcoders.model import KIND, TranscoderConfig, is_transcoder
from saes.transcoders.train import TRANSCODER_SUBDIR

_LAYER = re.compile(r"^layer-(\d+)$")


def load_transcoder(path: str | Path, model: Any | None = None, device: str = "cpu"
                    ) -> LoadedSAE:
    """One transcoder artifact (a run folder's ``transcoder/`` or the artifact itself);
    with ``model``, refused in one line when made for another model or width."""
    p = Path(path).expanduser()
    if (p / TRANSCODER_SUBDIR / "config.json").is_file():
        p = p / TRANSCODER_SUBDIR
    return load_sae(p, model, device, kind=KIND, config_class=TranscoderConfig)


@dataclass
class TranscoderSet(MLPReplacement):
    """Transcoders by layer (each replaces that block's MLP), with where they came from: the
    per-layer :class:`~saes.transcoders.mlp_replacement.MLPReplacement`."""

    by_layer: dict[int, SparseAutoencoder]
    source: str = ""
    #: "interp", "sparsify" or "circuit-tracer": the layout they were read from
    format: str = "interp"
    paths: dict[int, str] = field(default_factory=dict)
    manifests: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_layer:
            raise InterpError("no transcoders: the set is empty")
        for layer, tc in self.by_layer.items():
            if not is_transcoder(tc):
                raise InterpError(f"layer {layer}: {type(tc).__name__} is not a transcoder")
        self.by_layer = dict(sorted(self.by_layer.items()))

    @property
    def layers(self) -> list[int]:
        """The layers with a transcoder, in order."""
        return list(self.by_layer)

    def __getitem__(self, layer: int) -> SparseAutoencoder:
        return self.by_layer[layer]

    # ---- MLPReplacement -----------------------------------------------------------------
    def targets(self, layer: int) -> list[int]:
        """Its own layer."""
        return [layer]

    def d_sae(self, layer: int) -> int:
        """The layer's transcoder's width."""
        return self.by_layer[layer].cfg.d_sae

    def reads_normed(self, layer: int) -> bool:
        """Always: transcoders read ``mlp.hook_in``."""
        return True

    def encode(self, layer: int, x: Tensor) -> Tensor:
        """The layer's transcoder's activations."""
        return self.by_layer[layer].encode(x)

    def encoder(self, layer: int) -> Tensor:
        """``W_enc`` with the input scale applied."""
        tc = self.by_layer[layer]
        return _scaled(tc.W_enc, tc.cfg.input_scale)

    def _out_scale(self, layer: int) -> float:
        return float(getattr(self.by_layer[layer].cfg, "output_scale", 1.0))

    def decoder(self, src: int, tgt: int) -> Tensor:
        """``W_dec`` (raw units) where ``tgt`` is ``src``."""
        if tgt != src:
            raise InterpError(f"a per-layer transcoder of layer {src} writes only there, not "
                              f"to layer {tgt}")
        return _scaled(self.by_layer[src].W_dec, 1 / self._out_scale(src))

    def bias(self, tgt: int) -> Tensor:
        """``b_dec`` (raw units)."""
        return _scaled(self.by_layer[tgt].b_dec, 1 / self._out_scale(tgt))

    def skip_matrix(self, tgt: int) -> Tensor | None:
        """``W_skip`` scaled to raw units (None without one)."""
        tc = self.by_layer[tgt]
        w = getattr(tc, "W_skip", None)
        return None if w is None else _scaled(w, tc.cfg.input_scale / self._out_scale(tgt))

    def shuffled(self, generator: torch.Generator) -> TranscoderSet:
        """Each transcoder's decoder rows permuted across its features."""
        out: dict[int, SparseAutoencoder] = {}
        for layer, tc in self.by_layer.items():
            c = copy.deepcopy(tc)
            with torch.no_grad():
                perm = torch.randperm(c.W_dec.shape[0], generator=generator)
                c.W_dec.copy_(c.W_dec[perm].clone())
            out[layer] = c
        return TranscoderSet(out, self.source, self.format, self.paths, self.manifests)

    def items(self) -> Iterator[tuple[int, SparseAutoencoder]]:
        """(layer, transcoder) pairs in layer order."""
        return iter(self.by_layer.items())

    def check_model(self, model: Any) -> None:
        """Refuse (one line) transcoders of another width or layer count than ``model``'s."""
        for layer, tc in self.by_layer.items():
            if tc.cfg.d_in != model.d_model:
                raise InterpError(f"the layer-{layer} transcoder reads width {tc.cfg.d_in}, but "
                                  f"{model.model_id} has d_model={model.d_model}")
            if not 0 <= layer < model.n_layers:
                raise InterpError(f"a transcoder for layer {layer}, but {model.model_id} has "
                                  f"layers 0–{model.n_layers - 1}")
            if tc.cfg.layer is not None and tc.cfg.layer != layer:
                raise InterpError(f"the transcoder filed under layer {layer} was made for "
                                  f"layer {tc.cfg.layer}")

    def to_dict(self) -> dict[str, Any]:
        """Where the set came from and each layer's settings (for results.json)."""
        return {"source": self.source, "format": self.format, "kind": self.kind,
                "layers": self.layers,
                "transcoders": {str(layer): {**tc.cfg.to_dict(),
                                             "path": self.paths.get(layer, "")}
                                for layer, tc in self.by_layer.items()}}


def _scaled(t: Tensor, c: float) -> Tensor:
    """``c·t``, or ``t`` itself when ``c`` is 1 (a saved transcoder's scales are folded):
    the replacement model reads these on every pass, and a copy per read costs."""
    return t if c == 1.0 else t * c


def layer_folders(folder: Path) -> dict[int, Path]:
    """``layer-L`` subfolders by layer."""
    found = {}
    for d in folder.iterdir() if folder.is_dir() else []:
        m = _LAYER.match(d.name)
        if m and d.is_dir():
            found[int(m.group(1))] = d
    return dict(sorted(found.items()))


def _is_clt(p: Path) -> bool:
    """Whether ``p`` is a CLT run folder or artifact (``clt/config.json``, or a config of
    kind ``clt``)."""
    import json

    if (p / "clt" / "config.json").is_file():
        return True
    cfg = p / "config.json"
    if not cfg.is_file():
        return False
    try:
        return json.loads(cfg.read_text()).get("kind") == "clt"
    except (OSError, ValueError, AttributeError):
        return False


def _load_clt(p: Path, fmt: str, model: Any | None, wanted: list[int] | None, device: str,
              reads: str) -> MLPReplacement:
    from saes.transcoders.crosslayer import load_clt
    from saes.transcoders.formats import read_circuit_tracer_clt
    from saes.transcoders.mlp_replacement import CLTReplacement

    if fmt == "circuit-tracer-clt":
        clt = read_circuit_tracer_clt(p, getattr(model, "model_id", ""), reads).to(device)
        rep = CLTReplacement(clt, source=str(p), format=fmt, path=str(p))
    else:
        ld = load_clt(p, model, device)
        rep = CLTReplacement(ld.clt, source=str(p), format="interp", path=str(ld.path),
                             manifest=ld.manifest)
    if wanted is not None and wanted != rep.layers:
        raise InterpError(f"{p} is a cross-layer transcoder over layers "
                          f"{', '.join(map(str, rep.layers))}: it is used whole (its features "
                          "write to later layers), so leave out --layers")
    if model is not None:
        rep.check_model(model)
    return rep


def load_transcoders(
    path: str | Path, model: Any | None = None, *, layers: Mapping[int, Any] | list[int] |
    None = None, device: str = "cpu", clt_reads: str = "resid_mid",
) -> Any:
    """The transcoders in ``path`` as an
    :class:`~saes.transcoders.mlp_replacement.MLPReplacement`: an ``interp transcoder train``
    run folder (``layer-L/`` each holding ``transcoder/``), one transcoder artifact, or
    sparsify's / circuit-tracer's per-layer files (:func:`saes.transcoders.formats.detect`)
    give a :class:`TranscoderSet` (``layers`` keeps only those); a cross-layer transcoder
    (``interp transcoder train --cross-layer``'s folder, or circuit-tracer's CLT files, whose
    features read ``clt_reads``) gives a
    :class:`~saes.transcoders.mlp_replacement.CLTReplacement`.

    Raises :class:`InterpError` (one line) for a missing folder, a folder without
    transcoders, an unfinished run, a layer asked for that is not there, or transcoders that
    do not fit ``model``.
    """
    from saes.transcoders.formats import detect, read_foreign

    p = Path(path).expanduser()
    if not p.exists():
        raise InterpError(f"no transcoders at {p}: no such folder")
    wanted = None if layers is None else sorted(set(layers))
    fmt = detect(p)
    if fmt == "circuit-tracer-clt" or _is_clt(p):
        return _load_clt(p, fmt, model, wanted, device, clt_reads)
    if fmt != "interp":
        foreign, where = read_foreign(p, fmt, model, wanted, device)
        tset = TranscoderSet(foreign, source=str(p), format=fmt, paths=where)
    else:
        if (p / "config.json").is_file() or (p / TRANSCODER_SUBDIR).is_dir():
            loaded = {None: load_transcoder(p, model, device)}
        else:
            folders = layer_folders(p)
            if not folders:
                raise InterpError(f"no transcoders in {p}: expected layer-L/transcoder/ "
                                  "folders (interp transcoder train --out), one transcoder, or "
                                  "sparsify or circuit-tracer files")
            unfinished = [layer for layer, d in folders.items()
                          if not (d / TRANSCODER_SUBDIR / "config.json").is_file()]
            pick = [layer for layer in folders if wanted is None or layer in wanted]
            if wanted is None and unfinished:
                raise InterpError(f"{p}: layer(s) {', '.join(map(str, unfinished))} unfinished; "
                                  "rerun `interp transcoder train` to finish")
            loaded = {layer: load_transcoder(folders[layer], model, device) for layer in pick}
        by_layer: dict[int, SparseAutoencoder] = {}
        paths, manifests = {}, {}
        for key, ld in loaded.items():
            layer = ld.sae.cfg.layer if key is None else key
            if layer is None:
                raise InterpError(f"transcoder {ld.path} does not say which layer it is for")
            by_layer[layer], paths[layer], manifests[layer] = ld.sae, str(ld.path), ld.manifest
        if wanted is not None:
            missing = [layer for layer in wanted if layer not in by_layer]
            if missing:
                raise InterpError(f"{p} has no transcoder for layer(s) "
                                  f"{', '.join(map(str, missing))} (it has "
                                  f"{', '.join(map(str, sorted(by_layer)))})")
        tset = TranscoderSet(by_layer, source=str(p), format="interp", paths=paths,
                             manifests=manifests)
    if model is not None:
        tset.check_model(model)
    return tset


def as_replacement(obj: Any) -> MLPReplacement:
    """``obj`` as an :class:`MLPReplacement`: one already, a cross-layer transcoder (or its
    :class:`~saes.transcoders.crosslayer.LoadedCLT`), or a dict layer → transcoder."""
    from saes.transcoders.crosslayer import CrossLayerTranscoder, LoadedCLT
    from saes.transcoders.mlp_replacement import CLTReplacement

    if isinstance(obj, MLPReplacement):
        return obj
    if isinstance(obj, LoadedCLT):
        return CLTReplacement(obj.clt, source=str(obj.path), path=str(obj.path),
                              manifest=obj.manifest)
    if isinstance(obj, CrossLayerTranscoder):
        return CLTReplacement(obj)
    if isinstance(obj, Mapping):
        if not obj:
            raise InterpError("no transcoders: a graph needs at least one layer's")
        return TranscoderSet(dict(obj))
    raise InterpError(f"not transcoders: {type(obj).__name__}")


__all__ = ["TranscoderSet", "as_replacement", "layer_folders", "load_transcoder",
           "load_transcoders"]
