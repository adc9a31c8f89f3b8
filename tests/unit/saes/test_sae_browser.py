"""The SAE feature browser: data against brute force, selection, config errors, and the page.

Everything runs on the tiny random Llama with a randomly initialised SAE (a few features
forced dead), so each brute-force reference is one forward pass over the same windows.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import xml.etree.ElementTree as ET

import pytest
import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from reports.html import paragraph, render_page
from reports.sae_browser import SEARCH_JS, sae_browser_report
from saes.features.browser import (
    BrowserConfig,
    BrowserData,
    collect_browser_data,
    logit_effects,
    parse_feature_spec,
)
from saes.results import select_features
from saes.sae import SAEConfig, SparseAutoencoder
from tests.support.bad_inputs import Case, M, _foreign_sae, _text, _tiny_sae
from tests.support.html_checks import parse
from tests.support.text_fixtures import TINY_TEXT

D_SAE = 64
DEAD = (0, 5, 9)
CFG = dict(tokens=600, seq_len=24, batch_size=3, top_k=5, context=6, n_logits=4)
# 12 sentences, five times over (750 tokens): the scans read 600 without running out
DOCS = [s.strip() + "." for s in TINY_TEXT.split(".") if s.strip()][:12] * 5
MANIFEST = {"model_id": "tiny", "git_commit": "abc123", "timestamp": "2025-01-01T00:00:00Z"}
PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>']
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def sae(tiny_model) -> SparseAutoencoder:
    s = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=D_SAE,
                                    hook_point=tiny_model.resid_hook(1), layer=1,
                                    model_id=tiny_model.model_id))
    s.init_weights(torch.Generator().manual_seed(0))
    with torch.no_grad():
        s.b_enc[list(DEAD)] = -1e4  # never fire
        s.b_enc[1] = 0.05  # fires on (almost) every token: a dense feature
    return s


@pytest.fixture(scope="module")
def reference(tiny_model, sae):
    """Brute force: f on every scanned window, all positions (position 0 included)."""
    cfg = BrowserConfig(**CFG)
    ids = pack_windows(tiny_model, DOCS, seq_len=cfg.seq_len, n_windows=cfg.n_windows,
                       seed=cfg.seed)
    acts = forward_with_hooks(tiny_model, ids, None, [sae.cfg.hook_point])[0]
    with torch.no_grad():
        f = sae.encode(acts[sae.cfg.hook_point])
    return ids, f  # [n_windows, seq_len], [n_windows, seq_len, d_sae]


@pytest.fixture(scope="module")
def data(tiny_model, sae):
    return collect_browser_data(tiny_model, sae, DOCS, BrowserConfig(**CFG, features="all"))


def test_densities_match_brute_force(data, reference):
    ids, f = reference
    assert ids.shape == (math.ceil(CFG["tokens"] / CFG["seq_len"]), CFG["seq_len"])
    body = f[:, 1:]
    assert data.n_tokens == body.shape[0] * body.shape[1]
    fires = (body > 0).sum(dim=(0, 1))
    assert data.fires == fires.tolist()
    assert data.densities == [k / data.n_tokens for k in fires.tolist()]
    assert data.n_dead == len(DEAD)
    assert all(data.fires[i] == 0 for i in DEAD)


def test_contexts_are_the_top_k_and_never_position_0(data, reference, tiny_model):
    ids, f = reference
    seq_len, ctx, k = CFG["seq_len"], CFG["context"], CFG["top_k"]
    assert [c.index for c in data.features] == list(range(D_SAE))
    for card in data.features:
        j = card.index
        col = f[:, 1:, j].reshape(-1)
        want = col.topk(min(k, int((col > 0).sum()))).values if (col > 0).any() else col[:0]
        got = torch.tensor([c.acts[c.max_at] for c in card.contexts])
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), j
        assert card.max_act == pytest.approx(float(f[:, 1:, j].max()) if card.n_fires else 0.0)
        seen = set()
        for c in card.contexts:
            assert c.position >= 1
            assert (c.window, c.position) not in seen
            seen.add((c.window, c.position))
            lo = max(1, c.position - ctx)
            hi = min(seq_len, c.position + 5)
            assert c.max_at == c.position - lo
            assert c.tokens == tiny_model.token_strs(ids[c.window, lo:hi])
            ref = f[c.window, lo:hi, j]
            assert torch.allclose(torch.tensor(c.acts), ref, rtol=1e-5, atol=1e-6)
            assert c.acts[c.max_at] == pytest.approx(float(f[c.window, c.position, j]), rel=1e-5)
        if j in DEAD:
            assert card.contexts == [] and card.density == 0 and card.max_act == 0


def test_batch_size_does_not_change_the_result(tiny_model, sae, data):
    other = collect_browser_data(
        tiny_model, sae, DOCS, BrowserConfig(**{**CFG, "batch_size": 7}, features="2,1,40"))
    assert other.fires == data.fires
    assert [c.index for c in other.features] == [2, 1, 40]
    for card in other.features:
        ref = data.features[card.index]
        assert [c.acts[c.max_at] for c in card.contexts] == pytest.approx(
            [c.acts[c.max_at] for c in ref.contexts], rel=1e-5)


def test_promoted_and_suppressed_match_brute_force(data, tiny_model, sae):
    W_U = tiny_model.bridge.unembed.W_U.detach().float()  # [d_model, d_vocab]
    gamma = tiny_model.bridge.ln_final.original_component.weight.detach().float()
    assert not torch.allclose(gamma, torch.ones_like(gamma))  # γ matters on this model
    n = CFG["n_logits"]
    for card in data.features[:8]:
        eff = sae.W_dec[card.index].detach() @ (gamma[:, None] * W_U)
        top, bot = eff.topk(n), eff.topk(n, largest=False)
        assert [v for _, v in card.promoted] == pytest.approx(top.values.tolist(), rel=1e-4)
        assert [v for _, v in card.suppressed] == pytest.approx(bot.values.tolist(), rel=1e-4)
        assert [t for t, _ in card.promoted] == tiny_model.token_strs(top.indices)
        assert [t for t, _ in card.suppressed] == tiny_model.token_strs(bot.indices)
    # the same through the public helper, in chunks smaller than the row count
    again = logit_effects(tiny_model, sae.W_dec[:5].detach(), n, chunk=2)
    for (promoted, _), card in zip(again, data.features[:5], strict=True):
        assert [t for t, _ in promoted] == [t for t, _ in card.promoted]
        assert [v for _, v in promoted] == pytest.approx([v for _, v in card.promoted], rel=1e-5)


def test_feature_selection_modes():
    fires = [0, 3, 0, 7, 1, 0, 2, 9]
    assert select_features("all", fires) == list(range(8))
    alive = select_features("alive:3", fires, seed=0)
    assert len(alive) == 3 and alive == sorted(alive) and all(fires[i] > 0 for i in alive)
    assert select_features("alive:3", fires, seed=0) == alive
    assert {tuple(select_features("alive:3", fires, seed=s)) for s in range(10)} != {tuple(alive)}
    assert select_features("alive:100", fires) == [1, 3, 4, 6, 7]
    assert select_features(" 7, 1 ,7", fires) == [7, 1]
    assert select_features("alive:2", [0, 0, 0]) == []
    with pytest.raises(InterpError, match="out of range"):
        select_features("3,8", fires)
    assert parse_feature_spec("ALIVE:4") == ("alive", 4)


def test_alive_selection_skips_dead_features(tiny_model, sae):
    d = collect_browser_data(tiny_model, sae, DOCS,
                             BrowserConfig(**{**CFG, "tokens": 100}, features="alive:10"))
    idx = [c.index for c in d.features]
    assert len(idx) == 10 and idx == sorted(idx) and not set(idx) & set(DEAD)
    with pytest.raises(InterpError, match="out of range"):
        collect_browser_data(tiny_model, sae, DOCS,
                             BrowserConfig(**{**CFG, "tokens": 50}, features="1,64"))


@pytest.mark.parametrize("kwargs", [
    {"tokens": 0}, {"tokens": True}, {"seq_len": 1}, {"batch_size": 0}, {"top_k": 0},
    {"context": -1}, {"n_logits": 0}, {"seed": "1"}, {"seed": False}, {"features": ""},
    {"features": "alive:0"}, {"features": "alive:x"}, {"features": "3,a"},
    {"features": "-1"}, {"features": "some"}, {"features": 3},
])
def test_bad_configs_are_user_errors(kwargs):
    with pytest.raises(InterpError) as exc:
        BrowserConfig(**kwargs)
    assert "\n" not in str(exc.value)


def test_sae_for_another_model_is_refused(tiny_model, sae):
    wide = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model + 1, d_sae=8,
                                       hook_point=tiny_model.resid_hook(1)))
    with pytest.raises(InterpError, match="d_in"):
        collect_browser_data(tiny_model, wide, DOCS)
    other = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=8,
                                        hook_point=tiny_model.resid_hook(1), model_id="gpt2"))
    with pytest.raises(InterpError, match="trained on model"):
        collect_browser_data(tiny_model, other, DOCS)
    with pytest.raises(InterpError):
        collect_browser_data(tiny_model, sae, [])


def test_to_dict_is_json_and_has_the_schema(data):
    d = json.loads(json.dumps(data.to_dict(), allow_nan=False))
    for key in ("model_id", "hook_point", "layer", "d_sae", "n_tokens", "n_windows", "seq_len",
                "config", "densities", "density_histogram", "n_dead", "dead_fraction",
                "dead_fraction_ci95", "dead_fraction_n", "selected", "features"):
        assert key in d, key
    assert len(d["densities"]) == D_SAE
    assert d["dead_fraction"] == pytest.approx(len(DEAD) / D_SAE)
    lo, hi = d["dead_fraction_ci95"]
    assert lo <= d["dead_fraction"] <= hi and d["dead_fraction_n"] == D_SAE
    hist = d["density_histogram"]
    assert len(hist["edges"]) == len(hist["counts"]) + 1
    assert sum(hist["counts"]) == D_SAE - len(DEAD)
    f = d["features"][3]
    assert set(f) >= {"index", "density", "max_act", "contexts", "promoted", "suppressed"}
    c = f["contexts"][0]
    assert set(c) >= {"tokens", "acts", "max_at"} and len(c["tokens"]) == len(c["acts"])
    assert isinstance(f["promoted"][0][0], str) and isinstance(f["promoted"][0][1], float)


# ---------------------------------------------------------------------------- HTML


def _hostile(data) -> dict:
    d = data.to_dict()
    for f in d["features"]:
        if f["contexts"]:
            ctx = f["contexts"][0]
            ctx["tokens"][0] = PAYLOADS[0]
            ctx["tokens"][-1] = PAYLOADS[1] + "\n"
        if f["promoted"]:
            f["promoted"][0][0] = PAYLOADS[1]
    return d


def test_script_is_allowed_by_its_hash_and_nothing_else():
    def render_report(title, sections, manifest, script=None):
        return render_page("sections.html.j2", title=title, manifest=manifest, script=script,
                           sections=sections).html

    sections = [{"title": "a", "body": paragraph("x")}]
    plain = render_report("T", sections, MANIFEST)
    assert "<script" not in plain and "script-src" not in plain
    assert "no scripts, no network access" in plain
    html = render_report("T", sections, MANIFEST, script=SEARCH_JS)
    body = re.search(r'<script id="interp-report-js">(.*?)</script>', html, re.S).group(1)
    assert body == SEARCH_JS
    want = base64.b64encode(hashlib.sha256(SEARCH_JS.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
    assert csp == ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                   f"script-src 'sha256-{want}'")
    # everything else is the same page
    assert re.sub(r"<script.*?</script>\n|; script-src [^\"]*|<footer>.*?</footer>", "", html,
                  flags=re.S) == re.sub(r"<footer>.*?</footer>", "", plain)
    for bad in ("</script><b>", "  ", "<!-- x", "<SCRIPT>"):
        with pytest.raises(InterpError):
            render_report("T", [], MANIFEST, script=bad)


def test_page_is_escaped_and_self_contained(data):
    html = sae_browser_report(BrowserData.from_dict(_hostile(data)), MANIFEST).html
    assert PAYLOADS[0] not in html and "<img" not in html
    tags = parse(html)
    assert tags.tags.count("script") == 1
    assert ("script", "id", "interp-report-js") in tags.attrs
    assert not {"img", "iframe", "link", "object", "embed"} & set(tags.tags)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert tags.tags.count("article") == D_SAE
    # the raw payload is searchable: parsed attributes hold the exact token text
    searches = [v for t, k, v in tags.attrs if t == "article" and k == "data-search"]
    assert any(PAYLOADS[0] in s and PAYLOADS[1] in s for s in searches)
    assert "Feature 63" in html and "Run manifest" in html


def _density_hover(doc: str) -> dict[str, str]:
    """gid -> hover text of the summary's density figure."""
    (m,) = re.finditer(r'<svg[^>]*data-figure="density".*?</svg>', doc, re.S)
    svg = ET.fromstring(m.group(0))
    return {g.get("id").removeprefix("density-"): g.find(f"{SVG}title").text
            for g in svg.iter(f"{SVG}g") if g.find(f"{SVG}title") is not None}


