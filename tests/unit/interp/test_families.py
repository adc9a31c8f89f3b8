"""Every registered architecture family on a tiny random checkpoint: the anatomy it declares
matches its Hugging Face modules, and the direct forward path equals Hugging Face's forward
to the bit and the bridge path (to the bit where the bridge runs the Hugging Face modules)."""

from __future__ import annotations

import pytest
import torch

from interp.errors import InterpError
from interp.models.anatomy import FAMILIES, anatomy, family_of
from interp.models.forward import runner_for
from tests.support import families as tiny
from tests.support.forward_checks import PROMPTS, check_routed_points, compare_passes

NAMES = sorted(FAMILIES)


def test_every_registered_family_has_a_tiny_checkpoint():
    assert sorted(tiny.FAMILIES) == NAMES
    assert {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "gpt2",
            "gpt_neox", "phi3", "olmo2"} <= set(NAMES)


def test_an_unknown_family_is_refused_with_the_supported_ones():
    from transformers import BertConfig

    with pytest.raises(InterpError, match=r"architecture 'bert' is not supported; "
                                          r"supported: gemma2, gemma3_text, gpt2"):
        family_of(BertConfig())


def _block_modules(hf) -> dict[str, torch.nn.Module]:
    """Block 0's modules by their path inside the block."""
    for name, module in hf.named_modules():
        if name.endswith(".0") and isinstance(module, torch.nn.Module) and any(
                "attn" in n or "attention" in n for n, _ in module.named_children()):
            return {n: m for n, m in module.named_modules() if n}
    raise AssertionError("no block 0 found")


def _gain(norm: torch.nn.Module) -> str:
    """``"w"`` when a zero weight zeroes the norm's output, ``"1 + w"`` when it does not."""
    x = torch.randn(2, norm.weight.shape[0])
    saved = norm.weight.detach().clone()
    bias = getattr(norm, "bias", None)
    with torch.no_grad():
        norm.weight.zero_()
        out = norm(x) - (bias if bias is not None else 0)
        norm.weight.copy_(saved)
    return "w" if out.abs().max() == 0 else "1 + w"


@pytest.mark.parametrize("name", NAMES)
def test_the_declared_anatomy_matches_the_modules(name, tiny_family):
    """Each declared fact, read off the family's own Hugging Face modules."""
    from transformers import AutoModelForCausalLM

    folder, _ = tiny_family(name)
    hf = AutoModelForCausalLM.from_pretrained(str(folder))
    fam, cfg = FAMILIES[name], hf.config
    mods = _block_modules(hf)
    leaves = {n.rsplit(".", 1)[-1] for n in mods}
    assert fam.fused_qkv == bool(leaves & {"qkv_proj", "c_attn", "query_key_value"}), leaves
    assert fam.qk_norm == ("q_norm" in leaves and "k_norm" in leaves), leaves
    assert fam.gated_mlp == bool(leaves & {"gate_proj", "gate_up_proj"}), leaves
    assert fam.fused_gate_up == ("gate_up_proj" in leaves), leaves
    norms = [m for n, m in mods.items() if "norm" in n.rsplit(".", 1)[-1] or
             n.rsplit(".", 1)[-1] in ("ln_1", "ln_2")]
    norms = [m for m in norms if not any(k in type(m).__name__ for k in ("Attention", "MLP"))]
    block_norms = {n.rsplit(".", 1)[-1] for n, m in mods.items() if m in norms and "." not in n}
    assert norms, leaves
    kinds = {("layer" if isinstance(m, torch.nn.LayerNorm) else
              "rms_1p" if _gain(m) == "1 + w" else "rms") for m in norms}
    assert kinds == {fam.norm}, (kinds, fam.norm)
    assert all((getattr(m, "bias", None) is not None) == fam.norm_bias for m in norms)
    pre = bool(block_norms & {"input_layernorm", "ln_1"})
    after = bool(block_norms & {"post_feedforward_layernorm"})
    placement = "sandwich" if pre and after else "post" if after else "pre"
    assert placement == fam.placement, block_norms
    assert fam.parallel == bool(getattr(cfg, "use_parallel_residual", False))
    attn_linear = [m for n, m in mods.items() if isinstance(m, torch.nn.Module) and
                   n.rsplit(".", 1)[-1] in ("q_proj", "qkv_proj", "c_attn", "query_key_value")]
    assert attn_linear and all((getattr(m, "bias", None) is not None) == fam.attn_bias
                               for m in attn_linear)
    learned = any(n.endswith(("wpe", "embed_positions")) for n, _ in hf.named_modules())
    assert (fam.positions == "learned") == learned


