"""Atomic file writes: a reader never sees a half-written file.

Every output of interp (reports, results, corpus files, artifacts) is written to a
temporary file in the destination folder, fsynced, then renamed over the target,
so an interrupted write leaves the previous file (or nothing) in place.

A write that fails (a full disk, a quota, a read-only or failing filesystem: any
``OSError``) removes its temporary file or folder and raises one
:class:`~interp.errors.InterpError` line naming the file and the reason
(:func:`write_error`); the previous files are left as they were.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from interp.errors import InterpError

if TYPE_CHECKING:
    import torch

KEPT = "the previous files are kept"

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})
"""The errnos of a write the disk refused (full, over quota, failing, read-only, too big)."""


class WriteError(InterpError, OSError):
    """A write the disk refused, as one line: an :class:`InterpError` that is still an
    ``OSError`` (with its ``errno``) for callers that catch those."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


def raw_os_error(exc: BaseException | None) -> TypeGuard[OSError]:
    """Whether ``exc`` is an ``OSError`` not yet turned into a :class:`WriteError` line."""
    return isinstance(exc, OSError) and not isinstance(exc, InterpError)


def write_error(path: str | os.PathLike[str], exc: OSError, kept: str = KEPT) -> WriteError:
    """The one line for a failed write: ``cannot write PATH: No space left on device; …``.

    ``path`` is the file (or folder) the user asked for, not the temporary file that
    failed; ``kept`` says what is left (by default: the previous files are kept). A
    :class:`WriteError` already made is returned as it is.
    """
    if isinstance(exc, WriteError):
        return exc
    reason = exc.strerror or str(exc) or type(exc).__name__
    return WriteError(f"cannot write {os.fspath(path)}: {reason}; {kept}", exc.errno)


def cache_write(write: Callable[[], object], what: str) -> bool:
    """Run ``write``, the write of a cache entry that only saves time (a peak figure, an
    SAE-eval baseline, an activation shard): a failure (a full disk, a read-only cache
    folder: any ``OSError`` or :class:`InterpError` line) does not stop the command. One
    line on stderr says ``what`` was not cached and why; the computed value is used as it
    is. The writers are atomic, so no partial file is left. Whether it was written.
    """
    try:
        write()
    except (OSError, InterpError) as exc:
        from interp.runs.progress import note

        reason = str(exc) if isinstance(exc, InterpError) else (
            exc.strerror or str(exc) or type(exc).__name__)
        note(f"{what} not cached ({reason}); going on without the cache")
        return False
    return True


def save_safetensors(
    tensors: Mapping[str, torch.Tensor], path: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """``safetensors.torch.save_file``, whose I/O failures become ``OSError`` s.

    safetensors reports them as its own error type (``I/O error: No space left on
    device (os error 28)``); the errno is read back from that text.
    """
    import safetensors.torch

    try:
        safetensors.torch.save_file(dict(tensors), os.fspath(path), metadata=metadata)
    except OSError:
        raise
    except Exception as exc:
        os_error = os_error_of(exc)
        if os_error is None:
            raise
        raise os_error from None


def os_error_of(exc: BaseException) -> OSError | None:
    """The ``OSError`` behind ``exc`` not yet made a :class:`WriteError`: ``exc`` itself,
    or one read back from a library's text (safetensors: ``… (os error 28)``); else None."""
    if isinstance(exc, OSError):
        return None if isinstance(exc, InterpError) else exc
    found = re.search(r"os error (\d+)", str(exc))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code))


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
    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_error(target, exc) from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600; outputs are ordinary readable files
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if raw_os_error(exc):
            raise write_error(target, exc) from None
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
    ``target`` is put back: readers see the old folder or the new one, never a mix. An
    ``OSError`` (in the body or the swap: a full disk, say) becomes :func:`write_error`'s
    one line.
    """
    parent = target.parent
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
    except OSError as exc:
        raise write_error(target, exc) from None
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
    except BaseException as exc:
        if not swapped_in:
            shutil.rmtree(tmp, ignore_errors=True)
            if backup is not None and not os.path.lexists(target):
                os.rename(backup, target)
                backup = None
        if raw_os_error(exc):
            raise write_error(target, exc) from None
        raise
    finally:
        if backup is not None and swapped_in:
            shutil.rmtree(backup, ignore_errors=True)
