"""The ``support-matrix`` directive: the architecture family × tool table of
``interp models --support`` (:func:`interp.cli.support.matrix`), built when the site is
built, so the page shows what the tools do rather than a copy kept by hand."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive


def _table(header: list[str], rows: list[list[str]]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)

    def row(cells: list[str]) -> nodes.row:
        out = nodes.row()
        for text in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=text)
            out += entry
        return out

    head = nodes.thead()
    head += row(header)
    body = nodes.tbody()
    for cells in rows:
        body += row(cells)
    group += head
    group += body
    return table


class SupportMatrix(Directive):
    """The matrix, then one line per column: its verbs and the tests that check it."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from interp.cli.support import columns, matrix

        cols = columns()
        header = ["family", "model_type", "examples", *(c.name for c in cols)]
        rows = [[r["family"], r["model_type"], r["examples"], *(r[c.name] for c in cols)]
                for r in matrix()]
        notes = nodes.bullet_list()
        for c in cols:
            item = nodes.list_item()
            para = nodes.paragraph()
            para += nodes.strong(text=c.name)
            para += nodes.Text(f" ({c.verbs}): ")
            for i, ref in enumerate(c.evidence):
                if i:
                    para += nodes.Text(", ")
                para += nodes.literal(text=ref)
            item += para
            notes += item
        return [_table(header, rows), notes]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx's entry point: the ``support-matrix`` directive."""
    app.add_directive("support-matrix", SupportMatrix)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