def test_the_config_values_are_read():
    """What varies within a family comes from the checkpoint's config."""
    want = {"gpt_neox": ("rotary_share", 0.25), "gpt2": ("rotary_share", 0.0),
            "mistral": ("windows", (4, 4, 4)), "gemma3_text": ("windows", (4, 4, None)),
            "gemma2": ("logit_softcap", 0.5), "llama": ("n_kv_heads", 2)}
    for name, (field, value) in want.items():
        got = getattr(anatomy(tiny.FAMILIES[name](400)), field)
        assert got == value, (name, field, got)


@pytest.mark.parametrize("name", NAMES)
def test_direct_path_equals_hugging_face(name, tiny_family):
    """A left-padded batch: the direct path's logits are Hugging Face's own (eager
    attention, positions counted from each row's first real token), to the bit."""
    from transformers import AutoModelForCausalLM

    folder, model = tiny_family(name)
    hf = AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    runner = runner_for(model.bridge)
    assert runner.shadow is not None and runner.direct_ok()
    ids, mask = model.tokenize(PROMPTS[:4])
    assert (mask == 0).any()
    real = mask.bool()
    for use_cache in (False, True):  # the two differ in the last bits on some families
        with torch.no_grad():
            ref = hf(ids, attention_mask=mask, use_cache=use_cache,
                     position_ids=(mask.cumsum(-1) - 1).clamp_min(0))
            got, _ = runner.direct(ids, mask, use_cache=use_cache)
        assert torch.equal(got[real], ref.logits[real]), use_cache


@pytest.mark.parametrize("name", NAMES)
def test_direct_path_equals_the_bridge(name, tiny_family):
    """Prefill, cached decode and every routed hook point, reading and editing: equal to the
    bridge path to the bit, or within 1e-6 where the bridge computes a piece itself."""
    _, model = tiny_family(name)
    exact = FAMILIES[name].bridge_exact
    compare_passes(model, atol=0 if exact else 1e-6)
    assert check_routed_points(model, atol=0 if exact else 1e-6) >= 30


@pytest.mark.parametrize("name", NAMES)
def test_the_lens_last_layer_is_the_model(name, tiny_family):
    """The logit lens at the last layer reads the model's own output (KL 0 up to float
    noise), through each family's final norm and its final-logit softcap (the tiny Gemma-2
    caps at 0.5, where leaving the cap out moves the logits by 0.2); the direct read-out
    (:class:`Unembed`) takes its fast path on every family and agrees."""
    from interp.lenses.readout import run_lens
    from interp.models.unembedding import Unembed

    _, model = tiny_family(name)
    read = run_lens(model, PROMPTS[0], top_k=3)
    assert float(read.logit.kl[-1].abs().max()) < 1e-5
    un = Unembed(model)
    assert un.fast, name
    x = torch.randn(5, model.d_model, generator=torch.Generator().manual_seed(0)) * 3
    torch.testing.assert_close(un(x), model.unembed(x).float(), atol=1e-5, rtol=0)
    if model.anatomy.logit_softcap is not None:
        raw = model.bridge.unembed(model.bridge.ln_final(x)).float()
        assert (raw - model.unembed(x).float()).abs().max() > 1e-2


@pytest.mark.parametrize("name", NAMES)
def test_attention_pattern_is_rebuilt_from_its_parts(name, tiny_family):
    """Every layer's pattern, recomputed from the queries and keys :mod:`interp.models.heads`
    reads (rotary turned where the bridge fires no rotary hook), its scale, softcap and
    window, is the model's own: on prompts longer than the tiny sliding windows (4) and
    with left padding."""
    from interp.models import heads

    _, model = tiny_family(name)
    ids, mask = model.tokenize(PROMPTS[:4])
    assert (mask == 0).any() and mask.sum(1).max() > 4
    names = [n for layer in range(model.n_layers) for n in
             [*heads.qk_names(model, layer), f"blocks.{layer}.attn.hook_pattern"]]
    with torch.no_grad():
        _, cache = model.bridge.run_with_cache(ids, attention_mask=mask, names_filter=names)
    for layer in range(model.n_layers):
        q, k = heads.queries_keys(model, layer, cache)
        got = heads.pattern(heads.scores(model, layer, q, k), heads.allowed(model, layer, mask))
        want = cache[f"blocks.{layer}.attn.hook_pattern"]
        rows = mask.bool()[:, None, :, None]  # padding queries attend anywhere
        torch.testing.assert_close(got * rows, want * rows, atol=1e-5, rtol=0,
                                   msg=f"{name} layer {layer}")


