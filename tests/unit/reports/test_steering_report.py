"""Tests for the steering-sweep HTML report (reports.steering), its figures
(interp.steering.figures) and the typed sweep result (interp.steering.sweep.SweepResult)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import escape
from matplotlib.colors import Normalize, to_hex
from matplotlib.figure import Figure

from interp.errors import InterpError
from interp.plotting import colormap
from interp.steering.figures import (
    HEATMAPS as FIGURES,
)
from interp.steering.figures import (
    MISSING_FILL,
    heatmap_figure,
    heatmap_titles,
    target_by_alpha_figure,
    target_by_alpha_titles,
)
from interp.steering.sweep import SweepResult
from reports.steering import steering_report
from tests.support.html_checks import parse, section, svgs

SCRIPT = "<script>alert(1)</script>"
QUOTES = "She said \"stop\" & he said 'go'"
SVG = "{http://www.w3.org/2000/svg}"
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
ALPHAS = [-4.0, -1.0, 0.0, 1.0, 2.0, 4.0]
KEYS = ("target_score", "perplexity", "distinct2", "collapse", "side_kl")
NOT_RENDERED = "per-text record that must not be rendered"


def make_result(n_layers: int = 5, alphas: list[float] | None = None) -> dict:
    """A made-up sweep: the effect grows with α and peaks at a middle layer; large α breaks
    the text (perplexity up, distinct-2 down, collapse up) and moves the side-effect KL."""
    alphas = list(ALPHAS if alphas is None else alphas)
    layers = [2 + 3 * i for i in range(n_layers)]
    mid = (n_layers - 1) / 2
    g: dict[str, list[list[float]]] = {f"{k}{s}": [] for k in KEYS for s in ("", "_std")}
    samples = []
    for li in range(n_layers):
        gain = 0.12 * math.exp(-((li - mid) ** 2) / 4)
        base_ts, base_ppl = 0.05 + 0.01 * li, 8.0 + li
        row = {k: [] for k in g}
        cells = []
        layer = layers[li]
        for a in alphas:
            big = max(0.0, abs(a) - 2) * (1 + li * 0.3)
            row["target_score"].append(round(max(-1, min(1, base_ts + gain * a)), 4))
            row["target_score_std"].append(round(0.2 + 0.02 * abs(a), 4))
            row["perplexity"].append(round(base_ppl * (1 + 0.15 * abs(a) + big**2), 3))
            row["perplexity_std"].append(round(1.0 + abs(a), 3))
            row["distinct2"].append(round(max(0.05, 0.95 - 0.08 * big), 3))
            row["distinct2_std"].append(0.03)
            row["collapse"].append(round(min(1.0, 0.1 * big), 3))
            row["collapse_std"].append(0.1 if big else 0.0)
            row["side_kl"].append(round(0.004 * a * a * (1 + li), 5))
            row["side_kl_std"].append(round(0.001 * a * a, 5))
            cells.append(
                [
                    f"L{layer} α{a:g} first: I love it {SCRIPT}",
                    f"L{layer} α{a:g} second: {QUOTES}\nnew line",
                    f"L{layer} α{a:g} THIRD-NOT-SHOWN",
                ]
            )
        for k in g:
            g[k].append(row[k])
        samples.append(cells)
    r = {
        "model": "tiny/<b>model</b>",
        "config": {
            "layers": layers,
            "alphas": alphas,
            "max_new_tokens": 24,
            "temperature": 0.0,
            "seeds": [0],
            "chat": False,
            "batch_size": 32,
            "vector_source": f"pairs/{SCRIPT}.jsonl",
            "method": "mean_diff",
            "collapse_distinct2": 0.5,
            "collapse_ppl_factor": 10.0,
            "coherence_ppl_factor": 2.0,
        },
        "layers": layers,
        "alphas": alphas,
        **g,
        "vector_norms": [round(3.0 + 0.5 * i, 3) for i in range(n_layers)],
        "samples": samples,
        "n_prompts": 8,
        "side_effect_prompts": ["The capital of France is", f"2 + 2 = {SCRIPT}"],
        "texts": [
            {
                "layer": layers[0],
                "alpha": 0.0,
                "seed": 0,
                "prompt": "p",
                "text": NOT_RENDERED,
                "target_score": 0.1,
                "perplexity": 9.0,
                "distinct2": 1.0,
            }
        ] + _paired_texts(layers, alphas),
    }
    r["sweet_spot"] = sweet_spot(r)
    return r


def _paired_texts(layers: list[int], alphas: list[float]) -> list[dict]:
    """Eight prompts scored at α = 0 and α = 2 on layer 8 (a clear +0.24 change) and at
    α = 0 and α = 1 on layer 2 (changes of ± 0.05 around 0: within noise)."""
    out = []
    wobble = [0.03, -0.02, 0.01, -0.03, 0.02, 0.0, -0.01, 0.015]
    for layer, alpha, shift in ((8, 2.0, 0.24), (2, 1.0, 0.0)):
        if layer not in layers or alpha not in alphas:
            continue
        for k, w in enumerate(wobble):
            for a, score in ((0.0, 0.1 + 0.1 * k), (alpha, 0.1 + 0.1 * k + shift + w
                                                     + (0.04 if k % 2 else -0.04) * (shift == 0))):
                out.append({"layer": layer, "alpha": a, "seed": 0, "prompt": f"prompt {k}",
                            "text": NOT_RENDERED, "target_score": score, "perplexity": 9.0,
                            "distinct2": 1.0})
    return out


def sweet_spot(r: dict) -> dict | None:
    """The sweep's rule (interp.steering.sweep._sweet_spot), restated for the fixture."""
    base = r["alphas"].index(0.0)
    best = None
    for li, layer in enumerate(r["layers"]):
        for ai, alpha in enumerate(r["alphas"]):
            if ai == base:
                continue
            if r["perplexity"][li][ai] > 2.0 * r["perplexity"][li][base]:
                continue
            if r["collapse"][li][ai] > 0.25:
                continue
            effect = r["target_score"][li][ai] - r["target_score"][li][base]
            if best is None or abs(effect) > abs(best["effect"]):
                best = {
                    "layer": layer,
                    "alpha": alpha,
                    "effect": effect,
                    "effect_spread": r["target_score_std"][li][ai],
                    "tolerance": "perplexity ≤ 2.0× α=0, collapse ≤ 25% of texts",
                }
    return best


