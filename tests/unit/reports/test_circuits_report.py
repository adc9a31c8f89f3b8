"""Tests for the activation-patching report (reports.patching) and the circuit figures
(interp.circuits.figures), on hand-made PatchResults: synthetic numbers, small tensors."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest
import torch
from markupsafe import escape
from matplotlib.figure import Figure

from interp.circuits.figures import (
    agreement_scatter,
    agreement_titles,
    dla_bars,
    dla_components,
    dla_titles,
    effect_heatmap,
    effect_scale,
    effect_titles,
    token_label,
)
from interp.circuits.results import (
    Agreement,
    AttentionConfig,
    AttentionResult,
    DLAResult,
    Effects,
    PatchConfig,
    PatchResult,
    SplitHalf,
    TaskSummary,
)
from interp.errors import InterpError
from reports.patching import patching_report
from tests.support.html_checks import parse, section, svgs

SCRIPT = "<script>alert(1)</script>"
SVG = "{http://www.w3.org/2000/svg}"
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
POSITIONS = ["start", "IO", f"S1{SCRIPT}", "S2", "END"]
LAYERS = [0, 1, 2, 3, 4, 5]
HEADS = [0, 1, 2, 3]
N_PAIRS = 12
TOKENS = ["When", " Mary", " and", SCRIPT, "\n", " gave", " a", " $5", " to"]


def _effects(method: str, shape: tuple[int, ...], signal: torch.Tensor, noise: float,
             seed: int, seconds: float) -> Effects:
    g = torch.Generator().manual_seed(seed)
    normalised = signal.expand(N_PAIRS, *shape) + noise * torch.randn(N_PAIRS, *shape,
                                                                       generator=g)
    return Effects(method, normalised.float(), (3.0 * normalised - 1.0).float(), seconds)


def _signal_positions() -> torch.Tensor:
    """S2 carries the task early, END late (the IOI picture), S1 a little at layer 2,
    everything else 0 (plus noise)."""
    s = torch.zeros(len(LAYERS), len(POSITIONS))
    s[:3, 3] = torch.tensor([1.0, 0.95, 0.7])
    s[3:, 4] = torch.tensor([0.5, 0.85, 0.9])
    s[2, 2] = 0.3
    return s


def _signal_heads(per_position: bool) -> torch.Tensor:
    s = torch.zeros(len(LAYERS), len(HEADS))
    s[4, 1], s[5, 2], s[3, 0] = 0.6, 0.35, -0.25
    if per_position:
        s = s[..., None].repeat(1, 1, len(POSITIONS)) * torch.tensor([0, 0, 0, 0.2, 1.0])
    return s


def _task() -> TaskSummary:
    g = torch.Generator().manual_seed(1)
    return TaskSummary(
        name="ioi", source=f"datasets/circuits/{SCRIPT}.jsonl", sha256="ab" * 32, n_read=15,
        n_used=N_PAIRS, n_left_out=3, left_out_reason=f"clean LD below 0.1 {SCRIPT}",
        positions=POSITIONS,
        clean_ld=(3.0 + 0.5 * torch.randn(N_PAIRS, generator=g)).tolist(),
        corrupted_ld=(-1.0 + 0.4 * torch.randn(N_PAIRS, generator=g)).tolist())


def _dla() -> DLAResult:
    g = torch.Generator().manual_seed(2)
    heads = 0.05 * torch.randn(N_PAIRS, len(LAYERS), len(HEADS), generator=g)
    heads[:, 4, 1] += 1.5
    heads[:, 5, 2] -= 0.8
    mlp = 0.1 * torch.randn(N_PAIRS, len(LAYERS), generator=g)
    mlp[:, 5] += 0.9
    embed = 0.2 + 0.05 * torch.randn(N_PAIRS, generator=g)
    total = heads.sum((1, 2)) + mlp.sum(1) + embed
    return DLAResult(heads, mlp, embed, total, max_sum_error=3e-6)


def _attention(layer: int, heads: list[int]) -> AttentionResult:
    n = len(TOKENS)
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(len(heads), n, n, generator=g)
    scores[0, -1, 1] += 6.0  # the first head's last query looks at " Mary"
    scores[:, -1, 3] += 4.0  # and at the hostile token
    scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -math.inf)
    return AttentionResult(AttentionConfig("When Mary ... to", layer, heads), TOKENS, layer,
                           heads, scores.softmax(-1), "tiny/<b>model</b>")


def _agreement(method: str) -> Agreement:
    return Agreement(method, 30, 0.91, [0.85, 0.95], 0.8, [0.6, 0.9], 0.9, [0.8, 1.0],
                     12.0, 0.6)


def manifest() -> dict:
    return {"interp_version": "0.1.0", "git_commit": "0123456789abcdef" * 2 + "01234567",
            "git_dirty": False, "timestamp": "2025-01-01T00:00:00+00:00",
            "command": ["interp", "patch", "--task", SCRIPT], "model_id": "tiny/<b>model</b>",
            "seed": 0}


def position_result(method: str = "both") -> PatchResult:
    """resid family, exact + AtP (+ agreement), embeddings patched, DLA, attention."""
    shape = (len(LAYERS), len(POSITIONS))
    exact = _effects("exact", shape, _signal_positions(), 0.05, 10, 12.0)
    atp = _effects("atp", shape, 0.9 * _signal_positions(), 0.08, 11, 0.6)
    g = torch.Generator().manual_seed(4)
    embed = 0.05 * torch.randn(N_PAIRS, len(POSITIONS), generator=g)
    embed[:, POSITIONS.index("S2")] += 0.9
    return PatchResult(
        config=PatchConfig(task="ioi", family="resid", method=method),  # type: ignore[arg-type]
        task=_task(), family="resid", layers=LAYERS, positions=POSITIONS, heads=None,
        baseline=0.0, exact=exact if method in ("exact", "both") else None,
        atp=atp if method in ("atp", "both") else None,
        agreement=[_agreement("atp")] if method == "both" else [], embed_effect=embed,
        split_half=SplitHalf(3, ["resid0@S2", "resid5@END", f"resid2@S1{SCRIPT}"],
                             ["resid0@S2", "resid1@S2"], 1, 0.3, 6, 6),
        dla=_dla(), attention=[_attention(4, [1])], model_id="tiny/<b>model</b>",
        manifest=manifest())


#: The heads result's two groups of pairs (a hostile name for the second).
GROUPS = ["abba"] * (N_PAIRS // 2) + [SCRIPT] * (N_PAIRS // 2)


def heads_result(per_position: bool = False) -> PatchResult:
    """heads family, exact; L2H3 acts with opposite signs in the two groups of pairs
    (mean 0 overall), found by the per-group look."""
    from interp.circuits.groups import group_effects

    shape = (len(LAYERS), len(HEADS)) + ((len(POSITIONS),) if per_position else ())
    exact = _effects("exact", shape, _signal_heads(per_position), 0.04, 20, 30.0)
    exact.normalised[: N_PAIRS // 2, 2, 3] += 0.3
    exact.normalised[N_PAIRS // 2:, 2, 3] -= 0.3
    r = PatchResult(
        config=PatchConfig(task="ioi", family="heads", per_position=per_position, top_heads=3),
        task=_task(), family="heads", layers=LAYERS,
        positions=POSITIONS if per_position else None, heads=HEADS, baseline=0.0, exact=exact,
        dla=_dla(), attention=[_attention(4, [1]), _attention(5, [2])],
        model_id="tiny/<b>model</b>", manifest=manifest())
    r.groups = group_effects(exact.normalised, r.component_names(), GROUPS,
                             column=f"template{SCRIPT}", method="exact", baseline=0.0)
    for line in r.groups.warnings():  # as run_patch does
        r.warn(line)
    return r


def noise_result() -> PatchResult:
    """Noising (baseline 1), AtP only: no agreement, no DLA, no attention."""
    r = position_result("atp")
    assert r.atp is not None
    r.atp.normalised = 1.0 - r.atp.normalised
    r.config = r.config.replace(direction="noise")
    r.baseline, r.dla, r.attention, r.embed_effect = 1.0, None, [], None
    return r


def figures(doc: str) -> list[ET.Element]:
    return svgs(doc, "mpl-fig")


def figure_names(doc: str) -> list[str]:
    return [s.get("data-figure") or "" for s in figures(doc)]


def titles(doc: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", doc)


@pytest.fixture(scope="module")
def page() -> str:
    return patching_report(position_result()).html


@pytest.fixture(scope="module")
def heads_page() -> str:
    return patching_report(heads_result()).html


# ------------------------------------------------------------------- page content
@pytest.mark.parametrize("make", [position_result, heads_result,
                                  lambda: heads_result(True), noise_result])
def test_self_contained_and_escaped(make):
    doc = patching_report(make()).html
    low = doc.lower()
    assert "<script" not in low and "<b>" not in low
    tags = parse(doc)
    assert not {"script", "img", "iframe", "link", "object"} & set(tags.tags)
    assert not [a for _, a, _ in tags.attrs if a.startswith("on")]
    bare = doc
    for ns in NAMESPACES:
        bare = bare.replace(ns, "")
    assert "http://" not in bare and "https://" not in doc
    assert not re.search(r"\bnan\b", doc, re.I)
    for svg in figures(doc):  # every figure is well-formed XML
        assert svg.tag == SVG + "svg"
    assert titles(doc)[-1] == "Run manifest"


def test_hostile_strings_are_escaped(page, heads_page):
    esc = str(escape(SCRIPT))
    assert f"resid2@S1{esc}" in page  # a position role, in the top table
    assert f"clean LD below 0.1 {esc}" in page  # the left-out reason
    assert "tiny/&lt;b&gt;model&lt;/b&gt;" in page
    # the hostile token in the attention table (exact string in the tooltip), and cut
    # short on the figure's axes
    assert f'title="&#34;{esc}&#34;">{esc}</code>' in page
    assert "&lt;script&gt;alert…" in page
    assert "↵ 4" in page  # the newline token, made visible, on the axes
    assert esc in heads_page


def test_sections(page, heads_page):
    assert titles(page) == [
        "Top 10 components", "exact patching: effect by layer", "AtP: effect by layer",
        "Approximation against exact patching", "Direct logit attribution",
        "Attention of the top heads", "Metrics", "Setup", "Run manifest"]
    assert titles(heads_page) == [
        "Top 10 components", f"Effects by template{escape(SCRIPT)}",
        "exact patching: effect by layer", "Direct logit attribution",
        "Attention of the top heads", "Metrics", "Setup", "Run manifest"]
    assert titles(patching_report(noise_result()).html) == [
        "Top 10 components", "AtP: effect by layer", "Metrics", "Setup", "Run manifest"]
    assert sorted(figure_names(page)) == sorted(
        ["effect-exact", "effect-atp", "agreement-atp", "dla", "attn-l4h1"])


def test_lead_states_task_pairs_and_logit_differences(page):
    m = re.search(r'<div class="lead">(.*?)</dl>', page, re.S)
    assert m
    lead = m.group(1)
    t = position_result().task
    clean = sum(t.clean_ld) / len(t.clean_ld)
    assert f"Task ioi: {N_PAIRS} of 15 pairs used (3 left out: clean LD below" in lead
    assert f"Clean logit difference {clean:.3f} nats (95% CI [" in lead
    assert "corrupted −" in lead
    assert "Largest effect (exact patching): resid0@S2" in lead
    assert "exact patching, AtP" in lead and "denoise" in lead


def test_top_components_table_with_ci_and_noise(page):
    body = section(page, "Top 10 components").split("</table>")[0]
    rows = re.findall(r"<tr( class=\"dim\")?><td class=\"num\">(\d+)</td><td><code>(.*?)</code>",
                      body)
    assert [int(r[1]) for r in rows] == list(range(1, 11))
    r = position_result()
    assert [html for _, _, html in rows] == [str(escape(n)) for n, _ in r.top_components(10)]
    assert rows[0][2] == "resid0@S2" and not rows[0][0]
    assert body.count("[") >= 10  # an interval per row
    assert "<th scope=\"col\" class=\"num\">AtP</th>" in body  # the other method's column
    # the component whose interval contains the baseline is marked
    noisy = [name for dim, _, name in rows if dim]
    assert noisy and all(">within noise</span>" in body for _ in noisy)
    for name in noisy:
        i = r.component_names().index(str(name).replace("&lt;", "<").replace("&gt;", ">")
                                      .replace("&#34;", '"').replace("&#39;", "'"))
        lo, hi = r.primary.ci95.reshape(-1, 2)[i].tolist()
        assert lo <= 0.0 <= hi


def test_split_half_stability(page):
    body = section(page, "Top 10 components")
    assert ("the exact top 3 of the even-numbered pairs (6) and of the odd-numbered pairs (6) "
            "share <strong>1 of 3</strong> components (two random top-3 sets would share 0.3"
            in body)
    assert f"<code>resid2@S1{escape(SCRIPT)}</code>" in body
    assert '<td><span class="missing">—</span></td>' in body  # the shorter list, padded
    assert "Stability" not in patching_report(heads_result()).html


def test_agreement_table_and_scatter(page):
    body = section(page, "Approximation against exact patching")
    assert "0.910 [0.850, 0.950]" in body
    assert "0.80 [0.60, 0.90]" in body and "0.90 [0.80, 1.00]" in body
    assert "12.0 s" in body and "0.6 s" in body and "20.0×" in body
    (svg,) = [s for s in figures(page) if s.get("data-figure") == "agreement-atp"]
    text = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert "Spearman ρ = 0.91 [0.85, 0.95]" in text
    assert "resid0@S2" in text  # the exact top-1 is named
    tips = [g.find(f"{SVG}title") for g in svg.iter(f"{SVG}g")
            if re.fullmatch(r"agreement-atp-top-\d+", g.get("id") or "")]
    assert len(tips) == 10 and all(t is not None for t in tips)


def test_dla_section(page):
    body = section(page, "Direct logit attribution")
    assert "final RMSNorm scale frozen" in body  # the convention
    assert "3.00e-06 nats" in body  # max_sum_error
    assert "L4H1" in body and "MLP5" in body and "embed" in body
    (svg,) = [s for s in figures(page) if s.get("data-figure") == "dla"]
    bars = [g for g in svg.iter(f"{SVG}g") if re.fullmatch(r"dla-bar-\d+", g.get("id") or "")]
    assert len(bars) == 15


def test_attention_anchors_and_links(heads_page):
    body = section(heads_page, "Attention of the top heads")
    for layer, head in ((4, 1), (5, 2)):
        assert f'<div class="attn-head" id="attn-L{layer}H{head}">' in body
        assert f'<a href="#attn-L{layer}H{head}">L{layer}H{head}</a>' in body
    # the top-3 heads by importance; L3H0 (negative effect) has no recorded pattern
    rows = re.findall(r"<tr><td class=\"num\">(\d)</td><td>(.*?)</td>", body)
    assert [h for _, h in rows[:3]] == ['<a href="#attn-L4H1">L4H1</a>',
                                        '<a href="#attn-L5H2">L5H2</a>', "L3H0"]
    assert "not recorded" in body
    assert "Heads ranked by importance" in body
    pos = section(patching_report(position_result()).html, "Attention of the top heads")
    assert "Heads ranked by |DLA|" in pos and '<a href="#attn-L4H1">L4H1</a>' in pos
    ids = re.findall(r'\bid="(attn-L\d+H\d+)"', heads_page)
    assert len(ids) == len(set(ids)) == 2


def test_heads_heatmap_tooltips_and_orientation(heads_page):
    (svg,) = [s for s in figures(heads_page) if s.get("data-figure") == "effect-exact"]
    cells = [g for g in svg.iter(f"{SVG}g")
             if re.fullmatch(r"effect-exact-cell-\d+-\d+", g.get("id") or "")]
    assert len(cells) == len(LAYERS) * len(HEADS)
    tip = {g.get("id"): (g.findtext(f"{SVG}title") or "") for g in cells}
    assert tip["effect-exact-cell-4-1"].startswith("layer 4 · head 1\nexact patching: 0.6")
    assert "within noise" not in tip["effect-exact-cell-4-1"]
    noisy = [t for t in tip.values() if "within noise" in t]
    assert noisy and all("the interval contains the baseline 0" in t for t in noisy)


def test_per_position_heads_small_multiples():
    r = heads_result(True)
    fig = effect_heatmap(r)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    assert len(panels) == len(POSITIONS)
    assert [ax.get_title(loc="left") for ax in panels][-1] == "@ END"
    assert effect_titles(r) == {}
    doc = patching_report(r).html
    assert "One small heatmap per position" in doc


def test_report_saves_every_figure_and_is_byte_stable(tmp_path, page):
    report = patching_report(position_result())
    assert report.html == page
    report.save(tmp_path)
    for name in report.figures:
        assert (tmp_path / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 1000
    path = patching_report(position_result()).save(tmp_path / "p")
    assert path.read_text(encoding="utf-8") == page


# --------------------------------------------------------------- figure builders
def test_effect_heatmap_embed_row_layer_zero_on_top_and_centred_scale():
    r = position_result()
    fig = effect_heatmap(r, "exact")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["embed", *map(str, LAYERS)]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # row 0 on top
    assert [t.get_text() for t in ax.get_xticklabels()][2] == f"S1{SCRIPT}"
    assert len(ax.patches) == (len(LAYERS) + 1) * len(POSITIONS)
    assert set(effect_titles(r, "exact")) == {p.get_gid() for p in ax.patches}
    lo, hi = effect_scale(r, "exact")
    assert lo == pytest.approx(-hi)  # symmetric around the baseline 0
    # the AtP map has no embed row (the embeddings were patched exactly)
    assert [t.get_text() for t in effect_heatmap(r, "atp").axes[0].get_yticklabels()][0] == "0"
    nr = noise_result()
    lo, hi = effect_scale(nr)
    assert (lo + hi) / 2 == pytest.approx(1.0)
    with pytest.raises(InterpError, match="no 'atp-star' effects"):
        effect_heatmap(r, "atp-star")


def test_agreement_scatter_needs_exact():
    r = position_result()
    fig = agreement_scatter(r, r.agreement[0])
    assert len(agreement_titles(r, r.agreement[0])) == 10
    assert "Spearman" in fig.axes[0].get_title(loc="left")
    r.exact = None
    with pytest.raises(InterpError, match="exact"):
        agreement_scatter(r, _agreement("atp"))


def test_dla_components_and_titles():
    d = _dla()
    top = dla_components(d, LAYERS, HEADS)
    assert len(top) == 15
    assert [t[0] for t in top[:3]] == ["L4H1", "MLP5", "L5H2"]
    assert all(lo <= m <= hi for _, m, lo, hi in top)
    tips = dla_titles(d, LAYERS, HEADS)
    assert len([k for k in tips if k.startswith("cell-")]) == len(LAYERS) * (len(HEADS) + 1)
    fig = dla_bars(d, LAYERS, HEADS)
    assert len(fig.axes[0].patches) == len(LAYERS) * (len(HEADS) + 1)
    with pytest.raises(InterpError, match="do not match"):
        dla_bars(d, LAYERS[:-1], HEADS)


def test_token_label():
    assert token_label(" Mary") == "␣Mary"
    assert token_label("\n\t") == "↵⇥"
    assert token_label("") == "∅"
    assert token_label("\x01") == "\\x01"
    assert token_label("x" * 40) == "x" * 13 + "…"


def test_group_card_figure_and_table(heads_page):
    """The heads result's groups: a forest figure whose dots carry hover values, the
    differing component named, the table per group, escaped group names."""
    r = heads_result()
    assert r.groups is not None
    differing = [c.component for c in r.groups.differing]
    assert "L2H3" in differing
    assert 'data-figure="groups"' in heads_page
    card = section(heads_page, f"Effects by {escape(f'template{SCRIPT}')}")
    assert "differs in sign" in card
    lead = heads_page[:heads_page.index(f"Effects by {escape(f'template{SCRIPT}')}")]
    assert "L2H3&#39;s exact effect differs in sign" in lead  # the lead's warnings box
    assert str(escape(SCRIPT)) in card and SCRIPT not in card
    n_dots = len(r.groups.components) * 2
    dots = re.findall(r'<g id="groups-dot-\d+-\d+">\s*<title>([^<]*)</title>', heads_page)
    assert len(dots) == n_dots
    assert any(t.startswith("L2H3, template") and "Holm p" in t for t in dots)
