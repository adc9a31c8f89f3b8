"""The SAE feature browser: one self-contained HTML page with a card per feature.

Input is :class:`saes.features.browser.BrowserData` (a ``features.json`` dict is read back with
:meth:`~saes.results.BrowserData.from_dict`). The page has a summary (tokens scanned, dead
fraction, the log10-density histogram from :func:`saes.figures.density_figure`), then one
card per feature (``templates/sae_browser.html.j2``): its index, density, largest activation,
the tokens its decoder direction promotes and suppresses, and its top contexts with every
token shaded by the feature's activation on it (the activating token outlined).

A search box filters the cards by feature index or by any token text on them. That needs
one small constant script (:data:`SEARCH_JS`), passed to :func:`reports.html.render_page`,
which allows exactly that script by its hash in the page's CSP. The script only reads the
``data-index``/``data-search`` attributes of the cards and toggles their ``hidden``
property; it never writes HTML. Every string from the data (tokens are user text) reaches
the page escaped.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from interp.display import MISSING, count, format_number, percent, short
from reports.html import Report, ReportFigure, render_page, script_text, token_repr, visible_token
from saes.autointerp.store import FeatureExplanation
from saes.features.browser import BrowserData
from saes.figures import density_figure, hover_titles
from saes.results import FeatureCard, FeatureContext

__all__ = ["SEARCH_JS", "sae_browser_report"]

#: Shade of a token at the feature's maximum activation (alpha scales with act / max).
SHADE_RGB = (230, 97, 1)
SHADE_MAX_ALPHA = 0.85

#: The page's only script: filter the cards by the search box. Constant: never built from data.
SEARCH_JS = script_text("sae_browser.js")


def _density_text(card: FeatureCard, n_tokens: int) -> str:
    if not math.isfinite(card.density):
        return MISSING
    return f"{percent(card.density)} ({count(card.n_fires)} of {count(n_tokens)} tokens)"


@dataclass
class _Token:
    """One context token as the page shows it: text, shade, tooltip, outlined or not."""

    text: str
    style: str
    title: str
    peak: bool


def _tokens(ctx: FeatureContext, max_act: float) -> list[_Token]:
    out = []
    r, g, b = SHADE_RGB
    for j, tok in enumerate(ctx.tokens):
        act = ctx.acts[j] if j < len(ctx.acts) else math.nan
        ratio = act / max_act if max_act > 0 and math.isfinite(act) else 0.0
        alpha = SHADE_MAX_ALPHA * min(max(ratio, 0.0), 1.0)
        out.append(_Token(visible_token(tok), f"background-color: rgba({r}, {g}, {b}, "
                          f"{alpha:.3f})", f"{token_repr(tok)} · act {short(act)}",
                          j == ctx.max_at))
    return out


def _search_text(card: FeatureCard, explanation: FeatureExplanation | None = None) -> str:
    """What the search box matches besides the index: every token text on the card and
    its explanations."""
    parts = [t for t, _ in card.promoted] + [t for t, _ in card.suppressed]
    if explanation is not None:
        parts += list(explanation.explanations.values())
    parts += ["".join(c.tokens) for c in card.contexts]
    return "\n".join(parts)


def steer_command(sae_path: str | None, index: int) -> str:
    """The command that makes a steering vector from feature ``index`` of the SAE."""
    where = shlex.quote(sae_path) if sae_path else "SAE_DIR"
    return f"interp steer train --sae {where} --feature {index} --out feature-{index}-vector"


def _card(card: FeatureCard, n_tokens: int, sae_path: str | None,
          explanation: FeatureExplanation | None = None) -> dict[str, Any]:
    return {
        "index": card.index, "search": _search_text(card, explanation),
        "label": explanation.label if explanation is not None else None,
        "explained": explanation.explained if explanation is not None else None,
        "badge": explanation.badge() if explanation is not None else None,
        "steer": steer_command(sae_path, card.index) if card.n_fires else None,
        "density": _density_text(card, n_tokens), "max_act": short(card.max_act),
        "contribution": short(card.max_act * card.dec_norm),
        "logits": [("promotes", "pos", [(t, ("+" if v > 0 else "") + short(v))
                                        for t, v in card.promoted]),
                   ("suppresses", "neg", [(t, ("+" if v > 0 else "") + short(v))
                                          for t, v in card.suppressed])],
        "contexts": [(short(c.peak), _tokens(c, card.max_act)) for c in card.contexts],
    }


def sae_browser_report(data: BrowserData, manifest: Mapping[str, Any] | None = None,
                       explanations: Mapping[int, FeatureExplanation] | None = None) -> Report:
    """The feature browser of ``data`` (a page and its density figure), with its manifest
    (``data.manifest`` unless given) and, when given, each feature's explanation
    (``explanations.jsonl``, :func:`saes.autointerp.store.read_explanations`) with its
    score badge, searchable."""
    ex = explanations or {}
    manifest = manifest if manifest is not None else (data.manifest or {})
    cfg = data.config
    lo, hi = data.dead_fraction_ci95
    facts = [
        ("model", data.model_id),
        ("hook point", data.hook_point),
        ("SAE width (d_sae)", data.d_sae),
        ("tokens scanned", f"{data.n_tokens} ({data.n_windows} windows × {data.seq_len - 1} "
                           "positions; position 0 left out)"),
        ("dead fraction (never fired)", f"{format_number(data.dead_fraction)} ({data.n_dead} of "
                                        f"{data.d_sae}; 95% CI {format_number(lo)}–"
                                        f"{format_number(hi)})"),
        ("features shown", f"{len(data.features)} (selection {cfg.features}, seed {cfg.seed})"),
    ]
    fig = density_figure(data)
    return render_page(
        "sae_browser.html.j2",
        title=f"SAE feature browser — {data.model_id} · {data.hook_point}",
        subtitle=f"{len(data.features)} features of an SAE with d_sae={data.d_sae}, on "
                 f"{data.n_tokens} held-out tokens.",
        manifest=manifest, script=SEARCH_JS, stylesheets=["sae_browser.css"],
        figures={"density": ReportFigure(fig, titles=hover_titles(fig),
                                         label="Histogram of log10 feature density")},
        facts=facts, data=data,
        cards=[_card(c, data.n_tokens, data.sae_path, ex.get(c.index)) for c in data.features],
        n_explained=sum(1 for c in data.features if c.index in ex),
    )
