"""The SAE figures (saes.figures) and typed results (saes.results): what each figure draws,
its hover texts, and to_dict / to_frame / _repr_html_.

Every number is FAKE (the fixture of tests/unit/reports/test_sae_report.py), not a measurement.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from saes.figures import (
    ce_figure,
    density_figure,
    hover_titles,
    reconstruction_figure,
    score_figure,
    training_figure,
)
from saes.metrics import SAEEvalResult
from saes.results import (
    DENSITY_BINS,
    DensityHistogram,
    TrainingRecord,
    format_with_ci,
)
from saes.train import SAETrainResult
from tests.unit.reports.test_sae_report import fake_result

BAD, OK = "#c92a2a", "#2b7a3d"


@pytest.fixture
def res() -> SAEEvalResult:
    return SAEEvalResult.from_dict(fake_result())


def _by_gid(fig: Figure) -> dict[str, object]:
    return {a.get_gid(): a for a in fig.findobj() if a.get_gid()}


def test_every_hover_text_has_its_artist(res):
    for build in (reconstruction_figure, score_figure, ce_figure, density_figure,
                  training_figure):
        fig = build(res)
        tips = hover_titles(fig)
        assert tips and set(tips) <= set(_by_gid(fig)), build.__name__
        assert all(t and "nan" not in t.lower() for t in tips.values()), build.__name__


def test_density_figure_bars_dead_bar_threshold_and_floor():
    """The facts the old SVG histogram test checked: one bar per bin with its count (an
    empty bin has height 0), the dead features as a bar of their own, the one-token floor."""
    rec = SAEEvalResult(n_tokens=500, dense_threshold=0.5,
                     density_histogram=DensityHistogram([-3.0, -2.0, -1.0, 0.0], [2, 0, 5], 3))
    fig = density_figure(rec)
    art, tips = _by_gid(fig), hover_titles(fig)
    bars = [art[f"bin-{k}"] for k in range(3)]
    assert all(isinstance(b, Rectangle) for b in bars)
    assert [b.get_height() for b in bars] == [2, 0, 5]  # type: ignore[attr-defined]
    assert tips["bin-2"] == "density 10% to 100% of tokens: 5 features"
    assert art["dead-bar"].get_height() == 3  # type: ignore[attr-defined]
    assert tips["dead-bar"] == "dead (fired on none of 500 tokens): 3 features"
    assert sum(b.get_height() for b in bars) + 3 == 10  # type: ignore[attr-defined]
    thr = art["dense-threshold"]
    assert isinstance(thr, Line2D) and thr.get_xdata()[0] == pytest.approx(math.log10(0.5))
    assert tips["dense-threshold"] == "dense threshold: dense ≥ 50% of tokens"
    floor = art["floor"]
    assert isinstance(floor, Line2D) and floor.get_xdata()[0] == pytest.approx(-math.log10(500))
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert "1 token" in texts and "dead" in texts


def test_density_figure_without_data_says_so():
    fig = density_figure(SAEEvalResult.from_dict({}))
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert "no density data" in texts
    assert not [g for g in hover_titles(fig) if g.startswith("bin-")]


def test_reconstruction_strips_colour_by_target_and_show_baseline(res):
    res.l0 = 150.0  # misses l0 ≤ 100
    fig = reconstruction_figure(res)
    art, tips = _by_gid(fig), hover_titles(fig)
    assert art["strip-l0"].get_color() == BAD  # type: ignore[attr-defined]
    assert art["strip-explained_variance"].get_color() == OK  # type: ignore[attr-defined]
    assert art["strip-mse"].get_color() == "#3b5bdb"  # no target: neutral
    assert tips["strip-explained_variance"] == \
        "explained variance: 0.812 [0.801, 0.823]  (target ≥ 0.7)"
    assert art["target-l0"].get_xdata()[0] == 100  # type: ignore[attr-defined]
    # MSE's baseline (predict the mean) = MSE / (1 − EV)
    assert art["baseline-mse"].get_xdata()[0] == pytest.approx(0.04567 / (1 - 0.8123))  # type: ignore[attr-defined]
    assert len(fig.axes) == 4
    assert [ax.get_title(loc="left").split("  ·")[0] for ax in fig.axes] == [
        "L0", "explained variance", "cosine similarity", "MSE"]


def test_ce_figure_puts_four_rows_on_one_axis(res):
    fig = ce_figure(res)
    art = _by_gid(fig)
    (ax,) = fig.axes
    labels = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    # one row each, the clean model on top
    assert sorted(labels, key=labels.__getitem__, reverse=True) == [
        "clean model", "SAE spliced in", "mean ablation", "zero ablation"]
    assert art["ce-clean"].get_ydata()[0] == labels["clean model"]  # type: ignore[attr-defined]
    xs = {k: art[f"ce-{k}"].get_xdata()[0] for k in ("clean", "sae", "mean", "zero")}  # type: ignore[attr-defined]
    assert xs == pytest.approx({"clean": 3.2101, "sae": 3.5102, "mean": 6.5432, "zero": 9.8765})
    lost, recovered = art["ce-lost"], art["ce-recovered"]
    assert lost.get_x() == pytest.approx(3.2101)  # type: ignore[attr-defined]
    assert lost.get_width() == pytest.approx(0.3001)  # type: ignore[attr-defined]
    assert recovered.get_width() == pytest.approx(9.8765 - 3.5102)  # type: ignore[attr-defined]


def test_training_figure_panels_resampling_and_references(res):
    fig = training_figure(res)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_visible()]
    assert titles == ["Loss (MSE + the architecture's penalty: L1, L0 or AuxK)", "L0",
                      "Explained variance", "Dead fraction"]
    for ax in fig.axes:
        assert len(ax.lines[0].get_xdata()) == 120  # every step drawn
    tips = hover_titles(fig)
    assert sum(k.startswith("resample-") for k in tips) == 8  # 2 events × 4 panels
    assert tips["resample-loss-1"] == "step 80: 2 dead features resampled"
    assert tips["ref-dead_fraction-1"] == "target ≤ 30%: 30%"
    # A training record alone (as train_sae returns it) has no held-out references.
    alone = training_figure(res.training)
    assert not [k for k in hover_titles(alone) if k.startswith("ref-")]


def test_training_figure_takes_only_the_curves_there_are():
    rec = TrainingRecord(history={"loss": [3.0, 2.0, 1.5], "l0": [9.0, 8.0, 7.0]})
    fig = training_figure(rec)
    assert [ax.get_title(loc="left") for ax in fig.axes if ax.get_visible()] == [
        "Loss (MSE + the architecture's penalty: L1, L0 or AuxK)", "L0"]


# ------------------------------------------------------------------------ results


def test_eval_result_to_dict_is_the_results_json(res):
    d = fake_result()
    out = res.to_dict()
    assert list(out) == [k for k in _ORDER if k in d]
    for key, value in d.items():
        if key == "density_histogram":
            assert out[key] == value
        else:
            assert out[key] == pytest.approx(value) if isinstance(value, float) else \
                out[key] == value, key
    json.dumps(out, allow_nan=False)
    # no spliced CE measured: its keys are left out, as before
    bare = SAEEvalResult.from_dict({k: v for k, v in d.items() if not k.startswith(
        ("ce_", "kl_", "delta_ce", "n_ce"))})
    assert "ce_clean" not in bare.to_dict() and "n_ce_tokens" not in bare.to_dict()


_ORDER = ["model", "hook_point", "layer", "d_in", "d_sae", "eval", "n_tokens", "l0", "l0_ci95",
          "l0_std", "explained_variance", "explained_variance_ci95", "mse", "mse_ci95",
          "cosine_similarity", "cosine_similarity_ci95", "feature_density", "dead_fraction",
          "dead_fraction_n", "dense_fraction", "dense_threshold", "density_histogram",
          "n_ce_tokens", "ce_clean", "ce_sae", "ce_zero_ablation", "ce_mean_ablation",
          "ce_loss_score", "ce_loss_score_ci95", "ce_loss_score_mean_ablation",
          "ce_loss_score_mean_ablation_ci95", "delta_ce", "delta_ce_ci95", "kl_sae",
          "kl_sae_ci95", "kl_zero_ablation", "kl_mean_ablation", "baselines_cached",
          "sae_path", "data", "targets", "training", "manifest"]


def test_eval_result_frame_checks_and_notebook_view(res):
    frame = res.to_frame()
    row = frame.set_index("metric").loc["explained_variance"]
    assert row["value"] == pytest.approx(0.8123)
    assert (row["ci95_lo"], row["ci95_hi"]) == pytest.approx((0.8011, 0.8234))
    assert row["n_tokens"] == 123456
    assert frame.set_index("metric").loc["ce_loss_score", "n_tokens"] == 65432
    checks = {c.key: c.passed for c in res.checks()}
    assert checks == dict.fromkeys(("explained_variance", "l0_max", "dead_fraction_max",
                                    "ce_loss_score"), True)
    html = res._repr_html_()
    assert "SAE evaluation — fake/tiny-model" in html and "<svg" in html
    assert format_with_ci("l0", res.l0, res.l0_ci95) in html  # "23.5 [22.9, 24.0]"
    assert "<script" not in html


def test_density_histogram_bins_match_the_old_ones():
    dens = [0.0, 1e-9, 0.003, 0.003, 0.6, 1.0]
    h = DensityHistogram.of(dens)
    assert h.edges == list(DENSITY_BINS) and len(h.counts) == 28
    assert h.n_dead == 1 and sum(h.counts) == 5 and h.counts[-1] == 2  # 0.6 and 1.0
    assert h.counts[0] == 1 and h.counts[int((math.log10(0.003) + 7) / 0.25)] == 2


def test_train_result_frame_record_and_notebook_view(tmp_path):
    hist = {"loss": [3.0, 2.0], "mse": [2.0, 1.0], "l1": [1.0, 1.0], "l0": [9.0, 8.0],
            "dead_fraction": [0.0, 0.1], "explained_variance": [0.5, 0.6], "lr": [1e-3, 1e-3],
            "l1_coef": [1.0, 1.0]}
    run = SAETrainResult(Path(tmp_path), 2, 4, False, 0, hist, 100.0, 2.5, None, [[2, 3]])
    frame = run.to_frame()
    assert list(frame["step"]) == [1, 2] and list(frame["l0"]) == [9.0, 8.0]
    assert run.record.events == [(2.0, 3.0)]
    d = run.to_dict()
    assert d["steps_done"] == 2 and d["history"] == hist and d["resampled"] == [[2, 3]]
    json.dumps(d, allow_nan=False)
    html = run._repr_html_()
    assert "2 of 4 (unfinished: rerun to resume)" in html and "<svg" in html
