"""The test tiers: a bare ``pytest`` runs the fast tier, every real-model test is marked slow,
and a fast test that loads an embedded model fails instead of quietly slowing the tier."""

from __future__ import annotations

import ast
import tomllib

import pytest

from tests.conftest import INTEGRATION_DIR, REAL_MODEL_FIXTURES, uses_real_model
from tests.support import ROOT


def _requests_fixture(node: ast.AST) -> bool:
    """A test function or a fixture: the functions whose arguments pytest fills."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return node.name.startswith("test_") or any(
        "fixture" in ast.unparse(d) for d in node.decorator_list)


def test_real_model_fixtures_are_requested_only_under_integration():
    """The real models' fixtures live in tests/integration/conftest.py; a test elsewhere that
    asks for one belongs there (it would be slow, and the fast tier would not run it)."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if INTEGRATION_DIR in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _requests_fixture(node):
                args = node.args  # type: ignore[attr-defined]
                names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
                if names & REAL_MODEL_FIXTURES:
                    bad.append(f"{path.relative_to(ROOT)}::{node.name} "  # type: ignore[attr-defined]
                               f"requests {sorted(names & REAL_MODEL_FIXTURES)}")
    assert not bad, "move these to tests/integration/:\n" + "\n".join(bad)


def test_every_real_model_test_of_this_session_is_marked_slow(request):
    unmarked = [item.nodeid for item in request.session.items
                if uses_real_model(item) and item.get_closest_marker("slow") is None]
    assert not unmarked, unmarked


def test_a_fast_test_that_loads_an_embedded_model_fails():
    import interp

    with pytest.raises(pytest.fail.Exception, match="is not marked slow"):
        interp.load()
    with pytest.raises(pytest.fail.Exception, match="gemma3-270m"):
        interp.load("gemma3-270m")


def test_a_bare_pytest_runs_the_fast_tier():
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["addopts"][-2:] == ["-m", "not slow"]
    assert ini["timeout"] > 0
