"""A full disk (or any write error) at every writer: one line, no debris, old files kept.

Each writer of interp (atomic files, OutDir's staged files and folders, artifacts and
checkpoints, the activation cache, SAELens exports, report figures, progress.json and a
training run's results.json) is made to fail the way a full disk fails it: the low-level
write (``os.fsync``, a text write cut off half-way, safetensors' ``save_file`` with its
own I/O error, or a rename) raises ``OSError(ENOSPC)`` or another write errno. Each must
raise one :class:`InterpError` line naming the file and the reason, leave no temporary
file or folder behind, and leave the previous files byte for byte as they were.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError

from interp.errors import InterpError
from tests.support.cli_runner import run
from tests.support.text_fixtures import paragraphs

# ------------------------------------------------------------------ failure injection


def _oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def fail_fsync(mp: pytest.MonkeyPatch, code: int) -> None:
    """Every fsync fails (the data did not fit: a full disk reports it here or at write)."""

    def boom(fd: int) -> None:
        raise _oserror(code)

    mp.setattr(os, "fsync", boom)


def fail_text_writes(mp: pytest.MonkeyPatch, code: int) -> None:
    """``Path.write_text``/``write_bytes`` write half of the data, then fail."""

    def half_text(self: Path, data: str, encoding: str | None = None, errors: str | None = None,
                  newline: str | None = None) -> int:
        with open(self, "w", encoding=encoding or "utf-8") as fh:
            fh.write(data[: len(data) // 2])
        raise _oserror(code)

    def half_bytes(self: Path, data: bytes) -> int:
        with open(self, "wb") as fh:
            fh.write(bytes(data)[: len(data) // 2])
        raise _oserror(code)

    mp.setattr(pathlib.Path, "write_text", half_text)
    mp.setattr(pathlib.Path, "write_bytes", half_bytes)


def fail_safetensors(mp: pytest.MonkeyPatch, code: int,
                     when: Callable[[str], bool] = lambda name: True) -> None:
    """safetensors' ``save_file`` writes a partial file, then fails as safetensors does."""
    import safetensors.torch

    real = safetensors.torch.save_file

    def save_file(tensors, filename, metadata=None):
        if not when(str(filename)):
            return real(tensors, filename, metadata=metadata)
        Path(filename).write_bytes(b"\0" * 40)
        raise SafetensorError(f"Error while serializing: I/O error: {os.strerror(code)} "
                              f"(os error {code})")

    mp.setattr(safetensors.torch, "save_file", save_file)


def fail_replace(mp: pytest.MonkeyPatch, code: int, after: int = 0) -> None:
    """``os.replace`` and ``os.rename`` succeed ``after`` times, then fail.

    Putting a previous version back (a ``.old`` name renamed over its own entry, which
    takes no new space) still works, as it does on a full disk.
    """
    real_replace, real_rename = os.replace, os.rename
    calls = [0]

    def wrap(real: Callable[..., None]) -> Callable[..., None]:
        def moved(src, dst, **kw) -> None:
            calls[0] += 1
            if calls[0] > after and ".old" not in Path(src).name:
                raise _oserror(code)
            real(src, dst, **kw)
        return moved

    mp.setattr(os, "replace", wrap(real_replace))
    mp.setattr(os, "rename", wrap(real_rename))


def fail_everything(mp: pytest.MonkeyPatch, code: int = errno.ENOSPC) -> None:
    """A full disk as every writer meets it."""
    fail_fsync(mp, code)
    fail_text_writes(mp, code)
    fail_safetensors(mp, code)


