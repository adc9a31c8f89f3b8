"""Other tools' transcoder files, read from a local folder (and written, for circuit-tracer).

**sparsify** (EleutherAI, ``SparseCoder.save_to_disk``): one folder per hook point, named
``layers.L.mlp``, holding ``cfg.json`` (``d_in``, ``k``, ``num_latents`` or
``expansion_factor``, ``activation`` "topk", ``transcode``, ``skip_connection``) and
``sae.safetensors`` with ``encoder.weight`` [d_sae, d_in], ``encoder.bias``, ``W_dec``
[d_sae, d_in], ``b_dec`` and ``W_skip`` [d_in, d_in] (applied as ``x·W_skipᵀ``). Its
transcoders read the MLP module's input and predict the MLP module's output; its encoder
subtracts nothing (``transcode``). Read as our TopK transcoder (sparsify's ReLU-then-top-k
equals our top-k-then-ReLU).

**circuit-tracer** (0.5, ``TranscoderSet.to_safetensors``): ``layer_L.safetensors`` per
layer with ``W_enc`` [d_sae, d_model] (applied as ``x·W_encᵀ + b_enc``), ``W_dec``
[d_sae, d_model], ``b_enc``, ``b_dec``, optional ``activation_function.threshold``
(JumpReLU; ReLU without it) and ``W_skip`` (``x·W_skipᵀ``). Read as our ReLU or JumpReLU
transcoder; :func:`write_circuit_tracer` writes ours (ReLU and JumpReLU: circuit-tracer's
per-layer loader knows no TopK).

The MLP's output is ``hook_mlp_out`` in both, as in ours, for models without a norm after
the MLP (Llama, SmolLM2). For Gemma, whose ``hook_mlp_out`` is after the post-MLP norm,
sparsify's files predict the MLP module's output before it; they are refused there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from interp.errors import InterpError
from saes.loading import sae_from_tensors
from saes.sae import SparseAutoencoder
from saes.transcoders.model import TranscoderConfig

FORMATS = ("interp", "sparsify", "circuit-tracer", "circuit-tracer-clt")
_SPARSIFY = re.compile(r"^layers\.(\d+)\.mlp$")
_CIRCUIT_TRACER = re.compile(r"^layer_(\d+)\.safetensors$")
_CT_CLT_ENC = re.compile(r"^W_enc_(\d+)\.safetensors$")


def detect(path: Path) -> str:
    """Which layout ``path`` holds: "sparsify", "circuit-tracer" or "interp" (ours, or
    nothing recognisable: the caller says what is missing)."""
    if path.is_dir():
        names = [p.name for p in path.iterdir()]
        if any(_CT_CLT_ENC.match(n) for n in names):
            return "circuit-tracer-clt"
        if any(_CIRCUIT_TRACER.match(n) for n in names):
            return "circuit-tracer"
        if any(_SPARSIFY.match(n) for n in names) or (
                (path / "cfg.json").is_file() and (path / "sae.safetensors").is_file()):
            return "sparsify"
    return "interp"


def _read_safetensors(path: Path) -> dict[str, Tensor]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - truncated, not safetensors: one line
        raise InterpError(f"cannot read {path}: {str(exc).splitlines()[0][:200]}") from None


def _needs(tensors: dict[str, Tensor], names: tuple[str, ...], path: Path) -> None:
    missing = [n for n in names if n not in tensors]
    if missing:
        raise InterpError(f"{path} lacks {', '.join(missing)}")


def _build(cfg: TranscoderConfig, tensors: dict[str, Tensor]) -> SparseAutoencoder:
    return sae_from_tensors(cfg, {k: v.float() for k, v in tensors.items()})


def _hooks(layer: int) -> tuple[str, str]:
    return f"blocks.{layer}.mlp.hook_in", f"blocks.{layer}.hook_mlp_out"


def read_sparsify_layer(folder: Path, layer: int, model_id: str = "") -> SparseAutoencoder:
    """One sparsify transcoder folder (``layers.L.mlp``) as our TopK transcoder."""
    try:
        cfg = json.loads((folder / "cfg.json").read_text())
    except (OSError, ValueError) as exc:
        raise InterpError(f"{folder}/cfg.json: unreadable ({exc})") from None
    if not cfg.get("transcode", False):
        raise InterpError(f"{folder} holds a sparsify SAE, not a transcoder (transcode is false)")
    if cfg.get("activation", "topk") != "topk":
        raise InterpError(f"{folder}: sparsify activation {cfg.get('activation')!r} is not "
                          "supported (topk is)")
    t = _read_safetensors(folder / "sae.safetensors")
    _needs(t, ("encoder.weight", "encoder.bias", "W_dec", "b_dec"), folder / "sae.safetensors")
    d_sae, d_in = t["encoder.weight"].shape
    hook_in, hook_out = _hooks(layer)
    skip = "W_skip" in t
    tc = TranscoderConfig(d_in=int(d_in), d_sae=int(d_sae), hook_point=hook_in,
                          output_hook=hook_out, layer=layer, model_id=model_id,
                          architecture="topk", k=int(cfg.get("k", 32)), skip=skip)
    ours = {"W_enc": t["encoder.weight"].T.contiguous(), "b_enc": t["encoder.bias"],
            "W_dec": t["W_dec"], "b_dec": t["b_dec"]}
    if skip:
        ours["W_skip"] = t["W_skip"].T.contiguous()
    return _build(tc, ours)


def read_circuit_tracer_layer(file: Path, layer: int, model_id: str = "") -> SparseAutoencoder:
    """One circuit-tracer ``layer_L.safetensors`` as our ReLU or JumpReLU transcoder."""
    t = _read_safetensors(file)
    _needs(t, ("W_enc", "W_dec", "b_enc", "b_dec"), file)
    d_sae, d_in = t["W_enc"].shape
    hook_in, hook_out = _hooks(layer)
    threshold = t.get("activation_function.threshold")
    skip = "W_skip" in t
    tc = TranscoderConfig(d_in=int(d_in), d_sae=int(d_sae), hook_point=hook_in,
                          output_hook=hook_out, layer=layer, model_id=model_id,
                          architecture="jumprelu" if threshold is not None else "relu",
                          skip=skip)
    ours = {"W_enc": t["W_enc"].T.contiguous(), "b_enc": t["b_enc"], "W_dec": t["W_dec"],
            "b_dec": t["b_dec"]}
    if threshold is not None:
        ours["threshold"] = threshold.expand(int(d_sae)).contiguous()
    if skip:
        ours["W_skip"] = t["W_skip"].T.contiguous()
    return _build(tc, ours)


def read_foreign(path: Path, fmt: str, model: Any | None, layers: list[int] | None,
                 device: str = "cpu",
                 ) -> tuple[dict[int, SparseAutoencoder], dict[int, str]]:
    """Sparsify's or circuit-tracer's transcoders in ``path`` (``layers``: only those) by
    layer, and the file each came from."""
    model_id = getattr(model, "model_id", "")
    found: dict[int, Path] = {}
    if fmt == "sparsify" and (path / "cfg.json").is_file():
        m = _SPARSIFY.match(path.name)
        if m is None:
            raise InterpError(f"{path}: a sparsify folder's name must be layers.L.mlp to say "
                              "its layer")
        found[int(m.group(1))] = path
    else:
        pattern = _SPARSIFY if fmt == "sparsify" else _CIRCUIT_TRACER
        for p in path.iterdir():
            m = pattern.match(p.name)
            if m:
                found[int(m.group(1))] = p
    if layers is not None:
        missing = [layer for layer in layers if layer not in found]
        if missing:
            raise InterpError(f"{path} has no {fmt} transcoder for layer(s) "
                              f"{', '.join(map(str, missing))}")
        found = {layer: found[layer] for layer in layers}
    if fmt == "sparsify" and model is not None and _post_mlp_norm(model):
        raise InterpError(f"{path}: sparsify transcoders predict the MLP module's output, "
                          f"before {model.model_id}'s post-MLP norm; only models without one "
                          "(Llama, SmolLM2) can use them")
    read = read_sparsify_layer if fmt == "sparsify" else read_circuit_tracer_layer
    by_layer = {layer: read(p, layer, model_id).to(device) for layer, p in sorted(found.items())}
    return by_layer, {layer: str(p) for layer, p in found.items()}


def _post_mlp_norm(model: Any) -> bool:
    cfg = getattr(getattr(getattr(model, "bridge", None), "original_model", None), "config", None)
    return getattr(cfg, "model_type", "").startswith("gemma")


def write_circuit_tracer(tcs: Any, folder: str | Path) -> list[Path]:
    """Write a :class:`~saes.transcoders.files.TranscoderSet` of ReLU or JumpReLU transcoders
    as circuit-tracer's ``layer_L.safetensors`` files (for its own venv: bench/)."""
    from interp.runs.atomic import save_safetensors

    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for layer, tc in tcs.items():
        if tc.cfg.architecture not in ("relu", "jumprelu"):
            raise InterpError(f"circuit-tracer reads ReLU and JumpReLU transcoders, not "
                              f"{tc.cfg.architecture} (layer {layer})")
        t = {"W_enc": tc.W_enc.detach().T.contiguous(), "W_dec": tc.W_dec.detach().contiguous(),
             "b_enc": tc.b_enc.detach().contiguous(), "b_dec": tc.b_dec.detach().contiguous()}
        if tc.cfg.architecture == "jumprelu":
            t["activation_function.threshold"] = tc.state_tensors()["threshold"].detach()
        if getattr(tc, "W_skip", None) is not None:
            t["W_skip"] = tc.W_skip.detach().T.contiguous()
        target = out / f"layer_{layer}.safetensors"
        save_safetensors({k: v.float().cpu() for k, v in t.items()}, str(target))
        written.append(target)
    return written


