"""Execute the site's notebook pages in parallel, into the cache the site build reads.

``make docs`` runs this before ``sphinx-build``. MyST-NB executes the pages one after the
other, each kernel using every core; here they run ``--jobs`` at a time (default: one per
core), each kernel with its share of the cores, which keeps both cores of a small machine
busy while a kernel starts, imports and loads its model. The executed notebooks go into
the same jupyter-cache (``nb_execution_cache_path`` in docs/conf.py), keyed by their code
cells as MyST-NB keys them, so the build that follows takes them from the cache and
executes nothing. A page already cached is skipped. A page that fails is reported here
and left out of the cache: the build then runs it itself and fails on it, with the
traceback, as it always did.

    .venv/bin/python scripts/execute_docs.py [--jobs N]
    .venv/bin/python scripts/execute_docs.py --check docs/tutorials/06-causal.md

``--check PAGE`` executes one page alone, outside the cache, prints its time and the
first error's traceback (what a page's author runs while writing it).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def notebook_pages() -> list[Path]:
    """The pages MyST-NB executes (MyST text notebooks), largest first (a rough cost
    order, so the long ones start first)."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts
             and "file_format: mystnb" in p.read_text(encoding="utf-8")[:400]]
    return sorted(pages, key=lambda p: -p.stat().st_size)


def _execute(job: tuple[str, str, int]) -> tuple[str, str, float]:
    """Execute one page unless the cache holds it: ``(page, "cached"|"executed"|error, s)``."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import myst_nb_reader_plugin

    page, cache_path, timeout = job
    cache = get_cache(cache_path)
    nb = myst_nb_reader_plugin(page)
    try:
        cache.match_cache_notebook(nb)
        return page, "cached", 0.0
    except KeyError:
        pass
    result = single_nb_execution(nb, cwd=str(Path(page).parent), timeout=timeout,
                                 allow_errors=False, meta_override=True)
    if result.err is not None:
        return page, f"failed: {type(result.err).__name__}", result.time
    cache.cache_notebook_bundle(CacheBundleIn(nb, page, data={"execution_seconds": result.time}),
                                check_validity=False, overwrite=True)
    return page, "executed", result.time


def _check(page: Path) -> int:
    """Execute one page outside the cache: its time, or its error with the traceback."""
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import myst_nb_reader_plugin

    runpy.run_path(str(DOCS / "conf.py"))  # the build's environment for the kernel
    nb = myst_nb_reader_plugin(str(page.resolve()))
    result = single_nb_execution(nb, cwd=str(page.resolve().parent), timeout=1800,
                                 allow_errors=False, meta_override=True)
    if result.err is not None:
        print(result.exc_string or repr(result.err), file=sys.stderr)
        print(f"execute_docs: {page}: failed after {result.time:.0f} s", file=sys.stderr)
        return 1
    print(f"execute_docs: {page}: executed in {result.time:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f})", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="Pages executed at a time (default: one per core).")
    parser.add_argument("--check", type=Path, default=None, metavar="PAGE",
                        help="Execute this one page outside the cache and report.")
    args = parser.parse_args(argv)
    if args.check is not None:
        return _check(args.check)
    # the kernels' environment is the build's (docs/conf.py sets it at import)
    conf = runpy.run_path(str(DOCS / "conf.py"))
    if conf.get("nb_execution_mode") != "cache":
        print(f"execute_docs: nb_execution_mode is {conf.get('nb_execution_mode')!r}, "
              "not 'cache': nothing to do", file=sys.stderr)
        return 0
    pages = notebook_pages()
    jobs = max(1, min(args.jobs, len(pages)))
    threads = max(1, (os.cpu_count() or 1) // jobs)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    Path(conf["nb_execution_cache_path"]).mkdir(parents=True, exist_ok=True)
    # jupyter-cache creates its SQLite tables on first use, unguarded: two workers meeting
    # an empty cache both issue CREATE TABLE and one fails ("table settings already
    # exists"), which is how a clean clone's `make docs` failed once. Create it here first.
    from jupyter_cache import get_cache
    get_cache(conf["nb_execution_cache_path"]).db  # noqa: B018  (the property creates the tables)
    work = [(str(p), conf["nb_execution_cache_path"], int(conf["nb_execution_timeout"]))
            for p in pages]
    start = time.perf_counter()
    failed = 0
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for page, status, seconds in pool.imap_unordered(_execute, work):
            failed += status.startswith("failed")
            rel = Path(page).relative_to(ROOT)
            print(f"execute_docs: {rel}: {status}" + (f" ({seconds:.0f} s)" if seconds else ""),
                  file=sys.stderr)
    print(f"execute_docs: {len(pages)} pages, {jobs} at a time with {threads} thread(s) each, "
          f"{time.perf_counter() - start:.0f} s" + (f"; {failed} failed (the build reruns "
                                                     "them and shows why)" if failed else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
