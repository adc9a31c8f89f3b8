"""Tests for the SAE evaluation report (reports.sae).

Every number below is FAKE: a hand-made fixture shaped like ``interp sae eval``'s
``results.json``, not a measurement of any SAE.
"""

from __future__ import annotations

import copy
import math
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import escape

from interp.errors import InterpError
from reports.sae import sae_report
from saes.metrics import SAEEvalResult
from tests.support.html_checks import parse, section

SCRIPT = "<script>alert(1)</script>"
SVG_NS_URL = "http://www.w3.org/2000/svg"
XLINK_NS_URL = "http://www.w3.org/1999/xlink"  # matplotlib's SVG declares it; nothing fetched
SVG = "{http://www.w3.org/2000/svg}"
MISSING = "—"
FIGURES = ("reconstruction", "ce", "scores", "density", "training")


def fake_result(*, d_sae: int = 64, steps: int = 120) -> dict:
    """FAKE numbers (a fixture, not a measurement), in the schema of ``interp sae eval``."""
    density = []
    for i in range(d_sae):
        if i % 16 == 0:
            density.append(0.0)  # 4 dead features
        elif i == 5:
            density.append(0.31)  # one dense feature
        else:
            # a bell-ish spread of log10 densities around 10^-2.5
            density.append(10 ** (-2.5 + 0.6 * (math.sin(i * 1.7) + math.sin(i * 0.37))))
    edges = [-4.0 + 0.5 * k for k in range(9)]  # 1e-4 .. 1
    counts = [0] * 8
    for v in density:
        if v > 0:
            counts[min(7, int((math.log10(v) + 4) / 0.5))] += 1
    history = {
        "loss": [50.0 * math.exp(-s / 15) + 2 + 0.3 * math.sin(s) for s in range(steps)],
        "mse": [40.0 * math.exp(-s / 15) + 1 for s in range(steps)],
        "l1": [5.0 + math.cos(s) for s in range(steps)],
        "l0": [300 * math.exp(-s / 30) + 20 + math.sin(s) for s in range(steps)],
        "dead_fraction": [0.0 if s < 30 else max(0.0, 0.1 - 0.0005 * s) for s in range(steps)],
        "explained_variance": [0.9 - 0.7 * math.exp(-s / 20) for s in range(steps)],
        "lr": [4e-4] * steps,
        "l1_coef": [min(5.0, 5.0 * (s + 1) / 10) for s in range(steps)],
    }
    return {
        "model": "fake/tiny-model",
        "hook_point": "blocks.6.hook_resid_post",
        "layer": 6,
        "d_in": 576,
        "d_sae": d_sae,
        "sae_path": "runs/fake-sae/sae",
        "data": {"source": "fake corpus (test fixture)", "sha256": "ab" * 32},
        "n_tokens": 123456,
        "n_ce_tokens": 65432,
        "l0": 23.456,
        "l0_ci95": [22.912, 24.003],
        "l0_std": 7.5,
        "explained_variance": 0.8123,
        "explained_variance_ci95": [0.8011, 0.8234],
        "mse": 0.04567,
        "mse_ci95": [0.04411, 0.04702],
        "cosine_similarity": 0.9345,
        "cosine_similarity_ci95": [0.9301, 0.9388],
        "ce_clean": 3.2101,
        "ce_sae": 3.5102,
        "ce_zero_ablation": 9.8765,
        "ce_mean_ablation": 6.5432,
        "ce_loss_score": 0.9549,
        "ce_loss_score_ci95": [0.9473, 0.9621],
        "ce_loss_score_mean_ablation": 0.9099,
        "ce_loss_score_mean_ablation_ci95": [0.8951, 0.9234],
        "delta_ce": 0.3001,
        "delta_ce_ci95": [0.2812, 0.3195],
        "kl_sae": 0.2717,
        "kl_sae_ci95": [0.2601, 0.2833],
        "kl_zero_ablation": 6.1234,
        "kl_mean_ablation": 3.3456,
        "dead_fraction": 4 / d_sae,
        "dense_fraction": 1 / d_sae,
        "dense_threshold": 0.1,
        "dead_fraction_n": d_sae,
        "feature_density": density,
        "density_histogram": {"edges": edges, "counts": counts, "n_dead": 4},
        "targets": {
            "explained_variance": 0.7,
            "l0_max": 100,
            "dead_fraction_max": 0.3,
            "ce_loss_score": 0.8,
        },
        "training": {
            "train": {"layer": 6, "d_sae": d_sae, "l1_coefficient": 5.0, "tokens": 491520,
                      "batch_size": 4096, "lr": 4e-4, "resample_every": 40},
            "history": history,
            "resampled": [[40, 5], [80, 2]],
            "elapsed_s": 754.2,
            "tokens_per_s": 651.7,
        },
    }


