"""The shipped data is found relative to the package and included in a wheel."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile

import pytest

from interp.runs.paths import datasets_dir, shipped_dataset, shown_path


def test_datasets_found_relative_to_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # never the current directory
    assert (datasets_dir() / "prompts" / "mixed_256.jsonl").is_file()
    assert shipped_dataset("prompts/mixed_256.jsonl").stat().st_size > 1000
    assert not (datasets_dir() / "__init__.py").exists()


def test_shipped_files_are_shown_by_their_place_in_datasets(tmp_path):
    shipped = shipped_dataset("probes/capitals_truefalse.jsonl")
    assert shown_path(shipped) == "datasets/probes/capitals_truefalse.jsonl"
    assert shown_path(str(shipped)) == "datasets/probes/capitals_truefalse.jsonl"
    own = tmp_path / "mine.jsonl"
    assert shown_path(own) == str(own)  # a user's file: as given
    assert shown_path("relative/x.csv") == "relative/x.csv"


def test_wheel_includes_datasets(tmp_path):
    if importlib.util.find_spec("hatchling") is None:
        pytest.skip("hatchling not installed (it is a dev dependency)")
    root = datasets_dir().parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-q", "-w", str(tmp_path), str(root)],
        check=True, capture_output=True, timeout=300,
    )
    wheel = next(tmp_path.glob("interp-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "interp/_datasets/prompts/mixed_256.jsonl" in names
    # the page shell, the shared macros, the stylesheet and every report body ship
    for template in ("page.html.j2", "macros.html.j2", "css/base.css", "lens.html.j2",
                     "probe.html.j2", "steering.html.j2", "sae.html.j2", "sae_browser.html.j2",
                     "sycophancy.html.j2", "constitutional.html.j2", "tuned_lens.html.j2",
                     "js/graph.js", "js/sae_browser.js", "js/autointerp.js", "result.html.j2"):
        assert f"reports/templates/{template}" in names, template
    assert any(n.startswith("saes/") for n in names)
    assert not any(n.startswith("datasets/") for n in names)  # never shadows HF datasets
