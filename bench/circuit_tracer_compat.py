"""Check interp's attribution graphs (saes.graphs) against circuit-tracer 0.5.0's, in its own venv.

Run from the repository root (build circuit-tracer's venv once with
bench/circuit_tracer_venv.sh)::

    bash bench/circuit_tracer_venv.sh           # once: /tmp/circuit-tracer-venv
    nice -n 15 .venv/bin/python bench/circuit_tracer_compat.py

Options: ``--ct-python PATH`` (default ``$CIRCUIT_TRACER_PYTHON`` or
``/tmp/circuit-tracer-venv/bin/python``), ``--backends`` (circuit-tracer backends to run,
default ``transformerlens,nnsight``), ``--threads N`` (default 1), ``--keep DIR`` (keep the
exchanged files), ``--json FILE`` (default ``bench/results/circuit_tracer_compat.json``).

The script runs in two interpreters that exchange safetensors + JSON files in a work
folder (never pickle). The driver (interp's venv):

1. builds a tiny random Llama checkpoint folder (a BPE tokenizer trained on a fixed text,
   with a post-processor that puts ``<|im_start|>`` (id 1, the BOS) in front of every text;
   4 layers, d_model 64, 4 heads / 2 KV heads, every RMSNorm's γ randomised so it matters;
   deterministic from fixed seeds);
2. makes random transcoders for every layer, per variant — ``relu`` (ReLU), ``relu_skip``
   (ReLU with a skip path ``W_skip``) and ``jumprelu`` (a threshold per feature) — writes
   them with :func:`saes.transcoders.formats.write_circuit_tracer` and builds our graph with
   :func:`saes.graphs.run_attribution` on the model loaded by ``interp.load``;
3. starts ``--side circuit-tracer`` under circuit-tracer's python, which imports only torch,
   transformers, transformer_lens, safetensors and circuit_tracer (never interp): it loads
   the same checkpoint and ``layer_L.safetensors`` files (``load_transcoder_set``, hooks
   ``mlp.hook_in`` → ``mlp.hook_out``) into a ``ReplacementModel`` per backend —
   TransformerLens (a ``HookedTransformer`` built from the local folder's config, its
   ``rotary_base`` taken from the HF config, the HF weights converted by
   ``convert_llama_weights``) and nnsight (``from_pretrained_and_transcoders`` on the
   folder) — runs ``attribute`` on the same prompt and writes its adjacency, node layout,
   error vectors and ``compute_graph_scores``;
4. maps the nodes (ours: features sorted by (layer, position, feature), an error per
   (layer, position), a bias node per layer, embeddings, targets; circuit-tracer: features,
   errors per (layer, position), tokens, logits) and reports, per edge family
   (feature/error/token → feature/logit), the max |difference| relative to the family's
   largest edge (must be ≤ 1e-4); the active-feature sets, activations, targets and
   probabilities, error vectors; both graphs' replacement and completeness scores, our
   formula on circuit-tracer's matrix, and ours recomputed in circuit-tracer's conventions;
   and the pruned graphs (``prune_graph`` against :func:`saes.graphs.influence.prune`,
   node and edge masks, 0.8 / 0.98).

**Expected differences**, each measured rather than assumed. circuit-tracer zeroes the
features *and the errors* at the BOS position (``zero_positions``), where we keep position
0's whole MLP output as one error node per layer; it puts the transcoder's decoder bias in
its reconstruction, so ``b_dec`` is in neither its error vectors nor any node (dropped),
where we have a bias node per layer — its edges into a target sum to the target minus those
(checked row by row). With a skip transcoder its gradients also flow through the skip path
at position 0, where ours stop (position 0's output, skip included, is a constant error
node): only the BOS token's edges differ, and the driver recomputes them from our frozen
pieces with the skip path live at position 0 and must reproduce circuit-tracer's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

PROMPT = "The capital of France is Paris. The capital of Italy is"
TEXT = (
    "The capital of France is Paris. The capital of Italy is Rome. "
    "Water boils at 100 degrees. The quick brown fox jumps over the lazy dog. "
    "Once upon a time there was a small model that learned to read and write. "
    "Numbers like 12345 and 678 are split into digits. "
) * 4
N_LAYERS, D_MODEL, D_SAE = 4, 64, 128
ROPE_THETA = 1e5          # TransformerLens's generic Llama config ignores it (see the child)
FINAL_GAIN = 40.0         # the final norm's γ scale: a peaked next-token distribution
MAX_LOGITS, LOGIT_PROB = 10, 0.8
NODE_THRESHOLD, EDGE_THRESHOLD = 0.8, 0.98   # both tools' pruning defaults
VARIANTS = ("relu", "relu_skip", "jumprelu")
BACKENDS = ("transformerlens", "nnsight")
TOL = 1e-4                # max |Δ| / family scale for edges that must agree
TL_NOTES: dict[str, float] = {}


def _save(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    import safetensors.torch

    safetensors.torch.save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()},
                                str(path))


def _load(path: Path) -> dict[str, torch.Tensor]:
    import safetensors.torch

    return safetensors.torch.load_file(str(path))


# --------------------------------------------------------------------------- interp side


def build_checkpoint(out: Path) -> None:
    """The tiny random Llama folder (tokenizer + LlamaForCausalLM via save_pretrained)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False)])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([TEXT], trainer=trainer)
    # every text starts with the BOS (id 1): both tools then read the same tokens
    bpe.post_processor = processors.TemplateProcessing(
        single="<|im_start|> $A", special_tokens=[("<|im_start|>", 1)])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
        pad_token="<|im_end|>", unk_token="<|endoftext|>")
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=D_MODEL, intermediate_size=128,
        num_hidden_layers=N_LAYERS, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        rope_theta=ROPE_THETA, tie_word_embeddings=True, rms_norm_eps=1e-5,
        max_position_embeddings=256, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    hf = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))  # γ must matter
            elif "mlp" in name:
                p.mul_(5.0)  # MLP outputs comparable to the transcoders' writes
        hf.model.norm.weight.mul_(FINAL_GAIN)
    hf.save_pretrained(str(out))
    # readable by circuit-tracer's transformers 4.57 too: transformers 5 writes the class
    # "TokenizersBackend" (unknown to 4.x) and only rope_parameters (4.x would fall back to
    # rope_theta 10000 without a word)
    tc = json.loads((out / "tokenizer_config.json").read_text())
    tc["tokenizer_class"] = "PreTrainedTokenizerFast"
    (out / "tokenizer_config.json").write_text(json.dumps(tc, indent=2))
    mc = json.loads((out / "config.json").read_text())
    mc["rope_theta"] = ROPE_THETA
    (out / "config.json").write_text(json.dumps(mc, indent=2))


