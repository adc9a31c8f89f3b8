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

import json
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from interp.errors import InterpError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutDir:
    """Transactional output folder: ``with OutDir(path) as out: out.write_text(...)``."""

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
        return self

    def _stage(self, name: str) -> Path:
        if "/" in name or name.startswith("."):
            raise ValueError(f"bad output name {name!r}")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        self._staged[name] = Path(tmp)
        return Path(tmp)

    def write_text(self, name: str, text: str) -> Path:
        """Stage ``text`` as ``DIR/name``; it appears when the command succeeds."""
        tmp = self._stage(name)
        tmp.write_text(text, encoding="utf-8")
        return self.path / name

    def write_json(self, name: str, obj: Any) -> Path:
        """Stage ``obj`` as pretty JSON (NaN/inf are refused)."""
        return self.write_text(name, json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False))

    def stage_dir(self, name: str) -> Path:
        """A not-yet-existing path to create a folder at (e.g. with ``save_artifact``).

        It lives inside a hidden temporary folder in ``DIR`` and is renamed to
        ``DIR/name`` when the command succeeds.
        """
        parent = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=self.path))
        self._staged_dirs[name] = parent
        return parent / name

    def _commit(self) -> None:
        for name, tmp in self._staged.items():
            os.replace(tmp, self.path / name)
        for name, parent in self._staged_dirs.items():
            built, final = parent / name, self.path / name
            if final.is_dir():
                old = parent / f"{name}.old"
                os.replace(final, old)
            elif final.exists():
                raise InterpError(f"cannot write {final}: a file is in the way")
            os.replace(built, final)
            shutil.rmtree(parent, ignore_errors=True)

    def _rollback(self) -> None:
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
            except (OSError, InterpError) as err:
                self._rollback()
                raise InterpError(f"cannot write outputs into {self.path}: {err}") from None
        else:
            self._rollback()


def check_creatable(path: str | os.PathLike) -> Path:
    """Fail early (one line) if folder ``path`` could not be created or written; create nothing.

    For commands whose output folder must outlive a failure (resumable training runs),
    so they cannot use the transactional :class:`OutDir`.
    """
    p = Path(path).expanduser()
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
