"""Atomic file writes: a reader never sees a half-written file.

Every output of interp (reports, results, corpus files, artifacts) is written to a
temporary file in the destination folder, fsynced, then renamed over the target,
so an interrupted write leaves the previous file (or nothing) in place.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Persist a file's data or a folder's entries (a no-op where that cannot be done)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text_synced(path: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 text and fsync it (inside a folder that is swapped in atomically)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


@contextmanager
def atomic_folder(
    target: Path, before_swap: Callable[[], None] | None = None
) -> Iterator[Path]:
    """Build a folder in a hidden temporary sibling (``.NAME.tmp-XXXX``), then swap it in.

    The body fills the yielded folder. On success it is fsynced and renamed to ``target``;
    an existing ``target`` is first moved aside (``.NAME.old-XXXX``) and deleted once the
    new folder is in place (``before_swap`` runs just before, e.g. to re-check that the
    old folder may be replaced). On any error the temporary folder is removed and the old
    ``target`` is put back: readers see the old folder or the new one, never a mix.
    """
    parent = target.parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
    backup: Path | None = None
    swapped_in = False
    try:
        yield tmp
        fsync_path(tmp)
        if os.path.lexists(target):
            if before_swap is not None:
                before_swap()
            backup = parent / f".{target.name}.old-{secrets.token_hex(6)}"
            os.rename(target, backup)
        os.rename(tmp, target)
        swapped_in = True
        fsync_path(parent)
    except BaseException:
        if not swapped_in:
            shutil.rmtree(tmp, ignore_errors=True)
            if backup is not None and not os.path.lexists(target):
                os.rename(backup, target)
                backup = None
        raise
    finally:
        if backup is not None and swapped_in:
            shutil.rmtree(backup, ignore_errors=True)
