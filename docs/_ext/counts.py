"""Counts the pages quote, computed when the site is built rather than kept by hand.

The role ``{count}`bad-inputs``` is the number of cases in the bad-input matrix (every
verb's one-line refusals: the ``BAD_INPUTS`` lists of the unit-test modules, collected by
``tests.support.bad_inputs.all_cases`` and run by ``tests/unit/interp/test_bad_inputs.py``),
so adding a case changes the page without editing it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def bad_input_cases() -> int:
    """The number of cases in the bad-input matrix: ``len(all_cases())`` (importing the
    unit-test modules that declare cases; none of them imports ``tests/conftest.py``, whose
    network guard and temporary ``INTERP_CACHE`` the build must not inherit)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return len(importlib.import_module("tests.support.bad_inputs").all_cases())


#: What ``{count}`NAME``` shows, by name.
COUNTS: dict[str, Callable[[], int]] = {"bad-inputs": bad_input_cases}


def setup(app: Any) -> dict[str, Any]:
    """Sphinx's entry point: the ``count`` role."""
    from docutils import nodes

    def count_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: ANN001, ANN202, ARG001, PLR0913
        counter = COUNTS.get(text.strip())
        if counter is None:
            msg = inliner.reporter.error(f"no count named {text!r} (known: {sorted(COUNTS)})",
                                         line=lineno)
            return [nodes.literal(text=text)], [msg]
        return [nodes.Text(f"{counter():,}")], []

    app.add_role("count", count_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
