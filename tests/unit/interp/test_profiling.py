"""The profiler (issue 19): phase timers, the steady-state window, the verdict, --profile."""

from __future__ import annotations

import json

import pytest

import interp
from interp.profiling.analysis import _verdict, category
from interp.profiling.results import ProfileConfig
from tests.support.cli_runner import run

OUTSIDE = "outside operators (Python, framework)"


def test_operator_categories():
    assert category("aten::addmm") == "matmul" and category("aten::mm") == "matmul"
    assert category("aten::_softmax") == "attention"
    assert category("aten::scaled_dot_product_attention") == "attention"
    assert category("aten::native_layer_norm") == "norms"
    assert category("aten::mul") == "element-wise"
    assert category("aten::empty") == "other ops"


def test_verdicts_name_the_largest_share():
    v, ev = _verdict({"matmul": 0.7, "element-wise": 0.1, OUTSIDE: 0.2}, 0.05, None, {})
    assert v == "compute-bound" and "matmul 70%" in ev and "80% of wall time inside" in ev
    v, ev = _verdict({"matmul": 0.2, OUTSIDE: 0.6}, 0.0, None, {"batch_size": 1})
    assert v == "overhead-bound" and ev == "60% of wall time outside any operator at batch size 1"
    v, ev = _verdict({"matmul": 0.9, OUTSIDE: 0.1}, 0.45, None, {})
    assert v == "data-bound" and ev.startswith("45%")
    v, ev = _verdict({"matmul": 0.1, "element-wise": 0.5, OUTSIDE: 0.1}, 0.0, 0.9, {})
    assert v == "memory-bound"
    v, ev = _verdict({"matmul": 0.9, OUTSIDE: 0.05}, 0.0, 0.3, {})
    assert v == "overhead-bound" and "waits on the CPU" in ev


def test_profile_context_manager_on_tiny_capture(tiny_model, tmp_path):
    prompts = [f"The capital of France is Paris, number {i}." for i in range(24)]
    with interp.profile(tmp_path, ProfileConfig(skip_steps=2, active_steps=5)) as p:
        interp.capture(tiny_model, prompts, layers=[1], batch_size=2, progress=False)
    r = p.result
    assert r.steps == 12 and r.steps_analysed == 5
    assert r.window == "steady state: steps 3–7 of 12"
    assert {"forward", "tokenise"} <= set(r.phases)
    assert r.phase_coverage > 0.5
    # the profiler's own start-up and trace collection are a phase of their own, at the
    # top level (not nested in a tool's phase), so the coverage accounts for them
    assert r.phases["profiler"] > 0 and "profiler (nested)" not in r.phases
    assert sum(r.categories.values()) == pytest.approx(1.0, abs=1e-3)
    assert r.verdict in ("compute-bound", "overhead-bound", "data-bound")
    assert r.top_ops and all(o.self_ms >= 0 for o in r.top_ops)
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "phase: forward" in names and "interp: step" in names
    assert interp.profiling.session.active() is None
    # the result is made with its manifest (the CLI writes it as is)
    assert r.manifest is not None and r.manifest["config"] == r.config.to_dict()
    assert list(r.to_dict())[-1] == "manifest"


def test_profile_config_checks_itself():
    from interp.schema import ConfigError

    with pytest.raises(ConfigError, match="active_steps must be ≥ 1"):
        ProfileConfig(active_steps=0)
    with pytest.raises(ConfigError, match="skip_steps must be ≥ 0"):
        ProfileConfig(skip_steps=-1)


def test_profile_drops_a_failed_block(tiny_model, tmp_path):
    with pytest.raises(RuntimeError):
        with interp.profile(tmp_path / "p"):
            raise RuntimeError("boom")
    assert not (tmp_path / "p").exists()
    assert interp.profiling.session.active() is None


