"""The SAE feature browser: one self-contained HTML page with a card per feature.

Input is :meth:`saes.browser.BrowserData.to_dict` (see that module for the schema). The
page has a summary (tokens scanned, dead fraction, the log10-density histogram as inline
SVG, drawn by :func:`reports.sae_charts.density_svg` like the evaluation report's), then one
card per feature: its index, density, largest activation, the tokens its decoder direction
promotes and suppresses, and its top contexts with every token shaded by the feature's
activation on it (the activating token outlined).

A search box filters the cards by feature index or by any token text on them. That needs
one small constant script (:data:`SEARCH_JS`), passed to :func:`reports.html.render_report`,
which allows exactly that script by its hash in the page's CSP. The script only reads the
``data-index``/``data-search`` attributes of the cards and toggles their ``hidden``
property; it never writes HTML. Every string from the data (tokens are user text) reaches
the page escaped by :mod:`markupsafe`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from reports.html import (
    Section,
    as_float,
    figure,
    format_number,
    kv_table,
    note,
    paragraph,
    render_report,
    token_html,
    token_repr,
    visible_token,
)
from reports.sae_charts import density_svg

__all__ = ["SEARCH_JS", "render_feature_browser"]

#: Shade of a token at the feature's maximum activation (alpha scales with act / max).
SHADE_RGB = (230, 97, 1)
SHADE_MAX_ALPHA = 0.85

#: The page's only script: filter the cards by the search box. Constant: never built from data.
SEARCH_JS = """
(function () {
  "use strict";
  var box = document.getElementById("fb-search");
  var status = document.getElementById("fb-status");
  if (!box) { return; }
  var cards = Array.prototype.slice.call(document.querySelectorAll("article.fb-feature"));
  function matches(card, raw) {
    var q = raw.trim();
    var num = /^#?(\\d+)$/.exec(q);
    if (num) { return card.getAttribute("data-index") === String(Number(num[1])); }
    if (q.length >= 2 && q.charAt(0) === '"' && q.charAt(q.length - 1) === '"') {
      q = q.slice(1, -1);
    }
    var text = (card.getAttribute("data-search") || "").toLowerCase();
    return text.indexOf(q.toLowerCase()) !== -1;
  }
  function apply() {
    var empty = box.value.trim() === "";
    var shown = 0;
    cards.forEach(function (card) {
      var hit = empty || matches(card, box.value);
      card.hidden = !hit;
      if (hit) { shown += 1; }
    });
    if (status) {
      status.textContent = empty ? cards.length + " features"
        : shown + " of " + cards.length + " features match";
    }
  }
  box.addEventListener("input", apply);
  apply();
})();
""".lstrip()

_CSS = Markup("""<style>
.fb-tools { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 14px; margin: 0 0 12px; }
.fb-tools input[type=search] { font: 14px var(--sans); padding: 5px 9px; width: min(460px, 100%);
  border: 1px solid var(--line); border-radius: 6px; }
