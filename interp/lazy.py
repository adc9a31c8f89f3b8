"""Names a package imports on first use (PEP 562), declared once as a table.

``__getattr__, __dir__ = lazy_names(__name__, {"run_probe": "interp.probing.probes"})``
makes ``package.run_probe`` import its module the first time it is read (and keep it in
the package's namespace after), so importing the package, and every CLI start, does not
pay for what a run may never use (scikit-learn, VADER, the trainers).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``table`` maps each lazy public name
    to the module that defines it under the same name."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
