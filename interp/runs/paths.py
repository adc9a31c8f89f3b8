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
    path = cache_dir_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir_path() -> Path:
    """Where :func:`cache_dir` is, without creating it."""
    root = os.environ.get("INTERP_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "interp"


#: The longest path and file name the file system takes (Linux: PATH_MAX, NAME_MAX, bytes).
PATH_MAX, NAME_MAX = 4096, 255


def check_path_name(text: str | os.PathLike, what: str) -> None:
    """Refuse (one line) a path the file system could not take: too long as a whole or in
    one of its names, or holding a NUL byte; before it reaches the file system, whose error
    ("File name too long") would not say which argument it was."""
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:
        raise InterpError(f"{what} {os.fspath(text)[:60]!r} is not a valid file name") from None
    shown = os.fsdecode(raw[:60]) + ("…" if len(raw) > 60 else "")
    if b"\0" in raw:
        raise InterpError(f"{what} {shown!r} holds a NUL byte")
    if len(raw) >= PATH_MAX:
        raise InterpError(f"{what} {shown!r} is too long: {len(raw):,} bytes (the file system "
                          f"takes under {PATH_MAX:,})")
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise InterpError(f"{what} {shown!r} is too long: one name in it has {len(longest)} "
                          f"bytes (the file system takes {NAME_MAX})")


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


def shown_path(path: str | Path) -> str:
    """A data file's path for a table or a report: a shipped file as ``datasets/…``
    (the same wherever interp is installed), any other path as given."""
    try:
        inside = Path(path).resolve().relative_to(datasets_dir().resolve())
    except (ValueError, OSError, InterpError):
        return str(path)
    return f"datasets/{inside.as_posix()}"


def shipped_dataset(relative: str) -> Path:
    """Path of one shipped data file, e.g. ``shipped_dataset("prompts/lens.jsonl")``."""
    path = datasets_dir() / relative
    if not path.exists():
        raise InterpError(f"shipped dataset {relative!r} not found in {datasets_dir()}")
    return path
