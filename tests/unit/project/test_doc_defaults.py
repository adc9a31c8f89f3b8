"""A default a page quotes is the CLI's default: a page that says ``--folds`` is 5 by
default fails here when the CLI's default is 3.

A quoted default is a command-line flag in backticks followed closely by "default N",
"default: N", "defaults to N" or "N by default", in prose (code blocks are left out).
Numbers are compared (``1M``, ``65,536`` and ``0.5`` read as numbers); a word is not (too
many are prose: "as many as", "the corrupted prompt"). A flag several verbs share passes
when one of them has that default. :data:`NOT_DEFAULTS` lists the quotes that name a
number which is another option's default, each with its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.cli_runner import leaf_commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "tools").glob("*.md")),
         *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]
NOT_DEFAULTS = {
    ("docs/tools/transcoders.md", "--arch", 32.0): "k 32 is --k's default, said with the "
                                                    "architecture it belongs to",
}
_FLAG = re.compile(r"`(--[a-z][\w-]*)(?:[ =][^`]*)?`")
_NUMBER = r"`?\**(\d[\d,]*(?:\.\d+)?[kKM]?)\**`?"
_QUOTE = re.compile(rf"^[^.;`]{{0,30}}?(?:default(?:s to|:| is)?\s+{_NUMBER}"
                    rf"|{_NUMBER}\s+by default)")


def _number(text: str) -> float:
    scale = {"k": 1e3, "K": 1e3, "M": 1e6}.get(text[-1], 1.0)
    return float(text.rstrip("kKM").replace(",", "")) * scale


def cli_defaults() -> dict[str, set[float]]:
    """Every flag of every verb with the numeric defaults it has somewhere."""
    out: dict[str, set[float]] = {}
    for cmd in leaf_commands().values():
        for param in cmd.params:
            default = param.default
            for opt in getattr(param, "opts", []):
                out.setdefault(opt, set())
                if isinstance(default, (int, float)) and not isinstance(default, bool):
                    out[opt].add(float(default))
    return out


def quoted_defaults(page: Path) -> list[tuple[str, float, str]]:
    """``(flag, value, context)`` for each default the page's prose quotes."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    found = []
    for m in _FLAG.finditer(text):
        after = text[m.end():m.end() + 120].replace("\n", " ")
        q = _QUOTE.search(after)
        if q:
            found.append((m.group(1), _number(q.group(1) or q.group(2)), after[:q.end()]))
    return found


def test_the_check_reads_quoted_defaults(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Split into `--folds` folds (5 by default). `--tokens` (default 65,536)\n"
                    "and `--dead-window` (1M by default). `--x 3` is not a default.\n"
                    "```bash\ninterp x --seeds 9   # default 9\n```\n")
    assert [(f, v) for f, v, _ in quoted_defaults(page)] == [
        ("--folds", 5.0), ("--tokens", 65536.0), ("--dead-window", 1e6)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_quoted_defaults_are_the_cli_defaults(page):
    defaults = cli_defaults()
    rel = page.relative_to(ROOT).as_posix()
    wrong = []
    for flag, value, context in quoted_defaults(page):
        if (rel, flag, value) in NOT_DEFAULTS:
            continue
        if flag not in defaults:
            wrong.append(f"{flag}: no verb has this flag ({context!r})")
        elif value not in defaults[flag]:
            wrong.append(f"{flag}: the page says {value:g}, the CLI "
                         f"{sorted(defaults[flag]) or 'no number'} ({context!r})")
    assert not wrong, f"{rel}:\n" + "\n".join(wrong)
