"""Attention patterns (interp.circuits.attention.run_attention), their report
(reports.attention) and ``interp attention``: the tiny random Llama for the mechanics,
the real model (slow) for a real effect, induction heads."""

from __future__ import annotations

import json
import re

import pytest
import torch
from markupsafe import escape

from interp.circuits.attention import check_heads, run_attention
from interp.circuits.figures import attention_heatmap, attention_heatmaps
from interp.circuits.results import AttentionConfig, AttentionResult
from interp.errors import InterpError
from reports.attention import attention_report, top_keys
from tests.support.bad_inputs import Case, M
from tests.support.cli_runner import run
from tests.support.html_checks import parse, svgs

PROMPT = "The capital of France is Paris. The capital of Italy is"
HOSTILE = "<script>alert(1)</script> costs $5\n\tnow"
N_HEADS = 4  # the tiny model's


@pytest.fixture(scope="module")
def result(tiny_model) -> AttentionResult:
    return run_attention(tiny_model, AttentionConfig(PROMPT, layer=1))


def test_patterns_are_causal_distributions(tiny_model, result):
    ids, _ = tiny_model.tokenize([PROMPT])
    n = ids.shape[1]
    assert result.tokens == tiny_model.token_strs(ids[0]) and len(result.tokens) == n
    assert result.layer == 1 and result.heads == list(range(N_HEADS))
    p = result.patterns
    assert p.shape == (N_HEADS, n, n) and p.dtype == torch.float32
    assert torch.allclose(p.sum(-1), torch.ones(N_HEADS, n), atol=1e-5)  # rows sum to 1
    assert (p >= 0).all()
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    assert (p[:, future] == 0).all()  # causal: nothing above the diagonal
    assert torch.equal(p[:, 0, 0], torch.ones(N_HEADS))  # the first token sees only itself
    assert result.model_id == tiny_model.model_id
    assert result.manifest["model_id"] == tiny_model.model_id
    assert result.manifest["config"] == {"prompt": PROMPT, "layer": 1, "heads": None,
                                         "chat": False}
    assert result.manifest["dataset_hash"]


def test_heads_subset_negative_indices_and_chat(tiny_model, result):
    sub = run_attention(tiny_model, AttentionConfig(PROMPT, layer=-2, heads=[3, -4, 3]))
    assert sub.layer == 1 and sub.heads == [3, 0]  # negative counted from the end, once
    assert torch.equal(sub.patterns, result.patterns[[3, 0]])
    chat = run_attention(tiny_model, AttentionConfig("hello", layer=0, heads=[2], chat=True))
    assert chat.tokens[0] == "<|im_start|>" and chat.patterns.shape[0] == 1
    assert len(chat.tokens) > 3


@pytest.mark.parametrize(("cfg", "message"), [
    (AttentionConfig(PROMPT, layer=3), "layer 3 out of range"),
    (AttentionConfig(PROMPT, layer=-4), "out of range"),
    (AttentionConfig(PROMPT, layer=0, heads=[4]), "head 4 out of range: the layer has 4 heads"),
    (AttentionConfig(PROMPT, layer=0, heads=[-5]), "head -5 out of range"),
    (AttentionConfig(PROMPT, layer=0, heads=[]), "no head given"),
    (AttentionConfig("  \n", layer=0), "empty prompt"),
])
def test_bad_config(tiny_model, cfg, message):
    with pytest.raises(InterpError, match=re.escape(message)) as err:
        run_attention(tiny_model, cfg)
    assert "\n" not in str(err.value)


def test_check_heads():
    assert check_heads(None, 3) == [0, 1, 2]
    assert check_heads([2, 0], 3) == [2, 0]
    with pytest.raises(InterpError, match="integer"):
        check_heads([True], 3)  # type: ignore[list-item]


def test_to_dict_and_frame(result):
    d = result.to_dict()
    n = len(result.tokens)
    assert d["layer"] == 1 and d["heads"] == list(range(N_HEADS)) and d["tokens"] == result.tokens
    assert len(d["patterns"]) == N_HEADS and len(d["patterns"][0]) == n
    json.dumps(d)
    frame = result.to_frame()
    assert len(frame) == N_HEADS * n * (n + 1) // 2