def fake_manifest() -> dict:
    return {
        "interp_version": "0.1.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "git_dirty": False,
        "packages": {"python": "3.11.7", "torch": "2.6.0"},
        "timestamp": "2025-01-01T00:00:00+00:00",
        "command": ["interp", "sae", "eval", "--sae", "runs/fake-sae/sae"],
        "model_id": "fake/tiny-model",
        "seed": 0,
    }


def marks(doc: str) -> dict[str, set[str]]:
    """target key -> the set of data-pass values of its ✓/✗ badges on the page."""
    out: dict[str, set[str]] = {}
    for key, state in re.findall(r'data-target="([^"]+)" data-pass="([^"]+)"', doc):
        out.setdefault(key, set()).add(state)
    return out


def lead(doc: str) -> str:
    return doc[doc.index('<div class="lead">'): doc.index("</header>")]


def figure_svgs(doc: str, name: str) -> list[ET.Element]:
    """The inline SVGs of figure ``name`` (saes.figures via reports.figures)."""
    return [ET.fromstring(m.group(0)) for m in
            re.finditer(rf'<svg[^>]*data-figure="{name}".*?</svg>', doc, re.S)]


def hover(doc: str, name: str) -> dict[str, str]:
    """gid -> hover text (its <title>) of every hover target in figure ``name``."""
    (svg,) = figure_svgs(doc, name)
    out = {}
    for g in svg.iter(f"{SVG}g"):
        t = g.find(f"{SVG}title")
        if t is not None:
            out[g.get("id").removeprefix(f"{name}-")] = t.text
    return out


def fills(doc: str, name: str, gid: str) -> set[str]:
    """The fill colours drawn inside hover target ``gid`` of figure ``name``."""
    (svg,) = figure_svgs(doc, name)
    (g,) = [g for g in svg.iter(f"{SVG}g") if g.get("id") == f"{name}-{gid}"]
    return set(re.findall(r"fill: (#[0-9a-f]{6})", ET.tostring(g, encoding="unicode")))


@pytest.fixture
def res() -> dict:
    return fake_result()


@pytest.fixture(scope="module")
def page() -> str:
    """The page of the unmodified result (rendered once: the tests only read it)."""
    return sae_report(SAEEvalResult.from_dict(fake_result()), fake_manifest()).html


# ------------------------------------------------------------------------ content


def test_sections_in_order(page):
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert heads == ["Reconstruction vs sparsity", "Spliced into the model", "Feature density",
                     "Training", "How to read this", "Run manifest"]
    assert "<title>SAE evaluation — fake/tiny-model</title>" in page
    assert "blocks.6.hook_resid_post · d_in 576 → 64 features" in page


