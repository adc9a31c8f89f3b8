"""The attribution-graph report: one self-contained page with an interactive graph viewer.

Input is an :class:`saes.graphs.results.AttributionGraph` (``run_attribution``), and,
optionally, top activating contexts and explanations of its features, keyed
``"LAYER:FEATURE"``. The page (``templates/graph.html.j2``) leads with what the graph is
worth (:meth:`~saes.graphs.results.AttributionGraph.worth`: the replacement and completeness
scores against decoder-shuffled control graphs, the real-model agreement against chance),
then the prompt, the facts and, last, the bookkeeping (the edges sum to the target: exact by
construction, with error nodes, whatever the transcoders); then

* **the viewer**: the pruned graph drawn as SVG by one constant script (:data:`GRAPH_JS`,
  ``templates/js/graph.js``, inlined),
  nodes by layer (y) × token position (x), a side panel for the clicked node (values,
  explanation, contexts, its strongest input and output edges), a pruning-threshold slider
  and supernode groups saved as a JSON file;
* the check against the real model (predicted against measured changes of the target, the
  agreement with its bootstrap CIs, the checked features);
* faithfulness (the pruned graph's features against influence-matched random sets of as
  many, the ceiling of the top features by measured effect, and random active features);
* the static pruned graph (:func:`saes.graphs.figures.graph_figure`).

Data reaches the script as a JSON data block, ``<script type="application/json"
id="graph-data">``, which the browser never executes (so the page's CSP, which allows only
:data:`GRAPH_JS` by its sha256, has nothing to say about it). Its text is ``json.dumps``
output with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX`` escapes, so no
string in it can end the element or open a comment; they only occur inside JSON strings,
where the escapes decode to the same characters. The script is a constant, never built from
data, and it writes every string with ``textContent`` or ``setAttribute`` on elements it
creates (never ``innerHTML``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from interp.display import MISSING, as_float, ci_text, format_number, with_ci
from reports.html import (
    Report,
    ReportFigure,
    noise_label,
    render_page,
    script_text,
    token_html,
    token_repr,
    truncate,
    visible_token,
    warnings_box,
)
from saes.graphs.figures import KIND_COLOURS, NEGATIVE, POSITIVE, check_figure, graph_figure
from saes.graphs.results import (
    AttributionGraph,
    FeatureCheck,
    faithfulness_text,
    score_text,
    sign_text,
)

__all__ = ["GRAPH_JS", "MAX_CONTEXTS", "graph_data", "graph_report"]

#: Contexts shown per feature in the viewer's panel (the first ones given).
MAX_CONTEXTS = 10
#: The prompt's length in the page title (the lead shows all of it).
TITLE_CHARS = 80
#: Lowest value of the pruning-threshold slider.
SLIDER_MIN = 0.05
#: Group ring colours, in order (cycled).
GROUP_COLOURS = ("#7b2cbf", "#2a9d8f", "#e76f51", "#f4a261", "#1d3557", "#e63946",
                 "#6a994e", "#b5838d")

#: The page's only script: draws the viewer from the JSON data block. Constant: never built
#: from data; strings reach the page through textContent / setAttribute only.
GRAPH_JS = script_text("graph.js")


# --------------------------------------------------------------------------- data


def _num(x: Any) -> float | None:
    """A finite float to 6 significant digits, or None (JSON has no NaN)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return float(f"{v:.6g}") if math.isfinite(v) else None


def _key(node: Mapping[str, Any]) -> str | None:
    return f"{node['layer']}:{node['feature']}" if node["kind"] == "feature" else None


def _node(graph: AttributionGraph, n: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": int(n["id"]), "kind": str(n["kind"]), "layer": int(n["layer"]),
        "position": int(n["position"]), "label": graph.node_label(dict(n)),
        "influence": _num(n.get("influence")), "cumulative": _num(n.get("cumulative")),
        "effect": _num(n.get("effect")), "key": _key(n)}
    if n["kind"] == "feature":
        row.update(feature=int(n["feature"]), activation=_num(n.get("activation")))
    if n["kind"] == "target":
        row.update(name=str(n.get("name", "target")), weight=_num(n.get("weight")))
    return row


def _context(ctx: Mapping[str, Any]) -> dict[str, Any]:
    tokens = [str(t) for t in ctx.get("tokens", [])]
    acts = list(ctx.get("acts", []))
    return {"tokens": [visible_token(t) for t in tokens],
            "exact": [token_repr(t) for t in tokens],
            "acts": [_num(acts[j]) if j < len(acts) else None for j in range(len(tokens))]}