def random_transcoders(model: Any, variant: str, seed: int) -> Any:
    """Random transcoders at every layer (circuit-tracer needs 0…n−1)."""
    from saes.loading import sae_from_tensors
    from saes.transcoders import TranscoderConfig
    from saes.transcoders.files import TranscoderSet

    g = torch.Generator().manual_seed(seed)
    d = model.d_model
    arch = "jumprelu" if variant.startswith("jumprelu") else "relu"
    skip = variant.endswith("skip")
    out = {}
    for layer in range(model.n_layers):
        cfg = TranscoderConfig(d_in=d, d_sae=D_SAE, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               architecture=arch, skip=skip)
        t: dict[str, torch.Tensor] = {
            "W_enc": torch.randn(d, D_SAE, generator=g) / d ** 0.5,
            "W_dec": torch.randn(D_SAE, d, generator=g) * 0.05,
            "b_dec": torch.randn(d, generator=g) * 0.05,
            "b_enc": torch.randn(D_SAE, generator=g) * 0.1 - (0.0 if arch == "jumprelu" else 0.5),
        }
        if arch == "jumprelu":
            t["threshold"] = 0.3 + 0.4 * torch.rand(D_SAE, generator=g)
        if skip:
            t["W_skip"] = torch.randn(d, d, generator=g) * 0.05
        out[layer] = sae_from_tensors(cfg, t)
    return TranscoderSet(out)


def bos_embedding_edges(stack: Any, fz: Any, tcs: dict[int, Any], features: torch.Tensor,
                        vecs: torch.Tensor, skip_at_bos: bool) -> torch.Tensor:
    """The edges from the BOS token's embedding into every feature (rows in ``features``
    order) and target (``vecs``), from our frozen pieces (attention, norms, skip paths),
    with the skip path's gradient at position 0 cut (``skip_at_bos=False``: as
    :func:`saes.graphs.replacement.linear_forward`) or live (as circuit-tracer)."""
    from saes.graphs.replacement import attention_block, final_normed, mlp_input

    t, d = fz.embed.shape
    n = stack.n_layers
    rows = [(int(a), int(b), tcs[int(a)].W_enc[:, int(f)].detach().float())
            for a, b, f in features.tolist()]
    rows += [(n, t - 1, v.float()) for v in vecs]
    out = torch.zeros(len(rows))
    for start in range(0, len(rows), 256):
        chunk = rows[start:start + 256]
        until = max(r[0] for r in chunk)
        embed = torch.zeros(len(chunk), t, d, requires_grad=True)
        resid, reads, final = embed, [], None
        for i in range(min(until + 1, n)):
            resid = resid + attention_block(stack, fz, i, resid)
            x_in = mlp_input(stack, fz, i, resid)
            reads.append(x_in)
            if i == until:
                break
            tc = tcs.get(i)
            if tc is not None and getattr(tc, "W_skip", None) is not None:
                skip = tc.skip(x_in)
                if not skip_at_bos:
                    skip = torch.cat([torch.zeros_like(skip[:, :1]), skip[:, 1:]], dim=1)
                resid = resid + skip
        else:
            final = final_normed(stack, fz, resid)
        objective = torch.zeros(())
        for b, (layer, pos, seed) in enumerate(chunk):
            src = final if layer == n else reads[layer]
            assert src is not None
            objective = objective + src[b, pos] @ seed
        (g,) = torch.autograd.grad(objective, [embed])
        out[start:start + len(chunk)] = (g[:, 0] @ fz.embed[0]).detach()
    return out


