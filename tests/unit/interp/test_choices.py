"""Speed settings chosen by measurement (interp/mfu/choices.py): the verdict, its margin,
the cache (keyed by device, setting, shape and threads), forced values, and the tuned
lens's ``unembed_dtype="auto"`` recorded in its manifest."""

from __future__ import annotations

import json

import pytest
import torch

from interp.errors import InterpError
from interp.mfu import choices
from interp.mfu.peak import STAMP_KEY


@pytest.fixture
def timings(monkeypatch, tmp_path):
    """Scripted timings: ``timings[name]`` seconds for every timed call of candidate
    ``name``; ``calls`` counts the calls of each (warm-up included)."""
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    state = {"t": {}, "calls": {}, "last": None}

    def cand(name):
        def run():
            state["calls"][name] = state["calls"].get(name, 0) + 1
            state["last"] = name
        return run

    monkeypatch.setattr(choices, "_time", lambda fn, dev: (fn(), state["t"][state["last"]])[1])
    state["cand"] = cand
    return state


def _cands(state, **secs):
    state["t"].update(secs)
    return {n: state["cand"](n) for n in secs}


def test_fastest_takes_a_candidate_only_past_the_margin(timings, tmp_path):
    c = choices.fastest("unembed_dtype", _cands(timings, float32=1.0, bfloat16=0.6),
                        baseline="float32", shape="a")
    assert (c.value, c.source) == ("bfloat16", "measured")
    assert "1.67× faster" in c.reason and c.seconds == {"float32": 1.0, "bfloat16": 0.6}
    # 1.05× is inside the 1.1 margin: the exact baseline stays
    c = choices.fastest("unembed_dtype", _cands(timings, float32=1.0, bfloat16=0.95),
                        baseline="float32", shape="b")
    assert c.value == "float32" and "no candidate" in c.reason
    # slower (a CPU that emulates bfloat16): float32, and the slow one is timed once only
    timings["calls"].clear()
    c = choices.fastest("unembed_dtype", _cands(timings, float32=0.4, bfloat16=1.8),
                        baseline="float32", shape="c")
    assert c.value == "float32" and timings["calls"] == {"float32": 3, "bfloat16": 1}
    with pytest.raises(InterpError, match="baseline"):
        choices.fastest("x", _cands(timings, a=1.0), baseline="float32")


def test_the_verdict_is_cached_per_shape_and_threads(timings, tmp_path, monkeypatch, capsys):
    first = choices.fastest("unembed_dtype", _cands(timings, float32=1.0, bfloat16=0.5),
                            baseline="float32", shape="576x49152")
    timings["calls"].clear()
    again = choices.fastest("unembed_dtype", _cands(timings, float32=0.1, bfloat16=9.0),
                            baseline="float32", shape="576x49152")
    assert timings["calls"] == {}  # nothing measured: read back
    assert (again.value, again.source, again.reason) == ("bfloat16", "cached", first.reason)
    other = choices.fastest("unembed_dtype", _cands(timings, float32=0.1, bfloat16=9.0),
                            baseline="float32", shape="640x262144")
    assert other.value == "float32" and other.source == "measured"
    monkeypatch.setattr(torch, "get_num_threads", lambda: 97)
    assert choices.fastest("unembed_dtype", _cands(timings, float32=0.1, bfloat16=9.0),
                           baseline="float32", shape="576x49152").source == "measured"
    remeasured = choices.fastest("unembed_dtype", _cands(timings, float32=0.1, bfloat16=9.0),
                                 baseline="float32", shape="576x49152", remeasure=True)
    assert remeasured.source == "measured"
    # an edited cache is never used: one line, measured again
    path = tmp_path / "choices.json"
    data = json.loads(path.read_text())
    key = next(k for k in data if k != STAMP_KEY)
    data[key]["value"] = "float16"
    path.write_text(json.dumps(data))
    capsys.readouterr()
    c = choices.fastest("unembed_dtype", _cands(timings, float32=0.1, bfloat16=9.0),
                        baseline="float32", shape="576x49152")
    err = capsys.readouterr().err
    assert c.source == "measured" and "sha256 mismatch" in err and "measuring again" in err


def test_given_and_fallback_measure_nothing():
    assert choices.given("unembed_dtype", "bfloat16").to_dict()["source"] == "given"
    fb = choices.fallback("unembed_dtype", "float32", "bridge unembedding")
    assert (fb.value, fb.source, fb.reason) == ("float32", "fallback", "bridge unembedding")


def test_tuned_lens_auto_unembed_dtype_is_measured_and_recorded(tiny_model, tmp_path,
                                                                monkeypatch):
    """The real measurement on the tiny model: a dtype chosen, its times, the manifest."""
    from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
    from tests.support.text_fixtures import paragraphs

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    cfg = TunedLensTrainConfig(tokens=4 * 2 * 16, seq_len=16, batch_size=2,
                               positions_per_window=8, checkpoint_every=2, init_tokens=64)
    assert cfg.unembed_dtype == "auto"
    res = train_tuned_lens(tiny_model, paragraphs(40), tmp_path / "run", cfg, progress=False)
    rec = res.manifest["choices"]["unembed_dtype"]
    assert rec["source"] == "measured" and rec["value"] in ("float32", "bfloat16")
    assert set(rec["seconds"]) == {"float32", "bfloat16"}
    assert all(s > 0 for s in rec["seconds"].values())
    ratio = rec["seconds"]["float32"] / rec["seconds"]["bfloat16"]
    assert (rec["value"] == "bfloat16") == (ratio >= 1.1)
    forced = train_tuned_lens(tiny_model, paragraphs(40), tmp_path / "run2",
                              cfg.replace(unembed_dtype="float32"), progress=False)
    assert forced.manifest["choices"]["unembed_dtype"]["source"] == "given"