def slider_max(graph: AttributionGraph) -> float:
    """The pruning slider's top: the graph's node threshold, or the largest cumulative
    influence of a kept feature, error, bias or constant node when pruning kept one above it (the
    node that crosses the threshold), so that every kept node shows at the start."""
    thr = graph.config.node_threshold if graph.config is not None else 0.8
    cums = [c for n in graph.nodes if n["kind"] in ("feature", "error", "bias", "constant")
            if (c := _num(n.get("cumulative"))) is not None]
    top = max([thr, *cums])
    return min(1.0, math.ceil(top * 100 - 1e-6) / 100)


def graph_data(graph: AttributionGraph, contexts: Mapping[str, Sequence[Mapping[str, Any]]]
               | None = None, explanations: Mapping[str, str] | None = None
               ) -> dict[str, Any]:
    """What the viewer draws: nodes (with labels), edges ``[source, target, weight,
    influence]``,
    tokens, colours, and the contexts and explanations of the graph's features."""
    nodes = [_node(graph, n) for n in graph.nodes]
    ids = {n["id"] for n in nodes}
    keys = {n["key"] for n in nodes if n["key"] is not None}
    edges = [[int(e["source"]), int(e["target"]), _num(e["weight"]) or 0.0,
              _num(e.get("influence")) or 0.0]
             for e in graph.edges if e["source"] in ids and e["target"] in ids]
    return {
        "prompt": graph.prompt,
        "tokens": [visible_token(t) for t in graph.tokens],
        "exact": [token_repr(t) for t in graph.tokens],
        "nLayers": max([n["layer"] for n in nodes if n["kind"] == "target"] or
                       [max([n["layer"] for n in nodes] or [0]) + 1]),
        "nodes": nodes, "edges": edges,
        "colours": dict(KIND_COLOURS), "positive": POSITIVE, "negative": NEGATIVE,
        "groupColours": list(GROUP_COLOURS),
        "explanations": {k: str(v) for k, v in (explanations or {}).items() if k in keys},
        "contexts": {k: [_context(c) for c in list(v)[:MAX_CONTEXTS]]
                     for k, v in (contexts or {}).items() if k in keys},
    }


_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                 "\u2029": "\\u2029"}