def test_top_keys(result):
    last = len(result.tokens) - 1
    keys = top_keys(result, 0, last)
    assert len(keys) == 3
    weights = [w for _, w in keys]
    assert weights == sorted(weights, reverse=True)
    assert weights[0] == pytest.approx(float(result.patterns[0, last].max()))
    assert top_keys(result, 0, 0) == [(0, 1.0)]  # the first query has one key


def test_figures(result):
    figs = attention_heatmaps(result)
    assert len(figs) == N_HEADS
    ax = figs[2].axes[0]
    assert ax.get_title(loc="left") == "L1H2"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == f"{result.tokens[0]} 0" and labels[1].startswith("␣")
    with pytest.raises(InterpError, match="no head at index 4"):
        attention_heatmap(result, 4)


def test_report_escapes_tokens_and_lists_top_keys(tiny_model):
    r = run_attention(tiny_model, AttentionConfig(HOSTILE, layer=0, heads=[1, 2]))
    doc = attention_report(r).html
    low = doc.lower()
    assert "<script" not in low
    assert not {"script", "img", "iframe", "link", "object"} & set(parse(doc).tags)
    assert "https://" not in doc
    assert str(escape(HOSTILE)) in doc  # the prompt, in the lead
    assert re.findall(r"<h2>(.*?)</h2>", doc) == [
        "Layer 0, head 1", "Layer 0, head 2", "Setup", "Run manifest"]
    assert 'id="attn-L0H1"' in doc and 'id="attn-L0H2"' in doc
    n = len(r.tokens)
    assert doc.count('<span class="key">') == sum(min(q + 1, 3) for q in range(n)) * 2
    assert "↵" in doc and "⇥" in doc  # whitespace made visible in the tables
    assert sorted(s.get("data-figure") or "" for s in svgs(doc, "mpl-fig")) == [
        "attn-l0h1", "attn-l0h2"]
    report = attention_report(r)
    assert sorted(report.figures) == ["attn-l0h1", "attn-l0h2"]
    assert attention_report(r).html == report.html  # byte-stable


# ----------------------------------------------------------------------------- CLI
def test_cli_writes_results_report_and_table(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run(["attention", PROMPT, "--model", str(tiny_model_dir), "--layer",
                             "-1", "--head", "0,3", "--out", str(out)], capsys)
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    assert data["layer"] == 2 and data["heads"] == [0, 3]
    assert data["config"] == {"prompt": PROMPT, "layer": -1, "heads": [0, 3], "chat": False}
    assert data["manifest"]["seed"] == 0 and data["manifest"]["model_id"] == data["model_id"]
    assert len(data["patterns"]) == 2
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (out / "figures" / "attn-l2h3.svg").exists()
    assert (out / "figures" / "attn-l2h3.png").exists()
    assert "layer 2" in stdout and "key 1" in stdout
    rows = [line for line in stdout.splitlines() if re.match(r"^│\s+[03]\s+│", line)]
    assert len(rows) == 2
    code, stdout, _ = run(["attention", PROMPT, "--model", str(tiny_model_dir), "--layer", "0",
                           "--out", str(out), "--json"], capsys)
    assert code == 0
    assert json.loads(stdout)["heads"] == list(range(N_HEADS))


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("attention-head-out-of-range", lambda c: [
        "attention", "hello there", *M(c), "--layer", "1", "--head", "4", "--out", c.out],
        "head 4 out of range"),
    Case("attention-bad-head-list", lambda c: [
        "attention", "hello there", *M(c), "--layer", "1", "--head", "1,x", "--out", c.out],
        "bad --head '1,x'"),
    Case("attention-layer-out-of-range", lambda c: [
        "attention", "hello there", *M(c), "--layer", "3", "--out", c.out], "out of range"),
    Case("attention-empty-prompt", lambda c: [
        "attention", "  ", *M(c), "--layer", "0", "--out", c.out], "empty prompt"),
    Case("attention-no-chat-template", lambda c: [
        "attention", "hello", "--model", c.no_template, "--layer", "0", "--chat",
        "--out", c.out], "chat template"),
]