@pytest.mark.parametrize("name", NAMES)
def test_patching_heads_with_every_method(name, tiny_family, tmp_path):
    """Exact patching, AtP and AtP* of every head on a two-pair task run on every family:
    AtP* reproduces each layer's pattern from its parts before it estimates (it refuses
    when it cannot), and its estimates are finite."""
    import json

    from interp.circuits.patch import run_patch
    from interp.circuits.results import PatchConfig
    from tests.unit.interp.test_circuits import tiny_pair_list

    _, model = tiny_family(name)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({
        "clean": p.clean, "corrupted": p.corrupted, "answer": p.answer, "wrong": p.wrong,
        "labels": [list(x) for x in p.labels or []]}) + "\n" for p in tiny_pair_list()))
    res = run_patch(model, PatchConfig(task=str(path), family="heads", method="both",
                                       n_boot=100, top_heads=2, min_gap=0.0), progress=False)
    assert res.atp_star is not None and res.exact is not None
    assert torch.isfinite(res.atp_star.mean).all()


@pytest.mark.parametrize("name", NAMES)
def test_dla_sums_to_the_logit_difference(name, tiny_family):
    """Direct logit attribution on every family: heads (through a frozen post-attention
    norm where the family has one), MLPs, embeddings and the bias terms (GPT-2's and
    GPT-NeoX's attention output biases and final LayerNorm bias) sum to the model's own
    logit difference; the bias terms are there exactly where the family has biases."""
    from interp.circuits.dla import direct_logit_attribution
    from interp.circuits.tasks import tokenize_task
    from tests.unit.interp.test_circuits import _task, tiny_pair_list

    _, model = tiny_family(name)
    res = direct_logit_attribution(model, tokenize_task(model, _task(tiny_pair_list())))
    total = res.heads.sum((1, 2)) + res.mlp.sum(1) + res.embed + res.constant
    torch.testing.assert_close(total, res.total, atol=1e-5, rtol=0)
    assert res.max_sum_error < 1e-5 and res.heads.abs().max() > 1e-4
    has_bias = FAMILIES[name].norm_bias
    assert bool(res.constant.abs().max() > 0) == has_bias, res.constant
    assert ("attn_bias_mean" in res.to_dict()) == has_bias


def _first_receivers(graph) -> list[tuple[str, str]]:
    """One edge into each kind of receiver: a query, a key, a value, an MLP, the logits."""
    rec = graph.receivers
    pick = [next(r for r in rec if r.startswith("a1.") and r.endswith(f"<{k}>")) for k in "qkv"]
    return [("input", pick[0]), ("a0.h1", pick[1]), ("m0", pick[2]), ("a0.h2", "m1"),
            ("a1.h0", "logits")]


@pytest.mark.parametrize("name", NAMES)
def test_edges_on_every_family(name, tiny_family):
    """Edge attribution reads each family's residual stream (parallel MLPs, norms after
    attention at each run's scale, attention output biases): the circuit of every edge is
    the clean run and of none the corrupted run; without MLP 1's input edges it is MLP 1
    patched from the corrupted run; and the exact patch of ε of an edge's difference moves
    the logit difference by ε times its eap-corrupted score (denoising), for an edge into
    every kind of receiver."""
    from interp.causal.edge_effects import circuit_lds, edge_attribution, exact_edges, graph_of
    from interp.circuits.patching import ld_direction, pair_lds, run_ld
    from interp.circuits.tasks import tokenize_task
    from tests.unit.interp.test_circuits import _task, tiny_pair_list

    _, model = tiny_family(name)
    tt = tokenize_task(model, _task(tiny_pair_list()))
    g = graph_of(model)
    assert g.parallel == FAMILIES[name].parallel
    clean, corr = pair_lds(model, tt, 8)
    _, rcv = g.edge_index
    every, none = torch.ones(g.n_edges, dtype=torch.bool), torch.zeros(g.n_edges, dtype=torch.bool)
    lds = circuit_lds(model, tt, [every, none, rcv != g.receivers.index("m1")], progress=False)
    torch.testing.assert_close(lds[:, 0], clean, atol=1e-5, rtol=0)
    torch.testing.assert_close(lds[:, 1], corr, atol=1e-5, rtol=0)
    d = ld_direction(model, tt.answer, tt.wrong)
    point = "blocks.1.hook_mlp_out"
    _, cap = run_ld(model, tt.corrupted_ids, tt.attention_mask, d, capture=[point])
    want, _ = run_ld(model, tt.clean_ids, tt.attention_mask, d,
                     [(point, lambda t, hook: cap[point])])
    torch.testing.assert_close(lds[:, 2], want, atol=1e-5, rtol=1e-5)
    edges = torch.tensor([g.edge_of(s, r) for s, r in _first_receivers(g)])
    score = edge_attribution(model, tt, steps=1, methods=("eap-corrupted",),
                             progress=False)["eap-corrupted"][:, edges]
    eps = 1e-3
    up = exact_edges(model, tt, edges, scale=eps, progress=False)
    down = exact_edges(model, tt, edges, scale=-eps, progress=False)
    torch.testing.assert_close((up - down) / (2 * eps), score, atol=2e-3, rtol=2e-2)


