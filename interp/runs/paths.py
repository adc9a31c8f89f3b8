"""Where things live: the cache directory and the shipped ``datasets/`` folder."""

from __future__ import annotations

import os
from pathlib import Path

from interp.errors import InterpError


def cache_dir() -> Path:
    """Root of interp's cache: ``$INTERP_CACHE`` or ``~/.cache/interp``.

    Created on first use. Tests point ``INTERP_CACHE`` at a temporary folder so
    they never write the user's cache.
    """
    root = os.environ.get("INTERP_CACHE")
    path = Path(root).expanduser() if root else Path.home() / ".cache" / "interp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def datasets_dir() -> Path:
    """The shipped ``datasets/`` folder, found relative to the installed package.

    In a wheel it is packaged as ``interp/_datasets``; in a source checkout or an
    editable install it is the repository's top-level ``datasets/``. Never the
    current working directory.
    """
    pkg = Path(__file__).resolve().parents[1]  # the interp package
    for candidate in (pkg / "_datasets", pkg.parent / "datasets"):
        if candidate.is_dir():
            return candidate
    raise InterpError(f"shipped datasets folder not found next to {pkg}; reinstall interp")


def shipped_dataset(relative: str) -> Path:
    """Path of one shipped data file, e.g. ``shipped_dataset("prompts/lens.jsonl")``."""
    path = datasets_dir() / relative
    if not path.exists():
        raise InterpError(f"shipped dataset {relative!r} not found in {datasets_dir()}")
    return path
