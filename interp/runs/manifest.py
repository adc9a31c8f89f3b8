"""The run manifest: what produced an artifact or a report.

Every artifact (``results.json``, probe weights, SAE checkpoints) and every HTML
report carries the dict returned by :func:`run_manifest`, so that a result can
be traced back to the code, the package versions, the model, the data and the
command line that made it.

Nothing here raises on a broken environment: a missing ``git``, a tree that is
not a checkout, or an absent package is recorded as ``"unknown"`` or
``"not installed"``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.runs.phases import phased

#: Packages whose versions are recorded in every manifest.
TRACKED_PACKAGES: tuple[str, ...] = (
    "torch",
    "transformers",
    "transformer_lens",
    "gguf",
    "numpy",
    "safetensors",
    "datasets",
)

NOT_INSTALLED = "not installed"
UNKNOWN = "unknown"

_CHUNK = 1 << 20


def _package_root() -> Path:
    """The folder holding the ``interp`` package (the repository root in a checkout)."""
    return Path(__file__).resolve().parents[2]


def interp_version() -> str:
    """interp's version: the installed distribution's, else ``interp.__version__``."""
    try:
        return importlib.metadata.version("interp")
    except Exception:  # not installed, or broken metadata: must not break a run
        pass
    try:
        import interp

        version = getattr(interp, "__version__", None)
        if isinstance(version, str) and version:
            return version
    except Exception:
        pass
    return UNKNOWN


def package_version(name: str) -> str:
    """Installed version of distribution ``name``, or ``"not installed"``.

    ``transformer_lens`` and ``transformer-lens`` are the same distribution:
    importlib.metadata normalises the name.
    """
    for candidate in dict.fromkeys((name, name.replace("_", "-"), name.replace("-", "_"))):
        try:
            return importlib.metadata.version(candidate)
        except Exception:  # PackageNotFoundError, or broken metadata
            continue
    return NOT_INSTALLED


def package_versions(names: Iterable[str] = TRACKED_PACKAGES) -> dict[str, str]:
    """``{"python": ..., name: version, ...}`` for the tracked packages."""
    versions = {"python": platform.python_version()}
    for name in names:
        versions[name] = package_version(name)
    return versions


def _git(args: list[str], cwd: Path) -> str | None:
    """Output of ``git -C cwd *args`` (stripped), or None if anything goes wrong."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip()


def git_state(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{"git_commit": sha | "unknown", "git_dirty": bool | "unknown"}``.

    ``path`` defaults to the source tree ``interp`` was imported from. Never
    raises: no git, no checkout or no commit yet all give ``"unknown"``.
    """
    root = Path(path) if path is not None else _package_root()
    commit = _git(["rev-parse", "--verify", "--quiet", "HEAD"], root)
    if not commit:
        return {"git_commit": UNKNOWN, "git_dirty": UNKNOWN}
    status = _git(["status", "--porcelain", "--untracked-files=no"], root)
    dirty: bool | str = UNKNOWN if status is None else bool(status)
    return {"git_commit": commit, "git_dirty": dirty}


def utc_timestamp() -> str:
    """Now, in UTC, ISO-8601 with seconds and a ``+00:00`` offset."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


@phased("manifest")
def run_manifest(
    *,
    model_id: str | None = None,
    seed: int | None = None,
    dataset_hash: str | None = None,
    config: dict | None = None,
    command: list[str] | None = None,
    extra: dict | None = None,
) -> dict:
    """The manifest every artifact and report carries.

    Keys: ``interp_version``, ``git_commit``, ``git_dirty``, ``packages``
    (python and the tracked libraries), ``platform``, ``timestamp`` (UTC,
    ISO-8601), ``command`` (default ``sys.argv``), ``model_id``, ``seed``,
    ``dataset_hash``, ``config``, and the items of ``extra`` (which may not
    overwrite the standard keys).
    """
    if config is not None and not isinstance(config, dict):
        raise InterpError(f"manifest config must be a dict, not {type(config).__name__}")
    if extra is not None and not isinstance(extra, dict):
        raise InterpError(f"manifest extra must be a dict, not {type(extra).__name__}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InterpError(f"manifest seed must be an int, not {seed!r}")
    cmd = list(sys.argv) if command is None else [str(part) for part in command]

    manifest: dict[str, Any] = {
        "interp_version": interp_version(),
        **git_state(),
        "packages": package_versions(),
        "platform": {
            "system": platform.platform(),
            "machine": platform.machine(),
            "python_implementation": platform.python_implementation(),
        },
        "timestamp": utc_timestamp(),
        "command": cmd,
        "model_id": model_id,
        "seed": seed,
        "dataset_hash": dataset_hash,
        "config": dict(config) if config is not None else {},
    }
    if extra:
        clash = sorted(set(extra) & set(manifest))
        if clash:
            raise InterpError(f"manifest extra may not overwrite standard keys: {', '.join(clash)}")
        manifest.update(extra)
    return manifest


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    p = Path(path)
    if not p.is_file():
        raise InterpError(f"cannot hash {p}: not a file")
    digest = hashlib.sha256()
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_manifest(
    model: Any,
    *,
    seed: int | None,
    config: dict | None,
    dataset_hash: str | None = None,
    texts: Iterable[str] | None = None,
    extra: dict | None = None,
) -> dict:
    """:func:`run_manifest` for a run on ``model`` (an :class:`~interp.models.loading.Model`): its
    id and facts, the seed, the config and the data's hash (``dataset_hash``, or the hash of
    ``texts``). Every tool calls this at the end of its run, so its result carries its own
    provenance whether a script or the CLI made it."""
    if dataset_hash is None and texts is not None:
        dataset_hash = sha256_texts(texts)
    return run_manifest(model_id=model.model_id, seed=seed, dataset_hash=dataset_hash,
                        config=config, extra={"model": model.manifest_info(), **(extra or {})})


def sha256_texts(texts: Iterable[str]) -> str:
    """Hex SHA-256 of an ordered list of strings.

    Each string is framed by its UTF-8 byte length (8 bytes, big-endian), and
    the count is appended at the end, so ``["ab", "c"]``, ``["a", "bc"]`` and
    ``["abc"]`` all hash differently, and order matters.
    """
    if isinstance(texts, str | bytes):
        raise InterpError("sha256_texts expects an iterable of strings, not a single string")
    digest = hashlib.sha256(b"interp.sha256_texts.v1\0")
    count = 0
    for text in texts:
        if not isinstance(text, str):
            raise InterpError(f"sha256_texts expects strings, got {type(text).__name__}")
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
        count += 1
    digest.update(b"\0count")
    digest.update(count.to_bytes(8, "big"))
    return digest.hexdigest()
