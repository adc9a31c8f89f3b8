"""Seed noise (`interp seeds`), comparisons (`interp compare`) and the probe's --seed (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.errors import InterpError
from interp.noise.compare import compare_results
from interp.noise.metrics import flatten
from interp.noise.results import LARGER, NO_NOISE, WITHIN
from tests.support.bad_inputs import Case, Ctx, M, _folder, _under_file
from tests.support.cli_runner import run
from tests.unit.interp.test_probes import synthetic_sentiment


def _write(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(data))
    return folder


# ------------------------------------------------------------------ the probe's --seed


def test_probe_seed_keys_the_splits(tiny_model):
    """--seed keys every random choice; seed 0 is today's default, bit for bit."""
    from interp.probing.probes import run_probe

    ds = synthetic_sentiment()
    kw = {"layers": [1], "seeds": 2, "random_weights": False, "progress": False}
    default = run_probe(tiny_model, ds, **kw).to_dict()
    zero = run_probe(tiny_model, ds, seed=0, **kw).to_dict()
    one = run_probe(tiny_model, ds, seed=1, **kw).to_dict()
    assert zero["per_seed"] == default["per_seed"]
    assert one["per_seed"] != zero["per_seed"], "another seed must give other splits"
    assert one["config"]["seed"] == 1
    again = run_probe(tiny_model, ds, seed=1, **kw).to_dict()
    assert again["per_seed"] == one["per_seed"]


# ------------------------------------------------------------------ flattening


def test_flatten_keeps_numbers_and_intervals_only():
    data = {"acc_mean": [0.5, 0.75], "acc_ci95": [0.4, 0.6], "ok": True, "name": "x",
            "nested": {"p": 0.01, "cells": {"a": 3}}, "manifest": {"seed": 4},
            "config": {"C": 0.1}, "long": list(range(100)), "items": [{"v": 1}],
            "rate": 0.3, "rate_ci95": [0.2, 0.4], "nan": float("nan")}
    metrics, cis = flatten(data)
    assert metrics == {"acc_mean[0]": 0.5, "acc_mean[1]": 0.75, "nested.p": 0.01,
                       "nested.cells.a": 3.0, "rate": 0.3}
    assert cis == {"acc": (0.4, 0.6), "rate": (0.2, 0.4)}


# ------------------------------------------------------------------ compare


def test_compare_single_runs_by_their_intervals(tmp_path):
    a = _write(tmp_path / "a", {"rate": 0.30, "rate_ci95": [0.25, 0.35],
                                "score": 0.50, "score_ci95": [0.40, 0.60], "count": 7})
    b = _write(tmp_path / "b", {"rate": 0.50, "rate_ci95": [0.45, 0.55],
                                "score": 0.55, "score_ci95": [0.45, 0.65], "count": 9})
    res = compare_results(a, b)
    by = {r.name: r for r in res.rows}
    assert res.kind == "single runs"
    assert by["rate"].verdict == LARGER and by["rate"].diff == pytest.approx(0.2)
    assert by["score"].verdict == WITHIN
    assert by["count"].verdict == NO_NOISE and by["count"].ci95 is None
    # the combined standard error: hypot(0.05, 0.05) / 1.96 per side → ±0.0707
    lo, hi = by["rate"].ci95
    assert (hi - lo) / 2 == pytest.approx(0.0707, abs=1e-3)


def test_compare_two_seed_stds_is_wide(tmp_path):
    """A std over 2 seeds gets Welch's t at 2 degrees of freedom, not z = 1.96."""
    a = _write(tmp_path / "a", {"acc_mean": [0.80], "acc_std": [0.01], "config": {"seeds": 2}})
    b = _write(tmp_path / "b", {"acc_mean": [0.83], "acc_std": [0.01], "config": {"seeds": 2}})
    row = compare_results(a, b).rows[0]
    assert row.name == "acc_mean[0]" and "Welch" in row.method
    assert row.verdict == WITHIN  # z-based: ±0.014 would call +0.03 a result
    # equal stds, n = 2 each: Welch–Satterthwaite gives 2 degrees of freedom, t = 4.303
    assert (row.ci95[1] - row.ci95[0]) / 2 == pytest.approx(4.303 * 0.01, rel=1e-3)