def test_headline_values_and_cis(page):
    top = lead(page)
    assert "23.5 [22.9, 24.0]" in top  # L0
    assert "0.812 [0.801, 0.823]" in top  # EV
    assert "0.955 [0.947, 0.962]" in top  # CE-loss score
    assert "+0.300 [0.281, 0.320]" in top  # ΔCE
    assert "6.25% (4 of 64)" in top  # dead features
    assert "81.2% of the activations&#39; variance" in top
    assert "recovers 0.95 of the cross-entropy lost to zero-ablation (0.91 against " in top
    assert "runs/fake-sae/sae" in top and "fake corpus (test fixture)" in top
    assert "123,456 (CE: 65,432)" in top

    rec = section(page, "Reconstruction vs sparsity")
    for text in ("23.5", "[22.9, 24.0]", "0.812", "[0.801, 0.823]", "0.0457",
                 "[0.0441, 0.0470]", "0.934", "[0.930, 0.939]"):
        assert text in rec, text
    # MSE's baseline: predicting the mean, derived as MSE / (1 − EV).
    assert "predicting the mean ≈ 0.2433" in rec

    spl = section(page, "Spliced into the model")
    for text in ("3.210", "3.510", "6.543", "9.877",  # CE clean, SAE, mean, zero
                 "0.955 [0.947, 0.962]", "0.910 [0.895, 0.923]",  # both scores
                 "+0.300 [0.281, 0.320]", "0.272 [0.260, 0.283]",  # ΔCE, KL
                 "3.346", "6.123", "+3.333", "+6.666"):
        assert text in spl, text
    ce = hover(spl, "ce")
    assert {k for k in ce if k in {"ce-clean", "ce-sae", "ce-mean", "ce-zero"}} == {
        "ce-clean", "ce-sae", "ce-mean", "ce-zero"}
    assert ce["ce-zero"] == "zero ablation: CE 9.877 nats/token; KL 6.123"
    assert ce["ce-sae"] == "SAE spliced in: CE 3.510 nats/token; KL 0.272 [0.260, 0.283]"
    # The clean model's CE is the dashed reference; lost/recovered spans on the SAE row.
    assert ce["ce-clean-ref"] == "clean model: 3.210 nats/token"
    assert ce["ce-lost"] == "lost vs the clean model: +0.300 nats"
    assert ce["ce-recovered"] == "recovered of the zero-ablation gap: 6.366 nats"


def test_density_histogram(page, res):
    dens = section(page, "Feature density")
    tips = hover(dens, "density")
    assert tips["dead-bar"] == "dead (fired on none of 123,456 tokens): 4 features"
    bars = sorted((k for k in tips if k.startswith("bin-")), key=lambda k: int(k[4:]))
    assert [int(re.search(r": (\d+) features", tips[b]).group(1)) for b in bars] == \
        res["density_histogram"]["counts"]
    assert tips["dense-threshold"] == "dense threshold: dense ≥ 10% of tokens"
    assert "#5 31%" in dens  # the densest feature is named
    # Without the histogram, it is rebuilt from feature_density with the same totals.
    r2 = dict(res, density_histogram=None)
    tips2 = hover(section(sae_report(SAEEvalResult.from_dict(r2), {}).html, "Feature density"),
                  "density")
    counts2 = [int(re.search(r": (\d+) features", t).group(1)) for k, t in tips2.items()
               if k.startswith("bin-")]
    assert sum(counts2) == 60
    assert sum(counts2) + int(re.search(r": (\d+) features", tips2["dead-bar"]).group(1)) == 64


def test_training_curves_mark_resampling(page):
    tr = section(page, "Training")
    (svg,) = figure_svgs(tr, "training")
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    for title in ("Loss (MSE + the architecture's penalty: L1, L0 or AuxK)", "L0",
                  "Explained variance", "Dead fraction"):
        assert title in texts, title
    tips = hover(tr, "training")
    for key in ("loss", "l0", "explained_variance", "dead_fraction"):
        marks = sorted(k for k in tips if k.startswith(f"resample-{key}-"))
        assert len(marks) == 2, key
    assert tips["resample-l0-0"] == "step 40: 5 dead features resampled"
    # The held-out value and the target are drawn as references on the L0 chart.
    refs = [tips[k] for k in sorted(k for k in tips if k.startswith("ref-l0-"))]
    assert refs == ["held-out eval: 23.5", "target ≤ 100: 100.0"]
    for text in ("L1 coefficient", "learning rate", "12 min 34 s", "652 tokens/s",
                 "step 40: 5 features; step 80: 2 features", "Training settings"):
        assert text in tr, text
    assert "inference threshold" not in tr  # a ReLU SAE calibrates nothing


def test_training_settings_show_a_calibrated_threshold(res):
    res["training"]["calibration"] = {"threshold": 0.7578, "threshold_moving_average": 1.0023,
                                      "tokens": 16384}
    tr = section(sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html, "Training")
    assert ("0.7578, set from the final weights on 16,384 training tokens (the moving "
            "average during training was 1.002)") in tr


