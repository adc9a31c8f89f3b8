"""Open a report in headless Debian Chromium (via playwright) and record what happened."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def require_browser() -> None:
    """Skip when Chromium or playwright is missing, except in CI, where it must exist."""
    reason = None
    if chromium_path() is None:
        reason = f"{CHROMIUM} is not installed"
    elif importlib.util.find_spec("playwright") is None:
        reason = "the playwright Python package is not installed"
    if reason and os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {reason}")
    if reason:
        pytest.skip(reason)


@dataclass
class PageVisit:
    url: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    checks: Any = None


#: One playwright and one Chromium per test process, started on the first visit and closed
#: at exit: a launch costs about a second, and each visit still gets a fresh context.
_SHARED: dict[str, Any] = {}


def shared_browser() -> Any:
    """This process's Chromium (started on first use; skips the test when there is none)."""
    require_browser()
    if "browser" not in _SHARED:
        import atexit

        from playwright.sync_api import sync_playwright

        pw = sync_playwright().start()
        _SHARED["playwright"] = pw
        _SHARED["browser"] = pw.chromium.launch(executable_path=chromium_path(),
                                                args=CHROMIUM_ARGS)
        atexit.register(_close_browser)
    return _SHARED["browser"]


def _close_browser() -> None:
    browser, pw = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    for close in (getattr(browser, "close", None), getattr(pw, "stop", None)):
        try:
            if close is not None:
                close()
        except Exception:  # noqa: BLE001 - at exit: nothing left to report to
            pass


def watched_page(context: Any, out: PageVisit) -> Any:
    """A new page of ``context`` whose console errors, page errors, requests and dialogs
    (dismissed) are recorded in ``out``."""
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("console", lambda m: out.console_errors.append(m.text)
            if m.type == "error" else None)
    page.on("pageerror", lambda e: out.page_errors.append(str(e)))
    page.on("request", lambda r: out.requests.append(r.url))
    page.on("dialog", lambda d: (out.dialogs.append(d.message), d.dismiss()))
    return page


def visit(
    path: Path, screenshot: str, check: Callable[[Any], Any] | None = None,
    width: int = 1280,
) -> PageVisit:
    """Load ``path`` in a fresh context, run ``check(page)``, save a full-page screenshot."""
    out = PageVisit(url=path.resolve().as_uri())
    context = shared_browser().new_context(viewport={"width": width, "height": 900})
    try:
        page = watched_page(context, out)
        page.goto(out.url, wait_until="load")
        page.wait_for_load_state("networkidle")
        if check is not None:
            out.checks = check(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    finally:
        context.close()
    return out


def assert_clean(v: PageVisit) -> None:
    """No console errors, no page errors, no dialogs, no request but the file itself."""
    assert not v.console_errors, v.console_errors
    assert not v.page_errors, v.page_errors
    assert not v.dialogs, v.dialogs
    assert v.requests == [v.url], v.requests
