"""One process at a time: an exclusive lock on an output folder, a run folder or a cache entry.

The lock is a kernel lock (``flock``, through the ``filelock`` package) on a small hidden file
(:data:`LOCK_NAME` inside a locked folder): the kernel lets go of it when its process ends,
however it ends, so a killed run never blocks the next one. ``filelock`` does not say who
holds a lock, so the holder writes ``{pid, host, started, command}`` into the file as it takes
it; another process is refused in one line naming that pid and start time. The holder
removes the file when it lets go (``with`` block, :meth:`Lock.release`, or at exit), so a lock
never outlives a normal failure and is never among a command's outputs; a killed holder's
file stays, and the next process takes the lock over, saying so in one line (and whether
the file it found was damaged).

Locks are re-entrant within one process (an ``OutDir`` nested in another on the same folder,
two stores on one cache entry): the file goes when the last holder lets go.

Why ``filelock`` rather than files created with ``O_EXCL`` (as this module did): the kernel
lock dies with its process, so no pid check, takeover guard or stale-file grace period is
needed; the file is removed while the lock is still held, and ``filelock`` re-opens a lock
file that was unlinked before its ``flock`` succeeded, so removing it races with no one.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from filelock import FileLock, Timeout

from interp.errors import InterpError

#: The lock file's name inside a locked folder.
LOCK_NAME = ".interp.lock"
#: How long a refused process waits for a new holder to write its record into the file.
_RECORD_WAIT_S = 1.0

#: Lock files this process holds: real path → [count, its FileLock, owner pid].
_HELD: dict[str, list[Any]] = {}


def _say(line: str) -> None:
    from interp.runs.progress import note

    note(line)


def _command() -> str:
    text = " ".join([Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]])
    return text if len(text) <= 200 else text[:197] + "..."


def _record() -> bytes:
    return json.dumps({
        "pid": os.getpid(), "host": socket.gethostname(),
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": _command(),
    }).encode()


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


class Lock:
    """The lock file ``path``; ``subject`` names what it guards in messages ("output folder
    runs/x"), ``hint`` ends the refusal ("wait for it or use another --out").

    ``remove_folder``: the folder holding the lock file, to delete on release when this
    lock created it and it is then empty (a run folder no checkpoint was written into).
    """

    def __init__(self, path: str | os.PathLike[str], *, subject: str, hint: str,
                 remove_folder: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.subject, self.hint = subject, hint
        self.remove_folder = remove_folder
        self._created_folder = False
        self._held = False
        #: Whether :meth:`acquire` took over the lock of a process that is no longer running
        #: (its half-written files may be swept).
        self.took_over = False

    # ------------------------------------------------------------------ public
    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._held

    def acquire(self, wait_s: float = 0.0) -> Lock:
        """Take the lock; a live holder → :class:`InterpError` (one line), or, with
        ``wait_s``, wait up to that long for it (saying so once) before refusing."""
        if self._held:
            return self
        key = os.path.realpath(self.path)
        held = _HELD.get(key)
        if held is not None and held[2] == os.getpid():
            held[0] += 1
            self._held = True
            return self
        self._make_folder()
        found: list[bytes] = []
        kernel = FileLock(self.path, on_acquired=lambda fd: found.append(self._write(fd)))
        try:
            try:
                kernel.acquire(timeout=0)
            except Timeout:
                holder = self._holder()
                if wait_s <= 0:
                    raise InterpError(self._refusal(holder)) from None
                _say(f"waiting for pid {holder.get('pid')} (started {holder.get('started')}), "
                     f"which is using {self.subject}")
                try:
                    kernel.acquire(timeout=wait_s)
                except Timeout:
                    raise InterpError(self._refusal(self._holder())) from None
        except OSError as exc:
            self._drop_created_folder()
            raise InterpError(f"cannot lock {self.subject}: {exc.strerror or exc}") from None
        except InterpError:
            self._drop_created_folder()
            raise
        _HELD[key] = [1, kernel, os.getpid()]
        self._held = True
        if found and found[0].strip():  # a record left behind: its holder was killed
            self._said_taken_over(found[0])
        return self

    def release(self) -> None:
        """Let go (the file is removed once this process's last holder lets go)."""
        if not self._held:
            return
        self._held = False
        key = os.path.realpath(self.path)
        held = _HELD.get(key)
        if held is None:
            return
        held[0] -= 1
        if held[0] > 0:
            return
        del _HELD[key]
        _let_go(self.path, held[1])
        if self.remove_folder and self._created_folder:
            self._drop_created_folder()

    def __enter__(self) -> Lock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    # ------------------------------------------------------------------ internals
    def _make_folder(self) -> None:
        folder = self.path.parent
        if folder.exists():
            return
        try:
            folder.mkdir(parents=True)
            self._created_folder = True
        except FileExistsError:
            pass
        except OSError as exc:
            raise InterpError(f"cannot lock {self.subject}: {exc.strerror or exc}") from None

    def _drop_created_folder(self) -> None:
        if self._created_folder:
            try:
                self.path.parent.rmdir()  # only if empty
            except OSError:
                pass

    @staticmethod
    def _write(fd: int) -> bytes:
        """On taking the kernel lock: what the file held (a killed holder's record), then
        this process's record in its place."""
        previous = os.pread(fd, 65536, 0)
        record = _record()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        return previous

    def _said_taken_over(self, previous: bytes) -> None:
        """The file held a record when this process took the lock: its holder was killed
        (a holder that lets go removes the file)."""
        self.took_over = True
        holder = _parse(previous)
        if holder is None:
            _say(f"replacing the damaged lock file of {self.subject}")
        else:
            _say(f"taking over {self.subject} from pid {holder.get('pid')} "
                 f"(started {holder.get('started')}), which is no longer running")

    def _holder(self) -> dict[str, Any]:
        """The live holder's record (a moment's wait while it writes it)."""
        import time

        deadline = time.monotonic() + _RECORD_WAIT_S
        while True:
            try:
                info = _parse(self.path.read_bytes())
            except OSError:
                info = None
            if info is not None or time.monotonic() >= deadline:
                return info or {}
            time.sleep(0.05)

    def _refusal(self, holder: dict[str, Any]) -> str:
        host = holder.get("host")
        where = f" on {host}" if host and host != socket.gethostname() else ""
        who = f"pid {holder.get('pid')}{where} (started {holder.get('started')})" if holder \
            else "another process"
        return f"{self.subject} is in use by {who}: {self.hint}"


def _let_go(path: Path, kernel: FileLock) -> None:
    """Remove the lock file while still holding it, then release the kernel lock (a process
    waiting on the removed file finds it gone and opens the path anew)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass
    try:
        kernel.release(force=True)
    except OSError:
        pass


def folder_lock(folder: str | os.PathLike[str], *, subject: str, hint: str,
                remove_folder: bool = False) -> Lock:
    """The lock of ``folder`` (a hidden file inside it)."""
    return Lock(Path(folder).expanduser() / LOCK_NAME, subject=subject, hint=hint,
                remove_folder=remove_folder)


@atexit.register
def _release_all() -> None:
    """Remove every lock file this process still holds (not a forked child's)."""
    for key, (_, kernel, owner) in list(_HELD.items()):
        if owner == os.getpid():
            _let_go(Path(key), kernel)
    _HELD.clear()


__all__ = ["LOCK_NAME", "Lock", "folder_lock"]
