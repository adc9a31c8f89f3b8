"""Sphinx extension: in the API reference, a dotted name that is a module is that module.

autosummary reads ``a.b.c`` first as the attribute ``c`` of ``a.b``. A package that
re-exports a function named like one of its modules (``interp.causal`` re-exports
``interchange`` from :mod:`interp.causal.interchange`) then gets the function where its
module's page belongs, and that module's other names no entry at all. With this extension
the module wins whenever one of that name exists.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import sphinx.ext.autosummary as autosummary

_PACKAGES = ("interp.", "saes.", "evals.", "reports.")
_by_attribute = autosummary._import_by_name


def _import_by_name(name: str, grouped_exception: bool = True) -> tuple[Any, Any, str]:
    obj, parent, modname = _by_attribute(name, grouped_exception)
    if inspect.ismodule(obj) or not name.startswith(_PACKAGES):
        return obj, parent, modname
    try:
        module = importlib.import_module(name)
    except ImportError:  # an attribute, not a module: autosummary's answer stands
        return obj, parent, modname
    return module, None, name


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's entry point
    autosummary._import_by_name = _import_by_name  # Sphinx 9 (pinned < 10)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
