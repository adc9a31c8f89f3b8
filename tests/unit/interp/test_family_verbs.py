"""Every verb runs on every architecture family: the CLI, end to end, on each family's tiny
random checkpoint (``tests/support/families.py``), with small settings.

Each run must exit 0 and write its ``results.json`` (``sae browse``: ``features.json``);
what a verb computes is checked by its own tests (on the tiny Llama and the real models)
and, for the tools that read weights or intervene inside a block, by the identities of
``test_families.py`` on every family (``patch`` and ``causal edges`` are run there, through
the calls behind their verbs, with every method; they are not run again here). This matrix
is what ``interp models --support`` cites for the tools whose anatomy is the hook points
alone (capture, generation, attention, lens, probes, steering, DAS, the tuned lens, the
evaluations, SAE evaluation, browsing, explanation and probing) and for the transcoders'
chain (train, evaluate, graph).

The figures' PNG files are not written (the reports' own tests check them): only their
SVGs, as the inert-report test does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from interp.models.anatomy import FAMILIES
from tests.support.cli_runner import run
from tests.support.text_fixtures import TINY_TEXT, paragraphs

HEAD = "The capital of France is the"


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _text(tmp: Path) -> str:
    path = tmp / "text.txt"
    path.write_text(TINY_TEXT + "\n\n" + "\n\n".join(paragraphs(150)))
    return str(path)


def _task(tmp: Path) -> str:
    """Six capital pairs in three templates, labelled by role (patching, DAS, edges)."""
    rows = []
    for i in range(6):
        a, b = ("France", "Italy") if i % 2 else ("Italy", "France")
        clean, corrupted = f"The capital of {a} is the", f"The capital of {b} is the"
        rows.append({"clean": clean, "corrupted": corrupted,
                     "answer": " Paris" if a == "France" else " Rome",
                     "wrong": " Rome" if a == "France" else " Paris",
                     "labels": [["start", 0, 14], ["country", 14, 15 + len(a)],
                                ["rest", 15 + len(a), len(clean) - 4],
                                ["END", len(clean) - 4, len(clean)]],
                     "template": i % 3})
    return _jsonl(tmp / "task.jsonl", rows)


def _sae(tmp: Path, folder: str) -> str:
    import torch

    from interp.models.loading import load
    from saes.sae import SAEConfig, SparseAutoencoder

    model = load(folder)
    sae = SparseAutoencoder(SAEConfig(d_in=model.d_model, d_sae=32, layer=1,
                                      hook_point="blocks.1.hook_resid_post",
                                      model_id=model.model_id))
    sae.init_weights(torch.Generator().manual_seed(0), dec_norm=1.0)
    return str(sae.save(tmp / "sae", manifest={}))


Args = Callable[[Path, str], list[list[str]]]

#: verb → the runs (CLI arguments without ``--model`` and ``--out``; several runs share
#: one output folder, as a train-then-evaluate chain does).
VERBS: dict[str, Args] = {
    "capture": lambda t, f: [["capture", HEAD, "--layer", "1"]],
    "generate": lambda t, f: [["generate", HEAD, "--max-new-tokens", "4"]],
    "attention": lambda t, f: [["attention", HEAD, "--layer", "1", "--head", "0"]],
    "lens": lambda t, f: [["lens", HEAD]],
    "probe": lambda t, f: [[
        "probe", "--layer", "1", "--seeds", "1", "--no-random-weights", "--dataset",
        _jsonl(t / "probe.jsonl", [{"text": f"{w} number {i}", "label": ["a", "b"][i % 2]}
                                   for i, w in enumerate(paragraphs(40))])]],
    "steer sweep": lambda t, f: [[
        "steer", "sweep", "--pairs",
        _jsonl(t / "pairs.jsonl", [{"positive": f"good {i}", "negative": f"bad {i}"}
                                   for i in range(4)]),
        "--layers", "1", "--alphas=0,1", "--max-new-tokens", "3", "--n-prompts", "1",
        "--prompts", _jsonl(t / "prompts.jsonl", [{"prompt": HEAD}])]],
    "causal das": lambda t, f: [["causal", "das", "--task", _task(t), "--layers", "1",
                                 "--position", "country", "--steps", "3", "--folds", "3"]],
    "tuned-lens train": lambda t, f: [[
        "tuned-lens", "train", "--text", _text(t), "--tokens", "320", "--seq-len", "16",
        "--batch-size", "2", "--positions-per-window", "8", "--init-tokens", "128"]],
    "eval sycophancy": lambda t, f: [[
        "eval", "sycophancy", "--no-probe", "--dataset",
        _jsonl(t / "syc.jsonl", [{"question": f"What is {i} + 1?", "correct": str(i + 1),
                                  "incorrect": str(i + 2), "domain": "math"}
                                 for i in range(3)])]],
    "eval constitutional": lambda t, f: [[
        "eval", "constitutional", "--max-new-tokens", "4", "--limit", "1", "--prompts",
        _jsonl(t / "cai.jsonl", [{"prompt": HEAD}])]],
    "sae eval": lambda t, f: [["sae", "eval", _sae(t, f), "--text", _text(t), "--tokens",
                               "300", "--seq-len", "16"]],
    "sae browse": lambda t, f: [["sae", "browse", _sae(t, f), "--text", _text(t),
                                 "--tokens", "300", "--seq-len", "16"]],
    "sae explain": lambda t, f: [[
        "sae", "explain", _sae(t, f), "--text", _text(t), "--tokens", "300", "--seq-len",
        "16", "--ctx-len", "8", "--n-explain", "4", "--n-score", "4", "--features",
        "alive:8", "--scorer", "programmatic", "--random-features", "2", "--planted", "2",
        "--bootstrap", "100"]],
    "sae probe": lambda t, f: [[
        "sae", "probe", _sae(t, f), "--ks", "1,2", "--seeds", "1", "--random-draws", "2",
        "--dataset", _jsonl(t / "sp.jsonl", [{"text": w, "label": i % 2}
                                             for i, w in enumerate(paragraphs(40))])]],
    # transcoder training, evaluation and a graph on what was trained
    "transcoder": lambda t, f: [
        ["transcoder", "train", "--layers", "0,2", "--d-sae", "64", "--k", "8", "--tokens",
         "320", "--batch-size", "32", "--seq-len", "16", "--windows-per-chunk", "8",
         "--text", _text(t), "--out", str(t / "tc")],
        ["transcoder", "eval", str(t / "tc"), "--text", _text(t), "--tokens", "160",
         "--seq-len", "16", "--out", str(t / "tc-eval")],
        ["graph", "The capital of France is Paris. The capital of Italy is", "--transcoders",
         str(t / "tc"), "--check-features", "3", "--no-contexts", "--max-edges", "20"]],
}


#: verbs whose result file is not ``results.json``
RESULT = {"sae browse": "features.json"}


@pytest.fixture
def svg_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports write their figures' SVGs only (their own tests check the PNGs)."""
    import reports.html

    def save(fig, folder, name, *, document=None):  # noqa: ANN001, ANN202
        path = Path(folder) / f"{name}.svg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document if document is not None else "")

    monkeypatch.setattr(reports.html, "save_figure", save)


@pytest.mark.slow
@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_verb_runs_on_every_family(family, verb, tiny_family, tmp_path, capsys,
                                         svg_only):
    folder = str(tiny_family(family)[0])
    out = tmp_path / "out"
    for args in VERBS[verb](tmp_path, folder):
        if "--out" not in args:
            args = [*args, "--out", str(out)]
        code, _, err = run([*args, "--model", folder], capsys)
        assert code == 0, f"{family}: interp {' '.join(args[:2])}: {err[-2000:]}"
    assert (out / RESULT.get(verb, "results.json")).is_file()
