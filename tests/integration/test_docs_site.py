"""The documentation site (``make docs``) in headless Chromium, and its strict build.

The pages render with no console error and no request leaving the site's folder; the
search (Sphinx's ``searchindex.js``, from the folder) finds an API name; a broken link
fails the build. ``make test`` builds the site before the tests (``make docs``); run alone,
this module builds it when it is missing or older than its sources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.browser import visit

DOCS = ROOT / "docs"
SITE = DOCS / "_build" / "html"
SOURCES = ("docs", "interp", "saes", "evals", "reports", "bench/README.md")
BUILD = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]


def _newest_source() -> tuple[float, Path | None]:
    newest, which = 0.0, None
    for name in SOURCES:
        root = ROOT / name
        paths = [root] if root.is_file() else root.rglob("*")
        for p in paths:
            # byte-code the tests write after `make docs` is not a source: counting it
            # rebuilt the whole site (4 minutes) in every `make test`
            if ({"_build", "generated", "__pycache__"} & set(p.parts) or p.suffix == ".pyc"
                    or not p.is_file()):
                continue
            if p.stat().st_mtime > newest:
                newest, which = p.stat().st_mtime, p
    return newest, which


@pytest.fixture(scope="module")
def site(real_corpus) -> Path:  # noqa: ARG001 - the pages that read the corpus need it linked
    given = os.environ.get("INTERP_DOCS_SITE")  # a site built elsewhere, checked as it is
    if given:
        return Path(given)
    index = SITE / "index.html"
    newest, which = _newest_source()
    if not index.exists() or index.stat().st_mtime < newest:
        if index.exists():  # say which source made the site stale: a test writing into
            warnings.warn(f"docs site rebuilt: {which} is newer than it", stacklevel=1)
        done = subprocess.run([*BUILD, str(DOCS), str(SITE)], cwd=ROOT, capture_output=True,
                              text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-4000:]
    return SITE


def _only_local(requests: list[str], site: Path) -> list[str]:
    """Requests that leave the site's folder (none may)."""
    root = site.resolve().as_uri()
    return [r for r in requests if not r.startswith(root)]


PAGES = {
    "index.html": ("docs_home.png", "interp"),
    "tools/lens.html": ("docs_tool_lens.png", "logit lens"),
    "api/generated/interp.probing.probes.html": ("docs_api_probes.png", "run_probe"),
    "tutorials/01-truth-probes.html": ("docs_tutorial_probes.png", "probe"),
}


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_offline(site, page):
    shot, needle = PAGES[page]
    path = site / page
    assert path.exists(), f"the site has no {page}"
    v = visit(path, shot, lambda p: p.text_content("body") or "")
    assert not v.console_errors, v.console_errors
    assert not v.page_errors, v.page_errors
    assert not _only_local(v.requests, site), _only_local(v.requests, site)
    assert needle.lower() in v.checks.lower()


def test_search_finds_an_api_name(site):
    def search(page):  # noqa: ANN001, ANN202
        page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        return [a.text_content() for a in page.locator("#search-results ul.search li a").all()]

    url_page = site / "search.html"
    # visit() loads a file; the query goes in the URL, so load the page with it directly
    from tests.support.browser import PageVisit, shared_browser, watched_page

    seen = PageVisit(url=url_page.resolve().as_uri() + "?q=run_probe")
    context = shared_browser().new_context()
    try:
        page = watched_page(context, seen)
        page.goto(seen.url, wait_until="load")
        hits = search(page)
    finally:
        context.close()
    errors = seen.console_errors + seen.page_errors
    assert not errors, errors
    assert not _only_local([r.split("?")[0] for r in seen.requests], site)
    assert any("run_probe" in (h or "") for h in hits), hits[:10]


def test_a_broken_link_fails_the_build(tmp_path):
    """Strict mode: the project's own settings turn a link to a missing page into an error."""
    src = tmp_path / "src"
    src.mkdir()
    conf = (DOCS / "conf.py").read_text()
    (src / "conf.py").write_text(conf)
    shutil.copytree(DOCS / "_ext", src / "_ext")  # the site's own extensions
    (src / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    done = subprocess.run([*BUILD, str(src), str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "missing" in done.stderr
