"""Sphinx extension: the "API at a glance" table, generated from the packages at build time.

The directive, in a MyST page::

    ```{api-glance} interp saes evals
    ```

imports each package and lists every name of its ``__all__``, and of the ``__all__`` of each
of its subpackages that the documentation's own code imports from (``from interp.causal
import ...`` in a tutorial or a tool page makes :mod:`interp.causal` an entry point), with
the first line of its docstring, the module that defines it, and a link to its entry in the
API reference. Within a package, the names are grouped by the subpackage (or top-level
module) that defines them, which is the tool they belong to; each group is headed by that
subpackage's own summary.

A name that cannot be imported, or whose docstring has no first line, is a warning (an error
under ``-W``): the page cannot silently be incomplete. The collection is plain Python
(:func:`public_names`), shared with ``tests/unit/project/test_api_glance.py``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: Files under the documentation's source folder that are not its pages' source.
_SKIP_DIRS = {"_build", "_ext", "_static", "generated", ".ipynb_checkpoints"}
_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\b|import\s+([A-Za-z_][\w.]*))",
                     re.M)


@dataclass(frozen=True)
class PublicName:
    """One name of a public ``__all__``, where it is defined, and its summary."""

    name: str  #: the name, as exported
    exported_by: tuple[str, ...]  #: the public modules whose ``__all__`` lists it
    module: str  #: the module that defines it (where the API reference documents it)
    qualname: str  #: its qualified name in that module
    kind: str  #: class, function, data, module
    first_line: str  #: the first line of its docstring ("" when there is none)
    summary: str  #: its docstring's first sentence (see :func:`summary`)
    error: str = ""  #: why it could not be imported ("" when it could)

    @property
    def target(self) -> str:
        """The dotted path of its entry in the API reference."""
        return f"{self.module}.{self.qualname}"

    @property
    def spelling(self) -> str:
        """How a user names it: through the shortest public module that exports it."""
        return f"{self.exported_by[0]}.{self.name}"


def doc_imports(srcdir: Path, packages: Iterable[str]) -> dict[str, list[Path]]:
    """Every dotted module of ``packages`` that the documentation's pages import (``from X
    import`` or ``import X``), with the pages that do."""
    roots = tuple(packages)
    found: dict[str, list[Path]] = {}
    for path in sorted(srcdir.rglob("*")):
        if path.suffix not in {".md", ".rst", ".py", ".ipynb"} or not path.is_file():
            continue
        if _SKIP_DIRS & set(path.relative_to(srcdir).parts[:-1]) or path.name == "conf.py":
            continue
        for match in _IMPORT.finditer(path.read_text(encoding="utf-8", errors="replace")):
            module = match.group(1) or match.group(2)
            if module.split(".")[0] in roots:
                found.setdefault(module, []).append(path)
    return found


def entry_points(package: str, imported: Iterable[str]) -> list[str]:
    """The package, then those of its subpackages (not plain modules) in ``imported`` that
    declare an ``__all__``: the modules whose ``__all__`` is public API."""
    out = [package]
    for name in sorted(set(imported)):
        if name == package or not name.startswith(package + "."):
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue  # a page importing a module that does not exist fails on its own
        if hasattr(module, "__path__") and "__all__" in vars(module):
            out.append(name)
    return out


def first_line(doc: str | None) -> str:
    """The first line of a docstring, stripped ("" when there is none)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    return lines[0].strip() if lines else ""


#: Abbreviations whose period ends no sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.", "al.", "approx.", "resp.")


