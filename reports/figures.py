"""Matplotlib figures in a report: inline SVG in the page, SVG and PNG files beside it.

Figures are drawn by the tools themselves (``interp/<tool>/figures.py`` builds a
:class:`matplotlib.figure.Figure` from a result); this module only turns a figure
into page markup and files. It never draws.

Inline SVG rules:

* text stays text (``svg.fonttype = "none"``), so labels can be searched and copied;
* no date or creator metadata, and a fixed hash salt, so a rerun gives the same bytes;
* every ``id`` is prefixed with the figure's name, so several figures on one page
  never share an id;
* hover details: an artist given a gid (``artist.set_gid("cell-3-4")``) becomes an
  SVG group with that id, and ``titles={"cell-3-4": "text"}`` puts an escaped
  ``<title>`` element in it (a browser shows it as a tooltip).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup, escape
from matplotlib.figure import Figure

from interp.errors import InterpError
from interp.plotting import png_bytes, svg_text
from interp.runs.atomic import atomic_write_bytes, atomic_write_text

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")

def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InterpError(f"figure name {name!r} must be lower-case letters, digits, '-' or '_'")
    return name


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^")]+)')


def inline_svg(
    fig: Figure,
    name: str,
    *,
    titles: Mapping[str, str] | None = None,
    label: str | None = None,
    document: str | None = None,
) -> Markup:
    """``fig`` as an ``<svg>`` element for the page (see the module docstring).

    ``titles`` maps artist gids to hover texts (escaped). ``label`` becomes the
    SVG's ``aria-label``. Raises if a gid in ``titles`` is not in the figure, so a
    lost tooltip fails loudly. ``document`` is ``svg_text(fig)`` when the caller has
    it already (the figure is then not drawn again).
    """
    _check_name(name)
    text = document if document is not None else svg_text(fig)
    start = text.find("<svg")
    if start < 0:
        raise InterpError("matplotlib produced no <svg> element")
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text[start:], count=1, flags=re.S)
    ids = set(_ID.findall(text))
    text = _ID.sub(lambda m: f'id="{name}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{name}-{m.group(2)}" if m.group(2) in ids
                    else m.group(0), text)
    for gid, title in (titles or {}).items():
        if gid not in ids:
            raise InterpError(f"figure {name!r} has no element with gid {gid!r} for its tooltip")
        tag = f'<g id="{name}-{gid}"'
        pos = text.find(tag)
        if pos < 0:
            raise InterpError(f"figure {name!r}: element {gid!r} is not a group")
        end = text.find(">", pos) + 1
        text = text[:end] + f"\n   <title>{escape(title)}</title>" + text[end:]
    # natural size (matplotlib's width/height in pt); the stylesheet caps the width at the
    # card's and the viewBox keeps the aspect
    head_end = text.find(">") + 1
    head = text[:head_end]
    attrs = f' class="mpl-fig" role="img" data-figure="{escape(name)}"'
    if label:
        attrs += f' aria-label="{escape(label)}"'
    head = head.replace("<svg", "<svg" + attrs, 1)
    return Markup(head + text[head_end:])


def save_figure(
    fig: Figure, folder: str | Path, name: str, *, document: str | None = None
) -> tuple[Path, Path]:
    """Write ``folder/NAME.svg`` and ``folder/NAME.png``; returns both paths.

    ``document`` is ``svg_text(fig)`` when the caller has it already.
    """
    _check_name(name)
    folder = Path(folder)
    svg_path, png_path = folder / f"{name}.svg", folder / f"{name}.png"
    # atomic: a failed write (a full disk) is one line and leaves the previous file
    atomic_write_text(svg_path, document if document is not None else svg_text(fig))
    atomic_write_bytes(png_path, png_bytes(fig))
    return svg_path, png_path


@dataclass
class ReportFigure:
    """A figure for a page: the figure, hover texts by gid, and an accessible label."""

    figure: Figure
    titles: Mapping[str, str] | None = None
    label: str | None = None