def json_island(data: Any) -> Markup:
    """``data`` as the text of a ``<script type="application/json">`` element: JSON in
    which ``<``, ``>``, ``&``, U+2028 and U+2029 are ``\\uXXXX`` escapes (they can only
    occur inside strings), so nothing in it can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Markup("".join(_JSON_ESCAPES.get(ch, ch) for ch in text))


# --------------------------------------------------------------------------- page


def _as_nodes(graph: AttributionGraph) -> str:
    """``, 8,192 as nodes`` when ``max_feature_nodes`` left features out of the graph."""
    return f", {graph.n_feature_nodes:,} as nodes" if graph.features_capped else ""


#: The lead's badge per verdict level (no green badge: "informative" is not "good").
WORTH_BADGES = {"worthless": ("warn", "worthless"), "unknown": ("noise", "not measured"),
                "informative": ("neutral", "informative")}


def _lead(graph: AttributionGraph) -> Markup:
    """What the graph is worth first, then the prompt, the facts and the bookkeeping."""
    worth = graph.worth()
    cls, label = WORTH_BADGES[worth.level]
    ag, ctl = graph.agreement, graph.controls
    facts: list[tuple[str, Any]] = [
        ("replacement score", score_text(graph.replacement_score,
                                         ctl.get("replacement_scores"))),
        ("completeness score", score_text(graph.completeness_score,
                                          ctl.get("completeness_scores"))),
        ("real-model agreement (Spearman, predicted vs measured effects of the top "
         "features)", with_ci(ag.get("spearman_real"), *_interval(ag, "spearman_real"))
         + f" over {ag.get('spearman_real_n', 0)} features; chance 0" if ag else
         "not checked"),
        ("sign agreement with the real model", sign_text(ag, "real") if ag else "not checked"),
        ("faithfulness", faithfulness_text(graph.faithfulness) if graph.faithfulness
         else "not measured"),
        ("target", graph.target),
        ("active features", graph.features_text()),
        ("nodes kept", f"{len(graph.nodes)} of {graph.n_nodes}"),
        ("edges kept", f"{len(graph.edges):,} of most influence of {graph.n_edges_kept:,} "
                       "(max_edges)" if graph.edges_capped else str(len(graph.edges))),
        ("bookkeeping", graph.bookkeeping()),
    ]
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in facts)
    return Markup('<p class="verdict"><span class="badge {}">{}</span> {}.</p>'
                  '<p class="prompt-label">Prompt</p><pre class="prompt">{}</pre>{}'
                  '<dl class="facts">{}</dl>').format(
        cls, label, worth.sentence, graph.prompt, warnings_box(graph.warnings), dl)


def _position(graph: AttributionGraph, pos: int) -> Markup:
    tok = graph.tokens[pos] if 0 <= pos < len(graph.tokens) else ""
    return Markup("{} {}").format(pos, token_html(tok))


def _gap(c: FeatureCheck) -> float:
    d = c.real - c.predicted
    return abs(d) if math.isfinite(d) else -math.inf


def _check_rows(graph: AttributionGraph) -> list[list[Any]]:
    rows = []
    for c in sorted(graph.checks, key=_gap, reverse=True):
        rows.append([c.layer, _position(graph, c.position), c.feature, c.activation,
                     c.influence, c.predicted, c.replacement, c.real_frozen, c.real,
                     c.real_doubled, c.real - c.predicted])
    return rows


def _interval(ag: Mapping[str, Any], key: str) -> tuple[float, float]:
    ci = ag.get(f"{key}_ci95") or [math.nan, math.nan]
    try:
        return float(ci[0]), float(ci[1])
    except (TypeError, ValueError, IndexError):
        return math.nan, math.nan


def _agreement(graph: AttributionGraph) -> tuple[list[tuple[str, Any]], str | None]:
    """The agreement rows (value [CI] and a noise badge; sign agreement against its
    permutation null) and the sentence on the noise."""
    ag = graph.agreement
    if not ag:
        return [], None
    rows: list[tuple[str, Any]] = [("features checked", str(ag.get("spearman_real_n", MISSING)))]
    for where, label in (("real", "graph vs real model"),
                         ("real_frozen", "graph vs real model with attention and norms "
                                         "frozen"),
                         ("replacement", "graph vs frozen replacement")):
        lo, hi = _interval(ag, f"spearman_{where}")
        rows.append((f"Spearman, {label} (chance 0)", Markup("{} {}").format(
            with_ci(ag.get(f"spearman_{where}"), lo, hi), noise_label(lo, hi, 0.0))))
        nlo, nhi = _interval_of(ag.get(f"sign_{where}_null_interval"))
        sign = as_float(ag.get(f"sign_{where}"))
        rows.append((f"sign agreement, {label} (against its permutation null)",
                     Markup("{} {}").format(sign_text(ag, where),
                                            noise_label(nlo, nhi, sign)
                                            if math.isfinite(sign) else "")))
    rows.append(("Spearman, doubled features (real model)",
                 format_number(ag.get("spearman_real_doubled"))))
    rows.append(("sign agreement, doubled features (real model)",
                 sign_text(ag, "real_doubled")))
    lo, hi = _interval(ag, "spearman_real")
    n = ag.get("spearman_real_n", len(graph.checks))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        sentence = (f"With {n} features checked there is no interval for the agreement "
                    "with the real model: too few to tell it from noise.")
    elif lo <= 0:
        sentence = (f"The 95% interval of the Spearman correlation with the real model, "
                    f"{ci_text(lo, hi)}, includes 0 or lies below it: with {n} features "
                    "checked, the graph's predictions do not agree with the real model "
                    "beyond chance.")
    else:
        sentence = (f"The 95% interval of the Spearman correlation with the real model, "
                    f"{ci_text(lo, hi)}, excludes 0: the graph's predictions rank the "
                    f"features' real effects better than chance ({n} features checked). "
                    "That is a statement about the linearisation, not the transcoders: "
                    "removing any vector, a random transcoder's feature included, can be "
                    "predicted well; the scores against their controls say whether the "
                    "features are worth more than shuffled ones.")
    p = as_float(ag.get("sign_real_p"))
    if math.isfinite(p):
        null = as_float(ag.get("sign_real_null"))
        sentence += (f" Chance for the sign agreement is its permutation null, "
                     f"{100 * null:.0f}% here (the measured changes shuffled against the "
                     f"predicted; not 50% when the signs are imbalanced): "
                     + ("the signs agree no better than that" if p > 0.05 else
                        "the signs agree more often than that")
                     + f" (p {format_number(p, 2)}).")
    return rows, sentence


def _interval_of(pair: Any) -> tuple[float, float]:
    try:
        return float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError):
        return math.nan, math.nan


def _faithfulness(graph: AttributionGraph) -> tuple[list[tuple[str, Any]], Markup | None]:
    f = graph.faithfulness
    if not f:
        return [], None
    mlo, mhi = _interval_of(f.get("matched_interval"))
    wlo, whi = _interval_of(f.get("random_interval"))
    n_random = graph.config.random_subgraphs if graph.config is not None else None
    k = f.get("features_kept")
    rows: list[tuple[str, Any]] = [
        ("features kept by pruning", f"{k} of {f.get('features_active')} active"),
        ("target, clean", f.get("target_clean")),
        ("target, every active feature removed", f.get("target_no_features")),
        ("target, only the graph's features left", f.get("target_graph_only")),
        ("faithfulness (share of the target kept)", f.get("faithfulness")),
        ("baseline: influence-matched random sets, mean [95% range]",
         with_ci(f.get("matched_mean"), mlo, mhi)),
        ("share of matched sets at or above the graph (p)", format_number(f.get("matched_p"))),
        (f"ceiling: the {k} features of largest measured single-feature effect",
         Markup("{} <span class=\"note\">({} of them measured, the rest by influence)"
                "</span>").format(format_number(f.get("ceiling")), f.get("ceiling_measured"))),
        ("weak baseline: random active features (most of no influence), mean [95% range]",
         with_ci(f.get("random_mean"), wlo, whi)),
        ("random sets drawn, each baseline", n_random),
    ]
    faith = as_float(f.get("faithfulness"))
    ceiling = format_number(f.get("ceiling"))
    if not k:
        verdict = Markup('<span class="badge noise">no features</span> No feature survived '
                         "pruning: the error nodes and the tokens hold the influence, so there "
                         "is no set of features to test.")
    elif not (math.isfinite(faith) and math.isfinite(mlo) and math.isfinite(mhi)):
        verdict = Markup('<span class="badge noise">not measured</span> Removing every '
                         "active feature does not change the target, so no share of it can "
                         "be measured.")
    elif faith > mhi:
        verdict = Markup('<span class="badge neutral">beats the matched baseline</span> The '
                         "pruned graph's features keep {} of the target, above the range {} "
                         "of random sets with the same influence profile (ceiling {}).").format(
            format_number(faith), ci_text(mlo, mhi), ceiling)
    elif faith < mlo:
        verdict = Markup('<span class="badge warn">below the matched baseline</span> The '
                         "pruned graph's features keep {} of the target, less than random "
                         "sets with the same influence profile ({}).").format(
            format_number(faith), ci_text(mlo, mhi))
    else:
        verdict = Markup('<span class="badge noise">within the matched baseline</span> The '
                         "pruned graph's features keep {} of the target, inside the range {} "
                         "of random sets with the same influence profile: its choice of "
                         "features is no better than chance among features as "
                         "influential (ceiling {}).").format(
            format_number(faith), ci_text(mlo, mhi), ceiling)
    return rows, verdict


def graph_report(graph: AttributionGraph, contexts: Mapping[str, list[dict]] | None = None,
                 explanations: Mapping[str, str] | None = None) -> Report:
    """The report of one attribution graph: the interactive viewer, the check against the
    real model, faithfulness and the static pruned graph. ``contexts`` and
    ``explanations`` are keyed ``"LAYER:FEATURE"``; each context is ``{"tokens": [str,
    ...], "acts": [float, ...]}`` (the first :data:`MAX_CONTEXTS` are shown)."""
    figures: dict[str, ReportFigure] = {
        "graph": ReportFigure(graph_figure(graph), label="The pruned attribution graph")}
    if graph.checks:
        figures["check"] = ReportFigure(
            check_figure(graph), label="Predicted against measured change of the target")
    data = graph_data(graph, contexts, explanations)
    top = slider_max(graph)
    thr = graph.config.node_threshold if graph.config is not None else None
    ag_rows, ag_sentence = _agreement(graph)
    faith_rows, faith_verdict = _faithfulness(graph)
    return render_page(
        "graph.html.j2",
        title=f"Attribution graph — {truncate(graph.prompt, TITLE_CHARS)}",
        subtitle=f"{len(graph.nodes)} of {graph.n_nodes} nodes ({graph.n_active_features:,} "
                 f"active features{_as_nodes(graph)}) and {graph.n_edges_kept:,} edges kept "
                 "by pruning"
                 + (f", the {len(graph.edges):,} strongest shown" if graph.edges_capped else "")
                 + ".",
        manifest=graph.manifest or {}, lead=_lead(graph), script=GRAPH_JS,
        stylesheets=["graph.css"], figures=figures,
        graph_json=json_island(data), slider_min=min(SLIDER_MIN, top), slider_max=top,
        node_threshold=thr, n_nodes=len(graph.nodes),
        colours=list(KIND_COLOURS.items()), positive=POSITIVE, negative=NEGATIVE,
        check_columns=["layer", "position", "feature", "activation", "influence",
                       "predicted", "frozen replacement", "real, attention and norms frozen",
                       "real", "doubled real", "real − predicted"],
        check_rows=_check_rows(graph), agreement_rows=ag_rows, agreement_sentence=ag_sentence,
        faith_rows=faith_rows, faith_verdict=faith_verdict,
        n_contexts=len(data["contexts"]), n_explanations=len(data["explanations"]),
    )