def _group(root: Path, values: list[dict]) -> Path:
    for s, v in enumerate(values):
        _write(root / f"seed-{s}", v)
    return _write(root, {"kind": "seeds", "verb": "probe", "seeds": list(range(len(values)))})


def test_compare_seed_groups_with_welch(tmp_path):
    a = _group(tmp_path / "a", [{"acc": 0.80, "f": 1.0}, {"acc": 0.81, "f": 1.0},
                                {"acc": 0.79, "f": 1.0}])
    b = _group(tmp_path / "b", [{"acc": 0.90, "f": 1.0}, {"acc": 0.91, "f": 1.0},
                                {"acc": 0.89, "f": 1.0}])
    res = compare_results(a, b)
    by = {r.name: r for r in res.rows}
    assert res.kind == "seed groups" and res.verb == "probe"
    assert by["acc"].verdict == LARGER and by["acc"].ci95[0] > 0.05
    assert by["f"].verdict == WITHIN and by["f"].method == "zero seed spread"
    same = compare_results(a, a)
    assert all(r.verdict != LARGER for r in same.rows)


def test_compare_refuses_mismatched_inputs(tmp_path):
    a = _write(tmp_path / "a", {"x": 1.0, "y": 2.0, "z": 3.0})
    b = _write(tmp_path / "b", {"p": 1.0, "q": 2.0, "z": 3.0})
    with pytest.raises(InterpError, match="share 1 of"):
        compare_results(a, b)
    g = _group(tmp_path / "g", [{"x": 1.0}, {"x": 2.0}])
    with pytest.raises(InterpError, match="not one of each"):
        compare_results(a, g)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(InterpError, match="no results.json"):
        compare_results(a, tmp_path / "nothing")
    with pytest.raises(InterpError, match="missing: no such folder"):  # missing, said so
        compare_results(a, tmp_path / "missing")


# ------------------------------------------------------------------ the CLI end to end


def test_seeds_and_compare_cli_on_tiny_model(tiny_model_dir, tmp_path, capsys):
    rows = [{"text": f"I {'love' if i % 2 else 'hate'} thing {i}", "label": i % 2,
             "group": f"g{i % 8}"} for i in range(64)]
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    verb = ["probe", "--model", str(tiny_model_dir), "--layer", "1", "--seeds", "2",
            "--no-random-weights", "--dataset", str(data)]
    out = tmp_path / "runs"
    code, stdout, err = run(["seeds", "3", "--out", str(out), "--", *verb], capsys)
    assert code == 0, err
    summary = json.loads((out / "results.json").read_text())
    assert summary["kind"] == "seeds" and summary["verb"] == "probe"
    assert summary["seeds"] == [0, 1, 2]
    runs = [json.loads((out / f"seed-{s}" / "results.json").read_text()) for s in range(3)]
    assert [r["config"]["seed"] for r in runs] == [0, 1, 2]
    assert [r["manifest"]["seed"] for r in runs] == [0, 1, 2]
    assert len({json.dumps(r["per_seed"]) for r in runs}) == 3, "each seed: other splits"
    acc = summary["metrics"]["test_accuracy_mean[0]"]
    assert acc["n"] == 3 and acc["min"] <= acc["mean"] <= acc["max"]
    assert (out / "report.html").exists() and (out / "figures" / "spread.svg").exists()
    assert "vary" in stdout

    code, stdout, err = run(["compare", str(out / "seed-0"), str(out / "seed-1"), "--out",
                             str(tmp_path / "cmp")], capsys)
    assert code == 0, err
    assert "interp probe: B − A" in stdout and "within noise" in stdout
    cmp = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert cmp["compared"] == "single runs" and cmp["metrics"]
    assert (tmp_path / "cmp" / "figures" / "compare.svg").exists()
    _check_in_browser(out / "report.html", "seeds_report.png", "spread")
    _check_in_browser(tmp_path / "cmp" / "report.html", "compare_report.png", "compare")


