"""The "API at a glance" page (docs/api/glance.md) cannot be incomplete: every public name
of interp, saes and evals (their ``__all__``, and that of each subpackage the docs import
from) imports and has a docstring first line, and the page lists each of them once. The
collection is the page's own extension's (docs/_ext/api_glance.py), run without Sphinx."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from tests.support import ROOT

PACKAGES = ("interp", "saes", "evals")


@pytest.fixture(scope="module")
def glance():
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        yield importlib.import_module("api_glance")
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))


@pytest.fixture(scope="module")
def listed(glance):
    """What the page lists: package -> (entry-point modules, entries)."""
    imports = glance.doc_imports(ROOT / "docs", PACKAGES)
    out = {}
    for package in PACKAGES:
        homes = glance.entry_points(package, imports)
        out[package] = (homes, glance.public_names(package, homes[1:]))
    return out


def test_the_page_runs_the_directive_on_the_three_packages():
    page = (ROOT / "docs" / "api" / "glance.md").read_text(encoding="utf-8")
    assert "```{api-glance} " + " ".join(PACKAGES) + "\n```" in page


def test_the_subpackages_the_docs_import_from_are_entry_points(listed):
    """The tutorials and tool pages import from these; a page that stops doing so (or
    starts importing another subpackage) changes the list, which is the rule."""
    assert {"interp.causal", "interp.circuits", "interp.steering"} <= set(listed["interp"][0])
    assert {"saes.autointerp", "saes.graphs", "saes.transcoders"} <= set(listed["saes"][0])


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_imports_and_has_a_docstring_first_line(listed, package):
    _, entries = listed[package]
    broken = [f"{e.spelling}: {e.error}" for e in entries if e.error]
    assert not broken, f"public names that cannot be imported: {broken}"
    bare = [f"{e.spelling} ({e.target})" for e in entries if not e.first_line]
    assert not bare, (f"public names without a docstring first line (for a constant, a "
                      f"'#:' comment above it): {bare}")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_page_lists_every_name_of_every_all_once(listed, package):
    homes, entries = listed[package]
    wanted = {(home, name) for home in homes
              for name in importlib.import_module(home).__all__}
    shown = [(home, e.name) for e in entries for home in e.exported_by]
    assert len(shown) == len(set(shown))
    assert set(shown) == wanted
    assert len({e.target for e in entries}) == len(entries)  # one row per object


def test_a_name_without_a_docstring_is_caught(glance, tmp_path, monkeypatch):
    pkg = tmp_path / "glance_toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''\
        """A toy package."""

        #: A documented constant.
        LIMIT = 3
        BARE = 4


        def documented():
            """Does one thing.

            At length.
            """


        def bare():
            pass


        __all__ = ["BARE", "LIMIT", "bare", "documented", "missing"]
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = {e.name: e for e in glance.public_names("glance_toy")}
    assert entries["documented"].first_line == "Does one thing."
    assert entries["LIMIT"].first_line == "A documented constant."
    assert entries["bare"].first_line == "" and entries["BARE"].first_line == ""
    assert entries["missing"].error


def test_the_summary_is_the_first_sentence_across_wrapped_lines(glance):
    doc = """Mean and its ``mean ± t·s/√n`` interval (e.g. for seeds), wrapped over
    two lines. More detail."""
    assert glance.summary(doc) == ("Mean and its ``mean ± t·s/√n`` interval (e.g. for seeds), "
                                   "wrapped over two lines.")
    assert glance.first_line(doc).endswith("wrapped over")
