"""Reports are inert: hostile prompts and dataset strings render as text, never as markup.

Every report-writing verb runs on the tiny model with a payload in its user-supplied
strings (prompts, dataset rows, label names); the report is opened in headless Chromium,
which must show no dialog, no console error and no request, contain no ``<script>``,
``<img>``, ``<iframe>`` or ``<textarea>`` element, and, where the report shows the string
at all (the capture and sweep reports do not), show it literally.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run

PAYLOAD = ('<script>alert(1)</script> "><img src=x onerror=alert(2)> </textarea>'
           "<svg onload=alert(3)> '><iframe src=javascript:alert(4)>")
MARK = "<script>alert(1)</script>"


def _run(args: list[str], capsys) -> None:
    code, _, err = run(args, capsys)
    assert not code, err


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return str(path)


def _cases(tmp: Path, tiny: str) -> dict[str, list[str]]:
    m = ["--model", tiny]
    probe_rows = [{"text": f"{PAYLOAD} number {i}", "label": ["<b>yes</b>", PAYLOAD][i % 2],
                   "group": f"g{i % 5}"} for i in range(40)]
    pairs = [{"positive": f"{PAYLOAD} good {i}", "negative": f"bad {i}"} for i in range(4)]
    syc = [{"question": f"{PAYLOAD} What is {i} + 1?", "correct": str(i + 1),
            "incorrect": f"{i + 2}</textarea>", "domain": "<i>math</i>"} for i in range(3)]
    head = f"{PAYLOAD} The capital of"
    clean, corrupted = f"{head} France is", f"{head} Italy is"
    patch_rows = [{"clean": clean, "corrupted": corrupted, "answer": " Paris", "wrong": " Rome",
                   "labels": [[MARK, 0, len(head)], ["country", len(head), len(head) + 7],
                              ["END", len(head) + 7, len(clean)]]}] * 2
    return {
        "lens": ["lens", PAYLOAD, *m],
        # one head: every head's view repeats the same template
        "attention": ["attention", PAYLOAD, *m, "--layer", "1", "--head", "0"],
        "patch": ["patch", *m, "--task", _jsonl(tmp / "patch_pairs.jsonl", patch_rows),
                  "--family", "heads", "--method", "both", "--min-gap", "0",
                  "--bootstrap", "100"],
        "capture": ["capture", PAYLOAD, *m, "--layer", "0"],
        "generate": ["generate", PAYLOAD, *m, "--max-new-tokens", "4"],
        "probe": ["probe", *m, "--layer", "1", "--seeds", "1", "--no-random-weights",
                  "--dataset", _jsonl(tmp / "probe.jsonl", probe_rows)],
        "steer-sweep": ["steer", "sweep", *m, "--pairs", _jsonl(tmp / "pairs.jsonl", pairs),
                        "--layers", "1", "--alphas=0,1", "--max-new-tokens", "3",
                        "--prompts", _jsonl(tmp / "prompts.jsonl", [{"prompt": PAYLOAD}]),
                        "--n-prompts", "1"],
        "eval-sycophancy": ["eval", "sycophancy", *m, "--dataset",
                            _jsonl(tmp / "syc.jsonl", syc), "--no-probe"],
        "sae-eval": ["sae", "eval", _sae(tmp, tiny), *m, "--text", _hostile_text(tmp),
                     "--tokens", "300", "--seq-len", "16"],
        "sae-browse": ["sae", "browse", _sae(tmp, tiny), *m, "--text", _hostile_text(tmp),
                       "--tokens", "600", "--seq-len", "16", "--features", "all"],
        "models-verify": ["models", "--verify", _hostile_model_dir(tmp, tiny), "--no-hf"],
        "eval-constitutional": ["eval", "constitutional", *m, "--prompts",
                                _jsonl(tmp / "cai.jsonl", [{"prompt": PAYLOAD}]),
                                "--max-new-tokens", "4", "--limit", "1"],
    }


def _sae(tmp: Path, tiny: str) -> str:
    import torch

    from interp.models.loading import load
    from saes.sae import SAEConfig, SparseAutoencoder

    model_id = load(tiny).model_id
    sae = SparseAutoencoder(SAEConfig(d_in=64, d_sae=32, hook_point="blocks.1.hook_resid_post",
                                      layer=1, model_id=model_id))
    sae.init_weights(torch.Generator().manual_seed(0), dec_norm=1.0)
    return str(sae.save(tmp / "sae", manifest={}))


def _hostile_model_dir(tmp: Path, tiny: str) -> str:
    """The tiny model in a folder whose name is markup (a path cannot hold a slash)."""
    import shutil

    dst = tmp / '"><img src=x onerror=alert(2)><svg onload=alert(3)>'
    shutil.copytree(tiny, dst)
    return str(dst)


def _hostile_text(tmp: Path) -> str:
    """Paragraphs full of the payload: the browser shows them as token contexts."""
    p = tmp / "hostile.txt"
    p.write_text("\n\n".join(f"{PAYLOAD} paragraph {i} says {PAYLOAD}" for i in range(200)))
    return str(p)


REPORTS = {"sae-browse": "browser.html"}  # verbs whose page is not report.html
OWN_SCRIPT = "#interp-report-js"  # the browser's search script, pinned by its CSP hash


@pytest.mark.parametrize("verb", ["lens", "capture", "generate", "probe", "steer-sweep",
                                  "eval-sycophancy", "eval-constitutional", "sae-eval",
                                  "sae-browse", "attention", "patch", "models-verify"])
def test_hostile_strings_render_as_text(verb, tiny_model_dir, tmp_path, capsys, monkeypatch):
    # this test is about the page: the figures' PNG files (two thirds of a report's time
    # here) are checked by each report's own tests, so only their SVGs are written
    import reports.html

    def svg_only(fig, folder, name, *, document=None):  # noqa: ANN001, ANN202
        path = Path(folder) / f"{name}.svg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document if document is not None else "")

    monkeypatch.setattr(reports.html, "save_figure", svg_only)
    args = _cases(tmp_path, str(tiny_model_dir))[verb]
    out = tmp_path / "out"
    _run([*args, "--out", str(out)], capsys)
    page = out / REPORTS.get(verb, "report.html")
    html = page.read_text()
    assert MARK not in html  # escaped in the source

    def check(page):  # noqa: ANN001, ANN202
        return {
            "elements": page.locator(
                f"script:not({OWN_SCRIPT}), img, iframe, textarea").count(),
            "text": page.text_content("body"),
        }

    v = visit(page, f"inert_{verb}.png", check)
    assert_clean(v)
    assert v.checks["elements"] == 0
    if verb == "sae-browse":  # token contexts: every markup-like token shows literally
        feats = json.loads((out / "features.json").read_text())["features"]
        pieces = {t for f in feats for ctx in f["contexts"] for t in ctx["tokens"]
                  if "<" in t or ">" in t}
        assert pieces, "the hostile text should reach the contexts"
        assert all(t.strip() in v.checks["text"] for t in pieces)
    elif "alert(1)" in html:  # the report shows the string: as literal text
        assert MARK in v.checks["text"]
