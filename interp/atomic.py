"""Atomic file writes: a reader never sees a half-written file.

Every output of interp (reports, results, corpus files, artifacts) is written to a
temporary file in the destination folder, fsynced, then renamed over the target,
so an interrupted write leaves the previous file (or nothing) in place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from interp.errors import InterpError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder + os.replace).

    Parent folders are created; on failure the temp file is removed and any previous
    file is untouched.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise InterpError(f"cannot write {target}: it is a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InterpError(f"cannot create folder {target.parent}: {exc.strerror}") from exc
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; outputs are ordinary readable files
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """UTF-8 text version of :func:`atomic_write_bytes` (``\\n`` line endings)."""
    return atomic_write_bytes(path, text.encode("utf-8"))