def interp_side(work: Path, variants: tuple[str, ...]) -> dict[str, Any]:
    """Our graphs: adjacency, node layout, error vectors and scores per variant."""
    import interp
    from saes.graphs import AttributionConfig, run_attribution
    from saes.graphs.attribution import active_features
    from saes.graphs.graph import _targets
    from saes.graphs.replacement import Stack, freeze
    from saes.transcoders.formats import write_circuit_tracer

    model = interp.load(str(work / "model"))
    ids = torch.tensor(model.encode(PROMPT))
    out: dict[str, Any] = {"tokens": model.token_strs(ids.tolist()), "token_ids": ids.tolist(),
                           "adds_bos": model.adds_bos}
    stack = Stack(model)
    fz = freeze(model, stack, ids)
    for i, variant in enumerate(variants):
        tcs = random_transcoders(model, variant, seed=100 + i)
        write_circuit_tracer(tcs.by_layer, work / f"tc_{variant}")
        t0 = time.perf_counter()
        cfg = AttributionConfig(check_features=0, max_logits=MAX_LOGITS,
                                logit_probability=LOGIT_PROB, node_threshold=NODE_THRESHOLD,
                                edge_threshold=EDGE_THRESHOLD)
        g = run_attribution(model, tcs, PROMPT, cfg, progress=False)
        elapsed = time.perf_counter() - t0
        lay, pos, feat, act, errors = active_features(fz, tcs.by_layer)
        assert g.adjacency is not None and g.n_active_features == len(feat)
        _, target_ids, target_w, vecs, _ = _targets(model, stack, fz, cfg)
        features = torch.stack([lay, pos, feat], 1)
        bos = {f"emb0_skip_{'live' if live else 'cut'}":
               bos_embedding_edges(stack, fz, tcs.by_layer, features, vecs, live)
               for live in (False, True)}
        _save(work / f"ours_{variant}.safetensors", {**bos,
            "adjacency": g.adjacency, "features": features,
            "activations": act, "errors": torch.stack([errors[j] for j in range(stack.n_layers)]),
            "target_weights": target_w, "logits": fz.logits})
        out[variant] = {
            "n_features": g.n_active_features, "n_nodes": g.n_nodes,
            "pruned_nodes": len(g.nodes), "pruned_edges": len(g.edges),
            "replacement_score": g.replacement_score,
            "completeness_score": g.completeness_score,
            "target_real": g.target_real, "target_replacement": g.target_replacement,
            "target_edge_sum": g.target_edge_sum, "target": g.target,
            "target_ids": target_ids, "target_weights": [float(w) for w in target_w],
            "elapsed_s": elapsed}
    return out


# --------------------------------------------------------------------------- circuit-tracer side


def _ct_transcoders(folder: Path, n_layers: int) -> Any:
    from circuit_tracer.transcoder.single_layer_transcoder import load_transcoder_set

    paths = {layer: str(folder / f"layer_{layer}.safetensors") for layer in range(n_layers)}
    return load_transcoder_set(paths, scan="interp-compat", feature_input_hook="mlp.hook_in",
                               feature_output_hook="mlp.hook_out", device=torch.device("cpu"),
                               dtype=torch.float32, lazy_encoder=False, lazy_decoder=False)


