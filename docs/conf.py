"""Sphinx configuration of interp's documentation site (``make docs``).

Sphinx with MyST-NB and the Furo theme: pages are Markdown (MyST), the tutorials are text
notebooks (MyST Markdown) that MyST-NB executes on every build (cached by their source),
the API reference is autodoc/autosummary over the docstrings, and the site works from a
local folder (no CDN, no web fonts, search from ``searchindex.js``). ``-W -n`` (the
Makefile's flags) turns every warning, broken link and unresolved reference into an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TQDM_DISABLE", "1")  # progress bars are noise in rendered cells
# transformers imports tqdm.auto, which warns in a kernel without ipywidgets (the kernels
# inherit this environment).
os.environ.setdefault("PYTHONWARNINGS", "ignore:IProgress not found")

project = "interp"
author = "interp maintainers"
copyright = "2026, interp maintainers"  # noqa: A001 - Sphinx's name

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

exclude_patterns = ["_build", "**/.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]
html_static_path = ["_static"]

# ----------------------------------------------------------------------------- theme
html_theme = "furo"
html_title = "interp"
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
html_copy_source = False
# No request may leave the machine: no page uses math (MathJax would come from a CDN; the
# browser test of the site fails on any request), and no widget scripts (below).

# ----------------------------------------------------------------------------- MyST
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3

# Tutorials: executed on each build, cached by their source in _build/.jupyter_cache, so a
# rebuild re-runs only what changed; an error in a cell fails the build.
nb_execution_mode = os.environ.get("INTERP_DOCS_EXECUTE", "cache")
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_ipywidgets_js: dict = {}
nb_merge_streams = True

# ----------------------------------------------------------------------------- API
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
add_module_names = False

# Strict mode (-n): every cross-reference to interp's own names must resolve. Types from
# annotations that are not ours (torch's Tensor, numpy, click, ...) have no inventory
# offline, and type variables have no page: those are let through by pattern.
nitpicky = True
_OURS = r"(interp|saes|evals|reports)\."
nitpick_ignore_regex = [
    (r"py:(class|obj|data)", rf"(?!{_OURS}).*"),  # annotations: not our names
    (r"py:(class|obj)", rf"{_OURS}(.*\.)?[A-Z]"),  # our type variables (T, R, A, P)
]
