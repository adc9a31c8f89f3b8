"""A report written by the CLI (`interp capture`, tiny model) in headless Chromium."""

from __future__ import annotations

import pytest

from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run


@pytest.mark.browser
def test_capture_report_renders_cleanly(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "cap"
    code, _, _ = run(["capture", "hello there", "Once upon a time", "--layer", "all",
                      "--positions", "all", "--model", str(tiny_model_dir), "--out", str(out)],
                     capsys)
    assert code == 0
    v = visit(out / "report.html", "capture_report.png",
              lambda page: page.locator("svg.mpl-fig").count())
    assert_clean(v)
    assert v.checks == 1  # the norm-by-layer chart
    assert (out / "figures" / "norms.svg").is_file() and (out / "figures" / "norms.png").is_file()

