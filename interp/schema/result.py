"""One result base: every tool's result carries its manifest and warnings, and shows itself
from one :meth:`~interp.schema.result.Result.headline`.

A result is a dataclass extending :class:`Result`. From its fields and type hints come
``to_dict()`` (``results.json``) and ``from_dict()`` (:mod:`interp.schema.convert`); a result
adds derived numbers to the file with :meth:`Result.extra_data`. Its :meth:`Result.headline`
(a title, key/value rows, one table and a verdict) is what the CLI prints, what a notebook
shows (``_repr_html_``, with :meth:`Result.figure`), what ``to_frame()`` returns and what a
report puts at the top of its page: written once, shown four ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from interp.schema.convert import fields_data, from_data, json_field

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass
class Headline:
    """What a result leads with: a title, key/value rows, one table and a verdict."""

    title: str
    rows: list[tuple[str, Any]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    table: list[list[Any]] = field(default_factory=list)
    #: A row of ``table`` to emphasise (the best layer, say), by index.
    emphasis: int | None = None
    #: One sentence that judges the result against its baseline and noise.
    verdict: str | None = None
    #: The table's title when it needs one apart from ``title``.
    table_title: str | None = None

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame (column names as given)."""
        import pandas as pd

        return pd.DataFrame(self.table, columns=list(self.columns))

    def html(self, figure: Figure | None = None, warnings: Sequence[str] = ()) -> str:
        """The notebook view: title, warnings, rows (with the verdict), table and figure,
        escaped."""
        from interp.display import result_html

        rows = list(self.rows) + ([("verdict", self.verdict)] if self.verdict else [])
        return result_html(self.title, rows, figure, columns=self.columns or None,
                           table=self.table or None, warnings=warnings)

    def text(self, width: int = 130) -> str:
        """The terminal view (the CLI's table), as plain text rendered by rich."""
        import io

        from rich.console import Console

        console = Console(width=width, record=True, file=io.StringIO(), soft_wrap=False)
        self.print(console)
        return console.export_text()

    def print(self, console: Any = None) -> None:
        """Print the rows and the table with rich (stdout by default)."""
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from interp.display import format_number

        def show(value: Any) -> str:  # text as it is: a token "1" is not the number 1.000
            return value if isinstance(value, str) else format_number(value)

        console = console or Console(soft_wrap=False, width=130)
        if self.table:
            title = self.table_title or self.title
            # at least as wide as its title, so that a narrow table's title stays one line
            table = Table(title=Text(title), title_justify="left",
                          min_width=min(len(title), console.width))
            for col in self.columns:
                table.add_column(Text(str(col)), justify="right")
            for i, row in enumerate(self.table):
                # Text: a cell (a prompt, a token) is never read as rich markup
                table.add_row(*(Text(show(v)) for v in row),
                              style="bold" if i == self.emphasis else None)
            if self.rows and self.table_title is None:
                for key, value in self.rows:
                    console.print(f"{key}: {show(value)}", highlight=False,
                                  markup=False)
            console.print(table)
        else:
            console.print(self.title, highlight=False, markup=False)
            for key, value in self.rows:
                console.print(f"  {key}: {show(value)}", highlight=False,
                              markup=False)
        if self.verdict:
            console.print(self.verdict, highlight=False, markup=False)


@dataclass(kw_only=True)
class Result:
    """Base of every tool's result: a manifest, warnings, and one way to show itself.

    Subclasses are dataclasses; they implement :meth:`headline` (and :meth:`figure` when
    they have a main figure), and :meth:`extra_data` for derived numbers their file
    carries. ``manifest`` is the run's provenance (:func:`interp.runs.manifest.run_manifest`);
    ``to_dict()`` leaves it out while None and writes it last.
    """

    manifest: dict[str, Any] | None = json_field(None, omit_none=True, repr=False)
    warnings: list[str] = field(default_factory=list)

    #: False: ``to_dict()`` leaves ``warnings`` out while there are none (for results
    #: nested in another's file, whose keys predate the base).
    warnings_always: ClassVar[bool] = True
    #: The order of ``results.json``'s keys, where it is not fields, warnings, then
    #: :meth:`~interp.schema.result.Result.extra_data`: the keys named before ``...`` come
    #: first, those after it last.
    json_order: ClassVar[tuple[Any, ...]] = ()

    # ------------------------------------------------------------------ to implement
    def headline(self) -> Headline:
        """The title, summary rows, main table and verdict."""
        return Headline(title=type(self).__name__,
                        rows=[(k, v) for k, v in self.to_dict().items()
                              if isinstance(v, str | int | float | bool)])

    def figure(self) -> Figure | None:
        """The main figure for a notebook (None: no figure)."""
        return None

    def extra_data(self) -> dict[str, Any]:
        """Derived values ``results.json`` carries beside the fields (none by default)."""
        return {}

    # ------------------------------------------------------------------ derived
    def to_dict(self) -> dict[str, Any]:
        """``results.json``: the fields (their JSON metadata applied), then
        :meth:`extra_data`, then the manifest."""
        data = fields_data(self)
        manifest = data.pop("manifest", None)
        warnings = data.pop("warnings")
        if self.warnings or self.warnings_always:
            data["warnings"] = warnings
        data.update(self.extra_data())
        if self.json_order:
            data = _ordered(data, self.json_order)
        if manifest is not None:
            data["manifest"] = manifest
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The result read back from :meth:`to_dict` (derived keys are ignored)."""
        return from_data(cls, data)

    def to_frame(self) -> pd.DataFrame:
        """The headline table as a DataFrame."""
        return self.headline().frame()

    def _repr_html_(self) -> str:
        return self.headline().html(self.figure(), self.warnings)

    def warn(self, message: str) -> None:
        """Add a warning once."""
        if message not in self.warnings:
            self.warnings.append(message)


def _ordered(data: dict[str, Any], order: tuple[Any, ...]) -> dict[str, Any]:
    cut = order.index(...) if ... in order else len(order)
    first, last = order[:cut], order[cut + 1:]
    out = {k: data[k] for k in first if k in data}
    out.update({k: v for k, v in data.items() if k not in out and k not in last})
    out.update({k: data[k] for k in last if k in data})
    return out


def rows_of(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Key/value rows without the missing ones (None)."""
    return [(k, v) for k, v in pairs if v is not None]


__all__ = ["Headline", "Result", "rows_of"]
