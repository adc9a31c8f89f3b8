"""A planted two-step circuit (Lange et al. 2026): a CLT can predict the output exactly
while misdescribing the computation, and the real-model check says so.

The model is a 2-layer Llama whose weights are set by hand. Attention writes nothing. At
the last token, the embedding has a direction ``e0``; layer 0's MLP reads ``e0`` and
writes ``b`` (along ``e1``); layer 1's MLP reads ``e1`` and writes ``c`` (along ``e2``);
the target is ``e2``'s logit. So the output depends on layer 0's MLP only through layer 1's
MLP: A → B → C.

Two replacements, both exact on the prompt (no error at all):

* **faithful** (per-layer): a layer-0 feature reads ``e0`` and writes ``b``; a layer-1
  feature reads ``e1`` and writes ``c``. Its graph is A → B → C.
* **unfaithful** (cross-layer): the layer-0 feature writes ``b`` into layer 0 *and* ``c``
  directly into layer 1; no layer-1 feature fires. Its graph is A → C: the skip that Lange
  et al. show sparsity pushes CLTs towards.

The graphs' own scores cannot tell them apart (both replace the MLPs exactly). Removing
the layer-0 feature in the real model can: the real layer-1 MLP loses ``b`` and stops
writing ``c``, and the unfaithful feature's direct write of ``c`` is subtracted as well,
so the real change is twice the predicted one.
"""

from __future__ import annotations

import pytest
import torch

from saes.graphs import AttributionConfig, run_attribution

PROMPT = "The capital of France is"
D = 16


@pytest.fixture(scope="module")
def planted(tiny_model_dir, tmp_path_factory):
    """The hand-set 2-layer model; (model, answer token, wrong token)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    import interp

    out = tmp_path_factory.mktemp("planted")
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tok.save_pretrained(str(out))
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=D, intermediate_size=2,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      head_dim=8, max_position_embeddings=64, tie_word_embeddings=False,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    hf = LlamaForCausalLM(cfg)
    ids = tok(PROMPT)["input_ids"]
    last = ids[-1]
    assert ids.count(last) == 1
    e = torch.eye(D)
    answer, wrong = " Paris", " the"
    a_id, w_id = (tok(t, add_special_tokens=False)["input_ids"] for t in (answer, wrong))
    assert len(a_id) == len(w_id) == 1
    with torch.no_grad():
        for p in hf.parameters():
            p.zero_()
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
        emb = hf.model.embed_tokens.weight
        emb[:] = e[D - 1]                    # every token: a background direction
        emb[last] = e[D - 1] + 2 * e[0]      # the last token also carries A (e0)
        for layer, (read, write) in enumerate(((0, 1), (1, 2))):
            mlp = hf.model.layers[layer].mlp
            mlp.gate_proj.weight[0] = 4 * e[read]  # silu(4·x_r)·x_r, written along e_write
            mlp.up_proj.weight[0] = e[read]
            mlp.down_proj.weight[:, 0] = e[write]
        hf.lm_head.weight[a_id[0]] = e[2]    # the answer's logit reads C (e2)
    hf.save_pretrained(str(out))
    return interp.load(str(out)), answer, wrong


def _values(model):
    """The MLPs' inputs and outputs at the last token (what the hand-made CLTs fit)."""
    from interp.activations.capture import forward_with_hooks

    hooks = [f"blocks.{i}.{h}" for i in (0, 1) for h in ("mlp.hook_in", "hook_mlp_out")]
    acts, _ = forward_with_hooks(model, torch.tensor([model.encode(PROMPT)]), None, hooks)
    return {h: acts[h][0, -1].float() for h in hooks}


def _clt(model, faithful: bool):
    """The faithful or the unfaithful replacement (ReLU, 2 features per layer, feature 0
    used), exact on the prompt."""
    from saes.transcoders.crosslayer import CLTConfig, CrossLayerTranscoder
    from saes.transcoders.mlp_replacement import CLTReplacement

    v = _values(model)
    x0, y0 = v["blocks.0.mlp.hook_in"], v["blocks.0.hook_mlp_out"]
    x1, y1 = v["blocks.1.mlp.hook_in"], v["blocks.1.hook_mlp_out"]
    assert float(x0[0]) > 0 and float(y0[1]) > 0 and float(y1[2]) > 0  # A → B → C runs
    cfg = CLTConfig(d_in=D, d_sae=2, layers=(0, 1), architecture="relu",
                    model_id=model.model_id)
    clt = CrossLayerTranscoder(cfg)
    with torch.no_grad():
        clt.W_enc[0][0, 0] = 1.0           # reads A: activation x0[0]
        a0 = float(x0[0])
        clt.W_dec[0][0, 0] = y0 / a0       # writes b into layer 0
        if faithful:
            clt.W_enc[1][1, 0] = 1.0       # reads B: activation x1[1]
            clt.W_dec[1][0, 0] = y1 / float(x1[1])
        else:
            clt.W_dec[0][0, 1] = y1 / a0   # writes c straight into layer 1
    return CLTReplacement(clt)


@pytest.mark.parametrize("faithful", [True, False], ids=["faithful", "unfaithful"])
def test_the_real_model_check_tells_a_skipped_step_from_the_real_circuit(planted, faithful):
    model, answer, wrong = planted
    rep = _clt(model, faithful)
    g = run_attribution(model, rep, PROMPT,
                        AttributionConfig(target=f"{answer},{wrong}", check_features=5,
                                          control_graphs=0),
                        progress=False)
    # both replacements are exact: the graph alone cannot tell them apart
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-5)
    assert g.target_real > 0.1
    assert g.replacement_score == pytest.approx(1.0, abs=1e-4)
    layers = sorted(c.layer for c in g.checks)
    assert layers == ([0, 1] if faithful else [0])
    a0 = next(c for c in g.checks if c.layer == 0)
    # the graph predicts removing A's feature loses the whole target, either way
    assert a0.predicted == pytest.approx(-g.target_real, rel=1e-3)
    # the real model (attention and norms frozen: only the MLPs' response differs) agrees
    # with the faithful graph and loses twice as much under the unfaithful one
    ratio = a0.real_frozen / a0.predicted
    slope = g.agreement["slope_real_frozen"]
    if faithful:
        assert ratio == pytest.approx(1.0, abs=1e-3) and slope == pytest.approx(1.0, abs=1e-3)
        assert a0.real / a0.predicted == pytest.approx(1.0, abs=0.3)
    else:
        assert ratio == pytest.approx(2.0, abs=1e-3) and slope == pytest.approx(2.0, abs=1e-3)
        assert a0.real / a0.predicted > 1.5
    # and the replacement model itself (features live) agrees with its own graph
    assert a0.replacement == pytest.approx(a0.predicted, rel=1e-3)
