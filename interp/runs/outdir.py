"""``--out DIR`` handling shared by every CLI verb.

The folder is created if missing and may already hold other files. A command's
outputs are staged as hidden temporary files and renamed into place together
when the command succeeds, so:

* only the command's own files (``report.html``, ``results.json``, artifacts) are
  replaced, and only on success;
* on an error nothing half-written is left: staged files are deleted, and the
  folder itself is removed if this command created it and it is still empty.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from interp.errors import InterpError

if TYPE_CHECKING:
    from interp.runs.lock import Lock
from interp.runs.atomic import WRITE_ERRNOS, WriteError, raw_os_error, write_error


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutDir:
    """Transactional output folder: ``with OutDir(path) as out: out.write_text(...)``."""

    #: The folder's lock while the command runs (:mod:`interp.runs.lock`).
    _lock: Lock | None = None

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser()
        self._created_dir = False
        self._staged: dict[str, Path] = {}
        self._staged_dirs: dict[str, Path] = {}

    def __enter__(self) -> OutDir:
        check_creatable(self.path)
        if not self.path.exists():
            try:
                self.path.mkdir(parents=True)
            except OSError as exc:
                raise InterpError(
                    f"cannot create output folder {self.path}: {exc.strerror or exc}"
                ) from None
            self._created_dir = True
        if not os.access(self.path, os.W_OK):
            raise InterpError(f"cannot write to output folder {self.path}: permission denied")
        from interp.runs.lock import folder_lock

        lock = folder_lock(self.path, subject=f"output folder {self.path}",
                           hint="wait for it or use another --out")
        try:
            lock.acquire()  # another process writing here: refused in one line
        except InterpError:
            if self._created_dir:
                self._created_dir = False
                try:
                    self.path.rmdir()  # only if still empty
                except OSError:
                    pass
            raise
        self._lock = lock
        if lock.took_over:  # a killed command's staged outputs: never committed, so debris
            for debris in self.path.glob(".*.tmp"):
                if debris.is_dir() and not debris.is_symlink():
                    shutil.rmtree(debris, ignore_errors=True)
                else:
                    debris.unlink(missing_ok=True)
        return self

    def _unlock(self) -> None:
        """Let go of the folder's lock (before a created folder is removed if empty)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _stage(self, name: str) -> Path:
        if "/" in name or name.startswith("."):
            raise ValueError(f"bad output name {name!r}")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        except OSError as exc:
            raise write_error(self.path / name, exc) from None
        os.close(fd)
        previous = self._staged.get(name)
        if previous is not None:  # staged twice: the later text wins
            previous.unlink(missing_ok=True)
        self._staged[name] = Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        return Path(tmp)

    def write_text(self, name: str, text: str) -> Path:
        """Stage ``text`` as ``DIR/name``; it appears when the command succeeds.

        A failed write (a full disk, say) removes the staged file and raises one line.
        """
        tmp = self._stage(name)
        try:
            tmp.write_text(text, encoding="utf-8")
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            self._staged.pop(name, None)
            raise write_error(self.path / name, exc) from None
        return self.path / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Stage ``data`` as ``DIR/name``, as :meth:`write_text` stages text."""
        tmp = self._stage(name)
        try:
            tmp.write_bytes(data)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            self._staged.pop(name, None)
            raise write_error(self.path / name, exc) from None
        return self.path / name

    def write_json(self, name: str, obj: Any) -> Path:
        """Stage ``obj`` as pretty JSON (NaN/inf are refused)."""
        return self.write_text(name, json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False))

    def stage_dir(self, name: str) -> Path:
        """A not-yet-existing path to create a folder at (e.g. with ``save_artifact``).

        It lives inside a hidden temporary folder in ``DIR`` and is renamed to
        ``DIR/name`` when the command succeeds.
        """
        try:
            parent = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=self.path))
        except OSError as exc:
            raise write_error(self.path / name, exc) from None
        self._staged_dirs[name] = parent
        return parent / name

    def _commit(self) -> None:
        """Rename every staged file and folder into place: all of them or none.

        Each previous file is kept under a hidden name (a hard link, or a copy where
        links are not supported) and each previous folder is moved aside, until every
        rename has succeeded; if one fails, those done are undone and the previous
        files are back, byte for byte, before the error (one line) is raised.
        """
        done: list[_Placed] = []
        current = self.path
        try:
            for name, tmp in self._staged.items():
                current = final = self.path / name
                entry = _Placed(final, _keep_file(final), is_dir=False)
                done.append(entry)
                os.replace(tmp, final)
                entry.placed = True
            for name, parent in self._staged_dirs.items():
                built, final = parent / name, self.path / name
                current = final
                backup = None
                if final.is_dir() and not final.is_symlink():
                    backup = parent / f"{name}.old"
                    os.replace(final, backup)
                elif os.path.lexists(final):
                    raise InterpError(f"cannot write {final}: a file is in the way")
                entry = _Placed(final, backup, is_dir=True)
                done.append(entry)
                os.replace(built, final)
                entry.placed = True
        except BaseException as exc:
            for entry in reversed(done):
                entry.undo()
            if raw_os_error(exc):
                raise write_error(current, exc) from None
            raise
        for entry in done:
            if entry.backup is not None and not entry.is_dir:
                entry.backup.unlink(missing_ok=True)
        for parent in self._staged_dirs.values():
            shutil.rmtree(parent, ignore_errors=True)

    def _rollback(self) -> None:
        self._unlock()
        for tmp in self._staged.values():
            tmp.unlink(missing_ok=True)
        for tmp in self._staged_dirs.values():
            shutil.rmtree(tmp, ignore_errors=True)
        if self._created_dir:
            try:
                self.path.rmdir()  # only if still empty
            except OSError:
                pass

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self._commit()
            except InterpError:
                self._rollback()
                raise
            except OSError as err:
                self._rollback()
                raise write_error(self.path, err) from None
        else:
            staged = dict(self._staged_dirs)
            self._rollback()
            if raw_os_error(exc) and getattr(exc, "errno", None) in WRITE_ERRNOS:
                # a write into a staged folder (a figure, say) failed: one line
                raise write_error(self.path, exc) from None
            if isinstance(exc, WriteError):  # name DIR/NAME, not its hidden staging folder
                message = str(exc)
                for name, parent in staged.items():
                    message = message.replace(str(parent / name), str(self.path / name))
                if message != str(exc):
                    raise WriteError(message, exc.errno) from None
        self._unlock()


class _Placed:
    """One output renamed into place by :meth:`OutDir._commit`, and how to take it back."""

    def __init__(self, final: Path, backup: Path | None, *, is_dir: bool) -> None:
        self.final, self.backup, self.is_dir, self.placed = final, backup, is_dir, False

    def undo(self) -> None:
        """Put the previous version back (or remove the new one if there was none)."""
        try:
            if self.is_dir:
                if self.placed:
                    shutil.rmtree(self.final, ignore_errors=True)
                if self.backup is not None:
                    os.replace(self.backup, self.final)
            elif self.backup is not None:
                if self.placed:
                    os.replace(self.backup, self.final)
                else:  # the previous file was never touched: drop its spare link
                    self.backup.unlink(missing_ok=True)
            elif self.placed:
                self.final.unlink(missing_ok=True)
        except OSError:
            pass


def _keep_file(final: Path) -> Path | None:
    """A hidden second name for the file at ``final`` (None if there is none)."""
    if not os.path.lexists(final) or (final.is_dir() and not final.is_symlink()):
        return None
    # ".tmp" at the end: a killed command's spare names are swept with its staged files
    backup = final.with_name(f".{final.name}.old-{secrets.token_hex(6)}.tmp")
    try:
        os.link(final, backup, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        shutil.copy2(final, backup, follow_symlinks=False)  # no hard links here
    return backup


def check_creatable(path: str | os.PathLike, *, inputs: tuple[str | os.PathLike, ...] = (),
                    ) -> Path:
    """Fail early (one line) if folder ``path`` could not be created or written; create nothing.

    For commands whose output folder must outlive a failure (resumable training runs),
    so they cannot use the transactional :class:`OutDir`. See :func:`check_out_place` for the
    places refused as output folders (``inputs``: the command's input folders).
    """
    p = check_out_place(path, inputs=inputs)
    if p.exists() and not p.is_dir():
        raise InterpError(f"cannot write to --out {p}: it is a file, not a folder")
    ancestor = p
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InterpError(f"cannot create output folder {p}: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK):
        raise InterpError(f"cannot write to output folder {p}: permission denied")
    return p


def check_out_place(path: str | os.PathLike, *, inputs: tuple[str | os.PathLike, ...] = (),
                    ) -> Path:
    """``path`` as a folder to write into, refused (one line) when it is a place no command's
    outputs belong: an empty name, the current folder, the source tree's root or any folder
    above the ``interp`` package, interp's cache or its models, an input's own folder
    (``inputs``), or a name too long for the file system."""
    from interp.runs.paths import cache_dir_path, check_path_name

    text = os.fspath(path)
    if not str(text).strip():
        raise InterpError("empty output folder name: name the folder to write into")
    check_path_name(text, "output folder")
    p = Path(text).expanduser()
    where = Path(os.path.abspath(p))
    real = where.resolve()
    if real == Path.cwd().resolve():
        raise InterpError(f"output folder {p} is the current folder: name a folder of its own "
                          "(e.g. out/)")
    package = Path(__file__).resolve().parents[1]
    if real in package.parents:
        raise InterpError(f"output folder {p} holds interp's own source ({package}): name a "
                          "folder of its own")
    cache = cache_dir_path().resolve()
    if real == cache or real == cache / "models" or cache / "models" in real.parents:
        raise InterpError(f"output folder {p} is interp's cache ({cache}): name a folder of "
                          "its own")
    for given in inputs:
        if real == Path(os.path.abspath(Path(os.fspath(given)).expanduser())).resolve():
            raise InterpError(f"output folder {p} is the input folder {given}: writing there "
                              "would mix outputs with the input; name another folder")
    return p