def _tl_model(folder: Path, transcoders: Any, hf: Any, tok: Any) -> Any:
    """circuit-tracer's TransformerLens ReplacementModel on a local Llama folder: what
    ``from_pretrained_and_transcoders`` does, with the config read from the folder (TL's
    ``from_pretrained`` accepts only official hub names)."""
    import transformer_lens.loading_from_pretrained as loading
    from circuit_tracer.replacement_model.replacement_model_transformerlens import (
        TransformerLensReplacementModel,
    )
    from transformer_lens.pretrained.weight_conversions.llama import convert_llama_weights

    cfg = loading.get_pretrained_model_config(str(folder), device="cpu", dtype=torch.float32,
                                              fold_ln=False)
    # TL's generic LlamaForCausalLM branch leaves rotary_base at its default (10000)
    TL_NOTES["rotary_base_tl_default"] = float(cfg.rotary_base)
    cfg.rotary_base = float(hf.config.rope_theta)
    TL_NOTES["rotary_base_used"] = cfg.rotary_base
    model = TransformerLensReplacementModel(cfg, tok, move_to_device=False)
    model.load_and_process_state_dict(convert_llama_weights(hf, cfg), fold_ln=False,
                                      center_writing_weights=False, center_unembed=False)
    model._configure_replacement_model(transcoders)
    return model


def _nnsight_model(folder: Path, transcoders: Any) -> Any:
    from circuit_tracer.replacement_model.replacement_model_nnsight import NNSightReplacementModel

    return NNSightReplacementModel.from_pretrained_and_transcoders(
        str(folder), transcoders, device=torch.device("cpu"), dtype=torch.float32)


def ct_side(work: Path, variants: list[str], backends: list[str]) -> dict[str, Any]:
    import importlib.metadata as md
    import warnings

    from circuit_tracer import attribute
    from circuit_tracer.graph import compute_graph_scores, prune_graph
    from transformers import AutoTokenizer, LlamaForCausalLM

    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    folder = work / "model"
    tok = AutoTokenizer.from_pretrained(str(folder))
    hf = LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    res: dict[str, Any] = {"versions": {p: md.version(p) for p in (
        "circuit-tracer", "torch", "transformers", "transformer-lens", "nnsight")}}
    n_layers = hf.config.num_hidden_layers
    ids = tok(PROMPT, return_tensors="pt").input_ids[0]
    with torch.no_grad():
        hf_logits = hf(ids[None]).logits[0].float()
    for backend in backends:
        for variant in variants:
            tcs = _ct_transcoders(work / f"tc_{variant}", n_layers)
            t0 = time.perf_counter()
            model = _tl_model(folder, tcs, hf, tok) if backend == "transformerlens" \
                else _nnsight_model(folder, tcs)
            load_s = time.perf_counter() - t0
            tokens = model.ensure_tokenized(PROMPT).cpu()
            with torch.no_grad():
                ctx = model.setup_attribution(tokens)
            logits = ctx.logits[0].float().cpu() if ctx.logits.dim() == 3 else \
                ctx.logits.float().cpu()
            t0 = time.perf_counter()
            graph = attribute(PROMPT, model, max_n_logits=MAX_LOGITS,
                              desired_logit_prob=LOGIT_PROB, batch_size=256)
            elapsed = time.perf_counter() - t0
            rep, comp = compute_graph_scores(graph)
            pruned = prune_graph(graph, NODE_THRESHOLD, EDGE_THRESHOLD)
            key = f"{backend}_{variant}"
            _save(work / f"ct_{key}.safetensors", {
                "adjacency": graph.adjacency_matrix.float(),
                "features": graph.active_features.long(),
                "activations": graph.activation_values.float(),
                "selected": graph.selected_features.long(),
                "tokens": graph.input_tokens.long().cpu(),
                "logit_ids": graph.logit_token_ids.long().cpu(),
                "logit_probs": graph.logit_probabilities.float().cpu(),
                "errors": ctx.error_vectors.float().cpu(),
                "logits": logits, "hf_logits": hf_logits,
                "node_mask": pruned.node_mask.to(torch.uint8).cpu(),
                "edge_mask": pruned.edge_mask.to(torch.uint8).cpu()})
            res[key] = {"replacement_score": rep, "completeness_score": comp,
                        "tokens_own": tokens.tolist(), "elapsed_s": elapsed,
                        "load_s": load_s,
                        "logit_tokens": [t.token_str for t in graph.logit_targets]}
            del model, ctx, graph
    res["transformerlens_notes"] = TL_NOTES
    return res


# --------------------------------------------------------------------------- comparison


def _maxabs(x: torch.Tensor) -> float:
    return float(x.abs().max()) if x.numel() else 0.0