def summary(doc: str | None) -> str:
    """The summary of a docstring: its first sentence (which the project's docstrings wrap
    over two lines at times, so the first line alone can stop mid-phrase), read from its
    first paragraph; the paragraph itself when no sentence ends inside it."""
    lines = inspect.cleandoc(doc or "").splitlines()
    paragraph = []
    for line in lines:
        if not line.strip():
            break
        paragraph.append(line.strip())
    text = " ".join(paragraph)
    for end in re.finditer(r"[.!?](?=\s)", text):
        candidate = text[: end.end()]
        if (candidate.count("``") % 2 == 0 and candidate.count("`") % 2 == 0
                and candidate.count("(") == candidate.count(")")
                and not candidate.endswith(_ABBREVIATIONS)):
            return candidate
    return text


def _attribute_doc(module: str, name: str) -> str | None:
    """The ``#:`` comment (or string after) of a module-level name, as autodoc reads it."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(module).find_attr_docs()
    except Exception:  # noqa: BLE001 - no source: no attribute docs
        return None
    lines = docs.get(("", name))
    return "\n".join(lines) if lines else None


def _describe(obj: Any, name: str, home: ModuleType) -> tuple[str, str, str, str | None]:
    """(module, qualname, kind, docstring) of an exported object."""
    if inspect.ismodule(obj):
        return obj.__name__, "", "module", obj.__doc__
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if (inspect.isclass(obj) or inspect.isroutine(obj)) and module and qualname:
        return module, qualname, "class" if inspect.isclass(obj) else "function", obj.__doc__
    callback = getattr(obj, "callback", None)  # a click command: its help is its docstring
    if callable(callback) and isinstance(getattr(obj, "help", None), str):
        return callback.__module__, name, "data", obj.help
    # data (a constant, a registry): documented where it is assigned, by a ``#:`` comment;
    # find the module that assigns it by following the package's own import
    source = _data_home(home, name, obj)
    return source, name, "data", _attribute_doc(source, name)


def _data_home(home: ModuleType, name: str, obj: Any) -> str:
    """The module whose source documents ``name`` (``home`` re-exports it from there,
    perhaps through other modules): followed along the ``from X import`` chain."""
    queue, seen = [home.__name__], set()
    while queue:
        module_name = queue.pop(0)
        if module_name in seen:
            continue
        seen.add(module_name)
        module = importlib.import_module(module_name)
        if vars(module).get(name) is not obj:
            continue
        if _attribute_doc(module_name, name) is not None:
            return module_name
        queue.extend(_imported_from(module))
    # a name the package loads lazily (interp.lazy) is not imported in its source: look in
    # the package's loaded modules for the one that assigns it
    root = home.__name__.split(".")[0]
    for module_name, module in sorted(sys.modules.items()):
        if (module_name.split(".")[0] == root and module is not None
                and vars(module).get(name) is obj and _attribute_doc(module_name, name)):
            return module_name
    return home.__name__


def _imported_from(module: ModuleType) -> list[str]:
    """The absolute modules that ``module``'s source imports names from."""
    import ast

    path = getattr(module, "__file__", None)
    if path is None:
        return []
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return [node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0]


def public_names(package: str, subpackages: Iterable[str] = ()) -> list[PublicName]:
    """Every name of ``package.__all__`` and of each subpackage's ``__all__``, one entry per
    object (a name re-exported by the package and a subpackage is one entry that records
    both), in ``__all__`` order, package first."""
    seen: dict[tuple[str, str], PublicName] = {}
    order: list[tuple[str, str]] = []
    for home_name in [package, *subpackages]:
        home = importlib.import_module(home_name)
        for name in getattr(home, "__all__", ()):
            try:
                obj = getattr(home, name)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                key = (home_name, name)
                seen[key] = PublicName(name, (home_name,), home_name, name, "?", "", "",
                                       f"{type(exc).__name__}: {exc}")
                order.append(key)
                continue
            module, qualname, kind, doc = _describe(obj, name, home)
            key = (module, qualname or name)
            if key in seen:
                old = seen[key]
                seen[key] = PublicName(old.name, (*old.exported_by, home_name), old.module,
                                       old.qualname, old.kind, old.first_line,
                                       old.summary, old.error)
                continue
            seen[key] = PublicName(name, (home_name,), module, qualname, kind,
                                   first_line(doc), summary(doc))
            order.append(key)
    return [seen[k] for k in order]


