"""Corrupted caches: a peak-FLOPs cache, an SAE-eval baseline entry, a converted model
folder or a tuned-lens run's lens that is truncated, edited or of another version is
detected, rebuilt and reported in one line on stderr, never used; the corpus (which may not
be rebuildable offline) is refused in one line naming the command that rebuilds it.
(Activation-cache shards: tests/unit/interp/test_locks.py; the real model's converted
folder: tests/integration/test_cache_integrity_real.py.)"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from interp.errors import InterpError
from interp.mfu import peak


# ------------------------------------------------------------------ peak FLOP/s
@pytest.fixture
def fake_measure(monkeypatch, tmp_path):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    calls: list[str] = []

    def measure(device, dtype, **kw):
        calls.append(dtype)
        return peak.PeakResult("test cpu", dtype, 1.5e9, "measured", threads=2, matmul_size=64)

    monkeypatch.setattr(peak, "measure_peak", measure)
    return calls


def test_damaged_peak_cache_is_measured_again(fake_measure, tmp_path, capsys):
    first = peak.device_peak("cpu", "float32")
    path = tmp_path / "peak.json"
    good = path.read_text()
    assert fake_measure == ["float32"] and json.loads(good)[peak.STAMP_KEY]["version"] == 2
    assert peak.device_peak("cpu", "float32") == first and len(fake_measure) == 1
    assert capsys.readouterr().err == ""  # intact: read back silently

    data = json.loads(good)
    key = next(k for k in data if k != peak.STAMP_KEY)
    edited = {**data, key: {**data[key], "flops": 9.9e12}}  # a plausible figure, typed in
    legacy = {key: data[key]}  # the unstamped format of earlier versions
    other = {**data, peak.STAMP_KEY: {**data[peak.STAMP_KEY], "version": 1}}
    cases = {
        "truncated": (good[: len(good) // 2], "damaged (not readable JSON)"),
        "edited": (json.dumps(edited), "damaged (sha256 mismatch)"),
        "unstamped": (json.dumps(legacy), "of another version (unversioned"),
        "re-versioned": (json.dumps(other), "of another version (1"),
    }
    for name, (text, reason) in cases.items():
        path.write_text(text)
        n = len(fake_measure)
        again = peak.device_peak("cpu", "float32")
        err = capsys.readouterr().err.strip().splitlines()
        assert len(fake_measure) == n + 1, f"{name}: must be measured again, never used"
        assert again.flops == 1.5e9, name
        assert len(err) == 1 and reason in err[0] and "measuring again" in err[0], (name, err)
        assert str(path) in err[0]
        rewritten = json.loads(path.read_text())
        assert rewritten[peak.STAMP_KEY] == json.loads(good)[peak.STAMP_KEY], name


# ------------------------------------------------------------------ SAE-eval baselines
def test_damaged_baseline_entry_is_recomputed(monkeypatch, tmp_path, capsys):
    from safetensors.numpy import save_file

    from saes import baselines

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    per = {k: np.arange(5, dtype=np.float64) + i for i, k in enumerate(baselines.BASELINE_KEYS)}
    path = baselines.save_baselines("k1", per)
    assert path is not None
    good = path.read_bytes()
    got = baselines.load_baselines("k1", 5)
    assert got is not None and all(np.array_equal(got[k], per[k]) for k in per)
    assert capsys.readouterr().err == ""

    at = good.rindex(np.float64(3.0).tobytes())  # one stored number, changed in place
    cases = {
        "truncated": (good[: len(good) - 7], "damaged (unreadable)"),
        "edited": (good[:at] + np.float64(3.5).tobytes() + good[at + 8:],
                   "damaged (sha256 mismatch)"),
    }
    for name, (data, reason) in cases.items():
        path.write_bytes(data)
        assert baselines.load_baselines("k1", 5) is None, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and reason in err[0] and "rebuilding" in err[0], (name, err)
    save_file(per, str(path))  # an entry of the unstamped format
    assert baselines.load_baselines("k1", 5) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "of another version (unversioned)" in err[0], err
    baselines.save_baselines("k1", per)  # what the evaluation does after a miss
    assert baselines.load_baselines("k1", 5) is not None and capsys.readouterr().err == ""


def test_baseline_cache_rebuilds_through_the_evaluation(tiny_model, monkeypatch, tmp_path,
                                                        capsys):
    """An edited entry is not used by `evaluate_sae`: the ablations are computed again and
    the metrics equal the intact run's."""
    from saes import baselines
    from saes.metrics import SAEEvalConfig, evaluate_sae
    from tests.unit.saes.test_sae import _sae

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    docs = ["The capital of France is Paris. Water boils at 100 degrees. " * 12] * 3
    hook = tiny_model.resid_hook(1)
    cfg = SAEEvalConfig(tokens=15 * 4, ce_tokens=14 * 3, seq_len=16, n_bootstrap=10,
                        batch_size=2)
    sae = _sae(tiny_model.d_model, 32, hook=hook)
    first = evaluate_sae(tiny_model, sae, docs, cfg)
    (entry,) = (tmp_path / "sae-eval-baselines").glob("*.safetensors")
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0xFF
    entry.write_bytes(bytes(data))
    capsys.readouterr()
    again = evaluate_sae(tiny_model, sae, docs, cfg)
    err = [line for line in capsys.readouterr().err.splitlines() if "baseline" in line]
    assert again.baselines_cached is False
    assert len(err) == 1 and "sha256 mismatch" in err[0], err
    assert again.ce_zero_ablation == first.ce_zero_ablation
    assert baselines.load_baselines(entry.stem, 3) is not None  # rewritten intact


