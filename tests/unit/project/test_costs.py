"""The cost lines: commands found in the pages, measured figures, and the site build that
shows them and fails on a command without one (tested below on a page written here, so the
check is shown to fire).

The figures come from ``scripts/measure_costs.py`` (``docs/costs.json``); every entry
there is a measurement, and every documented command has one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import costs  # noqa: E402  (docs/_ext/costs.py)


def test_commands_are_found_in_readme_and_tool_pages():
    found = costs.documented_commands()
    pages = {p for ps in found.values() for p in ps}
    assert "README.md" in pages and "docs/tools/sae.md" in pages
    assert 'interp lens "The capital of France is" --out out/' in found


def test_block_commands_normalises_what_a_page_shows():
    block = ("interp sae train --layer 6 \\\n    --out runs/x   # a comment\n"
             ".venv/bin/interp eval sycophancy --out s\n"
             "cat results.json\nmake demo   # setup\n")
    assert costs.block_commands(block) == [
        "interp sae train --layer 6 --out runs/x", "interp eval sycophancy --out s",
        "make demo"]


def test_every_documented_command_has_a_cost():
    measured = costs.load_costs()["commands"]
    missing = [f"{key}  ({', '.join(pages)})" for key, pages
               in costs.documented_commands().items() if key not in measured]
    assert not missing, ("no measured cost (run scripts/measure_costs.py --missing):\n"
                         + "\n".join(missing))


def test_readme_table_is_the_current_rendering():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = text.index(costs.README_START), text.index(costs.README_END)
    shown = text[start:end + len(costs.README_END)]
    assert shown == costs.readme_section(costs.load_costs()), (
        "the README's cost table is stale: run scripts/measure_costs.py --readme")


def test_every_cost_is_a_measurement():
    for key, e in costs.load_costs()["commands"].items():
        assert e["seconds"] > 0 and e["peak_rss_mib"] > 0, key
        assert len(e["load_average"]) == 3 and e["date"] and e["commit"], key
        scale = e.get("scale")
        if scale:  # two smaller runs, extrapolated to the size the command runs at
            assert scale["also_measured"] < scale["measured"] < scale["full"], key
            assert e["seconds"] > scale["measured_seconds"], key


def test_cost_text_says_how_a_long_run_was_scaled():
    entry = {"seconds": 6000.0, "peak_rss_mib": 2048.0, "disk_mib": 300.0, "needs": "x",
             "scale": {"by": "tokens", "measured": 200_000, "measured_seconds": 600.0,
                       "rate": 333.3, "full": 2_000_000}}
    text = costs.cost_text(entry)
    assert text.startswith("≈ 1.7 h (scaled from 200,000 tokens, 10 min")
    assert "2.0 GiB" in text and "300 MiB" in text and "needs x" in text
    assert "; " not in text.partition(")")[0]
    entry["scale"]["caveat"] = "the training's steps only"
    assert "to 2,000,000; the training's steps only)" in costs.cost_text(entry)
    entry["scale"]["from"] = "interp sae train --layer 6"  # a line derived from its runs
    assert "to 2,000,000 tokens; the training's steps only)" in costs.cost_text(entry)
    table = costs.readme_table({"commands": {"x": entry}}, ["x"])
    assert "(scaled from 200,000 tokens; the training's steps only)" in table


def test_a_phase_line_bounds_its_memory_by_the_whole_run():
    """A ``make`` target measured as a phase of ``make test`` has no peak of its own: its
    line says the whole run's, as a bound."""
    entry = {"seconds": 330.0, "peak_rss_mib": 10500.0, "peak_of": "make test"}
    assert "peak RAM ≤ 10.3 GiB (the whole `make test`'s)" in costs.cost_text(entry)
    assert "| ≤ 10.3 GiB (the whole" in costs.readme_table({"commands": {"make x": entry}},
                                                          ["make x"])


@pytest.mark.parametrize("known", [True, False])
def test_site_build_fails_on_a_command_without_a_cost(tmp_path, known):
    """The control: a page with an unmeasured command fails the strict build."""
    src = tmp_path / "src"
    src.mkdir()
    command = ('interp lens "The capital of France is" --out out/' if known
               else "interp lens --a-flag-no-page-has")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'docs' / '_ext')!r})\n"
        "extensions = ['myst_parser', 'costs']\n", encoding="utf-8")
    (src / "index.md").write_text(f"# t\n\n```bash\n{command}\n```\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html",
                           str(src), str(tmp_path / "out")], capture_output=True, text=True)
    if known:
        assert done.returncode == 0, done.stderr
        assert "Cost here" in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    else:
        assert done.returncode != 0 and "no measured cost" in done.stderr
