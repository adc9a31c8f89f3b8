"""Fast tests for interp.runs.manifest: run manifest, git state, hashing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
import shutil
import subprocess
import sys

import pytest

from interp.errors import InterpError
from interp.runs import manifest as mf
from interp.runs.manifest import run_manifest, sha256_file, sha256_texts

PACKAGES = (
    "python",
    "torch",
    "transformers",
    "transformer_lens",
    "gguf",
    "numpy",
    "safetensors",
    "datasets",
)


def test_run_manifest_has_every_field():
    m = run_manifest(
        model_id="HuggingFaceTB/SmolLM2-135M",
        seed=7,
        dataset_hash="ab" * 32,
        config={"k": 5, "layers": [0, 1]},
        command=["interp", "lens", "--prompt", "hi"],
    )
    for key in (
        "interp_version",
        "git_commit",
        "git_dirty",
        "packages",
        "platform",
        "timestamp",
        "command",
        "model_id",
        "seed",
        "dataset_hash",
        "config",
    ):
        assert key in m, key
    assert m["model_id"] == "HuggingFaceTB/SmolLM2-135M"
    assert m["seed"] == 7
    assert m["dataset_hash"] == "ab" * 32
    assert m["config"] == {"k": 5, "layers": [0, 1]}
    assert m["command"] == ["interp", "lens", "--prompt", "hi"]
    assert isinstance(m["interp_version"], str) and m["interp_version"]
    assert set(PACKAGES) <= set(m["packages"])
    assert all(isinstance(v, str) and v for v in m["packages"].values())
    assert m["packages"]["python"] == platform.python_version()
    assert m["git_commit"] == "unknown" or len(m["git_commit"]) == 40
    assert m["git_dirty"] in (True, False, "unknown")
    # JSON round trip: every artifact stores it.
    assert json.loads(json.dumps(m)) == m


def test_timestamp_is_utc_iso8601():
    ts = run_manifest(command=[])["timestamp"]
    parsed = dt.datetime.fromisoformat(ts)
    assert parsed.utcoffset() == dt.timedelta(0)
    assert abs((dt.datetime.now(dt.UTC) - parsed).total_seconds()) < 60


def test_command_defaults_to_sys_argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["interp", "lens", "x y"])
    assert run_manifest()["command"] == ["interp", "lens", "x y"]


def test_defaults_are_none_and_empty_config():
    m = run_manifest(command=[])
    assert m["model_id"] is None and m["seed"] is None and m["dataset_hash"] is None
    assert m["config"] == {}


def test_config_is_copied():
    config = {"k": 1}
    m = run_manifest(config=config, command=[])
    config["k"] = 2
    assert m["config"] == {"k": 1}


def test_extra_is_merged_but_cannot_overwrite():
    m = run_manifest(command=[], extra={"lens": "logit", "n_prompts": 3})
    assert m["lens"] == "logit" and m["n_prompts"] == 3
    with pytest.raises(InterpError, match="seed"):
        run_manifest(command=[], extra={"seed": 1})


@pytest.mark.parametrize("bad", ["3", 1.5, True])
def test_bad_seed_is_a_user_error(bad):
    with pytest.raises(InterpError):
        run_manifest(seed=bad)


def test_missing_package_is_not_installed():
    assert mf.package_version("surely-not-a-real-package-xyz") == "not installed"


def test_transformer_lens_name_is_normalised(monkeypatch):
    seen = []

    def fake_version(name):
        seen.append(name)
        if name == "transformer-lens":
            return "4.3.0"
        raise mf.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(mf.importlib.metadata, "version", fake_version)
    assert mf.package_version("transformer_lens") == "4.3.0"


def test_git_state_outside_a_checkout_is_unknown(tmp_path):
    assert mf.git_state(tmp_path) == {"git_commit": "unknown", "git_dirty": "unknown"}


def test_git_missing_never_raises(monkeypatch):
    def boom(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(mf.subprocess, "run", boom)
    assert mf.git_state() == {"git_commit": "unknown", "git_dirty": "unknown"}
    m = run_manifest(command=[])
    assert m["git_commit"] == "unknown" and m["git_dirty"] == "unknown"


def test_git_timeout_never_raises(monkeypatch):
    def slow(*args, **kwargs):
        raise subprocess.TimeoutExpired("git", 10)

    monkeypatch.setattr(mf.subprocess, "run", slow)
    assert mf.git_state()["git_commit"] == "unknown"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_state_of_a_real_checkout(tmp_path):
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    head = git("rev-parse", "HEAD")
    assert mf.git_state(tmp_path) == {"git_commit": head, "git_dirty": False}
    (tmp_path / "a.txt").write_text("two")
    assert mf.git_state(tmp_path) == {"git_commit": head, "git_dirty": True}


def test_git_commit_comes_from_the_interp_source_tree(monkeypatch, tmp_path):
    calls = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):
        calls.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(mf.subprocess, "run", spy)
    monkeypatch.chdir(tmp_path)  # the cwd must not matter
    run_manifest(command=[])
    root = str(mf._package_root())
    assert calls and all(c[:3] == ["git", "-C", root] for c in calls)


def test_sha256_file_streams_and_matches_hashlib(tmp_path):
    path = tmp_path / "big.bin"
    data = bytes(range(256)) * (3 * 4096 + 7)  # ~3 MiB: several chunks
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    assert sha256_file(str(path)) == hashlib.sha256(data).hexdigest()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert sha256_file(empty) == hashlib.sha256(b"").hexdigest()


def test_sha256_file_missing_is_a_user_error(tmp_path):
    with pytest.raises(InterpError, match="not a file"):
        sha256_file(tmp_path / "nope")
    with pytest.raises(InterpError):
        sha256_file(tmp_path)


def test_sha256_texts_is_order_sensitive_and_unambiguous():
    base = sha256_texts(["a", "b"])
    assert len(base) == 64 and int(base, 16) >= 0
    assert sha256_texts(["a", "b"]) == base
    assert sha256_texts(x for x in ["a", "b"]) == base  # any iterable
    assert sha256_texts(["b", "a"]) != base
    framings = [["ab", "c"], ["a", "bc"], ["abc"], ["a", "b", "c"], ["abc", ""], ["", "abc"]]
    hashes = {sha256_texts(f) for f in framings}
    assert len(hashes) == len(framings)
    assert sha256_texts([]) != sha256_texts([""])
    assert sha256_texts(["é"]) != sha256_texts(["e\u0301"])
    # Not simply the hash of the concatenation.
    assert sha256_texts(["abc"]) != hashlib.sha256(b"abc").hexdigest()


def test_sha256_texts_rejects_non_strings():
    with pytest.raises(InterpError):
        sha256_texts("abc")
    with pytest.raises(InterpError):
        sha256_texts(["a", 1])  # type: ignore[list-item]