def read_circuit_tracer_clt(folder: str | Path, model_id: str = "", reads: str = "resid_mid"
                            ) -> Any:
    """circuit-tracer's cross-layer transcoder folder (``CrossLayerTranscoder.to_safetensors``:
    ``W_enc_i.safetensors`` with ``W_enc_i`` [m, d] (applied as ``x·W_encᵀ``), ``b_enc_i``,
    ``b_dec_i`` and JumpReLU's ``threshold_i`` (ReLU without), and ``W_dec_i.safetensors``
    with ``W_dec_i`` [m, n − i, d], for layers ``0 … n − 1``) as our
    :class:`~saes.transcoders.crosslayer.CrossLayerTranscoder`. Its features read
    ``hook_resid_mid`` by default (``reads``; circuit-tracer's own default), as the folder
    does not say. Its format has no skip paths."""
    from saes.transcoders.crosslayer import READS, CLTConfig, clt_from_tensors

    path = Path(folder).expanduser()
    if reads not in READS:
        raise InterpError(f"reads must be one of {', '.join(READS)}, not {reads!r}")
    found = sorted(int(m.group(1)) for p in path.iterdir()
                   if (m := _CT_CLT_ENC.match(p.name)))
    n = len(found)
    if not n or found != list(range(n)):
        raise InterpError(f"{path}: circuit-tracer CLT files must be W_enc_0 … W_enc_{{n-1}}"
                          f".safetensors, found layers {found}")
    tensors: dict[str, Tensor] = {}
    enc, b_enc, b_dec, thr = [], [], [], []
    for i in range(n):
        f = path / f"W_enc_{i}.safetensors"
        t = _read_safetensors(f)
        _needs(t, (f"W_enc_{i}", f"b_enc_{i}", f"b_dec_{i}"), f)
        enc.append(t[f"W_enc_{i}"].float().T)
        b_enc.append(t[f"b_enc_{i}"].float())
        b_dec.append(t[f"b_dec_{i}"].float())
        if f"threshold_{i}" in t:
            thr.append(t[f"threshold_{i}"].float().reshape(-1))
        g = path / f"W_dec_{i}.safetensors"
        if not g.is_file():
            raise InterpError(f"{path} lacks W_dec_{i}.safetensors")
        d = _read_safetensors(g)
        _needs(d, (f"W_dec_{i}",), g)
        tensors[f"W_dec_{i}"] = d[f"W_dec_{i}"].float()
    if thr and len(thr) != n:
        raise InterpError(f"{path}: thresholds for {len(thr)} of {n} layers")
    shapes = {tuple(e.shape) for e in enc}
    if len(shapes) != 1:
        raise InterpError(f"{path}: the layers' encoders differ in shape ({sorted(shapes)})")
    d_model, m = next(iter(shapes))
    tensors.update(W_enc=torch.stack(enc), b_enc=torch.stack(b_enc), b_dec=torch.stack(b_dec))
    if thr:
        t = torch.stack(thr)
        if not bool((torch.isfinite(t) & (t > 0)).all()):
            raise InterpError(f"{path}: JumpReLU thresholds must be finite and positive")
        tensors["log_threshold"] = t.log()
    cfg = CLTConfig(d_in=int(d_model), d_sae=int(m), layers=tuple(range(n)), model_id=model_id,
                    architecture="jumprelu" if thr else "relu", reads=reads)
    return clt_from_tensors(cfg, tensors, f"circuit-tracer CLT {path}")