def compare_variant(work: Path, variant: str, key: str, ours_info: dict[str, Any],
                    ct_info: dict[str, Any]) -> dict[str, Any]:
    """Map circuit-tracer's nodes onto ours and compare edges, sets and scores."""
    from saes.graphs.attribution import Nodes
    from saes.graphs.influence import prune, scores

    o = _load(work / f"ours_{variant}.safetensors")
    c = _load(work / f"ct_{key}.safetensors")
    A, B = o["adjacency"].double(), c["adjacency"].double()
    n_layers, t = N_LAYERS, len(ours_info["token_ids"])
    n_bias = n_layers
    fo = [tuple(r) for r in o["features"].tolist()]
    fc = [tuple(r) for r in c["features"][c["selected"]].tolist()]
    F, Fc = len(fo), len(fc)
    k = len(c["logit_ids"])
    res: dict[str, Any] = {"tokens_equal": c["tokens"].tolist() == ours_info["token_ids"],
                           "elapsed_s": {"ours_run_attribution":
                                         ours_info[variant]["elapsed_s"],
                                         "circuit_tracer_attribute": ct_info["elapsed_s"]},
                           "n_features": {"ours": F, "circuit_tracer": Fc}}
    so, sc = set(fo), set(fc)
    res["features_only_ours"] = sorted(so - sc)[:20]
    res["features_only_circuit_tracer"] = sorted(sc - so)[:20]
    res["same_feature_set"] = so == sc
    res["features_at_pos0"] = {"ours": sum(p == 0 for _, p, _ in fo),
                               "circuit_tracer": sum(p == 0 for _, p, _ in fc)}
    shared = [i for i, f in enumerate(fo) if f in sc]      # our order
    cpos = {f: i for i, f in enumerate(fc)}
    io = torch.tensor(shared, dtype=torch.long)
    ic = torch.tensor([cpos[fo[i]] for i in shared], dtype=torch.long)
    res["activation_max_abs_diff"] = _maxabs(o["activations"][io].double() -
                                             c["activations"][ic].double())
    # layout offsets
    o_err, o_bias = F, F + n_layers * t
    o_emb, o_tgt = o_bias + n_bias, o_bias + n_bias + t
    c_err, c_emb, c_tgt = Fc, Fc + n_layers * t, Fc + n_layers * t + t
    ours_targets = ours_info[variant]
    same_targets = ours_targets["target_ids"] == c["logit_ids"].tolist()
    res["logits"] = {
        "same_targets": same_targets, "ours": ours_targets["target_ids"],
        "circuit_tracer": c["logit_ids"].tolist(),
        "prob_max_abs_diff": _maxabs(torch.tensor(ours_targets["target_weights"]).double() -
                                     c["logit_probs"].double()) if same_targets else float("nan")}
    ours_logits = o["logits"].double()
    res["model_logits"] = {  # the last position's logits of the three forwards
        "scale": _maxabs(ours_logits),
        "circuit_tracer_model_vs_ours": _maxabs(c["logits"][-1].double() - ours_logits),
        "hf_transformers4_vs_ours": _maxabs(c["hf_logits"][-1].double() - ours_logits)}

    # error vectors: ours[L, p] = MLP out − (a·W_dec + b_dec + skip) at p ≥ 1, all of it at 0
    eo, ec = o["errors"].double(), c["errors"].double()
    res["error_vectors"] = {
        "pos_ge1_max_abs_diff": _maxabs(eo[:, 1:] - ec[:, 1:]),
        "pos_ge1_scale": _maxabs(eo[:, 1:]),
        "circuit_tracer_pos0_max_abs": _maxabs(ec[:, 0]),
        "ours_pos0_max_abs": _maxabs(eo[:, 0])}

    def cols(kind: str, pos: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Column indices (ours, circuit-tracer) of a source family."""
        if kind == "feature":
            return io, ic
        ps = range(1, t) if pos == "ge1" else range(0, 1)
        if kind == "error":
            a = [o_err + L * t + p for L in range(n_layers) for p in ps]
            b = [c_err + L * t + p for L in range(n_layers) for p in ps]
        else:
            a = [o_emb + p for p in ps]
            b = [c_emb + p for p in ps]
        return torch.tensor(a), torch.tensor(b)

    rows = {"feature": (io, ic), "logit": (torch.arange(o_tgt, o_tgt + k),
                                           torch.arange(c_tgt, c_tgt + k))}
    fam: dict[str, Any] = {}
    for src, pos in (("feature", "ge1"), ("error", "ge1"), ("token", "ge1"), ("token", "0")):
        for tgt in ("feature", "logit"):
            ro, rc = rows[tgt]
            co, cc = cols(src, pos)
            a = A[ro][:, co]
            b = B[rc][:, cc]
            scale = _maxabs(a)
            d = _maxabs(a - b)
            name = f"{src}{'@0' if pos == '0' else ''}→{tgt}"
            fam[name] = {"max_abs_diff": d, "scale": scale, "rel": d / scale if scale else d,
                         "n": int(a.numel())}
    res["edges"] = fam
    # what only we have: the BOS position's error nodes and the bias nodes
    only: dict[str, Any] = {}
    for tgt in ("feature", "logit"):
        ro, rc = rows[tgt]
        co0 = torch.tensor([o_err + L * t for L in range(n_layers)])
        cc0 = torch.tensor([c_err + L * t for L in range(n_layers)])
        only[f"error@0→{tgt}"] = {"ours_max_abs": _maxabs(A[ro][:, co0]),
                                  "circuit_tracer_max_abs": _maxabs(B[rc][:, cc0])}
        only[f"bias→{tgt}"] = {"ours_max_abs": _maxabs(A[ro][:, o_bias:o_emb])}
    res["ours_only"] = only
    # token@0 edges recomputed from our pieces with the skip path's gradient at the BOS cut
    # (must equal our adjacency) and live (must equal circuit-tracer's)
    ours_rows = torch.cat([io, torch.arange(F, F + k)])
    ct_rows = torch.cat([ic, torch.arange(c_tgt, c_tgt + k)])
    ours_col, ct_col = A[torch.cat([io, torch.arange(o_tgt, o_tgt + k)]), o_emb], B[ct_rows, c_emb]
    cut, live = o["emb0_skip_cut"].double()[ours_rows], o["emb0_skip_live"].double()[ours_rows]
    res["bos_skip"] = {"scale": _maxabs(ours_col),
                       "cut_vs_our_adjacency": _maxabs(cut - ours_col),
                       "live_vs_circuit_tracer": _maxabs(live - ct_col),
                       "cut_vs_live": _maxabs(cut - live)}
    # row sums: ours = the exact target; circuit-tracer = ours − bias − error@0 (no skip)
    missing_cols = torch.cat([torch.arange(o_bias, o_emb),
                              torch.tensor([o_err + L * t for L in range(n_layers)])])
    sums = {}
    for tgt in ("feature", "logit"):
        ro, rc = rows[tgt]
        so_ = A[ro].sum(1)
        sc_ = B[rc].sum(1)
        miss = A[ro][:, missing_cols].sum(1)
        sums[tgt] = {"ours_minus_ct_max_abs": _maxabs(so_ - sc_),
                     "ours_minus_bias_minus_err0_vs_ct_max_abs": _maxabs(so_ - miss - sc_),
                     "row_sum_scale": _maxabs(so_)}
    res["row_sums"] = sums
    logit_w = c["logit_probs"].double()
    res["target_metric"] = {
        "ours_edge_sum": ours_targets["target_edge_sum"],
        "ours_real": ours_targets["target_real"],
        "circuit_tracer_edge_sum": float(logit_w @ B[c_tgt:].sum(1))}

    # scores: native, our formula on circuit-tracer's matrix, ours in circuit-tracer's
    # conventions (bias nodes dropped, error@0 zeroed)
    if res["same_feature_set"] and res["logits"]["same_targets"]:
        fl = torch.tensor([f[0] for f in fo])
        fp = torch.tensor([f[1] for f in fo])
        fi = torch.tensor([f[2] for f in fo])
        nb = Nodes(fl, fp, fi, o["activations"], n_layers, t, [], ["t"] * k, [None] * k,
                   c["logit_probs"].float(), torch.zeros(k, D_MODEL))
        perm_c = torch.cat([ic, torch.arange(c_err, c_tgt + k)])
        ct_in_ours = B[perm_c][:, perm_c].float()
        keep = torch.cat([torch.arange(0, o_bias), torch.arange(o_emb, o_tgt + k)])
        ours_ct = A[keep][:, keep].clone()
        for L in range(n_layers):
            ours_ct[:, F + L * t] = 0.0
        r1, c1 = scores(ct_in_ours, nb)
        r2, c2 = scores(ours_ct.float(), nb)
        nm = c["node_mask"].bool()[perm_c]
        em = c["edge_mask"].bool()[perm_c][:, perm_c]
        pr: dict[str, Any] = {"circuit_tracer": {"nodes": int(nm.sum()), "edges": int(em.sum())},
                              "ours": {"nodes": ours_targets["pruned_nodes"],
                                       "edges": ours_targets["pruned_edges"]}}
        for name, mat in (("our_prune_on_circuit_tracer_graph", ct_in_ours),
                          ("our_prune_ours_in_circuit_tracer_conventions", ours_ct.float())):
            p = prune(mat, nb, NODE_THRESHOLD, EDGE_THRESHOLD)
            pr[name] = {"nodes": int(p.node_mask.sum()), "edges": int(p.edge_mask.sum()),
                        "nodes_differ": int((p.node_mask ^ nm).sum()),
                        "edges_differ": int((p.edge_mask ^ em).sum())}
        res["pruning"] = pr
        res["scores"] = {
            "ours": [ours_targets["replacement_score"], ours_targets["completeness_score"]],
            "circuit_tracer": [ct_info["replacement_score"], ct_info["completeness_score"]],
            "our_formula_on_circuit_tracer_graph": [r1, c1],
            "ours_in_circuit_tracer_conventions": [r2, c2],
            "ours_vs_ct_conventions_full_matrix_max_abs_diff": _maxabs(ours_ct -
                                                                       ct_in_ours.double())}
    else:
        res["scores"] = {
            "ours": [ours_targets["replacement_score"], ours_targets["completeness_score"]],
            "circuit_tracer": [ct_info["replacement_score"], ct_info["completeness_score"]]}
    return res


# --------------------------------------------------------------------------- driver


def _print_report(report: dict[str, Any]) -> list[str]:
    failed: list[str] = []
    v = report["circuit_tracer"]["versions"]
    print(f"circuit-tracer {v['circuit-tracer']} (transformers {v['transformers']}, "
          f"transformer-lens {v['transformer-lens']}, nnsight {v['nnsight']}, torch "
          f"{v['torch']}) vs interp; tiny Llama {N_LAYERS} layers, d_model {D_MODEL}, "
          f"d_sae {D_SAE}")
    print(f"prompt {PROMPT!r}: {len(report['interp']['token_ids'])} tokens, "
          f"BOS first: {report['interp']['tokens'][0]!r}")
    notes = report["circuit_tracer"].get("transformerlens_notes") or {}
    if notes:
        print(f"TransformerLens's config from the folder: rotary_base "
              f"{notes['rotary_base_tl_default']:g}, set to the checkpoint's "
              f"{notes['rotary_base_used']:g}")
    for key, r in report["compare"].items():
        el = r["elapsed_s"]
        print(f"\n== {key}  (graph built in {el['ours_run_attribution']:.2f} s by us, "
              f"{el['circuit_tracer_attribute']:.2f} s by circuit-tracer's attribute)")
        nf = r["n_features"]
        print(f"   tokens equal: {r['tokens_equal']}; active features ours {nf['ours']}, "
              f"circuit-tracer {nf['circuit_tracer']}, same set: {r['same_feature_set']} "
              f"(at position 0: {r['features_at_pos0']}); activations max|Δ| "
              f"{r['activation_max_abs_diff']:.2e}")
        lg = r["logits"]
        ml = r["model_logits"]
        print(f"   logit targets same: {lg['same_targets']} ({len(lg['circuit_tracer'])}); "
              f"prob max|Δ| {lg['prob_max_abs_diff']:.2e}; logits max|Δ| vs ours (scale "
              f"{ml['scale']:.3g}): its model {ml['circuit_tracer_model_vs_ours']:.2e}, "
              f"HF 4.57 {ml['hf_transformers4_vs_ours']:.2e}")
        ev = r["error_vectors"]
        print(f"   error vectors p≥1 max|Δ| {ev['pos_ge1_max_abs_diff']:.2e} (scale "
              f"{ev['pos_ge1_scale']:.3g}); position 0: ours max {ev['ours_pos0_max_abs']:.3g}, "
              f"circuit-tracer max {ev['circuit_tracer_pos0_max_abs']:.3g}")
        print(f"   {'edge family':18s} {'max|Δ|':>10s} {'scale':>10s} {'rel':>10s}")
        bs = r["bos_skip"]
        bos_explained = (bs["live_vs_circuit_tracer"] <= TOL * bs["scale"] and
                         bs["cut_vs_our_adjacency"] <= TOL * bs["scale"])
        for name, e in r["edges"].items():
            expected = name.startswith("token@0") and bos_explained
            flag = "ok" if e["rel"] <= TOL else ("expected" if expected else "FAIL")
            if flag == "FAIL":
                failed.append(f"{key} {name}")
            print(f"   {name:18s} {e['max_abs_diff']:10.3g} {e['scale']:10.3g} "
                  f"{e['rel']:10.3g}  [{flag}]")
        for name, e in r["ours_only"].items():
            ct = e.get("circuit_tracer_max_abs")
            print(f"   {name:18s} ours max {e['ours_max_abs']:.3g}" +
                  (f", circuit-tracer {ct:.3g}" if ct is not None else
                   ", no node in circuit-tracer"))
        print(f"   token@0 edges from our pieces (scale {bs['scale']:.3g}): skip gradient cut "
              f"at the BOS vs our adjacency {bs['cut_vs_our_adjacency']:.3g}; live vs "
              f"circuit-tracer {bs['live_vs_circuit_tracer']:.3g}; cut vs live "
              f"{bs['cut_vs_live']:.3g}")
        if not bos_explained:
            failed.append(f"{key} token@0 not explained")
        for tgt, rs in r["row_sums"].items():
            print(f"   Σ edges into {tgt}s: ours − circuit-tracer max "
                  f"{rs['ours_minus_ct_max_abs']:.3g}; less our bias and error@0 edges "
                  f"{rs['ours_minus_bias_minus_err0_vs_ct_max_abs']:.3g} "
                  f"(scale {rs['row_sum_scale']:.3g})")
        tm = r["target_metric"]
        print(f"   target metric Σ p·logit: real {tm['ours_real']:.5f}, our edges "
              f"{tm['ours_edge_sum']:.5f}, circuit-tracer's edges "
              f"{tm['circuit_tracer_edge_sum']:.5f}")
        sc = r["scores"]
        for name, val in sc.items():
            if isinstance(val, list):
                rep, comp = val
                print(f"   scores {name:38s} replacement {rep:.4f}  completeness {comp:.4f}")
        if "ours_vs_ct_conventions_full_matrix_max_abs_diff" in sc:
            print(f"   whole matrix in circuit-tracer's conventions max|Δ| "
                  f"{sc['ours_vs_ct_conventions_full_matrix_max_abs_diff']:.3g}")
        for name, pv in r.get("pruning", {}).items():
            extra = (f" ({pv['nodes_differ']} nodes, {pv['edges_differ']} edges differ from "
                     "circuit-tracer's)" if "nodes_differ" in pv else "")
            print(f"   pruned {name:45s} {pv['nodes']:5d} nodes {pv['edges']:6d} edges{extra}")
        if not (r["tokens_equal"] and r["same_feature_set"] and lg["same_targets"]):
            failed.append(f"{key} layout")
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--side", choices=("drive", "circuit-tracer"), default="drive")
    ap.add_argument("--work", type=Path, help="exchange folder (circuit-tracer side only)")
    ap.add_argument("--ct-python", default=os.environ.get(
        "CIRCUIT_TRACER_PYTHON", "/tmp/circuit-tracer-venv/bin/python"))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the exchanged files in this folder")
    ap.add_argument("--json", type=Path, default=Path(__file__).resolve().parent / "results" /
                    "circuit_tracer_compat.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("WANDB_MODE", "disabled")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    torch.set_num_threads(args.threads)
    backends = [b for b in args.backends.split(",") if b]
    variants = [v for v in args.variants.split(",") if v]

    if args.side == "circuit-tracer":
        res = ct_side(args.work, variants, backends)
        (args.work / "ct_results.json").write_text(json.dumps(res, indent=2))
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    work = args.keep or Path(tempfile.mkdtemp(prefix="circuit-tracer-compat-"))
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    try:
        t0 = time.perf_counter()
        build_checkpoint(work / "model")
        report: dict[str, Any] = {"interp": interp_side(work, tuple(variants))}
        t_ours = time.perf_counter() - t0
        cmd = [args.ct_python, str(Path(__file__).resolve()), "--side", "circuit-tracer",
               "--work", str(work), "--backends", ",".join(backends),
               "--variants", ",".join(variants), "--threads", str(args.threads)]
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        t1 = time.perf_counter()
        rc = subprocess.run(cmd, env=env).returncode
        if rc:
            print(f"the circuit-tracer side failed (exit {rc}): {' '.join(cmd)}", file=sys.stderr)
            return 2
        report["circuit_tracer"] = json.loads((work / "ct_results.json").read_text())
        t_ct = time.perf_counter() - t1
        report["compare"] = {
            f"{b}_{v}": compare_variant(work, v, f"{b}_{v}", report["interp"],
                                        report["circuit_tracer"][f"{b}_{v}"])
            for b in backends for v in variants}
        report["timing_s"] = {"interp_side_with_checkpoint": t_ours,
                              "circuit_tracer_side": t_ct,
                              "total": time.perf_counter() - t0}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    failed = _print_report(report)
    ts = report["timing_s"]
    print(f"\ntime: interp side {ts['interp_side_with_checkpoint']:.0f} s, circuit-tracer side "
          f"{ts['circuit_tracer_side']:.0f} s, total {ts['total']:.0f} s; " +
          ("FAILED: " + ", ".join(failed) if failed else "all parity checks passed"))
    report["failed"] = failed
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
