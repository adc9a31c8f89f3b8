"""The one base for every HTML report of the project.

A report is a body template under ``reports/templates/`` rendered by :func:`render_page`
into the page shell, with its figures and the run manifest. It renders to ONE
self-contained HTML file: inline CSS, inline SVG figures, no script, no external URL of
any kind, and a Content-Security-Policy that forbids fetching anything, so the file can be
mailed, archived or opened offline and looks the same everywhere. (A report may opt in to
one constant inline script, e.g. the SAE browser's search box: ``render_page(...,
script=...)``; the CSP allows exactly that script by its sha256 and nothing else.)

Safety rule: every string that reaches the page is escaped. Jinja2 runs with
autoescape on, and the helpers here build HTML with :class:`markupsafe.Markup` and
``Markup.format`` (which escapes its arguments). Only :class:`Markup` objects built by
these helpers (or by the figure embedding of :mod:`reports.figures`) are inserted
verbatim.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from matplotlib.figure import Figure

from interp.display import FILTERS, MISSING, format_number, is_finite, visible_token
from interp.errors import InterpError
from interp.plotting import svg_text
from interp.profiling.session import phase, phased
from interp.runs.atomic import atomic_write_text
from interp.runs.outdir import OutDir
from reports.figures import ReportFigure, inline_svg, save_figure

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


__all__ = [
    "MISSING",
    "atomic_write_text",
    "code_block",
    "details",
    "figure",
    "format_number",
    "kv_table",
    "manifest_section",
    "note",
    "paragraph",
    "Report",
    "ReportFigure",
    "render_page",
    "script_text",
    "template_env",
    "table",
    "token_html",
    "visible_token",
]


# --------------------------------------------------------------------------- text


def token_repr(text: str) -> str:
    """The exact token as a JSON string literal, e.g. ``'" Paris"'`` or ``'"\\n"'``."""
    return json.dumps(str(text), ensure_ascii=False)


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters, ending in an ellipsis when cut."""
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars:
        return text
    return text[: max(1, max_chars - 1)] + "…"


# ------------------------------------------------------------------------ helpers


def _cell(value: Any) -> tuple[Markup, bool]:
    """(escaped HTML, is_numeric) for one table cell."""
    if isinstance(value, Markup) or hasattr(value, "__html__"):
        return Markup(value.__html__()), False
    if value is None:
        return Markup('<span class="missing">{}</span>').format(MISSING), False
    if isinstance(value, bool):
        return escape(format_number(value)), False
    if isinstance(value, int | float):
        return escape(format_number(value)), True
    if isinstance(value, Mapping | list | tuple):
        return Markup("<code>{}</code>").format(_json(value, indent=None)), False
    return escape(str(value)), False


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    caption: str | None = None,
    row_classes: Sequence[str | None] | None = None,
) -> Markup:
    """An HTML table. Cells are escaped; numbers are formatted and right-aligned.

    A cell may be a :class:`Markup` built by a helper (e.g. :func:`token_html`),
    which is inserted as is. ``row_classes`` (one per row, or None) tags rows,
    e.g. ``"baseline"`` for a reference row.
    """
    columns = [str(c) for c in columns]
    rows = [list(r) for r in rows]
    for i, row in enumerate(rows):
        if len(row) != len(columns):
            raise InterpError(f"table row {i} has {len(row)} cells, expected {len(columns)}")
    if row_classes is not None and len(row_classes) != len(rows):
        raise InterpError(f"table has {len(rows)} rows but {len(row_classes)} row classes")

    numeric_col = [
        bool(rows) and all(_cell(r[j])[1] or r[j] is None for r in rows)
        for j in range(len(columns))
    ]
    parts = [Markup('<div class="table-wrap"><table class="data">')]
    if caption:
        parts.append(Markup("<caption>{}</caption>").format(caption))
    parts.append(Markup("<thead><tr>"))
    for j, col in enumerate(columns):
        cls = ' class="num"' if numeric_col[j] else ""
        parts.append(Markup('<th scope="col"{}>{}</th>').format(Markup(cls), col))
    parts.append(Markup("</tr></thead><tbody>"))
    for i, row in enumerate(rows):
        rc = row_classes[i] if row_classes is not None else None
        if rc:
            parts.append(Markup('<tr class="{}">').format(rc))
        else:
            parts.append(Markup("<tr>"))
        for j, value in enumerate(row):
            html, is_num = _cell(value)
            cls = ' class="num"' if (is_num or numeric_col[j]) else ""
            parts.append(Markup("<td{}>{}</td>").format(Markup(cls), html))
        parts.append(Markup("</tr>"))
    parts.append(Markup("</tbody></table></div>"))
    return Markup("").join(parts)


