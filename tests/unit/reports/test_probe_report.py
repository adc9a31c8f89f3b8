"""Tests for the linear-probe report (reports.probe), its figures (interp.probing.figures)
and the probe results' notebook views."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import escape

from interp.plotting import svg_text
from interp.probing.figures import (
    ablation_figure,
    ablation_tooltips,
    accuracy_figure,
    accuracy_tooltips,
)
from interp.probing.results import (
    METRICS,
    AblationEffect,
    AblationResult,
    DatasetSummary,
    DirectionReport,
    LayerStats,
    ProbeConfig,
    ProbeResult,
)
from reports.probe import probe_report, render_probe_report, write_probe_report
from tests.support.html_checks import parse, section, svgs

SCRIPT = "<script>alert(1)</script>"
HOSTILE_PATH = SCRIPT + ".jsonl"
SVG = "{http://www.w3.org/2000/svg}"
R = 10
NAN = float("nan")


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


def _seeds(mean: float | None, std: float, n: int = 5) -> list[float]:
    """n per-seed values with exactly this mean and (sample) standard deviation."""
    if mean is None or math.isnan(mean):
        return [NAN] * n
    d = std * math.sqrt(2)  # [m + d, m − d, m, m, m] has sample std d / √2
    return [mean + d, mean - d] + [mean] * (n - 2)


def _direction(name: str, kl: float, ld: float, later: float, var: float,
               shift: float) -> DirectionReport:
    rng = random.Random(int(shift * 1e4))
    rnd_kl = [round(abs(rng.gauss(0.012, 0.004)), 5) for _ in range(R)]
    rnd_ld = [round(rng.gauss(shift, 0.25), 4) for _ in range(R)]
    rnd = [AblationEffect(rnd_kl[k], rnd_ld[k], rnd_ld[k] / 2.4, 0.93 + 0.002 * (k % 3),
                          var * (1 + 1e-4 * (k - 4.5))) for k in range(R)]
    return DirectionReport(name, AblationEffect(kl, ld, ld / 2.4, later, var), rnd,
                           _pct(kl, rnd_kl), _z(kl, rnd_kl), _pct(ld, rnd_ld), _z(ld, rnd_ld))


def make_result(n_layers: int = 30, *, ablation: bool = True) -> ProbeResult:
    layers = list(range(n_layers))
    test = _curve(n_layers, 0.55, 0.93)
    ctrl_task = _curve(n_layers, 0.5, 0.58)
    per_layer = {  # metric -> (means per layer, std)
        "test_accuracy": (test, 0.012),
        "test_auroc": ([round(min(1.0, t + 0.03), 4) for t in test], 0.01),
        "train_accuracy": ([round(min(1.0, t + 0.05), 4) for t in test], 0.004),
        "shuffled_accuracy": ([0.5 + 0.01 * (i % 3) for i in layers], 0.03),
        "random_weights_accuracy": ([0.56] * n_layers, 0.02),
        "bow_accuracy": ([0.61] * n_layers, 0.02),
        "control_task_accuracy": (ctrl_task, 0.03),
        "control_task_train_accuracy": ([0.8] * n_layers, 0.02),
        "majority_rate": ([0.5] * n_layers, 0.0),
    }
    assert set(per_layer) == set(METRICS)
    stats = [LayerStats(layer, {k: _seeds(means[i], std) for k, (means, std) in
                                per_layer.items()}) for i, layer in enumerate(layers)]
    r = ProbeResult(
        ProbeConfig(layers, "last", 5, 0.25, 0.1, 16, True, "probes/capitals_truefalse.jsonl",
                    "abc123<&>", "group"),
        "tiny/<b>model</b>", 400, 300, 100, stats,
        dataset=DatasetSummary("probes/capitals_truefalse.jsonl", 400, ["false", "true"],
                               "group", 80),
    )
    if ablation:
        best = r.best_layer()
        r.ablation = AblationResult(best, best + 4, 400, 2.4, 0.94, {
            "probe": _direction("probe", 0.081, 1.3, 0.61, 3.2, 0.0),
            "mean_difference": _direction("mean_difference", 0.052, 0.9, 0.7, 2.7, 0.001),
        })
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


def single_layer_result() -> ProbeResult:
    r = make_result(1, ablation=False)
    r.layers[0].layer = 7
    r.config = r.config.replace(layers=[7], split="stratified")
    assert r.dataset is not None
    r.dataset.split, r.dataset.n_groups = "stratified", None
    return r


def nan_result() -> ProbeResult:
    r = make_result(6, ablation=True)
    for s in r.layers:
        s.values["random_weights_accuracy"] = [NAN] * 5
    r.layers[2].values["test_auroc"] = [NAN] * 5
    r.layers[3].values["bow_accuracy"] = [NAN] * 5
    assert r.dataset is not None and r.ablation is not None
    r.dataset.path = HOSTILE_PATH
    r.dataset.label_names = ["<i>no</i>", "yes & more"]
    r.model_id = SCRIPT
    r.warnings = [f"only 12 examples in {HOSTILE_PATH}", "class balance is 80/20 <b>!</b>"]
    probe = r.ablation.directions["probe"]
    probe.effect.logit_diff_change = None
    probe.effect.logit_diff_removed_fraction = None
    probe.logit_diff_percentile = probe.logit_diff_z = None
    for e in probe.random:
        e.logit_diff_change = None
    probe.kl_z = float("inf")
    return r


def fig_svg(page: str, name: str) -> ET.Element:
    (svg,) = [ET.fromstring(m.group(0)) for m in re.finditer(
        rf'<svg class="mpl-fig"[^>]*data-figure="{name}".*?</svg>', page, re.S)]
    return svg


def groups(svg: ET.Element, pattern: str) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if re.fullmatch(pattern, g.get("id") or "")]


def texts(el: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in el.iter(f"{SVG}text")]


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
    # XML namespace names are identifiers, never fetched
    names = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
    assert "http://" not in page.replace(names[0], "").replace(names[1], "")
    assert "https://" not in page
    figures = svgs(page, "mpl-fig")  # every figure is well-formed XML
    assert figures
    for svg in figures:
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
    chart = fig_svg(sweep_page, "accuracy")
    lines = groups(chart, r"accuracy-line-[a-z-]+")
    assert len(lines) == 5
    assert len(groups(chart, r"accuracy-band-test")) == 1
    assert sum(1 for g in lines if "stroke-dasharray" in ET.tostring(g, encoding="unicode")) == 1
    assert [g.get("id") for g in lines if "stroke-dasharray" in ET.tostring(g, encoding="unicode")
            ] == ["accuracy-line-control-task"]
    legend = " ".join(texts(chart))
    for name in (
        "held-out accuracy",
        "best control",
        "control task",
        "majority class",
        "train accuracy",
    ):
        assert name in legend
    ticks = texts(chart)
    assert "0.0" in ticks and "1.0" in ticks  # y from 0 to 1
    # hover: every point of every curve has its value (30 layers x 5 curves)
    points = groups(chart, r"accuracy-pt-[a-z-]+-\d+")
    assert len(points) == 150 and all(p.find(f"{SVG}title") is not None for p in points)
    (best,) = groups(chart, r"accuracy-pt-test-17")
    assert best.find(f"{SVG}title").text == (
        "held-out accuracy (± seed std)\nlayer 17: 0.930  [0.918, 0.942]")


def test_best_layer_row_is_highlighted(sweep_page):
    rows = re.findall(r'<tr class="baseline best-layer">(.*?)</tr>', sweep_page, re.S)
    assert len(rows) == 1
    assert "<strong>17</strong>" in rows[0] and "0.930 ± 0.012" in rows[0]
    assert "train: accuracy on the probe" in sweep_page  # the faint train column


def test_ablation_histograms_have_all_random_directions_and_a_marker(sweep_page):
    hists = [h for name in ("probe", "mean_difference")
             for h in groups(fig_svg(sweep_page, f"ablation-{name}"),
                             rf"ablation-{name}-(kl|gap)-hist")]
    assert len(hists) == 4  # KL and logit gap, for two directions
    r = make_result(30)
    assert r.ablation is not None
    for name in ("probe", "mean_difference"):
        fig = ablation_figure(r.ablation, name)
        assert len(fig.axes) == 2
        for ax in fig.axes:
            bars = [p for p in ax.patches if (p.get_gid() or "").startswith(("kl-bar", "gap-bar"))]
            assert sum(p.get_height() for p in bars) == R
            markers = [ln for ln in ax.lines if (ln.get_gid() or "").endswith("-marker")]
            assert len(markers) == 1
    svg = fig_svg(sweep_page, "ablation-probe")
    labels = ["".join(texts(g)) for g in groups(svg, r"ablation-probe-(kl|gap)-marker-label")]
    probe = r.ablation.directions["probe"]
    assert labels[0] == f"probe direction: 0.081 (percentile 100, z {probe.kl_z:.1f})"
    assert labels[1] == f"probe direction: 1.300 (percentile 100, z {probe.logit_diff_z:.1f})"
    (marker,) = groups(svg, r"ablation-probe-kl-marker")
    assert marker.find(f"{SVG}title").text == labels[0]  # hover on the red line
    # The summary table: tested direction's numbers, and the random directions' matched variance.
    summary = section(sweep_page, "Directional ablation")
    assert ">3.200<" in summary and ">3.200 ± 0.001<" in summary
    assert "0.610 (−0.330)" in sweep_page  # later probe accuracy vs clean
    assert "variance-matched" in sweep_page or "matched in variance" in sweep_page


def test_single_layer_gets_a_bar_chart_not_a_line(tmp_path):
    page = render_probe_report(single_layer_result(), make_manifest())
    bars = fig_svg(page, "accuracy")
    assert not groups(bars, r"accuracy-(line|pt)-.*")
    items = groups(bars, r"accuracy-bar-\d")
    assert len(items) == 7 and all(g.find(f"{SVG}title") is not None for g in items)
    text = " ".join(texts(bars))
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
    hists = [h for name in ("probe", "mean_difference")
             for h in groups(fig_svg(nan_page, f"ablation-{name}"),
                             rf"ablation-{name}-(kl|gap)-hist")]
    assert len(hists) == 3
    assert "z ∞" in nan_page


def test_verdict_rule():
    r = make_result(30, ablation=False)
    v = r.verdict()
    assert v.clear and v.layer == r.best_layer()
    assert v.margin == pytest.approx(0.93 - 0.61)
    # Margin ≥ 0.05 but within 3 seed std: not clear.
    for s in r.layers:
        s.values["test_accuracy"] = _seeds(s.mean("test_accuracy"), 0.12)
    v = r.verdict()
    assert not v.clear and "does not clearly beat its controls" in v.text
    # Tiny std but margin < 0.05: not clear.
    for s in r.layers:
        s.values["test_accuracy"] = _seeds(s.mean("test_accuracy"), 0.001)
        s.values["bow_accuracy"] = [0.9] * 5  # the best control: 0.9
    assert r.control_accuracy() == pytest.approx([0.9] * 30)
    assert not r.verdict().clear


# ------------------------------------------------------------------------ figures


def _one_direction(kl: float, randoms: list[float | None]) -> AblationResult:
    rnd = [AblationEffect(NAN if v is None else v, None, None, None, 1.0) for v in randoms]
    return AblationResult(3, 5, 10, None, None, {
        "probe": DirectionReport("probe", AblationEffect(kl, None, None, None, 1.0), rnd,
                                 50.0, 1.0, None, None)})


def test_histogram_marker_outside_the_data_extends_the_axis():
    ab = _one_direction(2.0, [0.1, 0.2, 0.2, 0.3, NAN, None])
    fig = ablation_figure(ab, "probe")
    (ax,) = fig.axes
    bars = [p for p in ax.patches if (p.get_gid() or "").startswith("kl-bar-")]
    assert len(bars) == 4 and sum(p.get_height() for p in bars) == 4  # NaN / None left out
    (marker,) = [ln for ln in ax.lines if ln.get_gid() == "kl-marker"]
    mx = marker.get_xdata()[0]
    right = max(p.get_x() + p.get_width() for p in bars)
    assert mx == 2.0 and mx > right  # the marker sits right of every bar, inside the axes
    assert ax.get_xlim()[0] < min(p.get_x() for p in bars) and mx < ax.get_xlim()[1]
    tips = ablation_tooltips(ab, "probe")
    assert tips["kl-marker"] == "probe direction: 2.000 (percentile 50, z 1.0)"
    assert sum(int(t.rsplit(": ", 1)[1]) for k, t in tips.items() if "-bar-" in k) == 4
    assert "probe direction: 2.000" in svg_text(fig)


def test_histogram_edge_cases():
    same = ablation_figure(_one_direction(0.5, [0.5, 0.5, 0.5]), "probe")
    assert sum(p.get_height() for p in same.axes[0].patches
               if (p.get_gid() or "").startswith("kl-bar-")) == 3
    empty = ablation_figure(_one_direction(1.0, []), "probe")
    ax = empty.axes[0]
    assert not [p for p in ax.patches if (p.get_gid() or "").startswith("kl-bar-")]
    assert "no data" in [t.get_text() for t in ax.texts]
    assert [ln.get_gid() for ln in ax.lines] == ["kl-marker"]


def test_bar_chart_missing_value():
    r = single_layer_result()
    r.layers[0].values["random_weights_accuracy"] = [NAN] * 5
    r.layers[0].values["shuffled_accuracy"] = _seeds(0.5, 0.1)
    tips = accuracy_tooltips(r)
    assert tips["bar-3"] == "random weights: —"
    assert tips["bar-2"] == "shuffled labels: 0.500 ± 0.100"
    fig = accuracy_figure(r)
    shown = [t.get_text() for t in fig.axes[0].texts]
    assert "—" in shown and "0.500 ± 0.100" in shown
    bars = {p.get_gid(): p for p in fig.axes[0].patches if p.get_gid()}
    assert len(bars) == 7 and bars["bar-3"].get_width() == 0
    assert bars["bar-0"].get_y() > bars["bar-6"].get_y()  # the first measure on top


def test_bar_count_equals_layer_count_and_svg_is_byte_stable():
    r = make_result(12, ablation=False)
    fig = accuracy_figure(r)
    for key in ("test", "control", "control-task", "majority", "train"):
        assert len([ln for ln in fig.axes[0].lines
                    if re.fullmatch(rf"pt-{key}-\d+", ln.get_gid() or "")]) == 12
    assert set(accuracy_tooltips(r)) == {ln.get_gid() for ln in fig.axes[0].lines
                                         if (ln.get_gid() or "").startswith("pt-")}
    assert svg_text(accuracy_figure(r)) == svg_text(accuracy_figure(r))
    ab = make_result(30).ablation
    assert ab is not None
    assert svg_text(ablation_figure(ab, "probe")) == svg_text(ablation_figure(ab, "probe"))


def test_report_keeps_its_figures_for_files(tmp_path):
    report = probe_report(make_result(30), make_manifest())
    assert set(report.figures) == {"accuracy", "ablation-probe", "ablation-mean_difference"}
    report.save(tmp_path)
    for name in report.figures:
        assert (tmp_path / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (tmp_path / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


# -------------------------------------------------------------- notebook views


def test_to_frame_and_repr_html():
    r = make_result(30)
    frame = r.to_frame()
    assert len(frame) == 30 and list(frame["layer"]) == list(range(30))
    assert frame.loc[17, "test_accuracy_mean"] == pytest.approx(0.93)
    assert frame.loc[17, "selectivity"] == pytest.approx(0.93 - 0.58, abs=1e-3)
    assert r.ablation is not None
    ab = r.ablation.to_frame()
    assert list(ab["direction"]) == ["probe", "mean_difference"]
    assert ab.loc[0, "kl"] == 0.081 and ab.loc[0, "random_n"] == R
    page = r._repr_html_()
    assert "<svg" in page and "<b>" not in page and escape("tiny/<b>model</b>") in page
    assert "best layer" in page and "0.930 ± 0.012" in page
    assert "<svg" in r.ablation._repr_html_()


def test_to_dict_is_the_results_schema():
    d = make_result(6).to_dict()
    assert list(d)[:8] == ["model", "config", "n_examples", "n_train", "n_test", "layers",
                           "best_layer", "warnings"]
    assert list(d)[-3:] == ["per_seed", "dataset", "ablation"]
    assert d["dataset"] == {"path": "probes/capitals_truefalse.jsonl", "n": 400,
                            "label_names": ["false", "true"], "split": "group", "n_groups": 80}
    assert d["ablation"]["probe"]["percentile"] == d["ablation"]["probe"]["kl_percentile"]


def test_selectivity_inside_the_seed_noise_is_labelled(tmp_path):
    """Early layers (test ≈ control task) are labelled "within noise"; late ones are not."""
    import math

    r = make_result(30, ablation=False)
    for s in r.layers[:5]:  # early layers: the probe is the control task ± seed noise
        s.values["test_accuracy"] = [c + x for c, x in zip(
            s.values["control_task_accuracy"], [0.02, -0.02, 0.01, -0.01, 0.004], strict=True)]
    cis = r.selectivity_ci()
    sel = r.selectivity()
    assert all(lo <= s <= hi for s, (lo, hi) in zip(sel, cis, strict=True))
    noisy = [i for i, (lo, hi) in enumerate(cis) if lo <= 0 <= hi]
    assert noisy == [0, 1, 2, 3, 4]
    assert r.to_dict()["selectivity_ci95"][29] == list(cis[29])
    page = write_probe_report(tmp_path / "r.html", r, make_manifest()).read_text()
    rows = page.split('class="data probe-layers"')[1].split("</table>")[0].split("<tr")[2:]
    assert len(rows) == 30
    assert ["within noise" in rows[i] for i in range(30)] == [i in noisy for i in range(30)]
    one_seed = make_result(3, ablation=False)
    for s in one_seed.layers:
        s.values = {k: v[:1] for k, v in s.values.items()}
    assert all(math.isnan(lo) for lo, _ in one_seed.selectivity_ci())
    assert "no noise estimate" in write_probe_report(tmp_path / "s.html", one_seed,
                                                     make_manifest()).read_text()