def test_report_takes_the_typed_result_and_keeps_its_figures(res, tmp_path):
    typed = SAEEvalResult.from_dict(res)
    report = sae_report(typed, fake_manifest())
    assert list(report.figures) == list(FIGURES)
    # a dict read back gives the same page
    assert report.html == sae_report(SAEEvalResult.from_dict(dict(res)), fake_manifest()).html
    report.save(tmp_path)
    for name in FIGURES:
        assert (tmp_path / "figures" / f"{name}.svg").is_file()
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 1000
    assert (tmp_path / "report.html").read_text() == report.html


def test_how_to_read_and_manifest(page):
    how = section(page, "How to read this")
    assert "Position 0 of every window is excluded from every metric" in how
    for term in ("L0", "explained variance", "CE-loss score", "ΔCE", "KL", "dead / dense",
                 "95% CI", "mean ablation"):
        assert term in how, term
    man = section(page, "Run manifest")
    assert "0123456789abcdef0123456789abcdef01234567" in man and "Full manifest (JSON)" in man


# ------------------------------------------------------------------------ targets


def test_targets_all_pass(page):
    assert marks(page) == {k: {"true"} for k in
                           ("explained_variance", "l0_max", "dead_fraction_max", "ce_loss_score")}
    top = lead(page)
    assert "meets 4 of 4 targets" in top and 'class="badge ok" data-targets-met="4"' in top
    assert "✓ target ≥ 0.7" in top and "✓ target ≤ 100" in top
    assert "✓ target ≤ 30%" in top and "✓ target ≥ 0.8" in top
    assert "✗" not in top


def test_targets_pass_and_fail(res):
    res["l0"] = 150.0  # fails l0_max 100
    res["l0_ci95"] = [140.0, 160.0]
    res["dead_fraction"] = 0.35  # fails dead_fraction_max 0.3
    res["explained_variance"] = 0.7  # exactly at the target: passes (≥)
    res["targets"]["kl_sae_max"] = 0.5  # an extra target by the suffix rule: passes
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    m = marks(doc)
    assert m["l0_max"] == {"false"} and m["dead_fraction_max"] == {"false"}
    assert m["explained_variance"] == {"true"} and m["ce_loss_score"] == {"true"}
    assert m["kl_sae_max"] == {"true"}
    top = lead(doc)
    assert "✗ target ≤ 100" in top and "✗ target ≤ 30%" in top and "✓ target ≥ 0.7" in top
    assert "meets 3 of 5 targets" in top and 'class="badge warn"' in top
    # The strip's dot is red for a missed target, green for a met one.
    rec = section(doc, "Reconstruction vs sparsity")
    assert fills(rec, "reconstruction", "strip-l0") == {"#c92a2a"}
    assert fills(rec, "reconstruction", "strip-explained_variance") == {"#2b7a3d"}
    assert fills(rec, "reconstruction", "strip-mse") == {"#3b5bdb"}  # no target: neutral


def test_target_inside_the_interval_and_delta_ce_holding_zero_are_within_noise(res):
    """A target verdict whose metric's 95% CI holds the target could go either way, and
    a ΔCE whose CI holds 0 is not shown to cost anything: both are badged."""
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    assert "target-noise" not in doc and ">within noise</span>" not in doc
    res["explained_variance"], res["explained_variance_ci95"] = 0.71, [0.69, 0.73]
    res["delta_ce"], res["delta_ce_ci95"] = 0.01, [-0.02, 0.04]
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    assert marks(doc)["explained_variance"] == {"true"}  # still judged on the estimate
    top = lead(doc)
    assert top.count('class="badge noise target-noise"') == 1
    assert "contains the target 0.7" in top
    assert top.count(">within noise</span>") == 2  # the target's and ΔCE's
    assert section(doc, "Reconstruction vs sparsity").count("target-noise") == 1


def test_missing_value_gives_unknown_mark(res):
    res["ce_loss_score"] = None
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    assert marks(doc)["ce_loss_score"] == {"unknown"}
    assert "meets 3 of 4 targets" in lead(doc)


