"""The attribution-graph viewer in headless Chromium: a real graph on the tiny model, hostile
contexts and explanations (unit tests: tests/unit/reports/test_graph_report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.graph import GROUP_COLOURS, graph_report
from tests.unit.reports.test_graph_report import HOSTILE, build_graph, hostile_extras

NODES = "#gv-svg .gv-node"
#: Edges drawn (a vertical line has an empty bounding box, so ``:visible`` misses it).
SHOWN_EDGES = ("els => els.filter(e => getComputedStyle(e).display !== 'none' "
               "&& getComputedStyle(e.parentNode).display !== 'none').length")


@pytest.fixture(scope="module")
def tiny_graph(tiny_model):  # noqa: ANN001, ANN201
    return build_graph(tiny_model)


@pytest.mark.browser
def test_viewer_in_headless_chromium(tiny_graph, tmp_path):
    from tests.support.browser import assert_clean, visit

    graph = tiny_graph
    key, contexts, explanations = hostile_extras(graph)
    layer, feature = (int(x) for x in key.split(":"))
    (node,) = [n for n in graph.nodes
               if n["kind"] == "feature" and (n["layer"], n["feature"]) == (layer, feature)]
    fid = node["id"]
    path = tmp_path / "graph.html"
    path.write_text(graph_report(graph, contexts, explanations).html)
    shot = tmp_path / "graph.png"

    def check(page):  # noqa: ANN001, ANN202
        out: dict = {
            "scripts": page.eval_on_selector_all("script", "els => els.map(e => e.id)"),
            "bad": page.locator("img, iframe, object, embed").count(),
            "nojs": page.is_visible("#gv-nojs"),
            "all": page.locator(f"{NODES}:visible").count(),
            "edges": page.eval_on_selector_all("#gv-svg .gv-edge", SHOWN_EDGES),
            "title": page.text_content(f'{NODES}[data-id="{fid}"] title'),
            "edge_title": page.text_content("#gv-svg .gv-edge title"),
            "verdict": page.text_content("p.verdict"),
            "lead_badges": page.eval_on_selector_all(
                "p.verdict .badge, dl.facts .badge", "els => els.map(e => e.className)"),
            "first_lead": page.eval_on_selector(
                "p.verdict", "e => e.compareDocumentPosition(document.querySelector("
                "'pre.prompt')) & Node.DOCUMENT_POSITION_FOLLOWING ? 1 : 0"),
            "widths": page.eval_on_selector_all(
                "#gv-svg .gv-edge", "els => els.map(e => [e.getAttribute('stroke-width'), "
                "e.querySelector('title').textContent])"),
        }
        # fit to width and back: the drawing shrinks to the canvas when it is wider
        width = "e => e.getBoundingClientRect().width"
        before = page.eval_on_selector("#gv-svg", width)
        page.click("#gv-fit")
        out["fit"] = (before, page.eval_on_selector("#gv-svg", width),
                      float(page.get_attribute("#gv-svg", "width")),
                      page.eval_on_selector(".gv-canvas", "e => e.clientWidth"))
        page.click("#gv-fit")
        # click a feature node: its panel
        page.click(f'{NODES}[data-id="{fid}"]')
        out["label"] = page.text_content("#gv-label")
        out["selected"] = page.get_attribute(f"{NODES}.gv-sel", "data-id")
        out["expl"] = page.text_content("#gv-expl")
        out["ctx"] = page.locator(".gv-ctx").count()
        out["ctx_text"] = page.text_content(".gv-ctxs")
        out["inputs"] = page.eval_on_selector_all(
            "#gv-inputs .gv-link", "els => els.map(e => [e.dataset.node, e.textContent])")
        out["outputs"] = page.locator("#gv-outputs .gv-link").count()
        out["highlighted"] = page.locator("#gv-svg .gv-edge.gv-hl").count()
        # click an input edge's entry: that node is selected
        page.click("#gv-inputs .gv-link >> nth=0")
        out["label2"] = page.text_content("#gv-label")
        out["selected2"] = page.get_attribute(f"{NODES}.gv-sel", "data-id")
        # supernodes: pin the feature into a named group, then another node into a second
        page.click(f'{NODES}[data-id="{fid}"]')
        page.fill("#gv-group-name", "capital <b>group</b>")
        page.click("#gv-pin")
        out["rings"] = page.eval_on_selector_all(
            f'{NODES}[data-id="{fid}"] .gv-ring', "els => els.map(e => e.getAttribute('stroke'))")
        out["pin_text"] = page.text_content("#gv-pin")
        page.screenshot(path=str(shot), full_page=True)
        page.click("#gv-new-group")
        page.fill("#gv-group-name", "second")
        page.click("#gv-inputs .gv-link >> nth=0")
        other = page.get_attribute(f"{NODES}.gv-sel", "data-id")
        page.click("#gv-pin")
        out["other"] = other
        out["other_rings"] = page.eval_on_selector_all(
            f'{NODES}[data-id="{other}"] .gv-ring', "els => els.map(e => e.getAttribute('stroke'))")
        out["groups"] = page.eval_on_selector_all("#gv-group-list li",
                                                  "els => els.map(e => e.textContent)")
        with page.expect_download() as dl:
            page.click("#gv-save-groups")
        out["saved"] = json.loads(Path(dl.value.path()).read_text())
        out["saved_name"] = dl.value.suggested_filename
        # the slider: the lowest threshold hides the less influential nodes and their edges
        page.eval_on_selector("#gv-threshold", "e => { e.value = e.min; "
                              "e.dispatchEvent(new Event('input')); }")
        out["low"] = page.locator(f"{NODES}:visible").count()
        out["low_edges"] = page.eval_on_selector_all("#gv-svg .gv-edge", SHOWN_EDGES)
        out["fixed"] = page.locator(f"{NODES}.gv-embedding:visible, "
                                    f"{NODES}.gv-target:visible").count()
        out["status"] = page.text_content("#gv-count")
        page.eval_on_selector("#gv-threshold", "e => { e.value = e.max; "
                              "e.dispatchEvent(new Event('input')); }")
        out["back"] = page.locator(f"{NODES}:visible").count()
        return out

    # visit() saves its own screenshot under tests/artifacts/ unless given an absolute path
    v = visit(path, str(tmp_path / "graph-end.png"), check)
    assert_clean(v)  # no console error, no dialog, no request but the page itself
    c = v.checks
    assert c["scripts"] == ["graph-data", "interp-report-js"]
    assert c["bad"] == 0 and not c["nojs"]
    n_nodes = len(graph.nodes)
    assert c["all"] == c["back"] == n_nodes and c["edges"] == len(graph.edges)
    assert "activation" in c["title"] and "influence" in c["title"]
    assert "weight" in c["edge_title"] and "influence" in c["edge_title"]
    # the lead: what the graph is worth comes first (random transcoders: worthless), with
    # no green badge; exactness is the bookkeeping line
    assert c["verdict"].startswith("worthless This graph is WORTHLESS as an explanation")
    assert c["first_lead"] == 1
    assert not any("ok" in cls.split() for cls in c["lead_badges"])
    # edge widths follow influence, not |weight|: the widest edge is the most influential
    inf = [float(t.split("influence: ")[1].replace("\u2212", "-")) for _, t in c["widths"]]
    widest = max(range(len(inf)), key=lambda i: float(c["widths"][i][0]))
    assert inf[widest] == max(inf)
    a, b, natural, room = c["fit"]
    assert {a, b} == {natural, min(natural, room)}
    # the panel
    assert c["label"] == graph.node_label(node) and c["selected"] == str(fid)
    assert HOSTILE in c["expl"]  # shown as text
    assert c["ctx"] == 10 and HOSTILE.replace(" ", "␣") in c["ctx_text"]
    assert 1 <= len(c["inputs"]) <= 8 and c["outputs"] >= 1
    assert c["highlighted"] >= len(c["inputs"])
    # following an edge
    first_id, first_label = c["inputs"][0]
    assert c["selected2"] == first_id != str(fid) and c["label2"] == first_label
    # supernodes
    assert c["rings"] == [GROUP_COLOURS[0]]
    assert c["pin_text"].startswith("unpin from")
    assert c["other_rings"][-1] == GROUP_COLOURS[1]
    assert c["groups"] == ["capital <b>group</b> (1)", "second (1)"]
    assert c["saved_name"] == "graph-groups.json"
    assert c["saved"] == {"prompt": graph.prompt, "groups": [
        {"name": "capital <b>group</b>", "nodes": [fid]},
        {"name": "second", "nodes": [int(c["other"])]}]}
    # the slider
    fixed = sum(1 for n in graph.nodes if n["kind"] in ("embedding", "target"))
    assert c["fixed"] == fixed
    assert fixed <= c["low"] < n_nodes and c["low_edges"] < len(graph.edges)
    assert c["status"] == f"{c['low']} of {n_nodes} nodes shown"
    assert shot.stat().st_size > 10_000