# ------------------------------------------------------------------ checks


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def debris(folder: Path) -> list[str]:
    """Temporary files or folders a failed write left (``.NAME.tmp…``, ``.NAME.old-…``)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*")
                  if ".tmp" in p.name or ".old" in p.name)


def assert_one_line(err: BaseException | str, code: int, *names: str) -> str:
    line = str(err)
    assert "\n" not in line.strip(), line
    assert ".tmp" not in line, line  # the file the user asked for, not a staging name
    assert "cannot write" in line, line
    assert os.strerror(code) in line, line  # the system's own words
    for name in names:
        assert name in line, line
    return line


# ------------------------------------------------------------------ the writers


@dataclass
class Writer:
    id: str
    setup: Callable[[Path], object]  # writes the previous version into the folder
    inject: Callable[[pytest.MonkeyPatch, int], None]
    write: Callable[[Path], object]  # the write that fails
    names: str  # what the error line must name


def _atomic_text(folder: Path) -> None:
    from interp.runs.atomic import atomic_write_text

    atomic_write_text(folder / "x.json", '{"old": true}')


def _atomic_new(folder: Path) -> object:
    from interp.runs.atomic import atomic_write_text

    return atomic_write_text(folder / "x.json", '{"new": true}' * 100)


def _progress(step: int) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.runs.resume import write_progress

        return write_progress(folder, step=step, total=10)
    return write


def _run_results(value: float) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.cli.common import write_run_results

        return write_run_results(str(folder), {"loss": value})
    return write


def _artifact(value: float) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.runs.artifacts import save_artifact

        return save_artifact(folder / "probe", {"w": torch.full((64,), value)}, kind="probe",
                             config={"v": value}, model_id="m", d_model=64, manifest={})
    return write


def _outdir(texts: dict[str, str]) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.runs.outdir import OutDir

        with OutDir(folder / "out") as out:
            for name, text in texts.items():
                out.write_text(name, text)
        return None
    return write


def _outdir_with_folder(value: float) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.runs.artifacts import save_artifact
        from interp.runs.outdir import OutDir

        with OutDir(folder / "out") as out:
            out.write_text("results.json", json.dumps({"v": value}))
            save_artifact(out.stage_dir("acts"), {"w": torch.full((8,), value)}, kind="acts",
                          config={}, model_id="m", d_model=8, manifest={})
        return None
    return write


def _figure_report(value: float) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.plotting import new_figure
        from interp.runs.outdir import OutDir
        from reports.html import Report

        fig = new_figure()
        fig.add_subplot().plot([0, 1], [value, value])
        with OutDir(folder / "out") as out:
            Report(f"<p>{value}</p>", figures={"line": fig}).write(out)
        return None
    return write


def _figure_save(value: float) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from interp.plotting import new_figure
        from reports.html import Report

        fig = new_figure()
        fig.add_subplot().plot([0, 1], [value, value])
        return Report(f"<p>{value}</p>", figures={"line": fig}).save(folder / "report")
    return write


def _saelens(seed: int) -> Callable[[Path], object]:
    def write(folder: Path) -> object:
        from saes.sae import SAEConfig, SparseAutoencoder
        from saes.saelens import export_saelens

        sae = SparseAutoencoder(SAEConfig(d_in=8, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                          layer=1, model_id="tiny"))
        sae.init_weights(torch.Generator().manual_seed(seed))
        return export_saelens(sae, folder / "saelens")
    return write


WRITERS = [
    Writer("atomic-write-fsync", _atomic_text, fail_fsync, _atomic_new, "x.json"),
    Writer("atomic-write-rename", _atomic_text, fail_replace, _atomic_new, "x.json"),
    Writer("progress-json", lambda f: _progress(1)(f), fail_fsync, _progress(2),
           "progress.json"),
    Writer("run-results-json", lambda f: _run_results(1.0)(f), fail_fsync, _run_results(2.0),
           "results.json"),
    Writer("artifact-weights", lambda f: _artifact(1.0)(f), fail_safetensors, _artifact(2.0),
           "probe"),
    Writer("artifact-config", lambda f: _artifact(1.0)(f), fail_fsync, _artifact(2.0), "probe"),
    Writer("artifact-swap", lambda f: _artifact(1.0)(f), fail_replace, _artifact(2.0), "probe"),
    Writer("outdir-text", lambda f: _outdir({"results.json": "{}", "report.html": "old"})(f),
           fail_text_writes, _outdir({"results.json": '{"a": 1}', "report.html": "new"}),
           "results.json"),
    Writer("outdir-commit-second-rename",
           lambda f: _outdir({"results.json": "{}", "report.html": "old"})(f),
           lambda mp, code: fail_replace(mp, code, after=1),
           _outdir({"results.json": '{"a": 1}', "report.html": "new"}), "report.html"),
    Writer("outdir-staged-folder", lambda f: _outdir_with_folder(1.0)(f), fail_safetensors,
           _outdir_with_folder(2.0), "acts"),
    Writer("outdir-staged-folder-commit", lambda f: _outdir_with_folder(1.0)(f),
           lambda mp, code: fail_replace(mp, code, after=2), _outdir_with_folder(2.0),
           "acts"),
    Writer("report-figures-outdir", lambda f: _figure_report(1.0)(f), fail_fsync,
           _figure_report(2.0), "out/figures/line.svg"),
    Writer("report-figures-save", lambda f: _figure_save(1.0)(f), fail_fsync,
           _figure_save(2.0), "figures/line.svg"),
    Writer("saelens-export", lambda f: _saelens(0)(f), fail_safetensors, _saelens(1),
           "saelens"),
]


@pytest.mark.parametrize("writer", WRITERS, ids=[w.id for w in WRITERS])
def test_write_error_keeps_previous_files(writer: Writer, tmp_path, monkeypatch):
    writer.setup(tmp_path)
    before = snapshot(tmp_path)
    assert before, "the setup wrote the previous version"
    with monkeypatch.context() as mp:
        writer.inject(mp, errno.ENOSPC)
        with pytest.raises(InterpError) as info:
            writer.write(tmp_path)
    assert_one_line(info.value, errno.ENOSPC, writer.names)
    assert debris(tmp_path) == []
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("code", [errno.EIO, errno.EDQUOT, errno.EROFS])
@pytest.mark.parametrize("writer", [w for w in WRITERS if w.id in (
    "atomic-write-fsync", "artifact-weights", "outdir-text")], ids=lambda w: w.id)
def test_any_write_errno(writer: Writer, code: int, tmp_path, monkeypatch):
    writer.setup(tmp_path)
    before = snapshot(tmp_path)
    with monkeypatch.context() as mp:
        writer.inject(mp, code)
        with pytest.raises(InterpError) as info:
            writer.write(tmp_path)
    assert_one_line(info.value, code, writer.names)
    assert debris(tmp_path) == [] and snapshot(tmp_path) == before


def test_write_error_is_still_an_oserror(tmp_path, monkeypatch):
    """Callers that catch ``OSError`` keep working; the errno is kept."""
    from interp.runs.atomic import atomic_write_text

    fail_fsync(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError) as info:
        atomic_write_text(tmp_path / "a.txt", "x")
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, InterpError)


def test_atomic_write_leaves_no_temp_file_when_the_rename_fails(tmp_path, monkeypatch):
    from interp.runs.atomic import atomic_write_bytes

    def boom(src, dst):  # noqa: ANN001, ANN202
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "x.json", b"data")
    assert list(tmp_path.iterdir()) == []


def test_first_write_leaves_nothing(tmp_path, monkeypatch):
    """Without a previous version, a failed write leaves no file at all."""
    fail_everything(monkeypatch)
    with pytest.raises(InterpError):
        _artifact(1.0)(tmp_path)
    with pytest.raises(InterpError):
        _outdir({"results.json": "{}"})(tmp_path)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ caches that only save time
# A cache write that fails is one line on stderr, and the command goes on with the value
# it computed: no partial file, the previous entries kept.


def _one_note(capsys: pytest.CaptureFixture[str], code: int, *names: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "not cached" in err[0] and "going on without the cache" in err[0], err
    assert os.strerror(code) in err[0] and "Traceback" not in err[0], err
    for name in names:
        assert name in err[0], err
    return err[0]


def test_activation_cache_write(tiny_model, tmp_path, monkeypatch, capsys):
    from saes.store import ActivationStore, StoreConfig

    docs = paragraphs(60, seed=4)
    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=8)
    store = ActivationStore(tiny_model, docs, cfg, batch_size=50, cache_dir=tmp_path,
                            data_hash="abc")
    store.batch(0)  # chunk 0 cached
    before = snapshot(tmp_path)
    assert any(name.endswith("c000000.safetensors") for name in before)
    capsys.readouterr()
    with monkeypatch.context() as mp:
        fail_safetensors(mp, errno.ENOSPC)
        got = store.batch(3)  # needs chunk 1: computed, not cached
        later = store.batch(6)  # chunk 2: not tried again (no second line)
    _one_note(capsys, errno.ENOSPC, "s000-c000001.safetensors")
    assert debris(tmp_path) == [] and snapshot(tmp_path) == before
    plain = ActivationStore(tiny_model, docs, cfg, batch_size=50)
    assert torch.equal(got, plain.batch(3)) and torch.equal(later, plain.batch(6))


def test_activation_cache_folder_read_only(tiny_model, tmp_path, monkeypatch, capsys):
    """A cache folder that cannot be created: the store runs uncached, saying so once."""
    from saes.store import ActivationStore, StoreConfig

    real_mkdir = pathlib.Path.mkdir

    def read_only(self: Path, *args, **kwargs) -> None:
        if tmp_path in self.parents or self == tmp_path:
            raise _oserror(errno.EROFS)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only)
    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=8)
    store = ActivationStore(tiny_model, paragraphs(60, seed=4), cfg, batch_size=50,
                            cache_dir=tmp_path / "acts", data_hash="abc")
    assert store.cache is None and store.batch(0).shape[0] == 50
    _one_note(capsys, errno.EROFS, str(tmp_path / "acts"))
    assert not (tmp_path / "acts").exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_peak_cache_write(code, tmp_path, monkeypatch, capsys):
    from interp.mfu import peak

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    monkeypatch.setattr(peak, "measure_peak", lambda device, dtype, **kw: peak.PeakResult(
        "test cpu", dtype, 1.5e9, "measured", threads=2, matmul_size=64))
    peak.device_peak("cpu", "float32")  # cached
    before = snapshot(tmp_path)
    with monkeypatch.context() as mp:
        fail_fsync(mp, code)
        got = peak.device_peak("cpu", "bfloat16")  # measured: its figure cannot be cached
    assert got.flops == 1.5e9 and got.dtype == "bfloat16"
    _one_note(capsys, code, "peak FLOP/s", str(tmp_path / "peak.json"))
    assert debris(tmp_path) == [] and snapshot(tmp_path) == before


def test_baseline_cache_write(tmp_path, monkeypatch, capsys):
    import numpy as np

    from saes import baselines

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    per = {k: np.arange(5, dtype=np.float64) for k in baselines.BASELINE_KEYS}
    assert baselines.save_baselines("k0", per) is not None
    before = snapshot(tmp_path)
    with monkeypatch.context() as mp:
        fail_fsync(mp, errno.ENOSPC)
        assert baselines.save_baselines("k1", per) is None
    _one_note(capsys, errno.ENOSPC, "SAE-eval baselines", "k1.safetensors")
    assert debris(tmp_path) == [] and snapshot(tmp_path) == before
    assert baselines.load_baselines("k1", 5) is None  # nothing half-written is found


def test_cli_sae_eval_baseline_cache_full(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """`sae eval` on a disk where only the baseline cache cannot be written: the evaluation
    ends, its report is written, and one line says the baselines were not cached."""
    from saes import baselines

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    real = baselines.atomic_write_bytes

    def full(path, data, mode=0o644):
        if "sae-eval-baselines" in str(path):
            fail_fsync(monkeypatch, errno.ENOSPC)
            try:
                return real(path, data, mode)
            finally:
                monkeypatch.setattr(os, "fsync", _real_fsync)
        return real(path, data, mode)

    monkeypatch.setattr(baselines, "atomic_write_bytes", full)
    from saes.sae import SAEConfig, SparseAutoencoder

    sae = SparseAutoencoder(SAEConfig(d_in=64, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                      layer=1, model_id=str(tiny_model_dir)))
    sae.init_weights(torch.Generator().manual_seed(0))
    sae_dir = str(sae.save(tmp_path / "sae", manifest={}))
    out = tmp_path / "out"
    code, _, err = run(["sae", "eval", sae_dir, "--model", str(tiny_model_dir),
                        "--text", _text(tmp_path), "--tokens", "120", "--ce-tokens", "60",
                        "--seq-len", "16", "--out", str(out)], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "not cached" in line]
    assert len(lines) == 1 and "SAE-eval baselines" in lines[0], err
    assert (out / "results.json").is_file() and "Traceback" not in err
    assert not list((tmp_path / "cache").rglob("*.safetensors"))
    assert debris(tmp_path) == []


_real_fsync = os.fsync


# ------------------------------------------------------------------ through the CLI


def _text(tmp: Path) -> str:
    p = tmp / "t.txt"
    p.write_text("\n\n".join(paragraphs(200, seed=1)))
    return str(p)


def _pairs(tmp: Path) -> str:
    p = tmp / "pairs.jsonl"
    p.write_text("\n".join(json.dumps({"positive": f"I love it {i}", "negative": f"I hate {i}"})
                           for i in range(4)))
    return str(p)


CLI = {
    # verb family: (args, --out is the artifact itself)
    "lens": (lambda t, m: ["lens", "hello there", *m], False),
    "capture": (lambda t, m: ["capture", "hello there", "--layer", "1", *m], False),
    "probe": (lambda t, m: ["probe", "--layer", "1", "--seeds", "1", "--dataset", _rows(t), *m],
              False),
    "steer-train": (lambda t, m: ["steer", "train", "--pairs", _pairs(t), "--layer", "1", *m],
                    True),
    "sae-export": (lambda t, m: ["sae", "export", _sae(t)], True),
}


def _rows(tmp: Path) -> str:
    p = tmp / "rows.jsonl"
    p.write_text("\n".join(json.dumps({"text": f"sentence number {i} here", "label": i % 2,
                                       "group": f"g{i % 5}"}) for i in range(40)))
    return str(p)


def _sae(tmp: Path) -> str:
    from saes.sae import SAEConfig, SparseAutoencoder

    sae = SparseAutoencoder(SAEConfig(d_in=64, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                      layer=1, model_id="tiny"))
    sae.init_weights(torch.Generator().manual_seed(0))
    return str(sae.save(tmp / "sae", manifest={}))


@pytest.mark.parametrize("family", list(CLI))
def test_cli_full_disk(family: str, tiny_model_dir, tmp_path, capsys, monkeypatch):
    args, is_artifact = CLI[family]
    m = ["--model", str(tiny_model_dir)]
    out = tmp_path / "out"
    full = [*args(tmp_path, m), "--out", str(out)]
    if is_artifact:  # a previous version of the artifact, from a run that succeeded
        code, _, err = run(full, capsys)
        assert code == 0, err
    else:
        out.mkdir()
        (out / "keep.txt").write_text("keep me")
        (out / "report.html").write_text("previous report")
        (out / "results.json").write_text('{"previous": true}')
    before = snapshot(out)
    with monkeypatch.context() as mp:
        fail_everything(mp)
        code, _, err = run(full, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert_one_line(lines[0], errno.ENOSPC, str(out))
    assert snapshot(out) == before
    assert debris(tmp_path) == []


def test_cli_checkpoint_write_fails_then_resumes(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """The third checkpoint cannot be written: the second is kept, and a rerun resumes."""
    run_dir = tmp_path / "run"
    args = ["sae", "train", "--layer", "1", "--d-sae", "64", "--tokens", str(64 * 6),
            "--batch-size", "64", "--seq-len", "16", "--windows-per-chunk", "8",
            "--checkpoint-every", "2", "--text", _text(tmp_path), "--model",
            str(tiny_model_dir), "--out", str(run_dir)]
    saves: list[str] = []
    kept: dict[str, bytes] = {}

    def third_checkpoint(name: str) -> bool:
        if ".checkpoint.tmp-" not in name:
            return False
        saves.append(name)
        if len(saves) == 3:
            kept.update(snapshot(run_dir / "checkpoint"))
            return True
        return False

    with monkeypatch.context() as mp:
        fail_safetensors(mp, errno.ENOSPC, when=third_checkpoint)
        code, _, err = run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert_one_line(lines[-1], errno.ENOSPC, str(run_dir / "checkpoint"))
    assert lines[-1].startswith("error: ") and "Traceback" not in err
    assert kept and snapshot(run_dir / "checkpoint") == kept
    assert json.loads((run_dir / "checkpoint" / "config.json").read_text())["config"]["step"] > 0
    assert debris(tmp_path) == []
    code, out, err = run(args, capsys)
    assert code == 0, err
    assert "resum" in (out + err).lower()


@pytest.mark.parametrize("where", ["weights", "stamp"])
def test_model_conversion_write(where, tmp_path, monkeypatch):
    """Converting a GGUF onto a full disk: one line, the previous conversion kept."""
    import safetensors.torch
    import transformers.modeling_utils

    from interp.models.gguf_convert import convert_gguf
    from tests.unit.interp.test_gguf_convert import make_model, train_tokenizer, write_gguf

    tok = train_tokenizer()
    path = write_gguf(tmp_path / "tiny.gguf", make_model(len(tok)), tok)
    out = convert_gguf(path, tmp_path / "cache" / "converted", max_nll=None)
    before = snapshot(tmp_path / "cache")
    with monkeypatch.context() as mp:
        if where == "weights":  # transformers holds its own name for save_file
            fail_safetensors(mp, errno.ENOSPC)
            mp.setattr(transformers.modeling_utils, "safe_save_file", safetensors.torch.save_file)
        else:
            fail_text_writes(mp, errno.ENOSPC)
        with pytest.raises(InterpError) as info:
            convert_gguf(path, out, max_nll=None)
    line = assert_one_line(info.value, errno.ENOSPC, str(out))
    assert line.endswith("nothing was cached")
    assert debris(tmp_path) == [] and snapshot(tmp_path / "cache") == before


# ------------------------------------------------------------------ the corpus build


@pytest.fixture
def corpus_debs(tmp_path) -> tuple[Path, Path]:
    from tests.unit.interp.test_corpus import DPKG_DEB, fake_doc_files, make_deb

    if DPKG_DEB is None:
        pytest.skip("dpkg-deb is not installed")
    extra: dict[str, str | bytes] = {
        "usr/share/doc/interp-fake-extra/copyright": "Extra licence\n",
        "usr/share/doc/interp-fake-extra/extra.html":
            "<html><body><p>" + " ".join(["The extra package adds words."] * 12)
            + "</p></body></html>"}
    return (make_deb(tmp_path / "debs", "interp-fake-doc", fake_doc_files()),
            make_deb(tmp_path / "debs", "interp-fake-extra", extra))


CORPUS_FAILURES = {
    "text-write": fail_text_writes,  # a staged file cut off half-way
    "commit-rename": lambda mp, code: fail_replace(mp, code, after=1),  # the second rename
    "everything": lambda mp, code: fail_everything(mp, code),
}


@pytest.mark.parametrize("how", list(CORPUS_FAILURES))
def test_corpus_build_full_disk(how, corpus_debs, tmp_path, monkeypatch):
    """A rebuild (with another package) on a full disk: one line, the previous corpus byte
    for byte, no staged or spare files."""
    from interp.data import corpus

    out = tmp_path / "corpus"
    corpus.build(out, debs=[corpus_debs[0]], progress=False)
    before = snapshot(out)
    texts = corpus.load_texts(path=out)
    with monkeypatch.context() as mp:
        CORPUS_FAILURES[how](mp, errno.ENOSPC)
        with pytest.raises(InterpError) as info:
            corpus.build(out, debs=list(corpus_debs), progress=False)
    assert_one_line(info.value, errno.ENOSPC, str(out))
    assert snapshot(out) == before and debris(tmp_path) == []
    assert corpus.is_built(out) and corpus.load_texts(path=out) == texts


def test_corpus_first_build_full_disk(corpus_debs, tmp_path, monkeypatch):
    from interp.data import corpus

    out = tmp_path / "corpus"
    fail_everything(monkeypatch)
    with pytest.raises(InterpError) as info:
        corpus.build(out, debs=[corpus_debs[0]], progress=False)
    assert_one_line(info.value, errno.ENOSPC, str(out))
    assert not out.exists() and debris(tmp_path) == []


def test_cli_corpus_build_full_disk(corpus_debs, tmp_path, capsys, monkeypatch):
    """`interp corpus build --force` on a full disk: exit 2, one line, the corpus kept."""
    import shutil as sh

    from interp.data import corpus

    def download(packages, dest):  # apt-get download, offline: the fake package
        return [Path(sh.copy(corpus_debs[0], dest))]

    monkeypatch.setattr(corpus, "_download", download)
    out = tmp_path / "corpus"
    code, _, err = run(["corpus", "build", "--out", str(out)], capsys)
    assert code == 0, err
    before = snapshot(out)
    with monkeypatch.context() as mp:
        fail_everything(mp)
        code, _, err = run(["corpus", "build", "--out", str(out), "--force"], capsys)
    lines = [line for line in err.strip().splitlines() if line.startswith("error")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert_one_line(lines[0], errno.ENOSPC, str(out))
    assert snapshot(out) == before and debris(tmp_path) == []
