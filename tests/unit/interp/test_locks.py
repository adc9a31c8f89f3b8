"""Concurrent runs: one process per output folder, run folder or cache entry (interp.runs.lock).

The fast tests hold a lock "for another process" the way another process would: a kernel
lock (``flock``) on the lock file through a descriptor of its own (flock treats two open
descriptions as two holders, within one process too), and that process's record in the file;
a killed holder is its record left in the file with no kernel lock. The tests marked
``processes`` start real processes on the same folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interp.errors import InterpError
from interp.runs.lock import LOCK_NAME, Lock, folder_lock
from interp.runs.outdir import OutDir
from tests.support.holders import release, wait_until_ready

ROOT = Path(__file__).resolve().parents[3]
INTERP = str(Path(sys.executable).with_name("interp"))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant(folder: Path, pid: int, started: str = "2026-01-02 03:04:05 UTC", *,
           hold: bool = True) -> Path:
    """The lock file in ``folder`` as process ``pid`` writes it; with ``hold``, its kernel
    lock held (until the test ends) as that process would hold it while running."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / LOCK_NAME
    lock.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": started,
                                "command": "interp lens"}))
    if hold:
        fd = os.open(lock, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _HOLDERS.append(fd)
    return lock


_HOLDERS: list[int] = []


@pytest.fixture(autouse=True)
def _let_planted_holders_go():
    yield
    while _HOLDERS:
        os.close(_HOLDERS.pop())  # closing the descriptor ends its flock


def test_lock_is_exclusive_and_removed_on_release(tmp_path):
    lock = folder_lock(tmp_path / "f", subject="thing", hint="wait")
    with lock:
        path = tmp_path / "f" / LOCK_NAME
        info = json.loads(path.read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        assert info["started"].endswith("UTC") and info["command"]
        with folder_lock(tmp_path / "f", subject="thing", hint="wait"):  # same process: fine
            pass
        assert path.exists(), "a nested holder must not remove the outer holder's lock"
    assert not path.exists()


def test_a_live_holder_is_refused_in_one_line(tmp_path):
    holder = os.getppid()  # alive, and not us
    planted = _plant(tmp_path / "out", holder)
    before = planted.read_bytes()
    with pytest.raises(InterpError) as err:
        with OutDir(tmp_path / "out") as out:
            out.write_text("results.json", "{}")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg == (f"output folder {tmp_path / 'out'} is in use by pid {holder} "
                   "(started 2026-01-02 03:04:05 UTC): wait for it or use another --out")
    assert planted.read_bytes() == before  # the holder's lock is untouched
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [LOCK_NAME]


def test_a_dead_holders_lock_is_taken_over(tmp_path, capsys):
    dead = _dead_pid()
    _plant(tmp_path / "out", dead, hold=False)
    with OutDir(tmp_path / "out") as out:
        assert json.loads((tmp_path / "out" / LOCK_NAME).read_text())["pid"] == os.getpid()
        out.write_text("results.json", "{}")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"from pid {dead}" in err[0] and "no longer running" in err[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["results.json"]


def test_waiting_for_a_holder_says_so_once_then_refuses(tmp_path, capsys):
    _plant(tmp_path / "f", os.getppid())
    lock = folder_lock(tmp_path / "f", subject="the conversion into f", hint="wait")
    t0 = time.monotonic()
    with pytest.raises(InterpError, match=r"^the conversion into f is in use by pid"):
        lock.acquire(wait_s=0.6)
    assert time.monotonic() - t0 >= 0.6
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"waiting for pid {os.getppid()} "), err


def test_a_record_without_its_kernel_lock_is_not_a_holder(tmp_path, capsys):
    """A lock file naming a live process (a reused pid) that holds no kernel lock on it is a
    killed holder's: taken over."""
    _plant(tmp_path / "f", os.getppid(), hold=False)
    with folder_lock(tmp_path / "f", subject="thing", hint="wait"):
        pass
    assert "no longer running" in capsys.readouterr().err


def test_a_damaged_lock_file_is_replaced(tmp_path, capsys):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / LOCK_NAME).write_text("{not json")
    with folder_lock(folder, subject="thing", hint="wait"):
        pass
    assert "damaged lock file" in capsys.readouterr().err
    assert not (folder / LOCK_NAME).exists()


def test_a_lock_file_left_empty_is_taken_silently(tmp_path, capsys):
    """An empty lock file (its creator killed before it wrote its record) is no holder and
    nothing worth a line."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / LOCK_NAME).write_text("")
    with folder_lock(folder, subject="thing", hint="wait"):
        pass
    assert capsys.readouterr().err == ""


def test_outdir_removes_a_folder_it_created_on_failure(tmp_path):
    target = tmp_path / "new" / "out"
    with pytest.raises(RuntimeError):
        with OutDir(target) as out:
            assert (target / LOCK_NAME).exists()
            out.write_text("results.json", "{}")
            raise RuntimeError("boom")
    assert not target.exists(), "the lock must not keep a created folder alive"
    with OutDir(target) as out:
        out.write_text("results.json", "{}")
    assert sorted(p.name for p in target.iterdir()) == ["results.json"]


def test_a_refused_outdir_leaves_no_folder_behind(tmp_path):
    lock = Lock(tmp_path / "x.lock", subject="x", hint="h")
    with lock:
        other = Lock(tmp_path / "x.lock", subject="x", hint="h")
        other.acquire()  # same process: re-entrant
        other.release()
        assert (tmp_path / "x.lock").exists()
    assert not (tmp_path / "x.lock").exists()


def test_a_run_folder_is_locked_while_training(tmp_path, capsys):
    from tests.unit.interp.test_training_loop import ToyRun  # noqa: PLC0415

    out = tmp_path / "run"
    _plant(out, os.getppid())
    with pytest.raises(InterpError, match=r"^run folder .* in use by pid \d+ .*another --out$"):
        ToyRun(out)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing swept or written
    (out / LOCK_NAME).unlink()
    out.rmdir()
    run = ToyRun(out)
    assert json.loads((out / LOCK_NAME).read_text())["pid"] == os.getpid()
    run.close()
    assert not (out / LOCK_NAME).exists()
    assert not out.exists(), "a run folder nothing was written into is not left behind"


def _hold_in_child(folder: Path) -> None:
    """Try to take ``folder``'s lock from another process; raise its one-line refusal."""
    code = ("import sys; from interp.runs.lock import folder_lock\n"
            "from interp.errors import InterpError\n"
            "try:\n    folder_lock(sys.argv[1], subject='run folder x', hint='h').acquire()\n"
            "except InterpError as e:\n    print(e); sys.exit(2)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    if proc.returncode == 2:
        raise InterpError(proc.stdout.strip())
    assert proc.returncode == 0, proc.stderr


def test_activation_cache_entry_is_locked_and_damage_is_rebuilt(tiny_model, tmp_path, capsys):
    import torch

    from saes.store import ActivationStore, StoreConfig

    docs = ["The capital of France is Paris. " * 20, "Water boils at 100 degrees. " * 20]
    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=4)
    store = ActivationStore(tiny_model, docs, cfg, batch_size=30, cache_dir=tmp_path,
                            data_hash="abc")
    want = store.batch(0)
    entry = store.cache
    assert entry is not None
    assert json.loads((entry / LOCK_NAME).read_text())["pid"] == os.getpid()
    store.close()
    assert not (entry / LOCK_NAME).exists()
    shard = entry / "s000-c000000.safetensors"
    good = shard.read_bytes()
    good_copy = tmp_path / "good.safetensors"
    good_copy.write_bytes(good)

    def reread() -> tuple[torch.Tensor, list[str]]:
        capsys.readouterr()
        again = ActivationStore(tiny_model, docs, cfg, batch_size=30, cache_dir=tmp_path,
                                data_hash="abc")
        got = again.batch(0)
        again.close()
        return got, capsys.readouterr().err.strip().splitlines()

    got, err = reread()
    assert torch.equal(got, want) and err == []  # intact: read back silently
    cases = {
        "truncated": (good[: len(good) // 2], "damaged (unreadable)"),
        "edited": (good[:-8] + bytes(8), "damaged (sha256 mismatch)"),
    }
    for name, (data, reason) in cases.items():
        shard.write_bytes(data)
        got, err = reread()
        assert torch.equal(got, want), name
        assert len(err) == 1 and reason in err[0] and "rebuilding" in err[0], (name, err)
        assert _shard(shard) == _shard(good_copy), name  # rebuilt: same values and stamp
    # another version of the entry: every shard is dropped and rebuilt, in one line
    info = json.loads((entry / "store.json").read_text())
    (entry / "store.json").write_text(json.dumps({**info, "version": 1}))
    got, err = reread()
    assert torch.equal(got, want)
    assert len(err) == 1 and "of another version (1" in err[0] and "rebuilding" in err[0], err
    assert json.loads((entry / "store.json").read_text())["version"] == info["version"]


def _shard(path: Path) -> tuple[dict[str, str], bytes]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return dict(f.metadata()), f.get_tensor("acts").numpy().tobytes()


# ------------------------------------------------------------------ real processes
@pytest.mark.processes
def test_another_process_is_refused_a_held_run_folder_and_cache_entry(tiny_model, tmp_path):
    """While this process trains into a run folder and fills an activation-cache entry,
    another process is refused each in one line naming this process."""
    from saes.store import ActivationStore, StoreConfig
    from tests.unit.interp.test_training_loop import ToyRun

    run = ToyRun(tmp_path / "run")
    store = ActivationStore(tiny_model, ["The capital of France is Paris. " * 20],
                            StoreConfig(layer=1, seq_len=16, windows_per_chunk=4),
                            batch_size=30, cache_dir=tmp_path / "cache", data_hash="abc")
    assert store.cache is not None
    try:
        for folder in (tmp_path / "run", store.cache):
            with pytest.raises(InterpError, match=f"in use by pid {os.getpid()} ") as err:
                _hold_in_child(folder)
            assert "\n" not in str(err.value)
    finally:
        run.close()
        store.close()
    _hold_in_child(store.cache)  # let go: another process takes it now
    assert not (store.cache / LOCK_NAME).exists(), "a process that exits leaves no lock"


_HOLDER = """
import sys, time
from pathlib import Path
from interp.runs.outdir import OutDir
out, go = sys.argv[1], Path(sys.argv[2])
with OutDir(out) as o:
    o.write_text("results.json", '{"holder": true}')
    Path(out, "..", "ready").resolve().write_text("1")
    for _ in range(1200):
        if go.exists():
            break
        time.sleep(0.1)
    if sys.argv[3] == "die":
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
"""


def _start_holder(out: Path, mode: str) -> tuple[subprocess.Popen[str], Path]:
    go = out.parent / "go"
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), str(go), mode],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    wait_until_ready(out.parent / "ready", proc)
    return proc, go


def _interp(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INTERP_NO_PROGRESS": "1"}
    return subprocess.run([INTERP, *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT)


@pytest.mark.processes
def test_two_processes_on_one_out_folder(tiny_model_dir, tmp_path):
    """The second `interp` into a busy --out is refused in one line; the first finishes
    intact; a killed holder's lock is taken over by the next run."""
    out = tmp_path / "out"
    holder, go = _start_holder(out, "finish")
    try:
        _refused_then_finished(tiny_model_dir, out, holder, go)
    finally:
        release(holder, go)

    # a holder killed with SIGKILL leaves its lock; the next run takes it over
    go.unlink()
    (tmp_path / "ready").unlink()
    killed, go = _start_holder(out, "die")
    go.write_text("1")
    killed.wait(timeout=120)
    assert json.loads((out / LOCK_NAME).read_text())["pid"] == killed.pid
    third = _interp(["lens", "hello", "--model", str(tiny_model_dir), "--out", str(out)])
    assert third.returncode == 0, third.stderr
    taken = [line for line in third.stderr.splitlines() if "no longer running" in line]
    assert len(taken) == 1 and f"from pid {killed.pid}" in taken[0], third.stderr
    assert sorted(p.name for p in out.iterdir()) == ["figures", "report.html", "results.json"]


def _refused_then_finished(tiny_model_dir: Path, out: Path, holder: subprocess.Popen[str],
                           go: Path) -> None:
    second = _interp(["lens", "hello", "--model", str(tiny_model_dir), "--out", str(out)])
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert lines[0] == (f"error: output folder {out} is in use by pid {holder.pid} "
                        f"(started {json.loads((out / LOCK_NAME).read_text())['started']}): "
                        "wait for it or use another --out")
    assert "Traceback" not in second.stderr
    go.write_text("1")
    assert holder.wait(timeout=120) == 0
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    assert json.loads((out / "results.json").read_text()) == {"holder": True}


@pytest.mark.processes
def test_two_processes_on_one_run_folder(tiny_model_dir, tmp_path):
    """`interp sae train` into a run folder another process is training into: refused in
    one line before anything is read or swept."""
    out = tmp_path / "run"
    # about 9,600 tokens: the run below needs 4,480 (a shorter text is refused up front)
    text = tmp_path / "text.txt"
    text.write_text("The capital of France is Paris. Water boils at 100 degrees. " * 600)
    code = ("import sys, time; from pathlib import Path\n"
            "from interp.runs.resume import lock_run_dir\n"
            "lock = lock_run_dir(Path(sys.argv[1]))\n"
            "Path(sys.argv[2]).write_text('1')\n"
            "while not Path(sys.argv[3]).exists(): time.sleep(0.1)\n"
            "lock.release()\n")
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", code, str(out), str(ready), str(go)],
                              cwd=ROOT)
    try:
        _run_folder_refused(tiny_model_dir, out, text, holder, ready, go)
    finally:
        release(holder, go)
    assert not out.exists()


def _run_folder_refused(tiny_model_dir: Path, out: Path, text: Path,
                        holder: subprocess.Popen[bytes], ready: Path, go: Path) -> None:
    wait_until_ready(ready, holder)
    second = _interp(["sae", "train", "--layer", "1", "--d-sae", "32", "--tokens", "2000",
                      "--seq-len", "16", "--windows-per-chunk", "8", "--text", str(text),
                      "--model", str(tiny_model_dir), "--out", str(out)])
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert second.returncode == 2 and len(errors) == 1, second.stderr
    assert "Traceback" not in second.stderr
    assert errors[0].startswith(f"error: run folder {out} is in use by pid {holder.pid} ")
    assert errors[0].endswith("wait for it or use another --out")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
    go.write_text("1")
    assert holder.wait(timeout=120) == 0
