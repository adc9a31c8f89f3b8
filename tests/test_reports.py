"""Tests for the HTML report base (reports.html), the SVG figures and the logit-lens report."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup, escape

from interp.errors import InterpError
from reports.heatmap import colormap_color, heatmap_svg, line_chart_svg, text_color_for
from reports.html import (
    Section,
    figure,
    kv_table,
    paragraph,
    render_report,
    table,
    visible_token,
    write_report,
)
from reports.lens import render_lens_report, validate_lens_result, write_lens_report
from tests.browser import ARTIFACTS, assert_clean, visit
from tests.html_checks import parse

SVG = "{http://www.w3.org/2000/svg}"
SVG_NS_URL = "http://www.w3.org/2000/svg"
CSP = (
    '<meta http-equiv="Content-Security-Policy" '
    "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
)

SCRIPT = "<script>alert(1)</script>"
AMP = "&amp;"
ONLOAD = '" onload=x"'
NEWLINE = "\n"
SPACE_TOK = " Paris"
TRICKY = [SCRIPT, AMP, ONLOAD, NEWLINE, SPACE_TOK]
VOCAB = [SPACE_TOK, " France", AMP, ONLOAD, NEWLINE, " the", "<b>", " capital", SCRIPT, ","]


def make_result(n_layers: int = 4, n_pos: int = 3) -> dict:
    """A deterministic, made-up lens result full of hostile strings."""
    tokens = [SCRIPT, AMP, NEWLINE, ONLOAD, SPACE_TOK, " is", " the", " capital"]
    tokens = [tokens[p % len(tokens)] for p in range(n_pos)]
    top1, prob, topk, kl, ent = [], [], [], [], []
    for li in range(n_layers):
        depth = li / max(n_layers - 1, 1)
        r1, rp, rk, rkl, rent = [], [], [], [], []
        for p in range(n_pos):
            ranked = [VOCAB[(li * 3 + p * 5 + k) % len(VOCAB)] for k in range(5)]
            if li == n_layers - 1:
                ranked[0] = VOCAB[p % len(VOCAB)]
            p1 = round(0.12 + 0.8 * depth * ((p % 3) + 1) / 3, 4)
            probs = [p1] + [round(p1 * (0.5**k), 4) for k in range(1, 5)]
            r1.append(ranked[0])
            rp.append(p1)
            rk.append(
                [
                    {"token": t, "id": 100 + k, "prob": q}
                    for k, (t, q) in enumerate(zip(ranked, probs, strict=True))
                ]
            )
            rkl.append(0.0 if li == n_layers - 1 else round((n_layers - 1 - li) * 1.1 + p * 0.1, 4))
            rent.append(round(4.0 - 3.0 * depth + 0.05 * p, 4))
        top1.append(r1)
        prob.append(rp)
        topk.append(rk)
        kl.append(rkl)
        ent.append(rent)
    return {
        "model": "tiny/<b>model</b>",
        "prompt": "".join(TRICKY) + " & more",
        "chat": False,
        "lens": "logit",
        "tokens": tokens,
        "layers": list(range(n_layers)),
        "top1": top1,
        "top1_prob": prob,
        "topk": topk,
        "kl": kl,
        "entropy": ent,
        "final_top1": list(top1[-1]),
    }


def make_manifest() -> dict:
    return {
        "interp_version": "0.1.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": True,
        "packages": {"python": "3.11.7", "torch": "2.6.0", "transformer_lens": "not installed"},
        "platform": {"system": "Linux-x86_64"},
        "timestamp": "2025-01-01T00:00:00+00:00",
        "command": ["interp", "lens", "--prompt", "<img src=x onerror=alert(2)>"],
        "model_id": "tiny/<b>model</b>",
        "seed": 0,
        "dataset_hash": "<hash & 'quote'>",
        "config": {"note": "</pre><script>alert(3)</script>"},
    }


@pytest.fixture
def result() -> dict:
    return make_result(4, 3)


@pytest.fixture
def manifest() -> dict:
    return make_manifest()


@pytest.fixture
def page(result, manifest) -> str:
    return render_lens_report(result, manifest)


def heatmap_root(doc: str) -> ET.Element:
    m = re.search(r'<svg[^>]*class="interp-heatmap".*?</svg>', doc, re.S)
    assert m, "no heatmap svg"
    return ET.fromstring(m.group(0))


# --------------------------------------------------------------------- escaping


def test_no_raw_markup_from_user_strings(page):
    low = page.lower()
    assert "<script" not in low
    assert "<img" not in low
    assert "<b>" not in low
    assert '" onload' not in page
    doc = parse(page)
    assert "script" not in doc.tags and "img" not in doc.tags and "iframe" not in doc.tags
    assert not [a for _, a, _ in doc.attrs if a.startswith("on")]


def test_every_user_string_is_present_escaped(page, result, manifest):
    # The prompt verbatim (escaped) in the header.
    assert str(escape(result["prompt"])) in page
    assert str(escape(result["model"])) in page
    # Every token, exactly, as the JSON literal in tooltips.
    for tok in {*TRICKY, *result["tokens"], *result["final_top1"]}:
        assert str(escape(json.dumps(tok, ensure_ascii=False))) in page, repr(tok)
    # Whitespace is made visible in what is displayed.
    assert "␣Paris" in page and "↵" in page
    # Manifest values.
    assert str(escape("<img src=x onerror=alert(2)>")) in page
    assert str(escape(manifest["dataset_hash"])) in page
    assert str(escape("</pre><script>alert(3)</script>")) in page


def test_visible_token():
    assert visible_token(" Paris") == "␣Paris"
    assert visible_token("\n") == "↵"
    assert visible_token("a\tb") == "a⇥b"
    assert visible_token("") == "∅"
    assert visible_token("\x00") == "\\x00"
    assert visible_token(SCRIPT) == SCRIPT  # escaping is the renderer's job


def test_helpers_escape_and_section_str_body():
    t = table(["a<b", "n"], [[SCRIPT, 0.5], [Markup("<em>ok</em>"), None]])
    assert "<script" not in t and "&lt;script&gt;" in t and "<em>ok</em>" in t
    assert "a&lt;b" in t and "0.500" in t
    kv = kv_table({"<k>": "<v>", "n": 3})
    assert "&lt;k&gt;" in kv and "&lt;v&gt;" in kv
    assert paragraph(SCRIPT) == Markup("<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>")
    s = Section(SCRIPT, SCRIPT, note=SCRIPT)  # a plain str body is text, not HTML
    assert isinstance(s.body, Markup) and "<script" not in s.body
    doc = render_report(SCRIPT, [s], make_manifest(), subtitle=SCRIPT)
    assert "<script" not in doc.lower()
    with pytest.raises(TypeError):
        figure("<svg></svg>", "caption")  # type: ignore[arg-type]
    with pytest.raises(InterpError):
        table(["a", "b"], [[1]])


# --------------------------------------------------------------- self-contained


def test_no_external_reference(page):
    assert CSP in page
    for url in re.findall(r"(?i)(?:https?:)?//[^\s\"'<>)]+", page):
        assert url == SVG_NS_URL, url
    assert "url(" not in page.lower() and "@import" not in page.lower()
    doc = parse(page)
    for tag, name, value in doc.attrs:
        if name in ("src", "srcset", "data", "action", "formaction", "poster", "background"):
            pytest.fail(f"<{tag} {name}={value!r}>")
        if name in ("href", "xlink:href"):
            assert value and value.startswith("#"), f"<{tag} {name}={value!r}>"
        if name == "xmlns":
            assert value == SVG_NS_URL
        assert not (value or "").startswith("//"), (tag, name, value)
    assert not {"link", "script", "iframe", "object", "embed", "img", "base"} & set(doc.tags)
    # The CSP comes before anything that could load.
    assert page.index("Content-Security-Policy") < page.index("<style>")


def test_sections_and_notes(page, result):
    assert page.lstrip().startswith("<!DOCTYPE html>")
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert heads[-1] == "Run manifest"
    assert len(heads) == 4
    assert "0 at the last layer by construction" in page
    assert "Position 0 is left out" in page
    manifest_part = page[page.index("<h2>Run manifest</h2>") :]
    assert "<details>" in manifest_part and "Full manifest (JSON)" in manifest_part
    for label in ("git commit", "package versions", "dataset hash", "seed", "command line"):
        assert label in manifest_part
    assert "0123456789abcdef0123456789abcdef01234567" in manifest_part
    assert "uncommitted changes" in manifest_part


def test_last_position_table_has_baseline_and_every_layer(page, result):
    table_html = re.search(r'<table class="data">.*?</table>', page, re.S).group(0)
    rows = re.findall(r"<tr(?: class=\"([^\"]*)\")?>", table_html)
    assert len(rows) == 1 + 1 + len(result["layers"])  # header, baseline, layers
    assert rows[1] == "baseline" and "model output" in table_html


# ----------------------------------------------------------------------- heatmap


def test_heatmap_cell_count_and_last_layer_on_top(page, result):
    n_layers, n_pos = len(result["layers"]), len(result["tokens"])
    root = heatmap_root(page)
    cells = [g for g in root.iter(f"{SVG}g") if g.get("class") == "hm-cell"]
    assert len(cells) == n_layers * n_pos
    assert page.count('class="hm-cell"') == n_layers * n_pos
    # Rows from top to bottom: the last layer first.
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "hm-row-label"]
    by_y = sorted(labels, key=lambda t: float(t.get("y")))
    assert [t.text for t in by_y] == [str(x) for x in reversed(result["layers"])]
    first_col = sorted(
        (g for g in cells if g.get("data-col") == "0"),
        key=lambda g: float(g.find(f"{SVG}rect").get("y")),
    )
    assert first_col[0].find(f"{SVG}title").text.startswith(f"layer {result['layers'][-1]} ")
    assert first_col[-1].find(f"{SVG}title").text.startswith(f"layer {result['layers'][0]} ")
    # The tooltip lists the top-k, KL and entropy.
    tip = first_col[0].find(f"{SVG}title").text
    assert "top-5" in tip and "KL(final" in tip and "entropy" in tip


def test_heatmap_svg_unit():
    svg = heatmap_svg(
        [[0.0, 1.0], [float("nan"), 0.5]],
        row_labels=["r<0>", "r1"],
        col_labels=[" a", "\n"],
        cell_text=[["<x>", " y"], ["z", "&"]],
        colorbar_label="p & q",
        title="T<>",
    )
    assert isinstance(svg, Markup)
    root = ET.fromstring(str(svg))
    cells = [g for g in root.iter(f"{SVG}g") if g.get("class") == "hm-cell"]
    assert len(cells) == 4
    texts = {(g.get("data-row"), g.get("data-col")): g.find(f"{SVG}text") for g in cells}
    assert texts[("0", "0")].text == "<x>" and texts[("0", "1")].text == "␣y"
    # Contrast: white on dark viridis purple, dark ink on bright yellow.
    assert texts[("0", "0")].get("fill") == "#ffffff"
    assert texts[("0", "1")].get("fill") != "#ffffff"
    assert "&lt;x&gt;" in svg and "r&lt;0&gt;" in svg and "p &amp; q" in svg
    with pytest.raises(InterpError):
        heatmap_svg([[1, 2], [3]], row_labels=["a", "b"], col_labels=["x", "y"])
    with pytest.raises(InterpError):
        heatmap_svg([[1]], row_labels=["a"], col_labels=["x", "y"])
    with pytest.raises(InterpError):
        heatmap_svg([[1]], row_labels=["a"], col_labels=["x"], colormap="nope")


def test_colormap_and_contrast():
    assert colormap_color(0.0) == "#440154"
    assert colormap_color(1.0) == "#fde725"
    assert colormap_color(2.0) == "#fde725"  # clamped
    assert text_color_for("#000000") == "#ffffff"
    assert text_color_for("#ffffff") != "#ffffff"


def test_line_chart_svg():
    svg = line_chart_svg(
        {"KL <nats>": [3.0, 1.0, 0.5, 0.0], "entropy": [2.0, float("nan"), 1.0, 0.5]},
        [0, 1, 2, 3],
        x_label="layer",
        y_label="nats",
        title="curves & bands",
        bands={"KL <nats>": ([2.5, 0.5, 0.2, 0.0], [3.5, 1.5, 0.8, 0.0])},
    )
    root = ET.fromstring(str(svg))
    paths = [p.get("class") for p in root.iter(f"{SVG}path")]
    assert paths.count("lc-band") == 1 and paths.count("lc-line") == 2
    assert "KL &lt;nats&gt;" in svg and "curves &amp; bands" in svg
    assert len(list(root.iter(f"{SVG}circle"))) == 7  # the NaN point is skipped
    with pytest.raises(InterpError):
        line_chart_svg({"a": [1, 2]}, [0, 1, 2], x_label="x", y_label="y")
    with pytest.raises(InterpError):
        line_chart_svg({"a": [1]}, [0], x_label="x", y_label="y", bands={"b": ([0], [1])})


# ----------------------------------------------------------------- validation


def test_validation_errors_are_user_errors(result):
    bad = dict(result)
    del bad["kl"]
    with pytest.raises(InterpError, match="'kl'"):
        validate_lens_result(bad)
    bad = dict(result, top1_prob=result["top1_prob"][:-1])
    with pytest.raises(InterpError, match="top1_prob"):
        validate_lens_result(bad)
    bad = dict(result, final_top1=result["final_top1"][:-1])
    with pytest.raises(InterpError, match="final_top1"):
        validate_lens_result(bad)
    bad = dict(result, entropy=[["x"] * 3] * 4)
    with pytest.raises(InterpError, match="number"):
        validate_lens_result(bad)
    with pytest.raises(InterpError):
        render_lens_report(result, "not a dict")  # type: ignore[arg-type]


def test_single_position_result_renders(manifest):
    r = make_result(3, 1)
    doc = render_lens_report(r, manifest)
    assert doc.count('class="hm-cell"') == 3
    assert "Position 0 is left out" not in doc


# ------------------------------------------------------------------ atomic write


def test_write_is_atomic_and_complete(tmp_path, result, manifest):
    target = tmp_path / "sub" / "report.html"
    out = write_lens_report(target, result, manifest)
    assert out == target and target.is_file()
    assert target.read_text(encoding="utf-8") == render_lens_report(result, manifest)
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]
    # Overwrite in place.
    write_report(target, "Other", [Section("s", paragraph("x"))], manifest)
    assert "<title>Other</title>" in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch, result, manifest):
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_lens_report(target, result, manifest)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_to_a_directory_is_a_user_error(tmp_path, result, manifest):
    with pytest.raises(InterpError, match="directory"):
        write_lens_report(tmp_path, result, manifest)


# ----------------------------------------------------------------------- browser


@pytest.mark.browser
def test_report_in_headless_chromium(tmp_path, manifest):
    result = make_result(12, 8)
    report = write_lens_report(tmp_path / "lens_report.html", result, manifest)

    def check(page) -> None:
        heatmap = page.locator("svg.interp-heatmap")
        assert heatmap.count() == 1
        assert heatmap.is_visible()
        box = heatmap.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
        assert page.locator("svg.interp-heatmap g.hm-cell").count() == 12 * 8
        charts = page.locator("svg.interp-linechart")
        assert charts.count() == 2  # KL and entropy panels
        assert all(charts.nth(i).is_visible() for i in range(2))
        assert page.locator("script").count() == 0
        assert page.title().startswith("Logit lens")
        # No horizontal page overflow at a laptop width: wide figures scroll in their box.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    v = visit(report, "lens_report.png", check)
    assert_clean(v)
    assert (ARTIFACTS / "lens_report.png").stat().st_size > 10_000
