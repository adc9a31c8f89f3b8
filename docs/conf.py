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
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))  # this site's own extensions
os.environ.setdefault("TQDM_DISABLE", "1")  # progress bars are noise in rendered cells
os.environ.setdefault("INTERP_NO_PROGRESS", "1")
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
    "api_glance",  # docs/_ext/api_glance.py: the generated "API at a glance" page
    "submodule_first",  # docs/_ext: interp.causal.interchange is the module, not the function
    "costs",  # docs/_ext/costs.py: a measured cost line under every shell block
    "counts",  # docs/_ext/counts.py: counts the pages quote, computed at build time
    "support_matrix",  # docs/_ext/support_matrix.py: the family × tool table, generated
]

exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", "README.md"]

# ----------------------------------------------------------------------------- theme
html_theme = "furo"
html_title = "interp"
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["interp.css"]
html_copy_source = False
# Search works from a local folder (searchindex.js); its summaries would fetch each result
# page, which a browser refuses for file:// pages.
html_show_search_summary = False
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
# stderr is progress bars and library chatter (transformers' "Loading weights"); what a
# reader needs is printed or shown by the results themselves.
nb_output_stderr = "remove"

# ----------------------------------------------------------------------------- API
autosummary_generate = True
autosummary_imported_members = False
# Each name is documented once, in the module that defines it: a package's page lists its
# modules, not the names it re-exports (interp.load is documented at interp.models.loading),
# so every cross-reference has exactly one target.
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False


def _attribute_docstring(self):  # noqa: ANN001, ANN202 - napoleon's method
    """An attribute's or property's docstring is prose: its type comes from the annotation.
    (Napoleon reads a first line ``X: Y`` as "type X, description Y", and colons are this
    project's prose style.)"""
    lines = [self._lines.next(), *self._dedent(self._consume_to_end())]
    return self._format_field("", "", self.__class__(lines, self._config).lines())


from sphinx.ext.napoleon.docstring import GoogleDocstring  # noqa: E402

GoogleDocstring._parse_attribute_docstring = _attribute_docstring  # Sphinx 9 (pinned < 10)
add_module_names = False

# Strict mode (-n): every cross-reference to interp's own names must resolve. Types from
# annotations that are not ours (torch's Tensor, numpy, click, ...) have no inventory
# offline, and type variables have no page: those are let through by pattern.
nitpicky = True
_OURS = r"(interp|saes|evals|reports)\."
_OTHERS = (r"(torch|numpy|np|pandas|pd|scipy|sklearn|statsmodels|matplotlib|click|jinja2|"
           r"markupsafe|transformers|transformer_lens|safetensors|jaxtyping|rich|tqdm|"
           r"playwright|pytest|hypothesis|platform|html|json|os|pathlib|typing|collections|"
           r"dataclasses|contextlib|functools|itertools|subprocess|threading|signal|"
           r"importlib|tempfile|shutil|hashlib|math|random|re|io|sys|time|datetime)")
nitpick_ignore_regex = [
    (r"py:(class|obj|data)", rf"(?!{_OURS}).*"),  # annotations: not our names
    (r"py:.*", rf"{_OTHERS}(\..*)?"),  # other libraries' functions and modules
    (r"py:(class|obj)", rf"{_OURS}(.*\.)?[A-Z]"),  # our type variables (T, R, A, P)
]


# ----------------------------------------------------------------------------- re-exports
def _resolve_reexport(app, env, node, contnode):  # noqa: ANN001, ANN202 - Sphinx's hook
    """A reference to a re-exported name (``interp.generate``, ``interp.schema.Config``)
    resolves to where the name is defined and documented, so docstrings may name the
    public spelling."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith(("interp", "saes", "evals",
                                                               "reports")):
        return None
    import importlib

    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return None
        break
    else:
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or f"{module}.{qualname}" == target:
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder,
                                             node["reftype"], f"{module}.{qualname}", node,
                                             contnode)


def _skip_foreign(app, what, name, obj, skip, options):  # noqa: ANN001, ANN202, ARG001
    """Members another library generates on our subclasses (matplotlib's ``Artist.set`` on
    :class:`interp.plotting.NotebookFigure`) are its to document, not ours."""
    module = getattr(obj, "__module__", None) or ""
    return True if module.split(".")[0] in {"matplotlib"} else None


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's entry point
    app.connect("missing-reference", _resolve_reexport)
    app.connect("autodoc-skip-member", _skip_foreign)
