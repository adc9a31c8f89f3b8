"""The one on-disk format for everything interp trains or computes.

Probes, tuned lenses, SAEs and steering vectors are all saved and loaded
through this module, so they share the same guarantees. An *artifact* is a
folder::

    my-probe/
        weights.safetensors   # the tensors, safetensors format (never pickle)
        config.json           # everything else, plain JSON (see below)

``config.json`` holds::

    {
      "format_version": 1,              # ARTIFACT_FORMAT_VERSION at save time
      "kind": "probe",                  # what the artifact is: "probe", "sae", ...
      "model_id": "HuggingFaceTB/SmolLM2-135M",   # model it was made for
      "d_model": 576,                   # residual width of that model
      "hook_point": "blocks.6.hook_resid_post",  # or null
      "config": {...},                  # the feature's own settings (dataclass -> dict)
      "tensors": {"W": {"shape": [576, 2], "dtype": "float32"}, ...},
      "weights_sha256": "9f86d0...",    # sha256 of weights.safetensors
      "manifest": {...}                 # run manifest: versions, seed, dataset hash, ...
    }

Guarantees:

* **Atomic saves.** :func:`save_artifact` builds the complete folder in a hidden
  temporary sibling (``.NAME.tmp-XXXX``), fsyncs it, then swaps it into place.
  A crash or error part way leaves either the old artifact or the new one,
  never a folder with missing or half-written files, and no temporary folders.
* **Safe loading.** Weights are read with ``safetensors.torch.load_file`` only;
  nothing is unpickled.
* **Checked loading.** :func:`load_artifact` verifies the format version, the
  sha256 of the weights, that the tensors match ``config.json``, and (when
  asked) the kind, model id and ``d_model``. Every problem is an
  :class:`~interp.errors.InterpError` with a one-line message.

:func:`read_config` reads ``config.json`` alone, for cheap inspection; this
module imports torch and safetensors only when tensors are actually touched.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from interp.errors import InterpError
from interp.runs.manifest import sha256_file
from interp.runs.phases import phased

if TYPE_CHECKING:
    import torch

ARTIFACT_FORMAT_VERSION = 1
"""Version of the artifact layout written by :func:`save_artifact`."""

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"

# Fields of config.json and the JSON types they must have.
_REQUIRED_FIELDS: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "model_id": (str,),
    "d_model": (int,),
    "hook_point": (str, type(None)),
    "config": (dict,),
    "tensors": (dict,),
    "weights_sha256": (str,),
    "manifest": (dict,),
}


@dataclass(eq=False)
class Artifact:
    """A loaded artifact.

    Attributes:
        path: the artifact folder.
        kind: what it is (``"probe"``, ``"sae"``, ``"tuned_lens"``, ...).
        tensors: name -> tensor, with the shapes and dtypes they were saved with,
            on the device asked for at load time; in the order they were saved.
        config: the feature's own settings as plain JSON (tuples come back as lists).
        model_id: the model the artifact was made for.
        d_model: that model's residual width.
        hook_point: the hook point it reads or writes, or ``None``.
        manifest: the run manifest recorded at save time.
        raw: the whole ``config.json``.
    """

    path: Path
    kind: str
    tensors: dict[str, torch.Tensor] = field(repr=False)
    config: dict[str, Any]
    model_id: str
    d_model: int
    hook_point: str | None
    manifest: dict[str, Any] = field(repr=False)
    raw: dict[str, Any] = field(repr=False)


# --------------------------------------------------------------------------- save


@phased("write outputs")
def save_artifact(
    path: str | os.PathLike[str],
    tensors: Mapping[str, torch.Tensor],
    *,
    kind: str,
    config: Any,
    model_id: str,
    d_model: int,
    hook_point: str | None = None,
    manifest: Mapping[str, Any] | None = None,
    seed: int | None = None,
    dataset_hash: str | None = None,
) -> Path:
    """Save ``tensors`` and their metadata as an artifact folder at ``path``; return its path.

    Args:
        path: the artifact folder. Parent folders are created. If it already
            exists it must be an artifact (a folder with an interp ``config.json``);
            it is then replaced as a whole, atomically. Any other existing folder,
            file or symlink is refused.
        tensors: name -> tensor, any shape, device and dtype safetensors supports
            (float32/float16/bfloat16/int/bool ...). They are detached, moved to CPU
            and made contiguous; tensors sharing storage are copied apart.
        kind: what the artifact is, e.g. ``"probe"``; checked by ``load_artifact(kind=...)``.
        config: the feature's settings: a dataclass instance or a mapping. Stored
            as JSON (``Path``/``dtype``/``Enum`` values become strings).
        model_id: id of the model the tensors belong to.
        d_model: residual width of that model.
        hook_point: the hook point the artifact reads or writes, if any.
        manifest: run manifest to record. When omitted one is built with
            :func:`interp.runs.manifest.run_manifest` from ``model_id``, ``seed``,
            ``dataset_hash`` and ``config``.
        seed, dataset_hash: recorded in the built manifest; give them or
            ``manifest``, not both.

    Returns:
        The absolute path of the artifact folder.
    """
    target = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    if not target.name:
        raise InterpError(f"cannot save an artifact at {target}: give a folder name")
    _check_str(kind, "kind")
    _check_str(model_id, "model_id")
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model <= 0:
        raise InterpError(f"d_model must be a positive integer, got {d_model!r}")
    if hook_point is not None:
        _check_str(hook_point, "hook_point")
    config_dict = _config_to_dict(config)
    prepared = _prepare_tensors(tensors)

    if manifest is None:
        from interp.runs.manifest import run_manifest

        manifest_dict = run_manifest(
            model_id=model_id, seed=seed, dataset_hash=dataset_hash, config=config_dict
        )
    else:
        if seed is not None or dataset_hash is not None:
            raise InterpError("pass either manifest= or seed=/dataset_hash=, not both")
        if not isinstance(manifest, Mapping):
            raise InterpError(f"manifest must be a mapping, got {type(manifest).__name__}")
        manifest_dict = dict(manifest)

    doc: dict[str, Any] = {
        "format_version": ARTIFACT_FORMAT_VERSION,
        "kind": kind,
        "model_id": model_id,
        "d_model": d_model,
        "hook_point": hook_point,
        "config": config_dict,
        "tensors": {
            name: {"shape": list(t.shape), "dtype": _dtype_name(t.dtype)}
            for name, t in prepared.items()
        },
        "weights_sha256": "",
        "manifest": manifest_dict,
    }
    _to_json(doc, "manifest")  # fail on unserialisable values before touching the disk

    _check_replaceable(target)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise InterpError(f"cannot create artifact {target}: a parent is not a folder") from exc

    from interp.runs.atomic import atomic_folder, fsync_path, save_safetensors, write_text_synced

    with atomic_folder(target, before_swap=lambda: _check_replaceable(target)) as tmp:
        weights = tmp / WEIGHTS_FILE
        save_safetensors(prepared, weights, metadata={"format": "pt", "interp_kind": kind})
        fsync_path(weights)
        doc["weights_sha256"] = sha256_file(weights)
        write_text_synced(tmp / CONFIG_FILE, _to_json(doc, "config") + "\n")
        umask = os.umask(0)
        os.umask(umask)
        for f in (weights, tmp / CONFIG_FILE):  # mkdtemp/safetensors leave them private
            os.chmod(f, 0o666 & ~umask)
        os.chmod(tmp, 0o777 & ~umask)
    return target


def _check_str(value: object, name: str) -> None:
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise InterpError(f"{name} must be a non-empty one-line string, got {value!r}")


def _check_replaceable(target: Path) -> None:
    """Refuse to replace anything at ``target`` that is not an interp artifact folder."""
    if target.is_symlink():
        raise InterpError(f"refusing to overwrite {target}: it is a symlink, not an artifact")
    if not target.exists():
        return
    if not target.is_dir():
        raise InterpError(f"refusing to overwrite {target}: it is a file, not an artifact folder")
    try:
        raw = json.loads((target / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = None
    if not (isinstance(raw, dict) and "format_version" in raw and "kind" in raw):
        raise InterpError(
            f"refusing to overwrite {target}: the folder exists and is not an interp artifact "
            f"(no valid {CONFIG_FILE}); choose another path or remove it"
        )


def _prepare_tensors(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    import torch

    if not isinstance(tensors, Mapping) or not tensors:
        raise InterpError("an artifact needs a non-empty mapping of name -> tensor")
    out: dict[str, torch.Tensor] = {}
    seen_storages: set[int] = set()
    for name, value in tensors.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise InterpError(f"invalid tensor name {name!r}")
        if not isinstance(value, torch.Tensor):
            raise InterpError(f"tensor {name!r} is a {type(value).__name__}, not a torch.Tensor")
        if value.layout != torch.strided or value.is_meta:
            raise InterpError(f"tensor {name!r} must be a dense tensor with data")
        t = value.detach().to("cpu").contiguous()
        ptr = t.untyped_storage().data_ptr()
        if t.numel() and ptr in seen_storages:
            t = t.clone()  # safetensors refuses tensors that share memory
            ptr = t.untyped_storage().data_ptr()
        seen_storages.add(ptr)
        out[name] = t
    return out


def _config_to_dict(config: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        data = dataclasses.asdict(config)
    elif isinstance(config, Mapping):
        data = dict(config)
    else:
        raise InterpError(
            f"config must be a dataclass instance or a mapping, got {type(config).__name__}"
        )
    # Normalise to what JSON will give back on load (tuples -> lists, Paths -> str, ...).
    return json.loads(_to_json(data, "config"))


def _json_default(value: Any) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    type_name = type(value).__module__ + "." + type(value).__name__
    if type_name in ("torch.dtype", "torch.device"):
        return str(value).removeprefix("torch.")
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _to_json(data: Any, what: str) -> str:
    try:
        return json.dumps(data, indent=2, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InterpError(f"artifact {what} cannot be stored as JSON: {exc}") from exc


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --------------------------------------------------------------------------- load


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate an artifact's ``config.json`` without touching its weights.

    Checks that the folder exists, that ``config.json`` is valid JSON with every
    field of the format, and that its ``format_version`` is one this interp reads.

    Returns:
        The whole ``config.json`` as a dict (see the module docstring for the keys).
    """
    folder = Path(os.path.expanduser(os.fspath(path)))
    if not os.path.lexists(folder):
        raise InterpError(f"artifact not found: {folder}")
    if not folder.is_dir():
        hint = ""
        if folder.name in (CONFIG_FILE, WEIGHTS_FILE):
            hint = f"; pass its folder {folder.parent}"
        raise InterpError(
            f"artifact {folder} is not a folder (an artifact is a folder with "
            f"{WEIGHTS_FILE} and {CONFIG_FILE}){hint}"
        )
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise InterpError(
            f"artifact {folder} has no {CONFIG_FILE}; it is incomplete or not an interp artifact"
        )
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InterpError(f"artifact {folder}: {CONFIG_FILE} is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise InterpError(
            f"artifact {folder}: {CONFIG_FILE} is not valid JSON "
            f"(line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from exc
    except OSError as exc:
        raise InterpError(f"artifact {folder}: cannot read {CONFIG_FILE}: {exc}") from exc
    if not isinstance(raw, dict):
        raise InterpError(f"artifact {folder}: {CONFIG_FILE} is not a JSON object")
    version = raw.get("format_version")
    if version != ARTIFACT_FORMAT_VERSION or isinstance(version, bool):
        raise InterpError(
            f"artifact {folder} has format_version {version!r}, but this interp reads only "
            f"version {ARTIFACT_FORMAT_VERSION}; upgrade interp or re-create the artifact"
        )
    for key, types in _REQUIRED_FIELDS.items():
        if key not in raw:
            raise InterpError(f"artifact {folder}: {CONFIG_FILE} is missing {key!r}")
        value = raw[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise InterpError(
                f"artifact {folder}: {CONFIG_FILE} field {key!r} has the wrong type "
                f"({type(value).__name__})"
            )
    return raw


def load_artifact(
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    model_id: str | None = None,
    d_model: int | None = None,
    device: str | torch.device = "cpu",
) -> Artifact:
    """Load and verify the artifact folder at ``path``.

    Args:
        path: the artifact folder written by :func:`save_artifact`.
        kind: if given, the artifact must be of this kind.
        model_id: if given, the artifact must have been made for this model.
        d_model: if given, the artifact's ``d_model`` must equal it.
        device: where to put the tensors.

    Returns:
        An :class:`Artifact` whose tensors have the saved shapes and dtypes.

    Raises:
        InterpError: one line naming the problem: missing path or files, bad
            JSON, unknown format version, wrong kind/model/d_model, checksum
            mismatch, or unreadable (e.g. truncated) weights.
    """
    import torch

    raw = read_config(path)
    folder = Path(os.path.expanduser(os.fspath(path)))
    if kind is not None and raw["kind"] != kind:
        raise InterpError(f"artifact {folder} is a {raw['kind']!r} artifact, expected {kind!r}")
    _check_compat(folder, raw["model_id"], raw["d_model"], model_id, d_model)
    try:
        target_device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InterpError(f"invalid device {device!r}") from exc

    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise InterpError(f"artifact {folder} has no {WEIGHTS_FILE}; the artifact is incomplete")
    actual = sha256_file(weights)
    if actual != raw["weights_sha256"]:
        raise InterpError(
            f"checksum mismatch for {weights}: expected sha256 {raw['weights_sha256'][:16]}..., "
            f"got {actual[:16]}...; the file is corrupt or was modified"
        )

    import safetensors.torch

    try:
        loaded = safetensors.torch.load_file(str(weights), device="cpu")
    except Exception as exc:  # SafetensorError, OSError, ...: the file cannot be parsed
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise InterpError(
            f"cannot read {weights}: {reason}; the file is truncated or not safetensors"
        ) from exc

    declared: dict[str, Any] = raw["tensors"]
    if set(loaded) != set(declared):
        raise InterpError(
            f"artifact {folder}: {WEIGHTS_FILE} holds tensors {sorted(loaded)} but "
            f"{CONFIG_FILE} lists {sorted(declared)}"
        )
    tensors: dict[str, torch.Tensor] = {}
    for name, spec in declared.items():
        t = loaded[name]
        spec = spec if isinstance(spec, dict) else {}
        if list(t.shape) != spec.get("shape") or _dtype_name(t.dtype) != spec.get("dtype"):
            raise InterpError(
                f"artifact {folder}: tensor {name!r} is {_dtype_name(t.dtype)} {list(t.shape)} "
                f"but {CONFIG_FILE} says {spec.get('dtype')} {spec.get('shape')}"
            )
        tensors[name] = t
    if target_device.type != "cpu":
        try:
            tensors = {name: t.to(target_device) for name, t in tensors.items()}
        except (RuntimeError, AssertionError) as exc:
            reason = " ".join(str(exc).split())
            raise InterpError(f"cannot move artifact {folder} to {device}: {reason}") from exc

    return Artifact(
        path=folder,
        kind=raw["kind"],
        tensors=tensors,
        config=raw["config"],
        model_id=raw["model_id"],
        d_model=raw["d_model"],
        hook_point=raw["hook_point"],
        manifest=raw["manifest"],
        raw=raw,
    )


def check_compatible(artifact: Artifact, model_id: str, d_model: int) -> None:
    """Raise :class:`InterpError` unless ``artifact`` was made for this model.

    Compares the model id (exact string) and the residual width ``d_model``.
    """
    _check_compat(artifact.path, artifact.model_id, artifact.d_model, model_id, d_model)


def _check_compat(
    folder: Path,
    have_model: str,
    have_d_model: int,
    want_model: str | None,
    want_d_model: int | None,
) -> None:
    if want_model is not None and have_model != want_model:
        raise InterpError(
            f"artifact {folder} was made for model {have_model!r} "
            f"but the loaded model is {want_model!r}"
        )
    if want_d_model is not None and have_d_model != want_d_model:
        raise InterpError(
            f"artifact {folder} was made for d_model {have_d_model} "
            f"but the model has {want_d_model}"
        )