def test_the_additivity_check_fires_when_a_piece_of_the_stream_is_left_out(tiny_family):
    """The check that the residual stream is the sum of the graph's senders can fail: on
    GPT-2 with its attention output biases left out of the sum, it refuses in one line."""
    from interp.causal import edge_effects
    from interp.circuits.tasks import tokenize_task
    from tests.unit.interp.test_circuits import _task, tiny_pair_list

    _, model = tiny_family("gpt2")
    tt = tokenize_task(model, _task(tiny_pair_list()))
    real = edge_effects.graph_weights

    def without_biases(model, graph):
        w = real(model, graph)
        w.b_o = [None] * len(w.b_o)
        return w

    edge_effects.graph_weights = without_biases
    try:
        with pytest.raises(edge_effects.EdgesUnsupported, match="differs by"):
            edge_effects.edge_attribution(model, tt, steps=1, progress=False)
    finally:
        edge_effects.graph_weights = real


def test_a_parallel_mlp_receives_nothing_from_its_own_layers_heads():
    from interp.causal.edge_graph import model_graph
    from interp.errors import InterpError

    serial, parallel = model_graph(3, 4, 2), model_graph(3, 4, 2, parallel=True)
    assert serial.edge_of("a1.h2", "m1") >= 0
    with pytest.raises(InterpError, match="not upstream"):
        parallel.edge_of("a1.h2", "m1")
    assert serial.n_edges - parallel.n_edges == 3 * 4  # each layer's MLP loses its heads


@pytest.mark.parametrize("name", NAMES)
def test_a_zero_steering_vector_changes_nothing_and_a_large_one_does(name, tiny_family):
    """Steering adds at the family's residual stream: α = 0 gives the unsteered tokens to the
    bit, and a large random vector changes them (so the hook fires on the family)."""
    from interp.generation.engine import generate
    from interp.steering.vectors import SteeringVector, steer

    _, model = tiny_family(name)
    prompts = PROMPTS[:3]
    base = generate(model, prompts, max_new_tokens=4, batch_size=3)
    g = torch.Generator().manual_seed(0)
    vec = SteeringVector(torch.randn(model.d_model, generator=g) * 50, layer=1,
                         model_id=model.model_id, method="random")
    with steer(model, vec, alpha=0.0):
        zero = generate(model, prompts, max_new_tokens=4, batch_size=3)
    with steer(model, vec, alpha=1.0):
        big = generate(model, prompts, max_new_tokens=4, batch_size=3)
    ids = [x.token_ids for x in base.generations]
    assert [x.token_ids for x in zero.generations] == ids
    assert [x.token_ids for x in big.generations] != ids