def job_of(entry: PublicName, package: str) -> str:
    """The tool a name belongs to: the subpackage of ``package`` that exports or defines it
    (``interp.circuits`` for ``interp.run_patch``, defined in
    ``interp.circuits.patch``); ``package`` itself for a name defined in one of its
    plain modules (``saes.results``: those hold the types of several tools)."""
    for home in entry.exported_by:
        if home != package:
            return home
    parts = entry.module.split(".")
    if parts[0] == package and len(parts) > 2:  # defined inside a subpackage
        return ".".join(parts[:2])
    return package


def grouped(entries: list[PublicName], package: str) -> dict[str, list[PublicName]]:
    """Entries by job (the package's own group first, then alphabetical), names
    alphabetical within each."""
    groups: dict[str, list[PublicName]] = {}
    for entry in entries:
        groups.setdefault(job_of(entry, package), []).append(entry)
    return {job: sorted(groups[job], key=lambda e: (e.name.lower(), e.name))
            for job in sorted(groups, key=lambda j: (j != package, j))}


# ----------------------------------------------------------------------------- Sphinx
def _directive():  # noqa: ANN202 - built lazily so that the test imports no Sphinx machinery
    from docutils import nodes
    from docutils.parsers.rst import Parser
    from sphinx import addnodes
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective, new_document

    logger = logging.getLogger(__name__)

    class ApiGlance(SphinxDirective):
        """``{api-glance} PACKAGE ...``: one section per package, one per job within it, each
        a table of name, summary and defining module."""

        required_arguments = 1
        optional_arguments = 20
        has_content = False

        def run(self) -> list[nodes.Node]:
            packages = list(self.arguments)
            srcdir = Path(self.env.srcdir)
            imports = doc_imports(srcdir, packages)
            for pages in imports.values():
                for page in pages:
                    self.env.note_dependency(str(page))
            out: list[nodes.Node] = []
            for package in packages:
                subs = entry_points(package, imports)[1:]
                entries = public_names(package, subs)
                for entry in entries:
                    self._check(entry)
                    source = getattr(sys.modules.get(entry.module), "__file__", None)
                    if source:  # a docstring edit re-reads this page
                        self.env.note_dependency(source)
                out.append(self._package_section(package, subs, entries))
            return out

        def _check(self, entry: PublicName) -> None:
            where = self.get_location()
            if entry.error:
                logger.warning("api-glance: %s cannot be imported: %s", entry.spelling,
                               entry.error, location=where, type="api_glance")
            elif not entry.first_line:
                logger.warning("api-glance: %s (%s) has no docstring first line",
                               entry.spelling, entry.target, location=where,
                               type="api_glance")

        # ------------------------------------------------------------------ nodes
        def _section(self, title: nodes.Node | str, ident: str) -> nodes.section:
            section = nodes.section(ids=[nodes.make_id(f"api-glance-{ident}")])
            section += nodes.title("", "", *([nodes.Text(title)] if isinstance(title, str)
                                             else [title]))
            return section

        def _package_section(self, package: str, subs: list[str],
                             entries: list[PublicName]) -> nodes.section:
            module = importlib.import_module(package)
            section = self._section(nodes.literal(package, package), package)
            intro = nodes.paragraph()
            intro += self._rst_inline(summary(module.__doc__), package)
            homes = [package, *subs]
            intro += [nodes.Text(f" {len(entries)} names: the "),
                      nodes.literal("__all__", "__all__"), nodes.Text(" of ")]
            for i, home in enumerate(homes):
                if i:
                    intro += nodes.Text(", " if i < len(homes) - 1 else " and ")
                intro += self._xref("mod", home, home)
            intro += nodes.Text(".")
            section += intro
            for job, members in grouped(entries, package).items():
                title = nodes.literal(job, job) if job != package else nodes.Text(
                    f"{package}, top level")
                sub = self._section(title, job if job != package else f"{package}-top")
                if job != package:
                    lead = summary(importlib.import_module(job).__doc__)
                    if lead:
                        sub += nodes.paragraph("", "", *self._rst_inline(lead, job))
                sub += self._table(members)
                section += sub
            return section

        def _table(self, members: list[PublicName]) -> nodes.table:
            table = nodes.table(classes=["api-glance", "colwidths-given"])
            group = nodes.tgroup(cols=3)
            table += group
            for width in (27, 50, 23):
                group += nodes.colspec(colwidth=width)
            head = nodes.thead()
            head += self._row([nodes.Text(h)] for h in ("name", "summary", "defined in"))
            group += head
            body = nodes.tbody()
            for entry in members:
                target = entry.module if entry.kind == "module" else entry.target
                shown = f"{entry.name}()" if entry.kind == "function" else entry.name
                name_cell: list[nodes.Node] = [self._xref("obj", shown, target, breaks=True)]
                imports = nodes.inline(classes=["api-glance-from"])
                imports += nodes.Text("from ")
                for i, home in enumerate(entry.exported_by):
                    if i:
                        imports += nodes.Text(", ")
                    imports += nodes.literal(home, home)
                name_cell += [nodes.Text(" "), imports]
                body += self._row([
                    name_cell,
                    (self._rst_inline(entry.summary, entry.module,
                                      entry.qualname if entry.kind == "class" else None)
                     if entry.summary else [nodes.Text("—")]),
                    [self._xref("mod", entry.module, entry.module, breaks=True)],
                ])
            group += body
            return table

        @staticmethod
        def _row(cells: Iterable[list[nodes.Node]]) -> nodes.row:
            row = nodes.row()
            for content in cells:
                entry = nodes.entry()
                entry += nodes.paragraph("", "", *content)
                row += entry
            return row

        def _xref(self, role: str, text: str, target: str,
                  breaks: bool = False) -> nodes.Node:
            """A checked cross-reference (``-n`` warns when its target has no entry);
            ``breaks``: a long name may wrap after a dot or an underscore (``<wbr>``),
            not inside a word."""
            literal = nodes.literal(text, "", classes=["xref", "py", f"py-{role}"])
            for part in re.split(r"(?<=[._])", text) if breaks else [text]:
                if len(literal):
                    literal += nodes.raw("", "<wbr>", format="html")
                literal += nodes.Text(part)
            ref = addnodes.pending_xref(
                "", literal,
                refdomain="py", reftype=role, reftarget=target, refexplicit=True,
                refwarn=True, refdoc=self.env.docname)
            ref["py:module"] = None
            ref["py:class"] = None
            self.set_source_info(ref)
            return ref

        def _rst_inline(self, text: str, module: str,
                        cls: str | None = None) -> list[nodes.Node]:
            """A docstring's sentence as inline nodes: its markup is reST (roles, literals)
            whatever the page's own parser, and its references resolve as they do where
            autodoc renders it (relative to ``module`` and ``cls``)."""
            doc = new_document("<api-glance>", self.state.document.settings)
            Parser().parse(text, doc)
            if len(doc) != 1 or not isinstance(doc[0], nodes.paragraph):
                return [nodes.Text(text)]
            for link in list(doc.findall(nodes.reference)):  # "recall@10" is no address
                if link.get("refuri", "").startswith("mailto:"):
                    link.replace_self(nodes.Text(link.astext()))
            for ref in doc.findall(addnodes.pending_xref):
                ref["refdoc"] = self.env.docname
                ref["py:module"] = module
                ref["py:class"] = cls
                self.set_source_info(ref)
            return list(doc[0].children)

    return ApiGlance


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's entry point
    app.add_directive("api-glance", _directive())
    app.add_css_file("api_glance.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