def _check_in_browser(report, screenshot: str, figure: str) -> None:
    """Headless Chromium: no console error or request, the figure shown, no overflow."""
    from tests.support.browser import ARTIFACTS, assert_clean, visit

    def check(page) -> None:
        assert page.locator("script").count() == 0
        chart = page.locator(f'svg.mpl-fig[data-figure="{figure}"]')
        assert chart.count() == 1 and chart.is_visible()
        assert page.locator("table").count() >= 1
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    assert_clean(visit(report, screenshot, check))
    assert (ARTIFACTS / screenshot).stat().st_size > 10_000


# ------------------------------------------------------------------ bad inputs


def _result(ctx: Ctx, name: str, data: dict) -> str:
    """A result folder ``name`` holding ``results.json`` = ``data``."""
    folder = ctx.tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(data))
    return str(folder)


def _seed_group(ctx: Ctx) -> str:
    for s in range(2):
        _result(ctx, f"group/seed-{s}", {"x": float(s)})
    return _result(ctx, "group", {"kind": "seeds", "verb": "probe", "seeds": [0, 1]})


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("seeds-zero", lambda c: ["seeds", "0", "--out", c.out, "--", "probe", *M(c)],
         "K ≥ 2"),
    Case("seeds-k-beyond-the-seeds", lambda c: ["seeds", "18446744073709551615", "--out",
                                                c.out, "--", "probe", *M(c)],
         "must be at most 4,294,967,296"),
    Case("seeds-no-verb", lambda c: ["seeds", "2", "--out", c.out], "give the verb"),
    Case("seeds-unknown-verb", lambda c: ["seeds", "2", "--out", c.out, "--", "bogus"],
         "unknown verb"),
    Case("seeds-verb-without-seed", lambda c: [
        "seeds", "2", "--out", c.out, "--", "corpus", "info"], "has no --seed"),
    Case("seeds-sets-seed-itself", lambda c: [
        "seeds", "2", "--out", c.out, "--", "lens", "hi", *M(c), "--seed", "3"],
        "seeds sets --seed and --out itself"),
    Case("seeds-verb-fails", lambda c: [
        "seeds", "2", "--out", c.out, "--", "lens", "hi", *M(c), "--layer", "9"],
        "out of range"),
    Case("seeds-unwritable-out", lambda c: [
        "seeds", "2", "--out", _under_file(c), "--", "lens", "hi", *M(c)], "cannot create"),
    Case("compare-no-results", lambda c: [
        "compare", _folder(c, "x"), _folder(c, "y")], "no results.json"),
    Case("compare-missing-folder", lambda c: [
        "compare", str(c.tmp / "x"), str(c.tmp / "y")], "x: no such folder"),
    Case("compare-different-verbs", lambda c: [
        "compare", _result(c, "a", {"x": 1.0, "y": 2.0, "z": 3.0}),
        _result(c, "b", {"p": 1.0, "q": 2.0, "z": 3.0}), "--out", c.out],
        "not results of the same"),
    Case("compare-group-and-single", lambda c: [
        "compare", _seed_group(c), _result(c, "a", {"x": 1.0}), "--out", c.out],
        "not one of each"),
    Case("compare-unwritable-out", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}),
        "--out", _under_file(c)], "cannot create"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("compare-empty-out", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}), "--out", ""],
        "empty output folder name"),
    Case("compare-out-is-an-input", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}), "--out",
        str(c.tmp / "a")], "is the input folder"),
]