def kv_table(items: Mapping[str, Any], *, caption: str | None = None) -> Markup:
    """A two-column key/value table (keys as row headers). Values are escaped."""
    parts = [Markup('<div class="table-wrap"><table class="kv">')]
    if caption:
        parts.append(Markup("<caption>{}</caption>").format(caption))
    parts.append(Markup("<tbody>"))
    for key, value in items.items():
        html, _ = _cell(value)
        parts.append(Markup('<tr><th scope="row">{}</th><td>{}</td></tr>').format(key, html))
    parts.append(Markup("</tbody></table></div>"))
    return Markup("").join(parts)


def paragraph(text: str) -> Markup:
    """``<p>`` with the escaped text."""
    return Markup("<p>{}</p>").format(text)


def note(text: str) -> Markup:
    """A highlighted remark (caveat, method note)."""
    return Markup('<p class="note">{}</p>').format(text)


def code_block(text: str) -> Markup:
    """Preformatted, escaped text (whitespace preserved)."""
    return Markup('<pre class="code">{}</pre>').format(text)


def details(summary: str, body: Markup | str, *, open: bool = False) -> Markup:
    """A collapsible block. ``body`` is escaped unless it is :class:`Markup`."""
    return Markup("<details{}><summary>{}</summary>{}</details>").format(
        Markup(" open") if open else Markup(""), summary, body
    )


def warnings_box(warnings: Sequence[str]) -> Markup:
    """The warning box of a report's lead (the traps a run fell into), or nothing."""
    if not warnings:
        return Markup("")
    head = "Warning" if len(warnings) == 1 else f"{len(warnings)} warnings"
    items = Markup("").join(Markup("<li>{}</li>").format(w) for w in warnings)
    return Markup('<div class="warnings" role="alert"><strong>⚠ {}</strong><ul>{}</ul></div>'
                  ).format(head, items)


def headline_lead(result: Any) -> Markup:
    """A result's lead from its :meth:`~interp.schema.result.Result.headline`: the verdict,
    the warnings, then the headline's facts."""
    h = result.headline()
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in h.rows)
    return Markup('<p class="verdict">{}</p>{}<dl class="facts">{}</dl>').format(
        (h.verdict or "nothing measured") + ".", warnings_box(result.warnings), dl)


def noise_label(lo: float, hi: float, zero: float = 0.0) -> Markup:
    """A badge for a difference with interval ``[lo, hi]``: "within noise" when it holds
    ``zero`` (not a result), "no noise estimate" when it is unknown, else nothing."""
    import math

    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Markup('<span class="badge noise" title="no interval (one seed, or too few items)">'
                      "no noise estimate</span>")
    if lo <= zero <= hi:
        return Markup('<span class="badge noise" title="the 95% interval [{:.3f}, {:.3f}] '
                      'contains {:g}: not a result">within noise</span>').format(lo, hi, zero)
    return Markup("")


def token_html(text: str, *, muted: bool = False) -> Markup:
    """A token as a monospace chip, whitespace visible, exact string as tooltip."""
    cls = "tok muted" if muted else "tok"
    return Markup('<code class="{}" title="{}">{}</code>').format(
        cls, token_repr(text), visible_token(text)
    )


def figure(svg_markup: Markup, caption: str | Markup | None = None) -> Markup:
    """A figure: an inline SVG (``Markup`` from :func:`reports.figures.inline_svg`) and its
    caption."""
    if not isinstance(svg_markup, Markup):
        raise TypeError(
            "figure() takes Markup built by reports.figures.inline_svg; a plain str would be "
            "escaped"
        )
    cap = Markup("<figcaption>{}</figcaption>").format(caption) if caption else Markup("")
    return Markup('<figure class="fig"><div class="fig-body">{}</div>{}</figure>').format(
        svg_markup, cap
    )


