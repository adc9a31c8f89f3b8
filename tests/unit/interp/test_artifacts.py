"""Tests for interp.runs.artifacts: the one on-disk artifact format."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import safetensors.torch
import torch

from interp.errors import InterpError
from interp.runs import artifacts
from interp.runs.artifacts import (
    ARTIFACT_FORMAT_VERSION,
    Artifact,
    check_compatible,
    load_artifact,
    read_config,
    save_artifact,
)

MODEL = "HuggingFaceTB/SmolLM2-135M"


@dataclass
class ProbeConfig:
    layer: int = 6
    lr: float = 1e-3
    labels: tuple[str, ...] = ("neg", "pos")
    out: Path = Path("runs/probe")
    extra: dict[str, int] = field(default_factory=lambda: {"epochs": 3})


def _tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "W": torch.randn(576, 2, generator=g),
        "b": torch.randn(2, generator=g).to(torch.float16),
        "W_dec": torch.randn(8, 576, generator=g).to(torch.bfloat16),
        "mask": torch.tensor([True, False, True]),
        "steps": torch.arange(5, dtype=torch.int64),
        "scalar": torch.tensor(3.5, dtype=torch.float64),
    }


def _save(path: Path, tensors=None, **kw) -> Path:
    args = dict(kind="probe", config={"layer": 6}, model_id=MODEL, d_model=576, manifest={})
    args.update(kw)
    return save_artifact(path, _tensors() if tensors is None else tensors, **args)


def _one_line_error(excinfo: pytest.ExceptionInfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    return msg


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


# ------------------------------------------------------------------ roundtrip


def test_roundtrip_values_dtypes_shapes(tmp_path):
    tensors = _tensors()
    out = _save(tmp_path / "probe", tensors, hook_point="blocks.6.hook_resid_post")
    assert out == (tmp_path / "probe").absolute()
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "weights.safetensors"]

    art = load_artifact(out, kind="probe", model_id=MODEL, d_model=576)
    assert isinstance(art, Artifact)
    assert list(art.tensors) == list(tensors)  # saved order is kept
    for name, t in tensors.items():
        got = art.tensors[name]
        assert got.dtype == t.dtype, name
        assert got.shape == t.shape, name
        assert torch.equal(got, t), name
    assert art.tensors["W_dec"].dtype == torch.bfloat16
    assert art.tensors["b"].dtype == torch.float16
    assert art.kind == "probe" and art.model_id == MODEL and art.d_model == 576
    assert art.hook_point == "blocks.6.hook_resid_post"
    assert art.raw["format_version"] == ARTIFACT_FORMAT_VERSION == 1
    assert art.raw["tensors"]["W_dec"] == {"shape": [8, 576], "dtype": "bfloat16"}
    assert art.raw["tensors"]["scalar"] == {"shape": [], "dtype": "float64"}
    # repr stays short: no tensor dump
    assert "tensor(" not in repr(art)


def test_noncontiguous_shared_and_grad_tensors(tmp_path):
    base = torch.randn(4, 6, requires_grad=True)
    with torch.no_grad():
        flat = torch.arange(12.0)
    tensors = {
        "T": base.t(),  # non-contiguous, requires grad
        "tied_a": flat,
        "tied_b": flat,  # same storage
        "half1": flat[:6],  # contiguous views of one storage
        "half2": flat[6:],
    }
    out = _save(tmp_path / "a", tensors)
    art = load_artifact(out)
    assert torch.equal(art.tensors["T"], base.detach().t())
    assert torch.equal(art.tensors["tied_b"], flat)
    assert torch.equal(art.tensors["half2"], flat[6:])
    assert not art.tensors["T"].requires_grad


def test_weights_are_plain_safetensors(tmp_path):
    out = _save(tmp_path / "a")
    loaded = safetensors.torch.load_file(str(out / "weights.safetensors"))
    assert torch.equal(loaded["W"], _tensors()["W"])
    raw = json.loads((out / "config.json").read_text())
    assert list(raw) == [
        "format_version",
        "kind",
        "model_id",
        "d_model",
        "hook_point",
        "config",
        "tensors",
        "weights_sha256",
        "manifest",
    ]
    from interp.runs.manifest import sha256_file

    assert raw["weights_sha256"] == sha256_file(out / "weights.safetensors")


def test_dataclass_config_serialisation(tmp_path):
    out = _save(tmp_path / "a", config=ProbeConfig(lr=0.5))
    art = load_artifact(out)
    assert art.config == {
        "layer": 6,
        "lr": 0.5,
        "labels": ["neg", "pos"],
        "out": "runs/probe",
        "extra": {"epochs": 3},
    }
    assert read_config(out)["config"] == art.config
    # rebuilding the dataclass from the stored dict works
    assert ProbeConfig(**art.config).lr == 0.5


def test_bad_config_is_rejected(tmp_path):
    with pytest.raises(InterpError) as ei:
        _save(tmp_path / "a", config={"fn": object()})
    assert "json" in _one_line_error(ei).lower()
    with pytest.raises(InterpError):
        _save(tmp_path / "b", config=ProbeConfig)  # a class, not an instance
    with pytest.raises(InterpError):
        _save(tmp_path / "c", config=[1, 2])
    assert not (tmp_path / "a").exists() and _siblings(tmp_path / "a") == []


def test_bad_save_arguments(tmp_path):
    for kw in ({"d_model": 0}, {"d_model": True}, {"kind": ""}, {"model_id": None}):
        with pytest.raises(InterpError):
            _save(tmp_path / "a", **kw)
    with pytest.raises(InterpError):
        _save(tmp_path / "a", tensors={})
    with pytest.raises(InterpError):
        _save(tmp_path / "a", tensors={"W": [1.0, 2.0]})
    with pytest.raises(InterpError):
        _save(tmp_path / "a", seed=1)  # manifest= and seed= together
    assert list(tmp_path.iterdir()) == []


def test_manifest_built_with_model_id_and_seed(tmp_path):
    out = _save(
        tmp_path / "a", manifest=None, seed=1234, dataset_hash="abc123", config=ProbeConfig()
    )
    manifest = load_artifact(out).manifest
    assert manifest["model_id"] == MODEL
    assert manifest["seed"] == 1234
    assert manifest["dataset_hash"] == "abc123"
    assert manifest["config"]["labels"] == ["neg", "pos"]
    assert "packages" in manifest and "timestamp" in manifest


def test_explicit_manifest_is_stored(tmp_path):
    out = _save(tmp_path / "a", manifest={"model_id": MODEL, "seed": 7, "note": "x"})
    assert read_config(out)["manifest"] == {"model_id": MODEL, "seed": 7, "note": "x"}


def test_parent_dirs_created(tmp_path):
    out = _save(tmp_path / "deep" / "er" / "a")
    assert load_artifact(out).kind == "probe"


# ------------------------------------------------------------------ overwrite


def test_overwrite_in_place_keeps_complete_folder(tmp_path):
    target = tmp_path / "a"
    _save(target, {"W": torch.zeros(3)}, kind="probe")
    old_sha = read_config(target)["weights_sha256"]
    _save(target, {"V": torch.ones(2, 2)}, kind="steering")
    art = load_artifact(target, kind="steering")
    assert list(art.tensors) == ["V"]
    assert torch.equal(art.tensors["V"], torch.ones(2, 2))
    assert art.raw["weights_sha256"] != old_sha
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "weights.safetensors"]
    assert _siblings(target) == ["a"]  # no temp or backup folders left


def test_overwrite_never_leaves_target_incomplete(tmp_path, monkeypatch):
    """Whenever the target folder exists during a save, it holds both files."""
    target = tmp_path / "a"
    _save(target, {"W": torch.zeros(3)})
    seen: list[list[str]] = []
    real_rename = os.rename

    def spying_rename(src, dst):
        real_rename(src, dst)
        if target.exists():
            seen.append(sorted(p.name for p in target.iterdir()))

    monkeypatch.setattr(artifacts.os, "rename", spying_rename)
    _save(target, {"W": torch.ones(3)})
    assert seen, "the save did not rename anything"
    assert all(names == ["config.json", "weights.safetensors"] for names in seen)
    assert torch.equal(load_artifact(target).tensors["W"], torch.ones(3))


def test_refuse_to_overwrite_non_artifact_folder(tmp_path, monkeypatch):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("precious")

    def no_save(*args, **kwargs):
        raise AssertionError("must refuse before writing any weights")

    monkeypatch.setattr(safetensors.torch, "save_file", no_save)
    with pytest.raises(InterpError) as ei:
        _save(target)
    msg = _one_line_error(ei)
    assert "refusing to overwrite" in msg and str(target) in msg
    assert (target / "notes.txt").read_text() == "precious"
    assert _siblings(target) == ["mine"]


def test_refuse_to_overwrite_folder_with_foreign_config(tmp_path):
    # e.g. a Hugging Face model folder: has config.json but is not an interp artifact
    target = tmp_path / "hf-model"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(InterpError, match="refusing to overwrite"):
        _save(target)
    assert json.loads((target / "config.json").read_text())["architectures"]


def test_refuse_to_overwrite_regular_file(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(b"data")
    with pytest.raises(InterpError) as ei:
        _save(target)
    assert "refusing to overwrite" in _one_line_error(ei)
    assert target.read_bytes() == b"data"
    assert _siblings(target) == ["file.bin"]


def test_parent_is_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InterpError):
        _save(tmp_path / "f" / "a")


# ------------------------------------------------------------------ atomicity


def test_failure_during_weights_write_keeps_old_artifact(tmp_path, monkeypatch):
    target = tmp_path / "a"
    _save(target, {"W": torch.zeros(3)})
    before = {p.name: p.read_bytes() for p in target.iterdir()}

    def exploding_save(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"half a fi")  # partial write, then crash
        raise RuntimeError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", exploding_save)
    with pytest.raises(RuntimeError, match="disk full"):
        _save(target, {"W": torch.ones(3)})
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert torch.equal(load_artifact(target).tensors["W"], torch.zeros(3))
    assert _siblings(target) == ["a"]


def test_failure_during_swap_keeps_old_artifact(tmp_path, monkeypatch):
    target = tmp_path / "a"
    _save(target, {"W": torch.zeros(3)})
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    real_rename = os.rename

    def failing_rename(src, dst):
        if Path(src).name.startswith(".a.tmp-"):  # moving the new folder into place
            raise OSError("simulated crash while swapping")
        real_rename(src, dst)

    monkeypatch.setattr(artifacts.os, "rename", failing_rename)
    with pytest.raises(OSError, match="simulated crash"):
        _save(target, {"W": torch.ones(3)})
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert torch.equal(load_artifact(target).tensors["W"], torch.zeros(3))
    assert _siblings(target) == ["a"]


def test_failure_on_first_save_leaves_nothing(tmp_path, monkeypatch):
    def exploding_save(tensors, filename, metadata=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save_file", exploding_save)
    with pytest.raises(KeyboardInterrupt):
        _save(tmp_path / "a")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ load errors


def test_missing_path(tmp_path):
    with pytest.raises(InterpError) as ei:
        load_artifact(tmp_path / "nope")
    assert _one_line_error(ei) == f"artifact not found: {tmp_path / 'nope'}"


def test_path_is_a_file(tmp_path):
    out = _save(tmp_path / "a")
    with pytest.raises(InterpError) as ei:
        load_artifact(out / "weights.safetensors")
    msg = _one_line_error(ei)
    assert "not a folder" in msg and f"pass its folder {out}" in msg


def test_missing_config(tmp_path):
    out = _save(tmp_path / "a")
    (out / "config.json").unlink()
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    assert "no config.json" in _one_line_error(ei)
    with pytest.raises(InterpError, match="no config.json"):
        read_config(out)


def test_missing_weights(tmp_path):
    out = _save(tmp_path / "a")
    (out / "weights.safetensors").unlink()
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    assert "no weights.safetensors" in _one_line_error(ei)


def test_bad_json(tmp_path):
    out = _save(tmp_path / "a")
    (out / "config.json").write_text('{"format_version": 1,\n  "kind": }')
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert "not valid JSON" in msg and "line 2" in msg


def test_config_not_object_or_missing_field(tmp_path):
    out = _save(tmp_path / "a")
    (out / "config.json").write_text("[1, 2]")
    with pytest.raises(InterpError, match="not a JSON object"):
        read_config(out)
    out = _save(tmp_path / "b")
    raw = json.loads((out / "config.json").read_text())
    del raw["d_model"]
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError, match="missing 'd_model'"):
        load_artifact(out)


@pytest.mark.parametrize("version", [2, 0, "1", None, True])
def test_unknown_format_version(tmp_path, version):
    out = _save(tmp_path / "a")
    raw = json.loads((out / "config.json").read_text())
    raw["format_version"] = version
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert "format_version" in msg and repr(version) in msg


def test_checksum_mismatch_after_flipping_a_byte(tmp_path):
    out = _save(tmp_path / "a")
    weights = out / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # inside the last tensor's bytes: still a valid safetensors file
    weights.write_bytes(bytes(data))
    safetensors.torch.load_file(str(weights))  # proves only the checksum can catch it
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert msg.startswith("checksum mismatch")
    assert "corrupt or was modified" in msg and str(weights) in msg


def test_truncated_file_fails_checksum(tmp_path):
    out = _save(tmp_path / "a")
    weights = out / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(InterpError, match="checksum mismatch"):
        load_artifact(out)


@pytest.mark.parametrize("keep", [0, 5, 100, -7])
def test_truncated_file_with_matching_checksum_is_unreadable(tmp_path, keep):
    """Even if config.json was rewritten to match, a cut file fails with one clear line."""
    out = _save(tmp_path / "a")
    weights = out / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:keep])
    raw = json.loads((out / "config.json").read_text())
    raw["weights_sha256"] = artifacts.sha256_file(weights)
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert msg.startswith(f"cannot read {weights}") and "truncated" in msg


def test_weights_disagree_with_config(tmp_path):
    out = _save(tmp_path / "a", {"W": torch.zeros(2, 3)})
    raw = json.loads((out / "config.json").read_text())
    raw["tensors"]["W"]["shape"] = [3, 2]
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert "'W'" in msg and "[2, 3]" in msg and "[3, 2]" in msg


def test_weights_dtype_or_names_disagree_with_config(tmp_path):
    out = _save(tmp_path / "a", {"W": torch.zeros(2, 3)})
    raw = json.loads((out / "config.json").read_text())
    raw["tensors"]["W"]["dtype"] = "bfloat16"
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    assert "float32" in _one_line_error(ei) and "bfloat16" in str(ei.value)

    raw["tensors"] = {"V": {"shape": [2, 3], "dtype": "float32"}}
    (out / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InterpError) as ei:
        load_artifact(out)
    msg = _one_line_error(ei)
    assert "['W']" in msg and "['V']" in msg


def test_kind_mismatch(tmp_path):
    out = _save(tmp_path / "a", kind="probe")
    with pytest.raises(InterpError) as ei:
        load_artifact(out, kind="sae")
    msg = _one_line_error(ei)
    assert "'probe'" in msg and "'sae'" in msg and str(out) in msg


def test_model_id_mismatch(tmp_path):
    out = _save(tmp_path / "a")
    with pytest.raises(InterpError) as ei:
        load_artifact(out, model_id="gpt2")
    msg = _one_line_error(ei)
    assert msg == f"artifact {out} was made for model '{MODEL}' but the loaded model is 'gpt2'"


def test_d_model_mismatch(tmp_path):
    out = _save(tmp_path / "a")
    with pytest.raises(InterpError) as ei:
        load_artifact(out, model_id=MODEL, d_model=64)
    msg = _one_line_error(ei)
    assert "d_model 576" in msg and "but the model has 64" in msg and str(out) in msg


def test_check_compatible(tmp_path):
    art = load_artifact(_save(tmp_path / "a"))
    check_compatible(art, MODEL, 576)  # no error
    with pytest.raises(InterpError, match="'gpt2'"):
        check_compatible(art, "gpt2", 576)
    with pytest.raises(InterpError, match="has 768"):
        check_compatible(art, MODEL, 768)


def test_read_config_is_cheap_and_matches(tmp_path, monkeypatch):
    out = _save(tmp_path / "a", hook_point="blocks.0.hook_resid_pre")

    def no_load(*args, **kwargs):
        raise AssertionError("read_config must not load weights")

    monkeypatch.setattr(safetensors.torch, "load_file", no_load)
    raw = read_config(out)
    assert raw["kind"] == "probe" and raw["hook_point"] == "blocks.0.hook_resid_pre"
    assert raw["tensors"]["W"] == {"shape": [576, 2], "dtype": "float32"}


def test_invalid_device(tmp_path):
    out = _save(tmp_path / "a")
    with pytest.raises(InterpError, match="invalid device"):
        load_artifact(out, device="not-a-device")
