"""One process at a time: an exclusive lock on an output folder, a run folder or a cache entry.

A lock is a small file created with ``O_CREAT | O_EXCL`` (so exactly one process can create
it) holding JSON ``{pid, host, started, command}``. While its holder runs, another process
is refused in one line naming the holder's pid and start time; a lock whose pid is no
longer running on this host (killed, crashed) is taken over with one line on stderr. The
holder removes the file when it lets go (``with`` block, :meth:`Lock.release`, or at exit),
so a lock never outlives a normal failure; its name is hidden (:data:`LOCK_NAME` inside a
folder), so it is never among a command's outputs.

Locks are re-entrant within one process (an ``OutDir`` nested in another on the same folder,
two stores on one cache entry): the file goes when the last holder lets go.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from interp.errors import InterpError

#: The lock file's name inside a locked folder.
LOCK_NAME = ".interp.lock"
#: A lock file still empty or unreadable after this many seconds is debris, not a writer.
_PARTIAL_GRACE_S = 2.0
#: The guard of a takeover; older than this, its process died mid-takeover.
_GUARD_STALE_S = 30.0

#: Lock files this process holds: real path → [count, the bytes it wrote, owner pid].
_HELD: dict[str, list[Any]] = {}


def _say(line: str) -> None:
    from interp.runs.progress import note

    note(line)


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or ``None``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _alive(info: dict[str, Any]) -> bool:
    """Whether the holder recorded in ``info`` may still be running (unknown hosts: yes)."""
    if info.get("host") != socket.gethostname():
        return True  # cannot check a process on another machine
    try:
        pid = int(info["pid"])
    except (KeyError, TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's live process
    except OSError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        if state in ("Z", "X"):  # killed, not yet reaped
            return False
    except (OSError, IndexError):
        pass
    recorded, now = info.get("proc_start"), _proc_start(pid)
    return not (recorded and now and recorded != now)  # the pid was reused


def _command() -> str:
    text = " ".join([Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]])
    return text if len(text) <= 200 else text[:197] + "..."


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
        key = self._key()
        held = _HELD.get(key)
        if held is not None and held[2] == os.getpid():
            held[0] += 1
            self._held = True
            return self
        deadline = time.monotonic() + wait_s
        said = False
        while True:
            holder = self._try_create()
            if holder is None:
                self._held = True
                return self
            if wait_s <= 0 or time.monotonic() >= deadline:
                raise InterpError(self._refusal(holder))
            if not said:
                _say(f"waiting for pid {holder.get('pid')} (started {holder.get('started')}), "
                     f"which is using {self.subject}")
                said = True
            time.sleep(0.5)

    def release(self) -> None:
        """Let go (the file is removed once this process's last holder lets go)."""
        if not self._held:
            return
        self._held = False
        key = self._key()
        held = _HELD.get(key)
        if held is None:
            return
        held[0] -= 1
        if held[0] > 0:
            return
        del _HELD[key]
        _remove_if_ours(self.path, held[1])
        if self.remove_folder and self._created_folder:
            try:
                self.path.parent.rmdir()  # only if empty
            except OSError:
                pass

    def __enter__(self) -> Lock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    # ------------------------------------------------------------------ internals
    def _key(self) -> str:
        return os.path.realpath(self.path)

    def _refusal(self, holder: dict[str, Any]) -> str:
        host = holder.get("host")
        where = f" on {host}" if host and host != socket.gethostname() else ""
        return (f"{self.subject} is in use by pid {holder.get('pid')}{where} "
                f"(started {holder.get('started')}): {self.hint}")

    def _content(self) -> bytes:
        return json.dumps({
            "pid": os.getpid(), "host": socket.gethostname(),
            "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "command": _command(), "proc_start": _proc_start(os.getpid()),
        }).encode()

    def _try_create(self) -> dict[str, Any] | None:
        """Create the lock file (``None``), or the live holder's record; stale locks
        are taken over on the way."""
        folder = self.path.parent
        if not folder.exists():
            try:
                folder.mkdir(parents=True)
                self._created_folder = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise InterpError(f"cannot lock {self.subject}: {exc.strerror or exc}") from None
        give_up = time.monotonic() + _PARTIAL_GRACE_S + 3.0  # past a creator's write
        while time.monotonic() < give_up:
            data = self._content()
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder, raw = self._read_holder()
                if holder is not None and _alive(holder):
                    return holder
                if raw is None:
                    continue  # gone meanwhile: try again
                if holder is None and not self._old(self.path, _PARTIAL_GRACE_S):
                    time.sleep(0.05)  # being written by its creator
                    continue
                self._take_over(raw, holder)
                continue
            except OSError as exc:
                raise InterpError(f"cannot lock {self.subject}: {exc.strerror or exc}") from None
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            _HELD[self._key()] = [1, data, os.getpid()]
            return None
        raise InterpError(f"cannot lock {self.subject}: its lock file {self.path} keeps "
                          "changing; try again")

    def _read_holder(self) -> tuple[dict[str, Any] | None, bytes | None]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError:
            return None, b""
        try:
            info = json.loads(raw)
        except ValueError:
            return None, raw
        return (info if isinstance(info, dict) else None), raw

    @staticmethod
    def _old(path: Path, seconds: float) -> bool:
        try:
            return time.time() - path.stat().st_mtime > seconds
        except OSError:
            return False

    def _take_over(self, raw: bytes, holder: dict[str, Any] | None) -> None:
        """Remove the stale lock ``raw`` (only if it is still that one; one process at a
        time, under a guard file), saying so."""
        guard = self.path.with_name(self.path.name + ".takeover")
        try:
            fd = os.open(guard, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if self._old(guard, _GUARD_STALE_S):
                guard.unlink(missing_ok=True)
            else:
                time.sleep(0.05)
            return
        os.close(fd)
        try:
            try:
                still = self.path.read_bytes()
            except FileNotFoundError:
                return
            if still != raw:
                return
            self.path.unlink(missing_ok=True)
        finally:
            guard.unlink(missing_ok=True)
        self.took_over = True
        if holder is None:
            _say(f"replacing the damaged lock file of {self.subject}")
        else:
            _say(f"taking over {self.subject} from pid {holder.get('pid')} "
                 f"(started {holder.get('started')}), which is no longer running")


def _remove_if_ours(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            path.unlink()
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
    for key, (_, data, owner) in list(_HELD.items()):
        if owner == os.getpid():
            _remove_if_ours(Path(key), data)
    _HELD.clear()


__all__ = ["LOCK_NAME", "Lock", "folder_lock"]
