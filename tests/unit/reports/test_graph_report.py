"""The attribution-graph report (reports/graph.py) without a browser: a real graph on the tiny
model, hostile contexts and explanations, self-containment and the script's CSP hash.
Browser tests: tests/browser/test_graph_report.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from reports.graph import GRAPH_JS, MAX_CONTEXTS, graph_data, graph_report, slider_max
from reports.html import visible_token
from saes.graphs import AttributionConfig, AttributionGraph, run_attribution
from tests.support.html_checks import json_island, parse, section
from tests.support.transcoders import random_transcoders

PROMPT = "The capital of France is Paris. The capital of Italy is"
HOSTILE = "<img src=x onerror=alert(1)>"
CLOSER = "</script><script>alert(2)</script><!--"
NS_URLS = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")




def build_graph(model) -> AttributionGraph:
    """A graph on the tiny model with random transcoders at layers 0 and 2 (two
    decoder-shuffled controls)."""
    tcs = random_transcoders(model, [0, 2], skip=True)
    return run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5,
                                                                 control_graphs=2),
                           progress=False)


def hostile_extras(graph: AttributionGraph) -> tuple[str, dict, dict]:
    """(key, contexts, explanations) for the most influential feature node, with hostile
    strings in its explanation and in a context token."""
    node = max((n for n in graph.nodes if n["kind"] == "feature"),
               key=lambda n: n["influence"])
    key = f"{node['layer']}:{node['feature']}"
    contexts = {key: [{"tokens": ["The", " cat", HOSTILE, " sat"], "acts": [0.0, 0.5, 2.0, 1.0]},
                      {"tokens": [" a", CLOSER], "acts": [0.2, 1.5]}] * 8,
                "9:9999": [{"tokens": ["unused"], "acts": [1.0]}]}
    explanations = {key: f"fires on {HOSTILE} and {CLOSER}", "9:9999": "not in the graph"}
    return key, contexts, explanations


@pytest.fixture(scope="module")
def graph(tiny_model) -> AttributionGraph:
    return build_graph(tiny_model)


@pytest.fixture(scope="module")
def page(graph) -> str:
    _, contexts, explanations = hostile_extras(graph)
    return graph_report(graph, contexts, explanations).html


def _island(page: str) -> dict:
    return json_island(page, "graph-data")


def test_page_is_self_contained(page):
    for url in re.findall(r"(?i)(?:https?:)?//[^\s\"'<>)\\]+", page):
        assert url in NS_URLS, url
    assert all(ref.startswith("#") for ref in re.findall(r"(?i)(?<![\w.])url\(([^)]*)\)", page))
    doc = parse(page)
    assert not {"img", "iframe", "link", "object", "embed"} & set(doc.tags)
    for tag, name, value in doc.attrs:
        assert name not in ("src", "srcset", "data", "action", "formaction"), (tag, name)
        if name in ("href", "xlink:href"):
            assert value is not None and value.startswith("#"), (tag, value)


def test_hostile_strings_are_escaped(page):
    assert HOSTILE not in page and "<img" not in page
    assert CLOSER not in page and "<!--" not in page
    doc = parse(page)
    # one executable script (the constant) and the JSON data block, nothing else
    assert doc.tags.count("script") == 2
    assert ("script", "id", "interp-report-js") in doc.attrs
    assert ("script", "type", "application/json") in doc.attrs
    # the data block decodes to the exact strings
    data = _island(page)
    (key,) = data["explanations"]
    assert HOSTILE in data["explanations"][key] and CLOSER in data["explanations"][key]
    ctx = data["contexts"][key]
    assert len(ctx) == MAX_CONTEXTS
    assert ctx[0]["tokens"][2] == visible_token(HOSTILE)
    assert ctx[0]["exact"][2] == json.dumps(HOSTILE)
    assert ctx[1]["tokens"][1] == visible_token(CLOSER)
    assert "9:9999" not in data["contexts"]  # only the graph's features travel


def test_script_is_allowed_by_its_hash(page):
    body = re.search(r'<script id="interp-report-js">(.*?)</script>', page, re.S).group(1)
    assert body == GRAPH_JS
    want = base64.b64encode(hashlib.sha256(GRAPH_JS.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert csp == ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                   f"script-src 'sha256-{want}'")
    # the script writes strings as text only
    assert "innerHTML" not in GRAPH_JS and "insertAdjacentHTML" not in GRAPH_JS
    assert "eval(" not in GRAPH_JS and "fetch(" not in GRAPH_JS


def test_data_matches_the_graph(graph):
    data = graph_data(graph)
    assert [n["id"] for n in data["nodes"]] == [n["id"] for n in graph.nodes]
    assert len(data["edges"]) == len(graph.edges)
    assert data["tokens"][0] == graph.tokens[0].replace(" ", "␣")
    assert data["nLayers"] == 3  # the tiny model's targets sit above its 3 layers
    labels = {n["id"]: n["label"] for n in data["nodes"]}
    assert all(labels[n["id"]] == graph.node_label(n) for n in graph.nodes)
    json.dumps(data, allow_nan=False)
    top = slider_max(graph)
    assert graph.config is not None and graph.config.node_threshold <= top <= 1.0
    assert all(n["cumulative"] <= top + 1e-9 for n in graph.nodes
               if n["kind"] in ("feature", "error", "bias"))


def test_sections_show_the_checks_and_faithfulness(graph, page):
    assert graph.checks and graph.faithfulness
    check = section(page, "Checked against the real model")
    assert check.count("<tr>") >= len(graph.checks) + 1
    assert "Spearman, graph vs real model" in check and "95% interval" in check
    body = re.findall(r"<tbody>(.*?)</tbody>", check, re.S)[-1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    assert len(rows) == len(graph.checks)
    # (layer, feature) per row, in the order of the largest |real − predicted| first
    shown = [(int(c[0]), int(c[2])) for c in
             (re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows)]
    want = sorted(graph.checks, key=lambda c: abs(c.real - c.predicted), reverse=True)
    assert shown == [(c.layer, c.feature) for c in want]
    assert "permutation null" in check and "(against its permutation null)" in check
    faith = section(page, "Faithfulness")
    for text in ("influence-matched random sets", "matched baseline", "ceiling",
                 "weak baseline: random active features"):
        assert text in faith
    lead = page.split("<nav", 1)[0]
    for text in ("replacement score", "completeness score", "decoder-shuffled controls",
                 "real-model agreement", "Σ edges", graph.prompt):
        assert text in lead
    assert "pruned" not in lead  # no scores without a reference definition
    # what the graph is worth leads; exactness is bookkeeping, never a green badge
    verdict = re.search(r'<p class="verdict">(.*?)</p>', lead, re.S).group(1)
    assert graph.worth().sentence.split(":")[0] in verdict
    assert "exact" not in verdict and 'class="badge ok"' not in lead
    assert "bookkeeping" in lead and "exact by construction, with error nodes" in lead
    # random transcoders on the tiny model: said to be worthless, first
    assert graph.worth().level == "worthless"
    assert 'class="badge warn">worthless</span> This graph is WORTHLESS' in verdict


def test_report_writes_its_figures(graph, tmp_path):
    report = graph_report(graph)
    assert set(report.figures) == {"graph", "check"}
    report.save(tmp_path)
    assert (tmp_path / "figures" / "graph.svg").exists()
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_a_graph_without_checks_renders(tiny_model):
    tcs = random_transcoders(tiny_model, [1], seed=1)
    graph = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
        check_features=0, control_graphs=0),
                            progress=False)
    graph.manifest = {"model_id": "tiny <model>", "seed": 0}
    report = graph_report(graph)
    assert set(report.figures) == {"graph"}
    page = report.html
    assert "No feature was checked" in section(page, "Checked against the real model")
    assert "Not measured" in section(page, "Faithfulness")
    assert "tiny &lt;model&gt;" in page and "<model>" not in page
    assert _island(page)["explanations"] == {}


def test_a_capped_graph_says_how_many_features_are_nodes(tiny_model):
    tcs = random_transcoders(tiny_model, [0, 2], skip=True)
    graph = run_attribution(tiny_model, tcs, PROMPT,
                            AttributionConfig(
                                check_features=0, max_feature_nodes=12, control_graphs=0),
                            progress=False)
    page = graph_report(graph).html
    f = graph.n_active_features
    assert f > 12
    assert f"{f:,} active features, 12 as nodes)" in page
    assert f"{f:,} (12 as nodes, the others in error nodes)" in page
    assert sum(n["kind"] == "feature" for n in _island(page)["nodes"]) <= 12