def test_cli_profile_writes_trace_report_and_json(tiny_model_dir, tmp_path, capsys):
    prof = tmp_path / "prof"
    code, _, err = run(["generate", "hello there", "--model", str(tiny_model_dir),
                        "--max-new-tokens", "8", "--batch-size", "1", "--profile", str(prof)],
                       capsys)
    assert code == 0, err
    assert "profile: " in err
    data = json.loads((prof / "profile.json").read_text())
    assert data["meta"]["verb"] == "generate" and data["meta"]["batch_size"] == 1
    assert data["verdict"] in ("compute-bound", "overhead-bound", "data-bound")
    assert {"load model", "generate"} <= set(data["phases"])
    assert "manifest" in data
    assert (prof / "trace.json").exists() and (prof / "profile.html").exists()
    assert (prof / "figures" / "phases.svg").exists()
    from tests.support.browser import ARTIFACTS, assert_clean, visit

    def check(page) -> None:
        assert page.locator("script").count() == 0
        assert page.locator("svg.mpl-fig").count() >= 2
        assert page.get_by_text(data["verdict"]).count() >= 1
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    assert_clean(visit(prof / "profile.html", "profile_report.png", check))
    assert (ARTIFACTS / "profile_report.png").stat().st_size > 10_000


def test_cli_profile_of_a_failed_command_writes_nothing(tiny_model_dir, tmp_path, capsys):
    prof = tmp_path / "prof"
    code, _, err = run(["lens", "hi", "--model", str(tiny_model_dir), "--layer", "9",
                        "--profile", str(prof)], capsys)
    assert code == 2 and "out of range" in err
    assert not prof.exists()
    assert interp.profiling.session.active() is None


def test_trainers_mark_their_phases_and_steps(tiny_model, tmp_path):
    """SAE and tuned-lens training: data/tokenise, forward, loss, backward and optimiser
    phases, one profiler step per training step, the phases covering the run."""
    from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
    from saes.train import SAETrainConfig, train_sae
    from tests.support.text_fixtures import paragraphs

    docs = paragraphs(60)
    with interp.profile(tmp_path / "sae", ProfileConfig(skip_steps=2, active_steps=4)) as p:
        train_sae(tiny_model, docs, tmp_path / "sae-run",
                  SAETrainConfig(layer=1, d_sae=64, tokens=64 * 10, batch_size=64, seq_len=16,
                                 windows_per_chunk=8, checkpoint_every=100), progress=False)
    r = p.result
    assert r.steps == 10
    assert {"tokenise", "forward", "loss", "backward", "optimiser"} <= set(r.phases)
    assert r.phase_coverage > 0.6, (str(r.phases), r.wall_s)
    with interp.profile(tmp_path / "lens", ProfileConfig(skip_steps=1, active_steps=2)) as p:
        train_tuned_lens(tiny_model, docs, tmp_path / "lens-run",
                         TunedLensTrainConfig(tokens=4 * 2 * 16, seq_len=16, batch_size=2,
                                              positions_per_window=4, init="zero",
                                              unembed_dtype="float32"), progress=False)
    r = p.result
    assert r.steps == 4
    assert {"tokenise", "forward", "loss", "backward", "optimiser"} <= set(r.phases)


def test_step_ranges_are_not_operators(tiny_model, tmp_path):
    """torch.profiler's ProfilerStep ranges hold the Python time between operators: it
    must count as outside operators, never as an operator of its own."""
    import time

    with interp.profile(tmp_path, ProfileConfig(skip_steps=1, active_steps=4)) as p:
        for _ in range(5):
            tiny_model.bridge(tiny_model.tokenize(["hi"])[0])
            time.sleep(0.2)  # Python time outside any operator (long enough that a forward
            # slowed down by a busy machine stays the smaller part: 0.02 s failed under load)
            interp.profiling.step()
    r = p.result
    assert not any(o.name.startswith("ProfilerStep") for o in r.top_ops)
    assert r.categories[OUTSIDE] > 0.5 and r.verdict == "overhead-bound"
