"""The real model's converted folder: damaged, it is rebuilt (saying so in one line); while
another process holds its conversion lock, a load waits for it instead of converting too.
And `interp lens` on the real model into an --out folder another process is writing: refused;
`interp models` lists the real conversion, truncated, as damaged, not cached.

The session's conversion is copied into a temporary INTERP_CACHE before it is damaged: the
session's own cache is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.holders import release, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]

_HOLD = """
import sys, time
from pathlib import Path
from interp.runs.lock import Lock
lock = Lock(sys.argv[1], subject="the conversion", hint="wait").acquire()
Path(sys.argv[2]).write_text("1")
while not Path(sys.argv[3]).exists():
    time.sleep(0.1)
lock.release()
"""

_LOAD = """
import interp
m = interp.load()
print(m.model_id, m.n_layers)
"""


@pytest.mark.processes
def test_truncated_conversion_is_rebuilt_after_waiting_for_the_lock(model, tmp_path):
    from interp.models.embedded import SMOLLM2
    from interp.models.gguf_convert import STAMP_FILE, conversion_problem
    from interp.models.loading import converted_dir

    src = converted_dir(SMOLLM2.name)  # the session's conversion (made by `model`)
    assert conversion_problem(src) is None
    cache = tmp_path / "cache"
    folder = cache / "models" / src.name
    shutil.copytree(src, folder)
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    with weights.open("r+b") as f:
        f.truncate(size // 3)
    assert (conversion_problem(folder) or "").startswith("damaged (model.safetensors has ")

    env = {**os.environ, "INTERP_CACHE": str(cache), "INTERP_NO_PROGRESS": "1"}
    lock = folder.with_name(f".{folder.name}.lock")
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(lock), str(ready), str(go)],
                              env=env, cwd=ROOT)
    err_file = tmp_path / "load.err"
    loader: subprocess.Popen[str] | None = None
    try:
        wait_until_ready(ready, holder)
        with err_file.open("w") as err:
            loader = subprocess.Popen([sys.executable, "-c", _LOAD], env=env, cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=err, text=True)
            for _ in range(1200):
                if "waiting for pid" in err_file.read_text() or loader.poll() is not None:
                    break
                time.sleep(0.1)
            assert loader.poll() is None, "the load must wait while another process converts"
            go.write_text("1")
            assert holder.wait(timeout=60) == 0
            out, _ = loader.communicate(timeout=900)
    finally:  # never leave a process behind
        release(holder, go)
        if loader is not None and loader.poll() is None:
            loader.kill()
            loader.wait()
    stderr = err_file.read_text()
    assert loader.returncode == 0, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    damaged = [line for line in lines if "is damaged" in line]
    waiting = [line for line in lines if "waiting for pid" in line]
    assert len(damaged) == 1 and damaged[0].startswith(f"converted model folder {folder} is "
                                                      "damaged (model.safetensors has ")
    assert damaged[0].endswith("; rebuilding")
    assert len(waiting) == 1 and f"waiting for pid {holder.pid} " in waiting[0]
    assert out.split() == [SMOLLM2.name, "30"]
    assert conversion_problem(folder) is None and weights.stat().st_size == size
    assert "files" in json.loads((folder / STAMP_FILE).read_text())
    assert not lock.exists()
    assert conversion_problem(src) is None  # the session's cache untouched


_OUT_HOLDER = """
import sys, time
from pathlib import Path
from interp.runs.outdir import OutDir
with OutDir(sys.argv[1]) as o:
    o.write_text("results.json", '{"holder": true}')
    Path(sys.argv[2]).write_text("1")
    while not Path(sys.argv[3]).exists():
        time.sleep(0.1)
"""


@pytest.mark.processes
def test_real_model_run_into_a_busy_out_folder_is_refused(model, tmp_path):
    out, ready, go = tmp_path / "out", tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", _OUT_HOLDER, str(out), str(ready),
                               str(go)], cwd=ROOT)
    try:
        wait_until_ready(ready, holder)
        env = {**os.environ, "INTERP_NO_PROGRESS": "1"}
        second = subprocess.run(
            [str(Path(sys.executable).with_name("interp")), "lens", "The capital of France is",
             "--out", str(out)], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    finally:
        release(holder, go)
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert lines[0].startswith(f"error: output folder {out} is in use by pid {holder.pid} ")
    assert holder.returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    assert json.loads((out / "results.json").read_text()) == {"holder": True}


def test_models_lists_the_real_damaged_conversion(model, tmp_path, monkeypatch, capsys):
    """`interp models` on a copy of the real model's conversion, truncated: not cached, and
    the row says why (the session's cache is not touched)."""
    from interp.models.embedded import SMOLLM2
    from interp.models.gguf_convert import conversion_problem
    from interp.models.loading import converted_dir
    from tests.support.cli_runner import run

    src = converted_dir(SMOLLM2.name)
    cache = tmp_path / "cache"
    folder = cache / "models" / src.name
    shutil.copytree(src, folder)
    monkeypatch.setenv("INTERP_CACHE", str(cache))

    def row() -> dict:
        code, out, err = run(["models", "--json"], capsys)
        assert code == 0 and "Traceback" not in err, err
        return next(r for r in json.loads(out) if r["name"] == SMOLLM2.name)

    assert row()["cached"] is True and row()["damaged"] is None
    with (folder / "model.safetensors").open("r+b") as f:
        f.truncate(1000)
    damaged = row()
    assert damaged["cached"] is False and damaged["path"] == str(folder)
    assert damaged["damaged"].startswith("damaged (model.safetensors has 1,000 bytes, not ")
    assert conversion_problem(src) is None  # the session's cache untouched