def _count(text: str) -> int:
    return int(re.search(r": (\d+) features", text).group(1))


def test_summary_histogram_shows_alive_and_dead_features(data):
    d = data.to_dict()
    tips = _density_hover(sae_browser_report(BrowserData.from_dict(d), MANIFEST).html)
    bins = sorted((k for k in tips if k.startswith("bin-")), key=lambda k: int(k[4:]))
    assert [_count(tips[b]) for b in bins] == d["density_histogram"]["counts"]
    assert _count(tips["dead-bar"]) == len(DEAD)
    assert sum(_count(tips[b]) for b in bins) + _count(tips["dead-bar"]) == D_SAE
    # one token in the scan is the rarest firing it can measure: marked on the axis
    assert tips["floor"].startswith(f"1 / n_tokens = {1 / data.n_tokens:.2g}")


def test_browser_report_takes_the_typed_result_and_keeps_its_figure(data, tmp_path):
    report = sae_browser_report(data, MANIFEST)
    assert set(report.figures) == {"density"}
    assert report.html == sae_browser_report(BrowserData.from_dict(data.to_dict()), MANIFEST).html
    report.save(tmp_path)
    assert (tmp_path / "figures" / "density.svg").is_file()
    assert (tmp_path / "figures" / "density.png").stat().st_size > 1000