# -------------------------------------------------------------- missing / broken


def test_nan_and_none_render_as_dash(res):
    for key in ("l0", "explained_variance", "ce_sae", "kl_sae", "delta_ce", "ce_loss_score",
                "dead_fraction", "mse"):
        res[key] = float("nan")
    for key in ("cosine_similarity", "ce_clean", "ce_zero_ablation", "dense_threshold",
                "n_tokens"):
        res[key] = None
    res["l0_ci95"] = [None, float("nan")]
    res["explained_variance_ci95"] = None
    res["ce_loss_score_mean_ablation_ci95"] = "garbage"
    res["feature_density"] = [None, float("nan"), 0.0, 0.01]
    res["density_histogram"] = {"edges": [0, 1], "counts": [1, 2, 3], "n_dead": None}
    res["training"]["history"]["loss"] = [None, float("nan"), 1.0, 2.0]
    res["training"]["history"]["l0"] = [float("nan")] * 5
    res["training"]["elapsed_s"] = None
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    assert not re.search(r"\bnan\b|\binf\b", doc, re.I) and "None" not in doc
    top = lead(doc)
    assert f"<dd>{MISSING} " in top  # L0 missing, with its unknown-target mark
    assert marks(doc)["l0_max"] == {"unknown"}
    assert MISSING in section(doc, "Reconstruction vs sparsity")
    assert MISSING in section(doc, "Spliced into the model")
    for name in FIGURES:
        for svg in figure_svgs(doc, name):
            assert svg.tag == f"{SVG}svg"  # still well-formed XML


def test_without_training_or_targets(res):
    del res["training"]
    del res["targets"]
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    heads = re.findall(r"<h2>(.*?)</h2>", doc)
    assert "Training" not in heads and heads[-1] == "Run manifest"
    assert not marks(doc) and "✓" not in doc and "✗" not in doc
    assert "targets" not in lead(doc)
    assert figure_svgs(doc, "training") == []
    assert "0.812 [0.801, 0.823]" in lead(doc)


def test_training_with_only_none_values_is_left_out(res):
    # What the CLI writes for an SAE whose artifact carries no training record.
    res["training"] = {k: None for k in ("train", "history", "resampled", "elapsed_s",
                                         "tokens_per_s")}
    doc = sae_report(SAEEvalResult.from_dict(res), fake_manifest()).html
    assert "Training" not in re.findall(r"<h2>(.*?)</h2>", doc)


def test_empty_result_still_renders():
    doc = sae_report(SAEEvalResult.from_dict({}), {}).html
    assert "<title>SAE evaluation — unknown model</title>" in doc
    assert "No headline metrics were recorded." in doc
    assert "no density data" in doc
    with pytest.raises(InterpError):
        sae_report(SAEEvalResult.from_dict([]), {})  # type: ignore[arg-type]


# ----------------------------------------------------------------------- escaping


def test_hostile_strings_are_escaped(res):
    res = copy.deepcopy(res)
    res["model"] = SCRIPT
    res["sae_path"] = SCRIPT
    res["data"]["source"] = SCRIPT
    res["hook_point"] = SCRIPT
    res["training"]["train"]["<b>key</b>"] = SCRIPT
    man = dict(fake_manifest(), model_id=SCRIPT, command=["interp", SCRIPT])
    doc = sae_report(SAEEvalResult.from_dict(res), man).html
    assert "<script" not in doc.lower() and "<b>" not in doc
    assert doc.count(str(escape(SCRIPT))) >= 5
    tree = parse(doc)
    assert "script" not in tree.tags
    assert not [a for _, a, _ in tree.attrs if a.startswith("on")]


def test_self_contained(page):
    for url in re.findall(r"(?i)(?:https?:)?//[^\s\"'<>)]+", page):
        assert url in (SVG_NS_URL, XLINK_NS_URL), url
    tree = parse(page)
    assert not {"link", "script", "iframe", "object", "embed", "img"} & set(tree.tags)
    for name in FIGURES:  # strips: reconstruction + scores; training: the 4 curves in one
        found = figure_svgs(page, name)
        assert len(found) == 1, name
        ET.fromstring(ET.tostring(found[0]))