def single_layer_result() -> dict:
    return make_result(1, alphas=[0.0, 2.0, 8.0])


def nan_result() -> dict:
    r = make_result(4)
    nan = float("nan")
    r["sweet_spot"] = None
    r["target_score"][1][3] = nan
    r["target_score_std"][1][3] = nan
    r["perplexity"][2][2] = None  # α = 0: no ratio for layer 8
    r["distinct2"][0] = [nan] * len(ALPHAS)
    r["collapse"][3][5] = nan
    r["side_kl"][2] = [None] * len(ALPHAS)
    r["vector_norms"][1] = nan
    r["samples"][0][1] = []
    r["model"] = SCRIPT
    return r


def typed(r: dict) -> SweepResult:
    return SweepResult.from_dict(r)


def render(r: dict, manifest: dict | None = None) -> str:
    return steering_report(typed(r), make_manifest() if manifest is None else manifest).html


def make_manifest() -> dict:
    return {
        "interp_version": "0.1.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": False,
        "timestamp": "2025-01-01T00:00:00+00:00",
        "command": ["interp", "steer-sweep", "--pairs", f"pairs/{SCRIPT}.jsonl"],
        "model_id": "tiny/<b>model</b>",
        "seed": 0,
    }


def section_titles(doc: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", doc)


def figure_name(svg: ET.Element) -> str:
    return svg.get("data-figure") or ""


def groups(svg: ET.Element, pattern: str) -> list[ET.Element]:
    """The groups of a figure whose gid (after the figure-name prefix) matches ``pattern``."""
    rx = re.compile(re.escape(figure_name(svg)) + "-" + pattern + "$")
    return [g for g in svg.iter(f"{SVG}g") if rx.match(g.get("id") or "")]


def cells(svg: ET.Element) -> list[ET.Element]:
    return groups(svg, r"cell-\d+-\d+")


def cell(svg: ET.Element, i: int, j: int) -> ET.Element:
    (g,) = groups(svg, f"cell-{i}-{j}")
    return g


def cell_fill(svg: ET.Element, i: int, j: int) -> str:
    style = cell(svg, i, j).find(f"{SVG}path").get("style")
    return re.search(r"fill: (#[0-9a-f]{6})", style).group(1)


def cell_label(svg: ET.Element, i: int, j: int) -> ET.Element:
    (g,) = groups(svg, f"cell-{i}-{j}-t")
    return g.find(f"{SVG}text")


def cell_text(svg: ET.Element, i: int, j: int) -> str:
    return cell_label(svg, i, j).text or ""


def is_bold(svg: ET.Element, i: int, j: int) -> bool:
    return "font-weight: 700" in (cell_label(svg, i, j).get("style") or "")


def tooltip(svg: ET.Element, i: int, j: int) -> str:
    return cell(svg, i, j).find(f"{SVG}title").text


def row_labels(svg: ET.Element) -> list[str]:
    return [g.find(f"{SVG}text").text for g in groups(svg, r"row-\d+")]


def figures(doc: str) -> list[ET.Element]:
    return svgs(doc, "mpl-fig")


def heatmaps(doc: str) -> list[ET.Element]:
    return [s for s in figures(doc) if figure_name(s) in FIGURES]


def heatmap(doc: str, title: str) -> ET.Element:
    (svg,) = [s for s in heatmaps(doc) if s.get("aria-label") == title]
    return svg


def line_chart(doc: str) -> ET.Element:
    (svg,) = [s for s in figures(doc) if figure_name(s) == "target_by_alpha"]
    return svg


HEATMAPS = (
    "Δ target score",
    "Perplexity ÷ α=0",
    "Distinct-2",
    "Collapse rate",
    "Side-effect KL",
)


@pytest.fixture(scope="module")
def page() -> str:
    return render(make_result())


@pytest.fixture(scope="module")
def nan_page() -> str:
    return render(nan_result())


# --------------------------------------------------------------------- escaping


@pytest.mark.parametrize("make", [make_result, single_layer_result, nan_result])
def test_no_raw_markup_and_self_contained(make):
    doc = render(make())
    low = doc.lower()
    assert "<script" not in low and "<b>" not in low
    tags = parse(doc)
    assert not {"script", "img", "iframe", "link", "object"} & set(tags.tags)
    assert not [a for _, a, _ in tags.attrs if a.startswith("on")]
    bare = doc
    for ns in NAMESPACES:  # XML namespace names, never fetched
        bare = bare.replace(ns, "")
    assert "http://" not in bare
    assert "https://" not in doc
    assert figures(doc)
    for svg in figures(doc):  # every figure is well-formed XML
        assert svg.tag == SVG + "svg"


def test_hostile_strings_are_present_escaped(page, nan_page):
    assert str(escape(f"pairs/{SCRIPT}.jsonl")) in page  # vector source
    assert str(escape(f"L2 α-4 first: I love it {SCRIPT}")) in page
    # quotes escaped, newline shown as ↵
    assert str(escape(f"L2 α-4 second: {QUOTES}↵new line")) in page
    assert str(escape(f"2 + 2 = {SCRIPT}")) in page  # a side-effect prompt
    assert str(escape(SCRIPT)) in nan_page  # the model name in the title
    assert "&lt;b&gt;model&lt;/b&gt;" in page


# --------------------------------------------------------------------- content


def test_sections_and_lead(page):
    titles = section_titles(page)
    assert titles == [
        "Target-score change", "Coherence", "Side effects", "Target score by α",
        "Sample continuations", "Metrics", "Setup", "Run manifest",
    ]  # fmt: skip
    r = make_result()
    sweet = r["sweet_spot"]
    assert sweet is not None and sweet["layer"] == 8 and sweet["alpha"] == 2.0
    lead = re.search(r'<div class="lead">(.*?)</dl>', page, re.S).group(1)
    assert f"Sweet spot: layer 8, α = 2 changes the target score by +{sweet['effect']:.3f}" in lead
    assert f"± {sweet['effect_spread']:.3f}" in lead
    assert "coherent effect" in lead and "mean_diff" in lead
    assert "95% interval over paired prompts: [+0.2" in lead and "within noise" not in lead
    layer2 = page.split('data-layer="2"')[1].split("</details>")[0]
    assert layer2.count("Δ within noise") == 1  # α = 1 only: the other cells have no pairs
    layer8 = page.split('data-layer="8"')[1].split("</details>")[0]
    assert "within noise" not in layer8
    assert str(escape(f"pairs/{SCRIPT}.jsonl")) in lead
    assert "negative α steers the other way" in page
    assert "distinct-2 &lt; 0.5 or its perplexity &gt; 10× the layer" in page
    assert NOT_RENDERED not in page  # the per-text list is not rendered


def test_heatmaps_have_one_cell_per_layer_and_alpha(page):
    maps = heatmaps(page)
    assert sorted(s.get("aria-label") for s in maps) == sorted(HEATMAPS)
    for svg in maps:
        assert len(cells(svg)) == 5 * len(ALPHAS)
        assert row_labels(svg) == ["2", "5", "8", "11", "14"]
        # the sweet spot (layer 8 = row 2, α = 2 = column 4) is bold in every heatmap
        bold = [(i, j) for i in range(5) for j in range(len(ALPHAS)) if is_bold(svg, i, j)]
        assert bold == [(2, 4)]


def test_heatmap_rows_run_top_down_in_sweep_order(page):
    """The first swept layer is the top row: its cells sit above the last layer's."""
    svg = heatmap(page, HEATMAPS[0])
    ys = [float(g.find(f"{SVG}text").get("y")) for g in groups(svg, r"row-\d+")]
    assert ys == sorted(ys)  # SVG y grows downwards
    top = float(cell_label(svg, 0, 0).get("y"))
    bottom = float(cell_label(svg, 4, 0).get("y"))
    assert top < bottom


def test_target_heatmap_is_diverging_and_centred_at_zero(page):
    r = make_result()
    svg = heatmap(page, HEATMAPS[0])
    cmap = colormap(FIGURES["target_delta"].cmap)
    centre = to_hex(cmap(0.5))
    assert all(int(centre[k : k + 2], 16) >= 0xF0 for k in (1, 3, 5))  # white-ish
    for i in range(5):
        assert cell_text(svg, i, 2) == "0"  # α = 0
        assert cell_fill(svg, i, 2) == centre
    delta = r["target_score"][2][5] - r["target_score"][2][2]
    assert cell_text(svg, 2, 5) == f"+{delta:.2f}"
    assert cell_text(svg, 2, 0).startswith("−")
    # symmetric scale: the largest |Δ| gets an end colour
    extreme = max(
        ((i, j) for i in range(5) for j in range(6)),
        key=lambda ij: abs(r["target_score"][ij[0]][ij[1]] - r["target_score"][ij[0]][2]),
    )
    assert cell_fill(svg, *extreme) in (to_hex(cmap(0.0)), to_hex(cmap(1.0)))
    tip = tooltip(svg, 2, 4)
    assert "layer 8 · α = 2" in tip and " ± " in tip and "sweet spot" in tip
    assert "within the coherence tolerance" in tip
    assert "outside the coherence tolerance" in tooltip(svg, 4, 5)


def test_other_heatmaps_cell_text(page):
    r = make_result()
    ppl = heatmap(page, HEATMAPS[1])
    assert cell_text(ppl, 0, 2) == "1.0×"
    ratio = r["perplexity"][0][3] / r["perplexity"][0][2]
    assert cell_text(ppl, 0, 3) == f"{ratio:.1f}×"
    assert cell_text(ppl, 4, 0).endswith("×") and float(cell_text(ppl, 4, 0)[:-1]) >= 10
    tip = tooltip(ppl, 0, 3)
    assert "perplexity: " in tip and " ± " in tip and "(α = 0: " in tip
    d2 = heatmap(page, HEATMAPS[2])
    assert cell_text(d2, 0, 2) == "0.95"
    col = heatmap(page, HEATMAPS[3])
    assert cell_text(col, 0, 2) == "0%"
    assert cell_text(col, 4, 0) == f"{100 * r['collapse'][4][0]:.0f}%"
    kl = heatmap(page, HEATMAPS[4])
    assert cell_text(kl, 0, 2) == "0"
    assert cell_text(kl, 4, 5) == f"{r['side_kl'][4][5]:.3g}"
    assert "nats" in tooltip(kl, 4, 5)


def test_collapse_heatmap_flags_collapsed_cells(page):
    """Collapsed cells are darker red than cells without collapse, and say so on hover."""
    r = make_result()
    col = heatmap(page, HEATMAPS[3])
    cmap = colormap(FIGURES["collapse"].cmap)
    assert cell_fill(col, 0, 2) == to_hex(cmap(0.0))
    worst = max(((i, j) for i in range(5) for j in range(6)),
                key=lambda c: r["collapse"][c[0]][c[1]])
    rate = r["collapse"][worst[0]][worst[1]]
    assert rate > 0.25 and cell_fill(col, *worst) == to_hex(cmap(Normalize(0, 1)(rate)))
    assert "collapse rate: " in tooltip(col, *worst) and "of texts" in tooltip(col, *worst)


def test_line_chart_has_a_line_and_band_per_layer(page):
    chart = line_chart(page)
    assert len(groups(chart, r"line-\d+")) == 5
    assert len(groups(chart, r"band-\d+")) == 5
    legend = " ".join(t.text or "" for t in chart.iter(f"{SVG}text"))
    for layer in (2, 5, 8, 11, 14):
        assert f"layer {layer}" in legend
    points = groups(chart, r"point-\d+-\d+")
    assert len(points) == 5 * len(ALPHAS)
    tip = points[0].find(f"{SVG}title").text
    assert "layer 2 · α = −4" in tip and "target score: " in tip and " ± " in tip


def test_samples_show_two_per_cell_and_mark_collapse(page):
    body = section(page, "Sample continuations")
    blocks = re.findall(r'<details class="layer-samples" data-layer="(\d+)"( open)?>', body)
    assert [b[0] for b in blocks] == ["2", "5", "8", "11", "14"]
    assert [b[0] for b in blocks if b[1]] == ["8"]  # the sweet-spot layer is open
    assert body.count('class="sample"') == 5 * len(ALPHAS) * 2
    assert "THIRD-NOT-SHOWN" not in page
    assert "every continuation is in results.json" in body
    r = make_result()
    n_collapsed = sum(1 for row in r["collapse"] for v in row if v > 0)
    assert body.count("badge warn collapsed") == n_collapsed
    assert body.count(">sweet spot</span>") == 2  # the summary and the row
    assert body.count(">unsteered</span>") == 5


def test_single_layer():
    doc = render(single_layer_result())
    for svg in heatmaps(doc):
        assert len(cells(svg)) == 3
    assert len(groups(line_chart(doc), r"line-\d+")) == 1
    assert doc.count('<details class="layer-samples"') == 1
    assert '<details class="layer-samples" data-layer="2" open>' in doc


def test_nan_is_a_dash_and_no_sweet_spot(nan_page):
    assert "No coherent setting moved the target score" in nan_page
    assert "no coherent effect" in nan_page
    assert not re.search(r"\bnan\b", nan_page, re.I)
    tgt = heatmap(nan_page, HEATMAPS[0])
    assert cell_text(tgt, 1, 3) == "—"
    assert cell_fill(tgt, 1, 3) == MISSING_FILL  # missing grey
    ppl = heatmap(nan_page, HEATMAPS[1])
    assert all(cell_text(ppl, 2, j) == "—" for j in range(len(ALPHAS)))  # α = 0 missing
    d2 = heatmap(nan_page, HEATMAPS[2])
    assert all(cell_text(d2, 0, j) == "—" for j in range(len(ALPHAS)))
    assert cell_text(heatmap(nan_page, HEATMAPS[3]), 3, 5) == "—"
    kl = heatmap(nan_page, HEATMAPS[4])
    assert all(cell_text(kl, 2, j) == "—" for j in range(len(ALPHAS)))
    for svg in heatmaps(nan_page):
        assert len(cells(svg)) == 4 * len(ALPHAS)
        assert not [c for c in range(4 * len(ALPHAS)) if is_bold(svg, c // 6, c % 6)]
    assert 'data-layer="2" open' in nan_page  # no sweet spot: the first layer is open


def test_empty_and_sparse_results_still_render():
    doc = render({"model": "m"}, {})
    assert "No coherent setting moved the target score" in doc
    assert section_titles(doc) == ["Metrics", "Setup", "Run manifest"]
    r = make_result(2)
    for k in ("samples", "vector_norms", "side_kl", "side_kl_std", "texts"):
        del r[k]
    doc = render(r)
    assert len(cells(heatmap(doc, HEATMAPS[4]))) == 2 * len(ALPHAS)


def test_write_steering_report(tmp_path, page):
    result = typed(make_result())
    result.manifest = make_manifest()  # the report takes the manifest the result carries
    path = steering_report(result).save(tmp_path / "r")
    assert path.read_text(encoding="utf-8") == page


def test_report_saves_every_figure(tmp_path, page):
    report = steering_report(typed(make_result()), make_manifest())
    assert report.html == page
    assert sorted(report.figures) == sorted([*FIGURES, "target_by_alpha"])
    report.save(tmp_path)
    for name in report.figures:
        assert (tmp_path / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 1000
    again = steering_report(typed(make_result()), make_manifest())
    assert again.html == page  # byte-stable


# ----------------------------------------------------------------- figure builders


def test_heatmap_figure_cells_and_tooltips():
    r = typed(make_result(3))
    for name in FIGURES:
        fig = heatmap_figure(r, name)
        assert isinstance(fig, Figure)
        (ax,) = fig.axes[:1]
        gids = [p.get_gid() for p in ax.patches]
        assert sorted(gids) == sorted(f"cell-{i}-{j}" for i in range(3) for j in range(6))
        assert set(heatmap_titles(r, name)) == set(gids)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "5", "8"]
        assert ax.get_ylim()[0] > ax.get_ylim()[1]  # row 0 at the top
        assert ax.get_title(loc="left") == FIGURES[name].title
    with pytest.raises(InterpError, match="unknown steering heatmap"):
        heatmap_figure(r, "nope")


def test_heatmap_figure_colours_follow_the_scale():
    r = typed(make_result(3))
    fig = heatmap_figure(r, "distinct2")
    cmap = colormap(FIGURES["distinct2"].cmap)
    patch = {p.get_gid(): p for p in fig.axes[0].patches}["cell-0-2"]
    assert to_hex(patch.get_facecolor()) == to_hex(cmap(r.distinct2[0][2]))


def test_target_by_alpha_figure_lines_bands_points():
    r = typed(make_result(2))
    fig = target_by_alpha_figure(r)
    ax = fig.axes[0]
    assert [ln.get_gid() for ln in ax.lines if (ln.get_gid() or "").startswith("line-")] == [
        "line-0", "line-1"]
    assert [c.get_gid() for c in ax.collections] == ["band-0", "band-1"]
    assert len(target_by_alpha_titles(r)) == 2 * len(ALPHAS)
    assert ax.get_ylim() == (-1.0, 1.0)


# ------------------------------------------------------------------ typed result


def test_to_dict_is_the_results_json():
    r = make_result()
    d = typed(r).to_dict()
    grids = [f"{k}{s}" for k in KEYS for s in ("", "_std")]
    assert list(d) == ["model", "config", "layers", "alphas", *grids, "vector_norms", "samples",
                       "n_prompts", "sweet_spot", "target_delta_ci95", "texts",
                       "side_effect_prompts", "warnings"]
    ci = d.pop("target_delta_ci95")  # derived from the texts; NaN where there are no pairs
    assert len(ci) == 5 and all(len(row) == len(ALPHAS) for row in ci)
    assert ci[2][ALPHAS.index(2.0)][0] > 0.2
    assert d == {**r, "config": {**r["config"], "positions": "all"},
                 "warnings": typed(r).warnings}
    again = typed(d).to_dict()
    again.pop("target_delta_ci95")
    assert again == d


def test_to_frame_one_row_per_layer_and_alpha():
    r = make_result()
    frame = typed(r).to_frame()
    assert len(frame) == 5 * len(ALPHAS)
    assert list(frame[["layer", "alpha"]].iloc[0]) == [2, -4.0]
    row = frame[(frame.layer == 8) & (frame.alpha == 2.0)].iloc[0]
    assert row.target_score == r["target_score"][2][4]
    assert row.side_kl_std == r["side_kl_std"][2][4]
    assert row.target_delta == pytest.approx(r["target_score"][2][4] - r["target_score"][2][2])
    assert row.perplexity_ratio == pytest.approx(r["perplexity"][2][4] / r["perplexity"][2][2])
    assert bool(row.sweet_spot) and bool(row.coherent)
    assert int(frame.sweet_spot.sum()) == 1
    assert list(typed(r).texts_frame().text) == [NOT_RENDERED] * len(r["texts"])


def test_repr_html_headline_and_figure():
    html = typed(make_result())._repr_html_()
    assert "Steering sweep" in html and "<svg" in html
    assert "layer 8, α = 2" in html
    assert "&lt;b&gt;model&lt;/b&gt;" in html and "<b>model" not in html
    assert "<svg" not in typed({"model": "m"})._repr_html_()


