"""INTERP_NO_PROGRESS=1 turns every bar off, including those a tool shows by default
(more than one batch), while an explicit ``progress=True`` still shows one."""

from __future__ import annotations

import interp
from interp.activations import capture as capture_module
from interp.runs.progress import make_progress, progress_enabled


def test_the_environment_turns_default_bars_off(monkeypatch):
    monkeypatch.delenv("INTERP_NO_PROGRESS", raising=False)
    assert progress_enabled(None, auto=True) and not progress_enabled(None, auto=False)
    monkeypatch.setenv("INTERP_NO_PROGRESS", "1")
    assert not progress_enabled(None, auto=True)
    assert progress_enabled(True) and make_progress(enabled=None, auto=True).disable


def test_capture_over_several_batches_obeys_it(tiny_model, monkeypatch):
    made = []

    def spy(**kwargs):  # noqa: ANN003, ANN202
        bar = make_progress(**kwargs)
        made.append(bar.disable)
        return bar

    monkeypatch.setattr(capture_module, "make_progress", spy)
    prompts = ["a b c", "d e", "f", "g h i j"]
    monkeypatch.delenv("INTERP_NO_PROGRESS", raising=False)
    interp.capture(tiny_model, prompts, layers=[0], batch_size=1)
    monkeypatch.setenv("INTERP_NO_PROGRESS", "1")
    interp.capture(tiny_model, prompts, layers=[0], batch_size=1)
    assert made == [False, True]
