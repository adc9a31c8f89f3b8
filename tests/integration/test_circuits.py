"""Activation patching, AtP and DLA on the real model: anchors, batch invariance, the IOI
heads."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from interp.circuits import (
    PatchConfig,
    components,
    direct_logit_attribution,
    exact_patch,
    load_task,
    pair_lds,
    run_patch,
    tokenize_task,
)
from interp.circuits.patching import EMBED, ld_direction, run_ld
from tests.unit.interp.test_circuits import _normalised


@pytest.fixture(scope="module")
def ioi(model):
    return tokenize_task(model, load_task("ioi", limit=4))


def test_real_anchors_and_identity(model, ioi):
    """Embeddings at S2 → 1; resid after block 0 there ≥ 0.9; last layer at END = clean."""
    clean, corr = pair_lds(model, ioi, 16)
    assert (clean > 1).all()
    comps = components("resid", [EMBED, 0, model.n_layers - 1], 9, len(ioi.positions), False)
    raw = exact_patch(model, ioi, "resid", comps, batch_size=32, progress=False)
    norm = _normalised(raw, clean, corr).reshape(len(ioi), 3, -1)
    s2, end = ioi.positions.index("S2"), ioi.positions.index("END")
    torch.testing.assert_close(norm[:, 0, s2], torch.ones(len(ioi)), atol=1e-4, rtol=0)
    assert norm[:, 1, s2].mean() >= 0.9
    torch.testing.assert_close(raw.reshape(len(ioi), 3, -1)[:, 2, end], clean, atol=1e-4, rtol=0)
    # clean = corrupted: no component moves the logit difference (hooks are inert)
    same = replace(ioi.subset([0, 1]), corrupted_ids=ioi.clean_ids[:2])
    for family in ("resid", "attn", "mlp", "heads"):
        c = components(family, [0, 29], 9, len(same.positions), False)
        raw_s = exact_patch(model, same, family, c, batch_size=len(c), progress=False)
        for i in range(2):
            rows = [i] * len(c)
            d = ld_direction(model, same.answer[rows], same.wrong[rows])
            ref, _ = run_ld(model, same.clean_ids[rows], same.attention_mask[rows], d)
            assert (raw_s[i] - ref).abs().max() < 1e-5, family


def test_real_batch_invariance_and_dla(model, ioi):
    sub = ioi.subset([0, 1])
    comps = components("heads", [22, 23], 9, len(sub.positions), False)
    one = exact_patch(model, sub, "heads", comps, batch_size=1, progress=False)
    many = exact_patch(model, sub, "heads", comps, batch_size=16, progress=False)
    torch.testing.assert_close(one, many, atol=1e-4, rtol=1e-4)
    dla = direct_logit_attribution(model, ioi)
    assert dla.max_sum_error < 1e-3
    total = dla.heads.sum((1, 2)) + dla.mlp.sum(1) + dla.embed
    torch.testing.assert_close(total, dla.total, atol=1e-3, rtol=1e-4)


def _check_prefix_reuse(model) -> None:
    """Patching chunks that start at their first patched block equals whole passes of the
    same chunks to the bit, and moves the logit difference."""
    tt = tokenize_task(model, load_task("ioi", limit=2))
    n, h = model.n_layers, int(model.bridge.cfg.n_heads)
    comps = components("heads", [2, n // 2, n - 2, n - 1], h, len(tt.positions), False)
    kw = {"batch_size": h, "progress": False}
    fast = exact_patch(model, tt, "heads", comps, **kw)
    whole = exact_patch(model, tt, "heads", comps, reuse_prefix=False, **kw)
    assert torch.equal(fast, whole)
    _, corr = pair_lds(model, tt, 2)
    assert (fast - corr[:, None]).abs().max() > 0.05


def test_real_prefix_reuse_bit_equal(model):
    _check_prefix_reuse(model)


def test_gemma_prefix_reuse_bit_equal(gemma):
    _check_prefix_reuse(gemma)


def test_real_ioi_heads_exact_and_atp(model):
    """A real effect: some head carries the IOI answer, and AtP ranks heads like exact."""
    res = run_patch(model, PatchConfig(task="ioi", family="heads", method="both", limit=6,
                                       layers=list(range(18, 30)), n_boot=200, top_heads=2),
                    progress=False)
    assert res.exact is not None and res.atp is not None
    mean, ci = res.exact.mean, res.exact.ci95
    best = torch.argmax(mean.flatten())
    assert float(mean.flatten()[best]) > 0.2
    assert float(ci.reshape(-1, 2)[best, 0]) > 0  # its CI excludes the corrupted run
    atp_agreement = next(a for a in res.agreement if a.method == "atp")
    assert atp_agreement.spearman > 0.5
    assert atp_agreement.recall_at_10 >= 0.5
    print({a.method: (a.spearman, a.recall_at_10, a.recall_at_30) for a in res.agreement})



def test_real_groups_by_name_order(model, tmp_path):
    """IOI pairs and their BABA twins, grouped by order: L23H3 (the top head) acts alike
    in both orders, each order's interval above 0 and no difference flagged; grouping the
    same runs by a column that means nothing (the pair's parity) flags nothing."""
    from interp.circuits.tasks import name_order_twins

    twins = name_order_twins(load_task("ioi", 8))
    for i, p in enumerate(twins.pairs):
        p.columns["parity"] = "even" if (i // 2) % 2 == 0 else "odd"
    path = twins.write(tmp_path / "twins.jsonl")
    cfg = PatchConfig(task=str(path), family="heads", layers=[17, 19, 20, 23, 24, 29],
                      group_by="order", dla=False, top_heads=0, n_boot=100)
    res = run_patch(model, cfg, progress=False)
    assert res.task.n_left_out == 0  # rows of the effects = the twins, in order
    g = res.groups
    assert g is not None and g.groups == ["ABBA", "BABA"] and g.n_pairs == [8, 8]
    assert res.top_components(1)[0][0] == "L23H3"
    top = next(c for c in g.components if c.component == "L23H3")
    assert all(ci is not None and ci[0] > 0 for ci in top.ci95) and not top.differs
    from interp.circuits.groups import group_effects

    assert res.exact is not None
    parity = group_effects(res.exact.normalised, res.component_names(),
                           [p.columns["parity"] for p in twins.pairs], column="parity",
                           method="exact", baseline=0.0)
    assert not parity.differing, parity.verdict()