.fb-status { color: var(--muted); font-size: 13px; }
.fb-feature { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px 8px;
  margin: 0 0 12px; background: #fff; }
.fb-feature[hidden] { display: none; }
.fb-feature h3 { font-size: 15px; margin: 0 0 4px; font-weight: 650; }
.fb-stats { color: var(--ink-2); font-size: 12.5px; margin: 0 0 6px; }
.fb-stats span { margin-right: 14px; }
.fb-logits { display: flex; flex-wrap: wrap; gap: 4px 6px; align-items: baseline; margin: 0 0 4px; }
.fb-logits .lbl { font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
  color: var(--muted); font-weight: 600; min-width: 86px; }
.fb-val { font-family: var(--mono); font-size: 11.5px; color: var(--ink-2); margin-right: 6px; }
.fb-val.pos { color: var(--ok); }
.fb-val.neg { color: #b02a37; }
.fb-ctxs { margin: 8px 0 2px; padding: 0; list-style: none; }
.fb-ctx { font-family: var(--mono); font-size: 12.5px; line-height: 1.9; white-space: nowrap;
  overflow-x: auto; padding: 1px 0; border-bottom: 1px solid var(--line-2); }
.fb-ctx .fb-act { display: inline-block; min-width: 64px; color: var(--muted); font-size: 11.5px; }
.fb-t { white-space: pre; padding: 1px 1px; border-radius: 3px; }
.fb-t.fb-max { outline: 2px solid #7f2704; outline-offset: -1px; }
.fb-empty { color: var(--muted); font-size: 13px; }
</style>""")


# --------------------------------------------------------------------------- cards


def _act(x: Any) -> str:
    """An activation to 3 significant digits (feature scales vary by orders of magnitude)."""
    v = as_float(x)
    return f"{v:.3g}" if math.isfinite(v) else format_number(v)


def _density_text(density: Any, n_fires: Any, n_tokens: Any) -> str:
    d = as_float(density)
    if not math.isfinite(d):
        return "—"
    pct = f"{d:.3%}" if d >= 1e-3 or d == 0 else f"{d:.2e}"
    if isinstance(n_fires, int) and isinstance(n_tokens, int):
        return f"{pct} ({n_fires:,} of {n_tokens:,} tokens)"
    return pct


def _shade(act: float, max_act: float) -> str:
    """Inline style for a token: background alpha ∝ act / max_act (0 when either is ≤ 0)."""
    ratio = act / max_act if max_act > 0 and math.isfinite(act) else 0.0
    alpha = SHADE_MAX_ALPHA * min(max(ratio, 0.0), 1.0)
    r, g, b = SHADE_RGB
    return f"background-color: rgba({r}, {g}, {b}, {alpha:.3f})"


def _context_html(ctx: Mapping[str, Any], max_act: float) -> Markup:
    tokens = [str(t) for t in ctx.get("tokens") or []]
    acts = [as_float(a) for a in ctx.get("acts") or []]
    max_at = ctx.get("max_at")
    top = acts[max_at] if isinstance(max_at, int) and 0 <= max_at < len(acts) else math.nan
    parts = [Markup('<span class="fb-act" title="activation on the outlined token">{}</span>')
             .format(_act(top))]
    for j, tok in enumerate(tokens):
        act = acts[j] if j < len(acts) else math.nan
        cls = "fb-t fb-max" if j == max_at else "fb-t"
        parts.append(Markup('<span class="{}" style="{}" title="{}">{}</span>').format(
            cls, _shade(act, max_act), f"{token_repr(tok)} · act {_act(act)}",
            visible_token(tok)))
    return Markup('<li class="fb-ctx">{}</li>').format(Markup("").join(parts))


def _logit_row(label: str, pairs: Sequence[Any], cls: str) -> Markup:
    items = []
    for pair in pairs or []:
        tok, val = (pair[0], pair[1]) if isinstance(pair, list | tuple) and len(pair) == 2 \
            else (pair, None)
        v = as_float(val)
        sign = "+" if v > 0 else ""
        items.append(Markup('{}<span class="fb-val {}">{}</span>').format(
            token_html(str(tok)), cls, sign + _act(v)))
    body = Markup("").join(items) if items else Markup('<span class="fb-empty">—</span>')
    return Markup('<div class="fb-logits"><span class="lbl">{}</span>{}</div>').format(
        label, body)


def _search_text(feat: Mapping[str, Any]) -> str:
    """What the search box matches besides the index: every token text on the card."""
    parts = [str(p[0]) for key in ("promoted", "suppressed") for p in feat.get(key) or []
             if isinstance(p, list | tuple) and p]
    parts += ["".join(str(t) for t in c.get("tokens") or []) for c in feat.get("contexts") or []]
    return "\n".join(parts)


def _feature_card(feat: Mapping[str, Any], n_tokens: Any) -> Markup:
    index = feat.get("index")
    max_act = as_float(feat.get("max_act"))
    dec_norm = as_float(feat.get("dec_norm"))
    stats = Markup(
        '<p class="fb-stats"><span>density {}</span><span>max activation {}</span>'
        '<span title="max activation × decoder-row norm: size of the contribution to the '
        'reconstruction">max × ‖W_dec‖ {}</span></p>'
    ).format(_density_text(feat.get("density"), feat.get("n_fires"), n_tokens),
             _act(max_act), _act(max_act * dec_norm))
    contexts = feat.get("contexts") or []
    if contexts:
        ctx_html = Markup('<ul class="fb-ctxs">{}</ul>').format(
            Markup("").join(_context_html(c, max_act) for c in contexts))
    else:
        ctx_html = Markup('<p class="fb-empty">Never fired on the scanned text.</p>')
    return Markup(
        '<article class="fb-feature" id="feature-{}" data-index="{}" data-search="{}">'
        "<h3>Feature {}</h3>{}{}{}{}</article>"
    ).format(index, index, _search_text(feat), index, stats,
             _logit_row("promotes", feat.get("promoted") or [], "pos"),
             _logit_row("suppresses", feat.get("suppressed") or [], "neg"), ctx_html)


# -------------------------------------------------------------------------- report


def _summary(r: Mapping[str, Any]) -> Section:
    cfg = r.get("config") or {}
    n_dead, d_sae = r.get("n_dead"), r.get("d_sae")
    ci = r.get("dead_fraction_ci95") or [None, None]
    dead = (f"{format_number(r.get('dead_fraction'))} ({n_dead} of {d_sae}; 95% CI "
            f"{format_number(ci[0])}–{format_number(ci[1])})")
    feats = r.get("features") or []
    facts = {
        "model": r.get("model_id"),
        "hook point": r.get("hook_point"),
        "SAE width (d_sae)": d_sae,
        "tokens scanned": f"{r.get('n_tokens')} ({r.get('n_windows')} windows × "
                          f"{(r.get('seq_len') or 1) - 1} positions; position 0 left out)",
        "dead fraction (never fired)": dead,
        "features shown": f"{len(feats)} (selection {cfg.get('features')!s}, "
                          f"seed {cfg.get('seed')})",
    }
    hist = r.get("density_histogram") or {}
    body = kv_table(facts)
    if hist.get("edges") and hist.get("counts"):
        body += figure(
            density_svg(hist["edges"], hist["counts"], n_dead=n_dead, n_tokens=r.get("n_tokens")),
            f"Features by the fraction of scanned tokens they fire on (log scale). The red bar "
            f"on the left counts the {n_dead} dead features, which fired on none of them; the "
            f"dotted line is one token in {r.get('n_tokens')}, the rarest firing this much text "
            "can measure.",
        )
    return Section("Summary", body)


def _features_section(r: Mapping[str, Any]) -> Section:
    feats = r.get("features") or []
    tools = Markup(
        '<div class="fb-tools"><input type="search" id="fb-search" autocomplete="off" '
        'spellcheck="false" aria-label="Filter features" placeholder="{}">'
        '<span class="fb-status" id="fb-status" role="status">{}</span></div>'
    ).format('feature index (12 or #12) or token text; "quotes" keep spaces and digits',
             f"{len(feats)} features")
    cards = Markup("").join(_feature_card(f, r.get("n_tokens")) for f in feats)
    if not feats:
        cards = paragraph("No feature selected (none fired on the scanned text).")
    return Section(
        "Features", _CSS + tools + cards,
        note="Token shading: the feature's activation on that token relative to its largest "
             "activation over the whole scan; the outlined token is where this context's "
             "activation peaks. Hover a token for its exact text and activation.",
    )


def _method_section(r: Mapping[str, Any]) -> Section:
    cfg = r.get("config") or {}
    return Section("How to read this", paragraph(
        f"Each card shows the feature's {cfg.get('top_k')} largest activations on held-out "
        f"text, with {cfg.get('context')} tokens of context to the left and up to 4 to the "
        "right. Density is the fraction of scanned tokens on which the feature is non-zero. "
        "Promoted and suppressed tokens are the direct logit effect of the feature's decoder "
        "direction: W_dec[i] · (γ ⊙ W_U), with γ the final norm's weight; it ignores the "
        "layers between the hook point and the output."
    ) + note(
        "Activations are the SAE's raw feature values f; the decoder rows are not unit norm, so "
        "compare features by max × ‖W_dec‖. Position 0 of every window is an attention sink "
        "with a huge residual norm: it is never an example and never counted in densities."
    ))


def render_feature_browser(data: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The feature browser as one self-contained HTML document (see module doc).

    ``data`` is :meth:`saes.browser.BrowserData.to_dict`; ``manifest`` the run manifest.
    """
    r = data
    title = f"SAE feature browser — {r.get('model_id')} · {r.get('hook_point')}"
    return render_report(
        title, [_summary(r), _features_section(r), _method_section(r)], dict(manifest),
        subtitle=f"{len(r.get('features') or [])} features of an SAE with "
                 f"d_sae={r.get('d_sae')}, on {r.get('n_tokens')} held-out tokens.",
        script=SEARCH_JS,
    )