def test_to_frame_and_notebook_view(data):
    frame = data.to_frame()
    assert list(frame["index"]) == [c.index for c in data.features]
    assert frame.loc[3, "density"] == pytest.approx(data.features[3].density)
    top = data.features[3].contexts[0]
    assert frame.loc[3, "top_token"] == top.tokens[top.max_at]
    html = data._repr_html_()
    assert "SAE feature browser" in html and "<svg" in html and "<script" not in html


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("sae-browse-bad-features", lambda c: [
        "sae", "browse", _foreign_sae(c), *M(c), "--features", "alive:x", "--out", c.out],
        "features"),
    Case("sae-browse-other-d-model", lambda c: [
        "sae", "browse", _foreign_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "d_in=32, but model"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("sae-browse-absent-gpu", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--device", "cuda:7", "--out", c.out], "cuda:7"),
    # requests beyond the text: refused before the model runs
    Case("sae-browse-tokens-beyond-text", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "5000",
        "--out", c.out], "the feature browser asks for tokens=5,000"),
    Case("sae-browse-explanations-not-records", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "200",
        "--seq-len", "24", "--explanations", c.file("y.jsonl", "[1, 2]\n"),
        "--out", c.out], "line 1 is not an explanation record"),
    Case("sae-browse-explanations-of-another-sae", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "200",
        "--seq-len", "24", "--explanations", c.file("x.jsonl", '{"feature": 40}\n'),
        "--out", c.out], "outside the SAE's d_sae=16"),
]