def write_circuit_tracer_clt(clt: Any, folder: str | Path) -> list[Path]:
    """Write our CLT in circuit-tracer's folder format (JumpReLU or ReLU over layers
    ``0 … n − 1``, no skip paths: its format has none and its loader knows no TopK)."""
    from interp.runs.atomic import save_safetensors

    cfg = clt.cfg
    if cfg.architecture not in ("relu", "jumprelu"):
        raise InterpError(f"circuit-tracer reads ReLU and JumpReLU cross-layer transcoders, not "
                          f"{cfg.architecture}")
    if clt.W_skip is not None:
        raise InterpError("circuit-tracer's CLT files have no skip paths; this CLT has them")
    if cfg.reach is not None and cfg.reach < cfg.n_layers:
        raise InterpError(f"circuit-tracer's CLT features write to every later layer; this CLT's "
                          f"reach only {cfg.reach} layers")
    if list(cfg.layers) != list(range(cfg.n_layers)):
        raise InterpError("circuit-tracer's CLT files cover layers 0 … n−1; this CLT covers "
                          f"{', '.join(map(str, cfg.layers))}")
    if cfg.input_scales or cfg.output_scales:
        raise InterpError("fold the CLT's scales into its weights before writing it")
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    t = clt.tensors()
    written = []
    for i in range(cfg.n_layers):
        enc = {f"W_enc_{i}": t["W_enc"][i].T.contiguous(), f"b_enc_{i}": t["b_enc"][i],
               f"b_dec_{i}": t["b_dec"][i]}
        if clt.log_threshold is not None:
            enc[f"threshold_{i}"] = clt.threshold[i].detach()
        for name, tensors in ((f"W_enc_{i}", enc), (f"W_dec_{i}", {f"W_dec_{i}": t[f"W_dec_{i}"]})):
            target = out / f"{name}.safetensors"
            save_safetensors({k: v.float().contiguous().cpu() for k, v in tensors.items()},
                             str(target))
            written.append(target)
    return written


__all__ = ["FORMATS", "detect", "read_circuit_tracer_clt", "read_circuit_tracer_layer",
           "read_foreign", "read_sparsify_layer", "write_circuit_tracer",
           "write_circuit_tracer_clt"]