# ----------------------------------------------------------------------- manifest


def _json(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str, sort_keys=False)


def _short_commit(manifest: Mapping[str, Any]) -> str:
    commit = manifest.get("git_commit")
    if not commit or commit == "unknown":
        return "unknown"
    text = str(commit)[:12]
    if manifest.get("git_dirty") is True:
        text += " (dirty)"
    return text


def _command_text(command: Any) -> str | None:
    if command is None:
        return None
    if isinstance(command, list | tuple):
        return shlex.join(str(c) for c in command)
    return str(command)


def manifest_section(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The run-manifest section every report ends with (title, body, note, cls)."""
    commit = manifest.get("git_commit")
    commit_html: Any = commit if commit else "unknown"
    if commit and commit != "unknown":
        flag = manifest.get("git_dirty")
        badge = Markup("")
        if flag is True:
            badge = Markup(' <span class="badge warn">uncommitted changes</span>')
        elif flag is False:
            badge = Markup(' <span class="badge ok">clean</span>')
        commit_html = Markup("<code>{}</code>{}").format(commit, badge)

    packages = manifest.get("packages")
    if isinstance(packages, Mapping) and packages:
        pkg_html: Any = Markup('<ul class="pkgs">{}</ul>').format(
            Markup("").join(
                Markup('<li><span class="pkg">{}</span> <code>{}</code></li>').format(k, v)
                for k, v in packages.items()
            )
        )
    else:
        pkg_html = None

    plat = manifest.get("platform")
    if isinstance(plat, Mapping):
        plat = plat.get("system") or _json(plat, indent=None)

    command = _command_text(manifest.get("command"))
    dataset_hash = manifest.get("dataset_hash")
    items: dict[str, Any] = {
        "model": manifest.get("model_id"),
        "interp version": manifest.get("interp_version"),
        "git commit": commit_html,
        "package versions": pkg_html,
        "dataset hash": Markup("<code>{}</code>").format(dataset_hash) if dataset_hash else None,
        "seed": manifest.get("seed"),
        "command line": Markup("<code>{}</code>").format(command) if command else None,
        "timestamp (UTC)": manifest.get("timestamp"),
        "platform": plat,
    }
    body = kv_table(items) + details("Full manifest (JSON)", code_block(_json(dict(manifest))))
    return {
        "title": "Run manifest",
        "body": body,
        "note": "Everything needed to reproduce this report: code version, libraries, model, "
                "data and command line.",
        "cls": "manifest",
    }


# ------------------------------------------------------------------------- render


def _is_markup(value: Any) -> bool:
    return isinstance(value, Markup) or hasattr(value, "__html__")


def script_text(name: str) -> str:
    """A report's script, ``reports/templates/js/NAME``: kept as a JavaScript file, inlined
    into the page by :func:`render_page` (``script=``), whose CSP allows it by its sha256."""
    return (TEMPLATES_DIR / "js" / name).read_text(encoding="utf-8")


def template_env() -> jinja2.Environment:
    """The one jinja2 environment of the reports (autoescape on, the shared filters)."""
    return _env()


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)  # interp.display: one formatter per kind of number
    env.filters["trepr"] = token_repr
    env.filters["truncate_chars"] = truncate
    env.tests["markup"] = _is_markup
    env.tests["finite"] = is_finite
    return env


def _interp_version(manifest: Mapping[str, Any]) -> str:
    version = manifest.get("interp_version")
    if version:
        return str(version)
    try:
        from interp.runs.manifest import interp_version

        return interp_version()
    except Exception:
        return "unknown"


def _script_hash(script: str) -> str:
    """``sha256-<base64>`` of the exact script text, for the CSP ``script-src``."""
    if not isinstance(script, str) or not script.strip():
        raise InterpError("report script must be a non-empty string")
    lowered = script.lower()
    if "</script" in lowered or "<!--" in lowered or "<script" in lowered:
        raise InterpError("report script must not contain '<script', '</script' or '<!--'")
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@dataclass
class Report:
    """A rendered report: the HTML page and the figures it shows (saved beside it)."""

    html: str
    figures: dict[str, Figure] = field(default_factory=dict)
    #: Each figure's SVG document as drawn for the page, so the files reuse that drawing.
    svg_documents: dict[str, str] = field(default_factory=dict, repr=False)

    def _save_figures(self, folder: Path) -> None:
        for name, fig in self.figures.items():
            save_figure(fig, folder, name, document=self.svg_documents.get(name))

    def write(self, out: OutDir, page: str = "report.html") -> None:
        """Stage the page (``report.html`` unless named) and ``figures/NAME.svg|png`` in a
        run's ``--out`` folder."""
        with phase("write report"):
            out.write_text(page, self.html)
            if self.figures:
                self._save_figures(out.stage_dir("figures"))

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``folder/report.html`` (atomically) and ``folder/figures/``; returns the page."""
        folder = Path(folder)
        self._save_figures(folder / "figures")
        return atomic_write_text(folder / "report.html", self.html)

    def __str__(self) -> str:
        return self.html


def _shell(
    *,
    title: str,
    body: Markup,
    toc: list[tuple[str, str]],
    manifest: Mapping[str, Any],
    subtitle: str | None,
    lead: Markup | None,
    script: str | None,
    stylesheets: Sequence[str] = (),
) -> str:
    if not isinstance(manifest, Mapping):
        raise InterpError(f"report manifest must be a dict, not {type(manifest).__name__}")
    if not str(title).strip():
        raise InterpError("report title is empty")
    if lead is not None and not isinstance(lead, Markup):
        lead = paragraph(str(lead))
    env = _env()
    man = manifest_section(manifest)
    toc = [*toc]
    man_html = env.get_template("sections.html.j2").render(sections=[man], toc=toc)
    script_hash = _script_hash(script) if script is not None else None
    return env.get_template("page.html.j2").render(
        script=Markup(script) if script is not None else None,
        script_hash=script_hash,
        title=str(title),
        subtitle=subtitle,
        lead=lead,
        toc=toc,
        body=Markup(body) + Markup(man_html),
        stylesheets=list(stylesheets),
        model=manifest.get("model_id"),
        commit=_short_commit(manifest),
        timestamp=manifest.get("timestamp"),
        version=_interp_version(manifest),
    )


@phased("write report")
def render_page(
    template: str | jinja2.Template,
    *,
    title: str,
    manifest: Mapping[str, Any],
    figures: Mapping[str, ReportFigure | Figure] | None = None,
    subtitle: str | None = None,
    lead: Markup | None = None,
    script: str | None = None,
    stylesheets: Sequence[str] = (),
    **context: Any,
) -> Report:
    """Render a report body template into the page shell.

    ``template`` (a name under ``reports/templates/``, or a template compiled by
    :func:`template_env`) renders the sections with the
    macros of ``macros.html.j2`` (``m.card`` registers each in the table of
    contents). ``figures`` are matplotlib figures by name: the template gets
    their inline SVG as ``fig.NAME`` and the :class:`Report` keeps them so that
    :meth:`Report.write` saves them as files. ``stylesheets`` are extra files
    under ``templates/css/``. The run manifest is always the last section.
    """
    specs = {name: f if isinstance(f, ReportFigure) else ReportFigure(f)
             for name, f in (figures or {}).items()}
    documents = {name: svg_text(spec.figure) for name, spec in specs.items()}
    svgs = {name: inline_svg(spec.figure, name, titles=spec.titles, label=spec.label,
                             document=documents[name])
            for name, spec in specs.items()}
    toc: list[tuple[str, str]] = []
    tpl = template if isinstance(template, jinja2.Template) else _env().get_template(template)
    body = tpl.render(fig=svgs, toc=toc, **context)
    html = _shell(title=title, body=Markup(body), toc=toc, manifest=manifest, subtitle=subtitle,
                  lead=lead, script=script, stylesheets=stylesheets)
    return Report(html, {name: spec.figure for name, spec in specs.items()}, documents)
