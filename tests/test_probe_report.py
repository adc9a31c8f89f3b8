"""Tests for the linear-probe HTML report (reports.probe) and the histogram / bar-chart SVGs."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import escape

from reports.heatmap import bar_chart_svg, histogram_svg
from reports.probe import render_probe_report, verdict, write_probe_report
from tests.browser import ARTIFACTS, assert_clean, visit
from tests.html_checks import parse, section, svgs

SCRIPT = "<script>alert(1)</script>"
HOSTILE_PATH = SCRIPT + ".jsonl"
SVG = "{http://www.w3.org/2000/svg}"
METRICS = (
    "test_accuracy", "test_auroc", "train_accuracy", "shuffled_accuracy",
    "random_weights_accuracy", "bow_accuracy", "control_task_accuracy",
    "control_task_train_accuracy", "majority_rate",
)  # fmt: skip
R = 10


def _curve(n: int, lo: float, hi: float, peak: float = 0.6) -> list[float]:
    """A smooth made-up per-layer curve rising from lo to hi at `peak` of the depth."""
    out = []
    top = round(peak * (n - 1))
    for i in range(n):
        bump = math.exp(-(((i - top) / max(n - 1, 1)) ** 2) / 0.08)
        out.append(round(lo + (hi - lo) * bump, 4))
    return out


def _pct(value: float, others: list[float]) -> float:
    return 100.0 * sum(o < value for o in others) / len(others)


def _z(value: float, others: list[float]) -> float:
    m = sum(others) / len(others)
    sd = math.sqrt(sum((o - m) ** 2 for o in others) / (len(others) - 1))
    return (value - m) / sd


def _direction(kl: float, ld: float, later: float, var: float, shift: float) -> dict:
    rng = random.Random(int(shift * 1e4))
    rnd_kl = [round(abs(rng.gauss(0.012, 0.004)), 5) for _ in range(R)]
    rnd_ld = [round(rng.gauss(shift, 0.25), 4) for _ in range(R)]
    return {
        "kl": kl,
        "logit_diff_change": ld,
        "logit_diff_removed_fraction": ld / 2.4,
        "later_probe_accuracy": later,
        "variance": var,
        "random": {
            "kl": rnd_kl,
            "logit_diff_change": rnd_ld,
            "later_probe_accuracy": [0.93 + 0.002 * (k % 3) for k in range(R)],
            "variance": [var * (1 + 1e-4 * (k - 4.5)) for k in range(R)],
        },
        "percentile": _pct(kl, rnd_kl),
        "kl_percentile": _pct(kl, rnd_kl),
        "kl_z": _z(kl, rnd_kl),
        "logit_diff_percentile": _pct(ld, rnd_ld),
        "logit_diff_z": _z(ld, rnd_ld),
    }


def make_result(n_layers: int = 30, *, ablation: bool = True) -> dict:
    layers = list(range(n_layers))
    test = _curve(n_layers, 0.55, 0.93)
    r: dict = {
        "model": "tiny/<b>model</b>",
        "config": {
            "layers": layers,
            "position": "last",
            "seeds": 5,
            "test_size": 0.25,
            "C": 0.1,
            "split": "group",
            "dataset": "probes/capitals_truefalse.jsonl",
            "dataset_hash": "abc123<&>",
        },  # fmt: skip
        "n_examples": 400,
        "n_train": 300,
        "n_test": 100,
        "layers": layers,
        "warnings": [],
        "test_accuracy_mean": test,
        "test_accuracy_std": [0.012] * n_layers,
        "test_auroc_mean": [round(min(1.0, t + 0.03), 4) for t in test],
        "test_auroc_std": [0.01] * n_layers,
        "train_accuracy_mean": [round(min(1.0, t + 0.05), 4) for t in test],
        "train_accuracy_std": [0.004] * n_layers,
        "shuffled_accuracy_mean": [0.5 + 0.01 * (i % 3) for i in layers],
        "shuffled_accuracy_std": [0.03] * n_layers,
        "random_weights_accuracy_mean": [0.56] * n_layers,
        "random_weights_accuracy_std": [0.02] * n_layers,
        "bow_accuracy_mean": [0.61] * n_layers,
        "bow_accuracy_std": [0.02] * n_layers,
        "control_task_accuracy_mean": _curve(n_layers, 0.5, 0.58),
        "control_task_accuracy_std": [0.03] * n_layers,
        "control_task_train_accuracy_mean": [0.8] * n_layers,
        "control_task_train_accuracy_std": [0.02] * n_layers,
        "majority_rate_mean": [0.5] * n_layers,
        "majority_rate_std": [0.0] * n_layers,
        "dataset": {
            "path": "probes/capitals_truefalse.jsonl",
            "n": 400,
            "label_names": ["false", "true"],
            "split": "group",
            "n_groups": 80,
        },  # fmt: skip
    }
    r["best_layer"] = layers[max(range(n_layers), key=lambda i: test[i])]
    r["control_accuracy_mean"] = [
        max(
            r[f"{k}_mean"][i]
            for k in ("shuffled_accuracy", "random_weights_accuracy", "bow_accuracy")
        )
        for i in range(n_layers)
    ]
    r["selectivity"] = [
        round(t - c, 4) for t, c in zip(test, r["control_task_accuracy_mean"], strict=True)
    ]
    if ablation:
        r["ablation"] = {
            "layer": r["best_layer"],
            "later_layer": r["best_layer"] + 4,
            "n_examples": 400,
            "clean_logit_diff": 2.4,
            "clean_later_probe_accuracy": 0.94,
            "probe": _direction(0.081, 1.3, 0.61, 3.2, 0.0),
            "mean_difference": _direction(0.052, 0.9, 0.7, 2.7, 0.001),
        }
    return r


def make_manifest() -> dict:
    return {
        "interp_version": "0.1.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": False,
        "timestamp": "2025-01-01T00:00:00+00:00",
        "command": ["interp", "probe", "--dataset", HOSTILE_PATH],
        "model_id": "tiny/<b>model</b>",
        "seed": 0,
        "dataset_hash": "<hash & 'quote'>",
    }


def single_layer_result() -> dict:
    r = make_result(1, ablation=False)
    r["layers"] = r["config"]["layers"] = [7]
    r["best_layer"] = 7
    r["dataset"].update(split="stratified", n_groups=None)
    r["config"]["split"] = "stratified"
    return r


def nan_result() -> dict:
    r = make_result(6, ablation=True)
    nan = float("nan")
    r["random_weights_accuracy_mean"] = [nan] * 6
    r["random_weights_accuracy_std"] = [nan] * 6
    r["test_auroc_mean"][2] = nan
    r["bow_accuracy_mean"][3] = None
    r["dataset"]["path"] = HOSTILE_PATH
    r["dataset"]["label_names"] = ["<i>no</i>", "yes & more"]
    r["model"] = SCRIPT
    r["warnings"] = [f"only 12 examples in {HOSTILE_PATH}", "class balance is 80/20 <b>!</b>"]
    r["ablation"]["probe"]["logit_diff_change"] = None
    r["ablation"]["probe"]["logit_diff_removed_fraction"] = None
    r["ablation"]["probe"]["logit_diff_percentile"] = None
    r["ablation"]["probe"]["logit_diff_z"] = None
    r["ablation"]["probe"]["random"]["logit_diff_change"] = [None] * R
    r["ablation"]["probe"]["kl_z"] = float("inf")
    return r


def rows_of(html_text: str) -> list[str]:
    return re.findall(r"<tbody>.*?</tbody>", html_text, re.S)[0].split("</tr>")[:-1]


def section_titles(doc: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", doc)


@pytest.fixture(scope="module")
def sweep_page() -> str:
    return render_probe_report(make_result(30), make_manifest())


@pytest.fixture(scope="module")
def nan_page() -> str:
    return render_probe_report(nan_result(), make_manifest())


# --------------------------------------------------------------------- escaping


@pytest.mark.parametrize("make", [lambda: make_result(30), single_layer_result, nan_result])
def test_no_raw_markup_and_self_contained(make):
    page = render_probe_report(make(), make_manifest())
    low = page.lower()
    assert "<script" not in low and "<b>" not in low and "<i>" not in low
    doc = parse(page)
    assert not {"script", "img", "iframe", "link", "object"} & set(doc.tags)
    assert not [a for _, a, _ in doc.attrs if a.startswith("on")]
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
    for svg in svgs(page, r"interp-\w+"):  # every figure is well-formed XML
        assert svg.tag == SVG + "svg"


def test_hostile_strings_are_present_escaped(nan_page):
    assert str(escape(HOSTILE_PATH)) in nan_page
    assert str(escape(SCRIPT)) in nan_page  # the model name
    assert str(escape("<i>no</i>")) in nan_page and str(escape("yes & more")) in nan_page
    assert str(escape("class balance is 80/20 <b>!</b>")) in nan_page


# --------------------------------------------------------------------- content


def test_sweep_sections_and_lead(sweep_page):
    titles = section_titles(sweep_page)
    for want in (
        "Accuracy by layer", "Layer by layer", "Baselines, control task and selectivity",
        "Setup", "Directional ablation", "Ablating the probe direction at layer 17",
        "Ablating the mean-difference direction at layer 17", "Run manifest",
    ):  # fmt: skip
        assert want in titles, (want, titles)
    assert "probes/capitals_truefalse.jsonl" in sweep_page
    assert "by group (80 groups, held out whole)" in sweep_page
    assert "0.930 ± 0.012" in sweep_page  # best layer's held-out accuracy
    assert "beats the best control (bag of words, 0.610) by 0.320 (26.7 seed-std)" in sweep_page
    assert 'class="warnings"' not in sweep_page
    assert "Hewitt &amp; Liang" in sweep_page and "memorisation capacity" in sweep_page


def test_main_figure_is_a_line_chart_with_band_and_five_lines(sweep_page):
    (chart,) = svgs(sweep_page, "interp-linechart")
    lines = chart.findall(f".//{SVG}path[@class='lc-line']")
    assert len(lines) == 5
    assert len(chart.findall(f".//{SVG}path[@class='lc-band']")) == 1
    assert sum(1 for p in lines if p.get("stroke-dasharray")) == 1  # the control task
    legend = " ".join(t.text or "" for t in chart.iter(f"{SVG}text"))
    for name in (
        "held-out accuracy",
        "best control",
        "control task",
        "majority class",
        "train accuracy",
    ):
        assert name in legend
    ticks = [t.text for t in chart.iter(f"{SVG}text")]
    assert "0.0" in ticks and "1.0" in ticks  # y from 0 to 1


def test_best_layer_row_is_highlighted(sweep_page):
    rows = re.findall(r'<tr class="baseline best-layer">(.*?)</tr>', sweep_page, re.S)
    assert len(rows) == 1
    assert "<strong>17</strong>" in rows[0] and "0.930 ± 0.012" in rows[0]
    assert "train: accuracy on the probe" in sweep_page  # the faint train column


def test_ablation_histograms_have_all_random_directions_and_a_marker(sweep_page):
    hists = svgs(sweep_page, "interp-histogram")
    assert len(hists) == 4  # KL and logit gap, for two directions
    for h in hists:
        counts = [
            int(b.get("data-count")) for b in h.iter(f"{SVG}rect") if b.get("class") == "hist-bar"
        ]
        assert sum(counts) == R and h.get("data-n") == str(R)
        markers = [g for g in h.iter(f"{SVG}g") if g.get("class") == "hist-marker"]
        assert len(markers) == 1
    labels = [
        t.text for h in hists for t in h.iter(f"{SVG}text") if t.get("class") == "hist-marker-label"
    ]
    probe = make_result(30)["ablation"]["probe"]
    assert labels[0] == f"probe direction: 0.081 (percentile 100, z {probe['kl_z']:.1f})"
    assert labels[1] == f"probe direction: 1.300 (percentile 100, z {probe['logit_diff_z']:.1f})"
    # The summary table: tested direction's numbers, and the random directions' matched variance.
    summary = section(sweep_page, "Directional ablation")
    assert ">3.200<" in summary and ">3.200 ± 0.001<" in summary
    assert "0.610 (−0.330)" in sweep_page  # later probe accuracy vs clean
    assert "variance-matched" in sweep_page or "matched in variance" in sweep_page


def test_single_layer_gets_a_bar_chart_not_a_line(tmp_path):
    page = render_probe_report(single_layer_result(), make_manifest())
    assert not svgs(page, "interp-linechart")
    (bars,) = svgs(page, "interp-barchart")
    items = [g for g in bars.iter(f"{SVG}g") if g.get("class") == "bar-item"]
    assert len(items) == 7
    text = " ".join(t.text or "" for t in bars.iter(f"{SVG}text"))
    for name in (
        "held-out accuracy",
        "train accuracy",
        "shuffled labels",
        "random weights",
        "bag of words",
        "control task",
        "majority class",
    ):
        assert name in text
    assert "Directional ablation" not in section_titles(page)
    assert "stratified (no groups)" in page
    assert len(re.findall(r'<tr class="baseline best-layer">', page)) == 1
    path = write_probe_report(tmp_path / "p.html", single_layer_result(), make_manifest())
    assert path.read_text(encoding="utf-8") == page


def test_nan_is_a_dash_and_warnings_are_prominent(nan_page):
    layer_rows = rows_of(section(nan_page, "Layer by layer"))
    assert len(layer_rows) == 6
    for row in layer_rows:  # random weights disabled: a dash in every row
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        assert cells[5].endswith(">—</span>"), cells[5]
    assert ">—</span>" in re.findall(r"<td[^>]*>(.*?)</td>", layer_rows[2], re.S)[2]
    assert not re.search(r"\bnan\b", nan_page, re.I)
    assert 'class="warnings"' in nan_page and "2 warnings" in nan_page
    assert "disabled for this run" in nan_page
    # No logit-gap numbers for the probe direction: only its KL histogram is drawn.
    assert len(svgs(nan_page, "interp-histogram")) == 3
    assert "z ∞" in nan_page


def test_verdict_rule():
    r = make_result(30, ablation=False)
    v = verdict(r)
    assert v["clear"] and v["layer"] == r["best_layer"]
    assert v["margin"] == pytest.approx(0.93 - 0.61)
    # Margin ≥ 0.05 but within 3 seed std: not clear.
    r["test_accuracy_std"] = [0.12] * 30
    v = verdict(r)
    assert not v["clear"] and "does not clearly beat its controls" in v["text"]
    # Tiny std but margin < 0.05: not clear.
    r["test_accuracy_std"] = [0.001] * 30
    r["control_accuracy_mean"] = [0.9] * 30
    assert not verdict(r)["clear"]


# ------------------------------------------------------------------------ figures


def test_histogram_marker_outside_the_data_extends_the_axis():
    svg = histogram_svg(
        [0.1, 0.2, 0.2, 0.3, float("nan"), None],
        marker=2.0,
        marker_label="tested <x>",
        x_label="KL & co",
        bins=4,
    )
    root = ET.fromstring(str(svg))
    bars = [b for b in root.iter(f"{SVG}rect") if b.get("class") == "hist-bar"]
    assert len(bars) == 4 and sum(int(b.get("data-count")) for b in bars) == 4
    line = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "hist-marker")
    mx = float(line.find(f"{SVG}line").get("x1"))
    right = max(float(b.get("x")) + float(b.get("width")) for b in bars)
    assert mx > right  # the marker sits to the right of every bar, inside the figure
    assert mx < float(root.get("width"))
    ticks = [t.text for t in root.iter(f"{SVG}text")]
    assert "2" in ticks or "2.0" in ticks
    assert "tested &lt;x&gt;" in svg and "KL &amp; co" in svg


def test_histogram_edge_cases():
    one = ET.fromstring(str(histogram_svg([0.5] * 3, x_label="x", bins=5)))
    assert (
        sum(
            int(b.get("data-count")) for b in one.iter(f"{SVG}rect") if b.get("class") == "hist-bar"
        )
        == 3
    )
    empty = histogram_svg([], marker=1.0, x_label="x")
    assert "no data" in empty and 'class="hist-marker"' in empty
    with pytest.raises(Exception, match="bin"):
        histogram_svg([1.0], x_label="x", bins=0)


def test_bar_chart_missing_value():
    svg = bar_chart_svg(
        ["a", SCRIPT], [0.5, None], errors=[0.1, None], x_label="acc", x_min=0, x_max=1
    )
    assert "<script" not in svg and "—" in svg and "0.500 ± 0.100" in svg
    ET.fromstring(str(svg))


# ----------------------------------------------------------------------- browser


@pytest.mark.browser
def test_probe_report_in_headless_chromium(tmp_path):
    report = write_probe_report(tmp_path / "probe_report.html", make_result(30), make_manifest())

    def check(page) -> None:
        assert page.locator("script").count() == 0
        assert page.title().startswith("Linear probe")
        chart = page.locator("svg.interp-linechart")
        assert chart.count() == 1 and chart.is_visible()
        hists = page.locator("svg.interp-histogram")
        assert hists.count() == 4
        assert all(hists.nth(i).is_visible() for i in range(4))
        assert page.locator("tr.best-layer").count() == 1
        # No horizontal page overflow at a laptop width.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    v = visit(report, "probe_report.png", check)
    assert_clean(v)
    assert (ARTIFACTS / "probe_report.png").stat().st_size > 10_000