# ------------------------------------------------------------------ converted models
@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    from tests.unit.interp.test_gguf_convert import make_model, train_tokenizer, write_gguf

    tok = train_tokenizer()
    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", make_model(len(tok)), tok)


def test_damaged_converted_model_is_rebuilt(tiny_gguf, tmp_path, monkeypatch, capsys):
    from interp.models import gguf_convert as gc
    from interp.models import loading

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    calls: list[Path] = []
    real = gc.convert_gguf

    def counting(path, out_dir, **kw):
        calls.append(Path(out_dir))
        return real(path, out_dir, **kw)

    monkeypatch.setattr(gc, "convert_gguf", counting)
    _, folder_s = loading.resolve_source(str(tiny_gguf))
    folder = Path(folder_s)
    stamp = json.loads((folder / gc.STAMP_FILE).read_text())
    assert set(stamp["files"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert gc.conversion_problem(folder) is None and len(calls) == 1
    assert not list(folder.parent.glob(".*.lock")), "the conversion lock is gone"

    weights = folder / "model.safetensors"
    good = weights.read_bytes()
    # a copy (new modification times) that is intact: used, and not hashed again next time
    os.utime(weights, ns=(1, 1))
    assert gc.conversion_problem(folder) is None
    assert json.loads((folder / gc.STAMP_FILE).read_text())["files"]["model.safetensors"][
        "mtime_ns"] == 1
    # edited in place (same size), or the stamp of another converter: detected
    weights.write_bytes(good[:-4] + bytes(4))
    assert gc.conversion_problem(folder) == "damaged (model.safetensors: sha256 mismatch)"
    weights.write_bytes(good)
    (folder / gc.STAMP_FILE).write_text(json.dumps({**stamp, "converter_version": 1}))
    assert gc.conversion_problem(folder) == (
        f"of another version (converter v1, not v{gc.CONVERTER_VERSION})")
    (folder / gc.STAMP_FILE).write_text(json.dumps(stamp))
    # a folder stamped before files were listed: what shows is checked (a truncated file)
    (folder / gc.STAMP_FILE).write_text(json.dumps({k: v for k, v in stamp.items()
                                                    if k != "files"}))
    assert gc.conversion_problem(folder) is None
    weights.write_bytes(good[: len(good) // 2])
    assert (gc.conversion_problem(folder) or "").startswith("damaged (model.safetensors has ")

    # truncated: the next load says so in one line and converts again
    capsys.readouterr()
    _, again = loading.resolve_source(str(tiny_gguf))
    err = capsys.readouterr().err.strip().splitlines()
    assert again == folder_s and len(calls) == 2
    assert len(err) == 1 and err[0].startswith(f"converted model folder {folder} is damaged")
    assert err[0].endswith("; rebuilding"), err
    assert gc.conversion_problem(folder) is None
    assert "files" in json.loads((folder / gc.STAMP_FILE).read_text())


# ------------------------------------------------------------------ the corpus
@pytest.fixture
def built_corpus(tmp_path, monkeypatch) -> Path:
    """The default corpus built from the fake package into this test's cache."""
    from interp.data import corpus
    from tests.unit.interp.test_corpus import DPKG_DEB, fake_doc_files, make_deb

    if DPKG_DEB is None:
        pytest.skip("dpkg-deb is not installed")
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    deb = make_deb(tmp_path / "debs", "interp-fake-doc", fake_doc_files())

    def download(packages, dest):  # `apt-get download`, offline: the fake package
        import shutil

        return [Path(shutil.copy(deb, dest))]

    monkeypatch.setattr(corpus, "_download", download)
    corpus.build(debs=[deb], progress=False)
    return corpus.default_dir()


def _corpus_damages(folder: Path) -> dict[str, tuple[Callable[[], object], str]]:
    from interp.data import corpus

    train, held, man = (folder / "train.jsonl", folder / "heldout.jsonl",
                        folder / "manifest.json")
    data, manifest = train.read_bytes(), json.loads(man.read_text())
    at = data.index(b"a", 100)  # one letter of a paragraph, changed in place
    return {
        "truncated": (lambda: train.write_bytes(data[: len(data) // 2]),
                      "damaged (train.jsonl has "),
        "edited": (lambda: train.write_bytes(data[:at] + b"e" + data[at + 1:]),
                   "damaged (train.jsonl: sha256 mismatch)"),
        "missing": (lambda: held.unlink(), "damaged (heldout.jsonl is missing"),
        "manifest-truncated": (lambda: man.write_text(man.read_text()[:40]),
                               "damaged (manifest.json unreadable)"),
        "other-version": (lambda: man.write_text(json.dumps(
            {**manifest, "builder_version": corpus.BUILDER_VERSION + 1})),
            f"of another version (builder v{corpus.BUILDER_VERSION + 1}"),
    }


def test_damaged_corpus_is_refused_then_rebuilt(built_corpus, capsys):
    """A corpus that is truncated, edited, incomplete or of another builder is never read:
    the readers refuse it in one line naming the command that rebuilds it; `interp corpus
    build` (without --force) says so in one line and rebuilds it."""
    from interp.data import corpus
    from tests.support.cli_runner import run

    good = {p.name: p.read_bytes() for p in built_corpus.iterdir() if p.is_file()}
    texts = corpus.load_texts()
    assert corpus.corpus_problem() is None
    for name, (damage, reason) in _corpus_damages(built_corpus).items():
        damage()
        assert corpus.corpus_problem() == reason or (
            (corpus.corpus_problem() or "").startswith(reason)), name
        with pytest.raises(InterpError) as info:
            corpus.load_texts()
        line = str(info.value)
        assert "\n" not in line and reason in line and "interp corpus build --force" in line
        with pytest.raises(InterpError, match="sha256|damaged|another version"):
            corpus.text_source("train")
        code, _, err = run(["corpus", "info"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and reason in err, (name, err)
        code, _, err = run(["corpus", "build"], capsys)
        notes = [line for line in err.splitlines() if "rebuilding" in line]
        assert code == 0 and len(notes) == 1 and reason in notes[0], (name, err)
        assert corpus.corpus_problem() is None and corpus.load_texts() == texts, name
        assert {p.name: p.read_bytes() for p in built_corpus.iterdir() if p.is_file()} == good
    code, _, err = run(["corpus", "build"], capsys)  # intact: not rebuilt
    assert code == 0 and "already built" in err and "rebuilding" not in err


def test_damaged_corpus_at_a_path_names_its_folder(built_corpus, tmp_path):
    from interp.data import corpus

    other = tmp_path / "elsewhere"
    import shutil

    shutil.copytree(built_corpus, other)
    _corpus_damages(other)["edited"][0]()
    with pytest.raises(InterpError, match=f"interp corpus build --force --out {other}"):
        corpus.load_texts(path=other)
    assert corpus.load_texts() and corpus.corpus_problem() is None  # the default is intact


# ------------------------------------------------------------------ the tuned lens
def test_damaged_tuned_lens_is_refused_then_rebuilt(tiny_model, tmp_path, capsys):
    """A training run's lens (the cache keeps one per model) that is truncated or edited is
    refused in one line saying how to rebuild it; rerunning the training rebuilds it from the
    run's checkpoint, saying so, with the same tensors."""
    from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
    from interp.lenses.tuned import load_tuned_lens
    from interp.runs.artifacts import load_artifact
    from tests.support.text_fixtures import paragraphs

    docs = paragraphs(60, seed=3)
    cfg = TunedLensTrainConfig(tokens=4 * 2 * 16, seq_len=16, batch_size=2,
                               positions_per_window=8, checkpoint_every=2, init="zero",
                               unembed_dtype="float32")
    run_dir = tmp_path / "run"
    res = train_tuned_lens(tiny_model, docs, run_dir, cfg, progress=False)
    assert res.complete and res.lens_path is not None
    first = load_artifact(res.lens_path)
    want = {t: first.tensors[t].clone() for t in ("A", "b")}  # not a view of the file
    weights, config = res.lens_path / "weights.safetensors", res.lens_path / "config.json"
    good_w, good_c = weights.read_bytes(), config.read_text()
    damages = {
        "weights-edited": (lambda: weights.write_bytes(good_w[:-4] + bytes(4)),
                           "checksum mismatch"),
        "weights-truncated": (lambda: weights.write_bytes(good_w[: len(good_w) // 2]),
                              "checksum mismatch"),
        "config-truncated": (lambda: config.write_text(good_c[: len(good_c) // 2]),
                             "not valid JSON"),
    }
    capsys.readouterr()
    for name, (damage, reason) in damages.items():
        damage()
        with pytest.raises(InterpError) as info:
            load_tuned_lens(run_dir, tiny_model)
        line = str(info.value)
        assert "\n" not in line and reason in line, (name, line)
        assert f"interp tuned-lens train` again with --out {run_dir}" in line, line
        again = train_tuned_lens(tiny_model, docs, run_dir, cfg, progress=False)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is damaged" in err[0] and reason in err[0], (name, err)
        assert "rebuilding it from the run's checkpoint" in err[0]
        assert again.complete and again.lens_path == res.lens_path
        lens = load_tuned_lens(run_dir, tiny_model)
        rebuilt = load_artifact(res.lens_path)
        for t in ("A", "b"):
            assert torch.equal(rebuilt.tensors[t], want[t]), name
        assert torch.equal(lens.translators.A.cpu(), want["A"].float())
        assert rebuilt.config["losses"] == first.config["losses"]
    train_tuned_lens(tiny_model, docs, run_dir, cfg, progress=False)  # intact: silent
    assert capsys.readouterr().err == ""


def test_models_lists_a_damaged_conversion_as_damaged(tiny_gguf, tmp_path, monkeypatch,
                                                      capsys):
    """`interp models` does not call a damaged conversion cached: it says why and that it is
    converted again on its next load (a stamp that is not JSON is no traceback either)."""
    import shutil

    from interp.models import gguf_convert as gc
    from interp.models import loading
    from tests.support.cli_runner import run

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    _, folder_s = loading.resolve_source(str(tiny_gguf))
    folder = Path(folder_s)
    embedded = loading.converted_dir(loading.DEFAULT.name)  # an embedded model's place
    shutil.copytree(folder, embedded)

    def rows() -> dict[str, dict]:
        code, out, err = run(["models", "--json"], capsys)
        assert code == 0 and "Traceback" not in err, err
        return {r["path"]: r for r in json.loads(out)}

    before = rows()
    for p in (folder, embedded):
        assert before[str(p)]["cached"] is True and before[str(p)]["damaged"] is None
    weights = folder / "model.safetensors"
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])
    (embedded / gc.STAMP_FILE).write_text("{not json")
    after = rows()
    assert after[str(folder)]["cached"] is False
    assert after[str(folder)]["damaged"].startswith("damaged (model.safetensors has ")
    assert after[str(embedded)]["cached"] is False
    assert after[str(embedded)]["damaged"] == f"damaged ({gc.STAMP_FILE} unreadable)"
    code, out, err = run(["models"], capsys)
    flat = " ".join(out.split())
    assert code == 0 and "Traceback" not in err
    assert flat.count("no: damaged") == 2, out
    loading.resolve_source(str(tiny_gguf))  # the next load converts it again
    capsys.readouterr()
    assert rows()[str(folder)]["cached"] is True and rows()[str(folder)]["damaged"] is None