@pytest.mark.parametrize("name", NAMES)
def test_sae_and_transcoder_training_run_and_resume(name, tiny_family, tmp_path):
    """An SAE on the residual stream and a transcoder on the family's MLP (``mlp.hook_in`` to
    ``hook_mlp_out``) train on every family, and a run stopped part-way resumes to the
    uninterrupted run's history."""
    from saes.architectures import ReLUConfig
    from saes.train import SAETrainConfig, train_sae
    from saes.transcoders.train import TranscoderTrainConfig, train_transcoders
    from tests.support.text_fixtures import paragraphs

    _, model = tiny_family(name)
    docs = paragraphs(60)
    sae_cfg = SAETrainConfig(layer=1, d_sae=32, tokens=32 * 6, batch_size=32, lr=1e-3,
                             seq_len=16, windows_per_chunk=8, checkpoint_every=2,
                             dead_window=128, arch=ReLUConfig(1.0))
    whole = train_sae(model, docs, tmp_path / "sae-whole", sae_cfg, progress=False)
    train_sae(model, docs, tmp_path / "sae-part", sae_cfg, stop_at=2, progress=False)
    done = train_sae(model, docs, tmp_path / "sae-part", sae_cfg, progress=False)
    assert done.resumed_from == 2 and done.history == whole.history
    tc_cfg = TranscoderTrainConfig(d_sae=32, tokens=32 * 6, batch_size=32, seq_len=16,
                                   windows_per_chunk=8, checkpoint_every=2, dead_window=128,
                                   lr=3e-3)
    tc_whole = train_transcoders(model, docs, tmp_path / "tc-whole", [1], tc_cfg,
                                 progress=False)
    train_transcoders(model, docs, tmp_path / "tc-part", [1], tc_cfg, stop_at=2, progress=False)
    tc_done = train_transcoders(model, docs, tmp_path / "tc-part", [1], tc_cfg, progress=False)
    assert tc_done[1].resumed_from == 2
    assert tc_done[1].history["loss"] == pytest.approx(tc_whole[1].history["loss"])
    assert all(torch.isfinite(torch.tensor(v)).all() for v in whole.history.values())


def test_the_support_matrix_names_tests_that_exist(tiny_family, capsys):
    """``interp models --support``: one row per registered family; every column names tests
    that exist in the suite; the graph's replacement model builds on every family."""
    import ast
    import json

    from interp.cli.support import columns, matrix
    from saes.graphs.replacement import Stack
    from tests.support import ROOT
    from tests.support.cli_runner import run

    for column in columns():
        assert column.evidence, column.name
        for ref in column.evidence:
            path, name = ref.split("::")
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, ref
    rows = matrix()
    assert sorted(r["model_type"] for r in rows) == NAMES
    for r in rows:
        assert all(r[c.name] == "works" for c in columns())
        Stack(tiny_family(r["model_type"])[1])  # refuses nothing registered
    code, out, _ = run(["models", "--support", "--json"], capsys)
    assert code == 0 and json.loads(out) == rows


def test_dla_on_an_architecture_no_family_describes_is_skipped_not_fatal(tiny_model,
                                                                         monkeypatch):
    """Direct logit attribution needs the anatomy; on an unknown architecture it is an
    unsupported measurement (patching goes on without it), never a failed run."""
    from interp.circuits import dla
    from interp.circuits.tasks import tokenize_task
    from interp.models import anatomy as anatomy_mod
    from tests.unit.interp.test_circuits import _task, tiny_pair_list

    monkeypatch.delitem(anatomy_mod.FAMILIES, "llama")
    with pytest.raises(dla.DLAUnsupported, match="architecture 'llama' is not supported"):
        dla.direct_logit_attribution(tiny_model, tokenize_task(tiny_model,
                                                                _task(tiny_pair_list())))


def test_atp_star_refuses_when_the_pattern_it_rebuilds_is_not_the_models(tiny_family,
                                                                          monkeypatch):
    """AtP*'s check can fail: with the scores' scale read wrong (a broken anatomy), the
    rebuilt pattern is not the model's and AtP* refuses before estimating anything."""
    from interp.circuits.attribution import atp_star
    from interp.circuits.patching import components
    from interp.circuits.tasks import tokenize_task
    from interp.errors import InterpError
    from interp.models import heads
    from tests.unit.interp.test_circuits import _task, tiny_pair_list

    _, model = tiny_family("mistral")
    tt = tokenize_task(model, _task(tiny_pair_list()))
    comps = components("heads", [0, 1], model.anatomy.n_heads, len(tt.positions), False)
    assert torch.isfinite(atp_star(model, tt, comps, progress=False)).all()
    real = heads.scale
    monkeypatch.setattr(heads, "scale", lambda model, layer: 3.0 * real(model, layer))
    with pytest.raises(InterpError, match="AtP\\*: cannot reproduce layer 0's attention"):
        atp_star(model, tt, comps, progress=False)
