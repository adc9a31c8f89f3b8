"""Tests for the HTML report base (reports.html), the lens figures and the logit-lens report."""

from __future__ import annotations

import json
import os
import re

import pytest
from markupsafe import Markup, escape

from interp.errors import InterpError
from interp.lenses.figures import (
    cell_colors,
    lens_compare_figure,
    lens_curves_figure,
    lens_curves_titles,
    token_grid,
)
from interp.lenses.logit import LensResult
from interp.lenses.readout import LensReadout
from interp.plotting import svg_text
from interp.runs.atomic import atomic_write_text
from reports.html import (
    figure,
    kv_table,
    paragraph,
    render_page,
    table,
    visible_token,
)
from reports.lens import lens_report
from tests.support.html_checks import parse

SVG_NS_URL = "http://www.w3.org/2000/svg"
#: Namespace names of inline SVG (identifiers, never fetched).
NS_URLS = (SVG_NS_URL, "http://www.w3.org/1999/xlink")
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
def readout(result) -> LensReadout:
    return LensReadout.from_dict(result)


@pytest.fixture
def page(readout, manifest) -> str:
    return lens_report(readout, manifest).html


def grid_rows(doc: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The token grid's body rows: (row header, [(class, title, text) per cell])."""
    m = re.search(r'<table class="lens-grid".*?</table>', doc, re.S)
    assert m, "no token grid"
    body = m.group(0).split("<tbody>", 1)[1]
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        head = re.search(r"<th[^>]*>(.*?)</th>", tr, re.S)
        cells = re.findall(r'<td(?: class="([^"]*)")?[^>]*?title="([^"]*)">(.*?)</td>', tr, re.S)
        rows.append((head.group(1) if head else "", cells))
    return rows


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
    s = {"title": SCRIPT, "body": SCRIPT, "note": SCRIPT}  # a plain str body is text, not HTML
    doc = render_page("sections.html.j2", title=SCRIPT, manifest=make_manifest(),
                      subtitle=SCRIPT, sections=[s]).html
    assert "<script" not in doc.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
    with pytest.raises(TypeError):
        figure("<svg></svg>", "caption")  # type: ignore[arg-type]
    with pytest.raises(InterpError):
        table(["a", "b"], [[1]])


# --------------------------------------------------------------- self-contained


def test_no_external_reference(page):
    assert CSP in page
    for url in re.findall(r"(?i)(?:https?:)?//[^\s\"'<>)]+", page):
        assert url in NS_URLS, url
    # url() only to same-page fragments (matplotlib's clip paths), never to a resource
    assert all(ref.startswith("#") for ref in re.findall(r"(?i)url\(([^)]*)\)", page))
    assert "@import" not in page.lower()
    doc = parse(page)
    for tag, name, value in doc.attrs:
        if name in ("src", "srcset", "data", "action", "formaction", "poster", "background"):
            pytest.fail(f"<{tag} {name}={value!r}>")
        if name in ("href", "xlink:href"):
            assert value and value.startswith("#"), f"<{tag} {name}={value!r}>"
        if name == "xmlns":
            assert value in NS_URLS
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


# ------------------------------------------------------------------ token grid


def test_grid_cell_count_and_last_layer_on_top(page, result):
    n_layers, n_pos = len(result["layers"]), len(result["tokens"])
    rows = grid_rows(page)
    cells = [c for _, row in rows for c in row if "lens-cell" in c[0]]
    assert len(cells) == n_layers * n_pos
    assert page.count('class="lens-cell') == n_layers * n_pos
    # Rows from top to bottom: the model's own prediction, then the last layer first.
    assert [h for h, _ in rows] == ["model", *[str(x) for x in reversed(result["layers"])]]
    first_col = [row[0] for h, row in rows if h != "model"]
    assert first_col[0][1].startswith(f"layer {result['layers'][-1]} ")
    assert first_col[-1][1].startswith(f"layer {result['layers'][0]} ")
    # The tooltip lists the top-k, KL and entropy.
    tip = first_col[0][1]
    assert "top-5" in tip and "KL(final" in tip and "entropy" in tip
    # Bold (class "match") exactly where the lens's top-1 is the model's own.
    for (h, row) in rows[1:]:
        li = result["layers"].index(int(h))
        for p, (cls, _, _) in enumerate(row):
            same = result["top1"][li][p] == result["final_top1"][p]
            assert ("match" in cls.split()) == same


def test_token_grid_unit():
    """Cells: the token (escaped, whitespace visible), colour by probability, exact tooltip."""
    data = make_result(2, 2)
    data["topk"][1][0][0].update(token="<x>", prob=0.0)
    data["topk"][1][1][0].update(token=" y", prob=1.0)
    data["topk"][0][0][0].update(prob=float("nan"))
    grid = token_grid(LensResult.from_dict(data))
    assert [r.layer for r in grid.rows] == [1, 0]  # last layer on top
    top = grid.rows[0].cells
    assert top[0].token == "<x>" and top[1].token == " y"
    # Contrast: white on dark viridis purple, dark ink on bright yellow; NaN is grey.
    assert (top[0].background, top[0].color) == ("#440154", "#ffffff")
    assert top[1].background == "#fde725" and top[1].color != "#ffffff"
    assert grid.rows[1].cells[0].background == "#d0d4dc"
    assert '"<x>"' in top[0].title and "layer 1 · position 0" in top[0].title
    doc = lens_report(LensResult.from_dict(data), make_manifest()).html
    assert ">&lt;x&gt;</td>" in doc and ">␣y</td>" in doc and "<x>" not in doc


def test_cell_colors_and_contrast():
    assert cell_colors(0.0) == ("#440154", "#ffffff")
    assert cell_colors(1.0)[0] == "#fde725" and cell_colors(1.0)[1] != "#ffffff"
    assert cell_colors(2.0)[0] == "#fde725"  # clamped
    assert cell_colors(-1.0)[0] == "#440154"


def _axes(fig):
    return [ax for ax in fig.axes if ax.get_title()]


def test_lens_curves_figure(readout, result):
    """Two panels (KL, entropy): last position and mean, a band, one hover point per layer."""
    fig = lens_curves_figure(readout.logit)
    n_layers = len(result["layers"])
    axes = _axes(fig)
    assert [ax.get_title() for ax in axes] == ["KL(final ‖ layer)",
                                                "Entropy of the lens distribution"]
    for ax in axes:
        points = [ln for ln in ax.get_lines() if ln.get_gid()]
        assert len(points) == 2 * n_layers  # last position and mean, each point hoverable
        assert len(ax.collections) == 1  # the 25th–75th percentile band of the mean
        assert list(ax.get_lines()[0].get_ydata()) == pytest.approx(
            [row[-1] for row in result["kl" if ax is axes[0] else "entropy"]])
    titles = lens_curves_titles(readout.logit)
    assert len(titles) == 4 * n_layers
    assert titles["p0-kl-last-0"].startswith("last position\nlayer 0: ")
    assert svg_text(fig) == svg_text(lens_curves_figure(readout.logit))  # byte-stable
    # NaN points are left out of the hover targets
    data = make_result(4, 3)
    data["kl"][1][-1] = None
    fig = lens_curves_figure(LensResult.from_dict(data))
    assert len([ln for ln in _axes(fig)[0].get_lines() if ln.get_gid()]) == 2 * 4 - 1


def test_figures_draw_themselves_in_a_notebook(readout):
    """IPython's display of a tool's figure is its SVG (no pyplot, no inline backend),
    the same bytes the report embeds."""
    from IPython.core.formatters import DisplayFormatter

    fig = lens_curves_figure(readout.logit)
    data, _ = DisplayFormatter().format(fig)
    assert data["image/svg+xml"] == svg_text(lens_curves_figure(readout.logit))
    assert "<svg" in data["image/svg+xml"]


def test_lens_compare_figure(result):
    tuned = dict(make_result(4, 3), lens="tuned")
    r = LensReadout.from_dict(dict(result, tuned=tuned))
    assert r.tuned is not None
    fig = lens_compare_figure(r.logit, r.tuned)
    (ax,) = _axes(fig)
    assert len([ln for ln in ax.get_lines() if ln.get_gid()]) == 4 * 4
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["logit lens, last position", "tuned lens, last position",
                      "logit lens, mean", "tuned lens, mean"]


def test_report_figure_saved_with_hover_titles(tmp_path, readout, manifest):
    from interp.runs.outdir import OutDir

    report = lens_report(readout, manifest)
    assert list(report.figures) == ["curves"]
    with OutDir(tmp_path / "out") as out:
        report.write(out)
    files = sorted(p.relative_to(tmp_path / "out").as_posix()
                   for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert files == ["figures/curves.png", "figures/curves.svg", "report.html"]
    svg = re.search(r'<svg[^>]*data-figure="curves".*?</svg>', report.html, re.S).group(0)
    titles = re.findall(r"<title>(.*?)</title>", svg, re.S)
    assert len(titles) == 4 * len(readout.logit.layers)
    assert any(t.startswith("mean, positions 1–2\nlayer 3: ") for t in titles)


def test_readout_frame_and_notebook_view(readout, result):
    frame = readout.to_frame()
    assert len(frame) == len(result["layers"]) * len(result["tokens"])
    assert list(frame.columns)[:3] == ["lens", "layer", "position"]
    assert readout.to_dict()["top1"] == result["top1"]
    html = readout._repr_html_()
    assert "<svg" in html and "&lt;script&gt;" in html and "<script>" not in html
    assert "lens agrees from layer" in html


# ----------------------------------------------------------------- validation


def test_validation_errors_are_user_errors(result):
    bad = dict(result)
    del bad["kl"]
    with pytest.raises(InterpError, match="'kl'"):
        LensResult.from_dict(bad)
    bad = dict(result, top1_prob=result["top1_prob"][:-1])
    with pytest.raises(InterpError, match="top1_prob"):
        LensResult.from_dict(bad)
    bad = dict(result, final_top1=result["final_top1"][:-1])
    with pytest.raises(InterpError, match="final_top1"):
        LensResult.from_dict(bad)
    bad = dict(result, entropy=[["x"] * 3] * 4)
    with pytest.raises(InterpError, match="number"):
        LensReadout.from_dict(bad)
    with pytest.raises(InterpError):
        LensReadout.from_dict(dict(result, tuned=bad))
    with pytest.raises(InterpError):
        lens_report(LensReadout.from_dict(result), "not a dict")  # type: ignore[arg-type]


def test_single_position_result_renders(manifest):
    r = LensReadout.from_dict(make_result(3, 1))
    doc = lens_report(r, manifest).html
    assert doc.count('class="lens-cell') == 3
    assert "Position 0 is left out" not in doc


# ------------------------------------------------------------------ atomic write


def test_write_is_atomic_and_complete(tmp_path, readout, manifest):
    target = tmp_path / "sub" / "report.html"
    out = atomic_write_text(target, lens_report(readout, manifest).html)
    assert out == target and target.is_file()
    assert target.read_text(encoding="utf-8") == lens_report(readout, manifest).html
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]
    # Overwrite in place.
    render_page("sections.html.j2", title="Other", manifest=manifest,
                sections=[{"title": "s", "body": paragraph("x")}]).save(target.parent)
    assert "<title>Other</title>" in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch, readout,
                                                         manifest):
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, lens_report(readout, manifest).html)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_to_a_directory_is_a_user_error(tmp_path, readout, manifest):
    with pytest.raises(InterpError, match="directory"):
        atomic_write_text(tmp_path, lens_report(readout, manifest).html)


