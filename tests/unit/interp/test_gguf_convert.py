"""Tests for interp.models.gguf_convert: a GGUF → a cached Hugging Face checkpoint.

No real model and no network: a tiny random llama and a tiny byte-level BPE
tokenizer (SmolLM2-style pre-tokenizer) are built here, written as a GGUF exactly
the way llama.cpp's ``convert_hf_to_gguf.py`` writes a llama (Q/K rows permuted
for its rotary layout, llama.cpp tensor names and metadata keys), converted back
with :func:`convert_gguf` (transformers' own GGUF loader underneath), and compared
with the original: weights, logits, tokenizer, BOS convention, chat template, and the
one-line errors and atomic folder of the conversion.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf.quants import dequantize, quantize
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

import interp.models.gguf_convert as gc
from interp.errors import InterpError
from interp.models.gguf_convert import CONVERTER_VERSION, convert_gguf

N_LAYERS, D_MODEL, D_MLP, N_HEADS, N_KV, HEAD_DIM = 2, 64, 128, 4, 2, 16
ROPE_THETA, RMS_EPS, N_CTX = 1e5, 1e-5, 256
# ids 0, 1, 2 as in SmolLM2, plus two of its extra control tokens (ids 3, 4) that are
# not bos/eos/pad/unk, so only tokenizer.ggml.token_type can mark them special
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<file_sep>"]
# merges across digits that SmolLM2's Digits(individual_digits=True) pre-tokenizer must
# never let fire; a converted tokenizer without that pre-tokenizer would use them
DIGIT_MERGES = [("1", "2"), ("2", "0"), ("20", "2"), ("Ġ", "1"), ("Ġ", "2"), ("3", "4")]
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CORPUS = """\
The quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun.
In 1969 the first people walked on the Moon; 384400 kilometres from home, they
looked back at the Earth. Paris is the capital of France, Berlin is the capital of
Germany and Rome is the capital of Italy. A language model predicts the next token
from the tokens before it, one position at a time, using attention and a residual
stream that every layer reads from and writes to. The weather today is sunny with
a chance of rain in the evening; tomorrow it will be cold and windy. She said that
she would come back at 7:30, but the train was late by 45 minutes. Numbers such as
3.14159, 2.71828 and 1.41421 appear in mathematics, physics and engineering.
Café, naïve, résumé and façade keep their accents; 東京 and 大阪 are cities in Japan.
The user asked the assistant a question and the assistant answered it politely.
Interpretability research studies how neural networks represent concepts such as
truth, sentiment, refusal and honesty inside their hidden activations. Probes are
small classifiers trained on those activations; steering vectors add a direction
to the residual stream to change what the model writes next. Sparse autoencoders
learn a dictionary of features from millions of activations. We tested every
function twice, wrote the results down, and then we went home for dinner.
"""
TEXTS = [
    "Hello world",
    "The capital of France is Paris.",
    " leading space and  double  spaces",
    "numbers 12345 and 3.14159 and 2024-06-01",
    "unicode: café naïve — 東京 🙂 ÅΩ",
    "tabs\tand\nnew lines\n\n",
    "<|im_start|>user\nhi there<|im_end|>\n",
    "<repo_name>interp<file_sep>x = 12<|endoftext|>",
]
SEQUENCES = [[5, 17, 100, 42, 7, 250, 33, 9, 64, 128], [300, 2, 1, 77, 77, 77, 12], [42]]


# ---- building a tiny model and writing it the way llama.cpp does -------------------------


def llama_cpp_permute(w: np.ndarray, n_head: int, n_head_kv: int | None = None) -> np.ndarray:
    """``LlamaModel.permute`` from llama.cpp's convert_hf_to_gguf.py, verbatim in effect."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of :func:`llama_cpp_permute` (what a GGUF loader must undo)."""
    d_out, d_in = w.shape
    hd = d_out // n_head
    return w.reshape(n_head, hd // 2, 2, d_in).swapaxes(1, 2).reshape(d_out, d_in)


def train_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE (~400 tokens) with SmolLM2's pre-tokenizer, trained on CORPUS."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines() * 3, trainer)
    spec = json.loads(tok.to_str())
    vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
    for a, b in DIGIT_MERGES:
        assert a + b not in vocab
        vocab[a + b] = len(vocab)
        merges.append([a, b] if isinstance(merges[0], list) else f"{a} {b}")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(spec)),
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[3:],
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_model(vocab_size: int, *, tied: bool = True, seed: int = 0) -> LlamaForCausalLM:
    """Tiny random llama with sharp attention (so RoPE pairing matters) and random γ."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=D_MODEL,
        intermediate_size=D_MLP,
        num_hidden_layers=N_LAYERS,
        num_attention_heads=N_HEADS,
        num_key_value_heads=N_KV,
        head_dim=HEAD_DIM,
        max_position_embeddings=N_CTX,
        rope_theta=ROPE_THETA,
        tie_word_embeddings=tied,
        rms_norm_eps=RMS_EPS,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    model = LlamaForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:  # RMSNorm γ: far from 1 so a lost γ shows
                p.copy_(0.5 + torch.rand(p.shape, generator=g))
            else:
                gain = 3.0 if ("q_proj" in name or "k_proj" in name) else 1.0
                p.copy_(torch.randn(p.shape, generator=g) * gain / p.shape[1] ** 0.5)
    return model


def _merges(tok: PreTrainedTokenizerFast) -> list[str]:
    raw = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    return [m if isinstance(m, str) else " ".join(m) for m in raw]


def write_gguf(
    path: Path,
    model: LlamaForCausalLM,
    tok: PreTrainedTokenizerFast,
    *,
    arch: str = "llama",
    tokenizer_model: str = "gpt2",
    qtype: gguf.GGMLQuantizationType = gguf.GGMLQuantizationType.F32,
    quantize_names: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    add_bos: bool = False,
) -> Path:
    """Write ``model`` + ``tok`` as llama.cpp's convert_hf_to_gguf.py writes a llama.

    Tensors named in ``quantize_names`` are stored as ``qtype``; the rest as F32.
    """
    cfg = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny-llama")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    # tokenizer, as LlamaModel.set_vocab → _set_vocab_gpt2 → get_vocab_base does
    vocab = tok.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert [vocab[t] for t in tokens] == list(range(len(tokens)))
    added = tok.get_added_vocab()
    special = set(tok.all_special_tokens)
    types = [
        (gguf.TokenType.CONTROL if t in special else gguf.TokenType.USER_DEFINED)
        if t in added
        else gguf.TokenType.NORMAL
        for t in tokens
    ]
    w.add_tokenizer_model(tokenizer_model)
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(_merges(tok))
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_unk_token_id(tok.unk_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(add_bos)  # SmolLM2's GGUF says False
    w.add_chat_template(CHAT_TEMPLATE)

    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    out: dict[str, np.ndarray] = {"token_embd.weight": sd["model.embed_tokens.weight"]}
    hf_names = {
        "input_layernorm.weight": "attn_norm.weight",
        "post_attention_layernorm.weight": "ffn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.o_proj.weight": "attn_output.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    for i in range(cfg.num_hidden_layers):
        for hf, ll in hf_names.items():
            x = sd[f"model.layers.{i}.{hf}"]
            if ll == "attn_q.weight":
                x = llama_cpp_permute(x, cfg.num_attention_heads, cfg.num_attention_heads)
            elif ll == "attn_k.weight":
                x = llama_cpp_permute(x, cfg.num_attention_heads, cfg.num_key_value_heads)
            out[f"blk.{i}.{ll}"] = x
    out["output_norm.weight"] = sd["model.norm.weight"]
    if not cfg.tie_word_embeddings:
        out["output.weight"] = sd["lm_head.weight"]
    for name, x in out.items():
        if name in skip:
            continue
        x = np.ascontiguousarray(x, dtype=np.float32)
        if name in quantize_names:
            w.add_tensor(name, quantize(x, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@torch.no_grad()
def hf_logits(model, seqs=SEQUENCES) -> list[torch.Tensor]:
    return [model(torch.tensor([s])).logits[0].float() for s in seqs]


@dataclass
class Tiny:
    tok: PreTrainedTokenizerFast
    model: LlamaForCausalLM
    gguf_path: Path
    out_dir: Path
    converted: LlamaForCausalLM


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Tiny:
    root = tmp_path_factory.mktemp("gguf")
    tok = train_tokenizer()
    model = make_model(len(tok))
    path = write_gguf(root / "tiny.gguf", model, tok)
    out = convert_gguf(path, root / "converted", max_nll=None)
    converted = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    return Tiny(tok, model, path, out, converted)


def test_inverse_permutation_helper():
    w = np.random.default_rng(0).standard_normal((N_HEADS * HEAD_DIM, D_MODEL))
    permuted = llama_cpp_permute(w, N_HEADS)
    assert not np.array_equal(permuted, w)
    np.testing.assert_array_equal(unpermute_qk(permuted, N_HEADS), w)


# ---- the converted checkpoint ------------------------------------------------------------


def test_config_and_metadata(tiny):
    hf = AutoConfig.from_pretrained(str(tiny.out_dir))
    assert hf.model_type == "llama"
    assert (hf.num_hidden_layers, hf.hidden_size, hf.intermediate_size) == (2, 64, 128)
    assert (hf.num_attention_heads, hf.num_key_value_heads, hf.head_dim) == (4, 2, 16)
    assert hf.vocab_size == len(tiny.tok)
    assert hf.rms_norm_eps == pytest.approx(RMS_EPS)
    theta = getattr(hf, "rope_theta", None) or hf.rope_parameters["rope_theta"]
    assert theta == pytest.approx(ROPE_THETA)
    assert hf.tie_word_embeddings is True
    assert (hf.bos_token_id, hf.eos_token_id) == (1, 2)

    info = json.loads((tiny.out_dir / "interp_conversion.json").read_text())
    assert info["converter_version"] == CONVERTER_VERSION
    assert info["source"] == str(tiny.gguf_path)
    assert info["model_type"] == "llama" and info["check_nll"] > 0


def test_weights_roundtrip_exactly(tiny):
    orig = tiny.model.state_dict()
    conv = tiny.converted.state_dict()
    for name, p in orig.items():
        assert torch.equal(conv[name], p), name
    # tied: the unembedding is the embedding, not a separate (random) matrix
    assert tiny.converted.lm_head.weight.data_ptr() == (
        tiny.converted.model.embed_tokens.weight.data_ptr()
    )


def test_logits_match_original(tiny):
    for want, got in zip(hf_logits(tiny.model), hf_logits(tiny.converted), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_loss_check_refuses_a_wrong_conversion(tiny, tmp_path):
    """A random tiny model has a loss far above the threshold: refused, nothing cached."""
    with pytest.raises(InterpError, match="loss on a plain English paragraph") as exc:
        convert_gguf(tiny.gguf_path, tmp_path / "out")
    assert "\n" not in str(exc.value)
    _no_leftovers(tmp_path, set())


def test_untied_output_weight(tmp_path, tiny):
    model = make_model(len(tiny.tok), tied=False, seed=1)
    assert not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    path = write_gguf(tmp_path / "untied.gguf", model, tiny.tok)
    out = convert_gguf(path, tmp_path / "untied", max_nll=None)
    conv = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    assert AutoConfig.from_pretrained(str(out)).tie_word_embeddings is False
    torch.testing.assert_close(conv.lm_head.weight, model.lm_head.weight, atol=0, rtol=0)
    for want, got in zip(hf_logits(model), hf_logits(conv), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_q8_0_tensors_are_dequantised(tmp_path, tiny):
    q8 = gguf.GGMLQuantizationType.Q8_0
    names = ("token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_k.weight")
    path = write_gguf(tmp_path / "q8.gguf", tiny.model, tiny.tok, qtype=q8, quantize_names=names)
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(str(path)).tensors}
    assert all(types[n] == q8 for n in names) and types["blk.0.attn_v.weight"] != q8
    out = convert_gguf(path, tmp_path / "q8", max_nll=None)
    conv = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()

    # reference: the original with those tensors replaced by quantise→dequantise,
    # taken in llama.cpp's layout (Q/K quantised after the permutation)
    ref = make_model(len(tiny.tok))
    ref.load_state_dict(tiny.model.state_dict())
    sd = ref.state_dict()

    def qdq(x: np.ndarray) -> np.ndarray:
        return dequantize(quantize(np.ascontiguousarray(x, dtype=np.float32), q8), q8)

    with torch.no_grad():
        emb = sd["model.embed_tokens.weight"]
        emb.copy_(torch.from_numpy(qdq(emb.numpy())))
        q = sd["model.layers.0.self_attn.q_proj.weight"]
        q.copy_(torch.from_numpy(unpermute_qk(qdq(llama_cpp_permute(q.numpy(), N_HEADS)), N_HEADS)))
        k = sd["model.layers.1.self_attn.k_proj.weight"]
        k.copy_(torch.from_numpy(unpermute_qk(qdq(llama_cpp_permute(k.numpy(), N_KV)), N_KV)))

    emb_conv = conv.model.embed_tokens.weight
    emb_orig = tiny.model.model.embed_tokens.weight
    assert not torch.equal(emb_conv, emb_orig)  # quantisation really happened ...
    scale = emb_orig.abs().max().item()
    assert (emb_conv - emb_orig).abs().max().item() < scale / 100  # ... with Q8_0-sized error
    for name, p in ref.state_dict().items():
        torch.testing.assert_close(conv.state_dict()[name], p, atol=1e-6, rtol=0, msg=name)
    for want, got in zip(hf_logits(ref), hf_logits(conv), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    for want, got in zip(hf_logits(tiny.model), hf_logits(conv), strict=True):
        torch.testing.assert_close(got, want, atol=0.2, rtol=0.05)


# ---- the tokenizer ---------------------------------------------------------------------------


def test_tokenizer_matches_original(tiny):
    orig = tiny.tok
    conv = AutoTokenizer.from_pretrained(str(tiny.out_dir))
    assert len(conv) == len(orig)
    assert conv.get_vocab() == orig.get_vocab()
    for text in TEXTS:
        want = orig.encode(text, add_special_tokens=False)
        got = conv.encode(text, add_special_tokens=False)
        assert got == want, text
        assert conv.encode(text) == want, text  # no BOS/EOS added by default
        assert conv.decode(got) == orig.decode(want) == text, text
    # digits split one by one, as SmolLM2 does, although the vocabulary has merges for them
    ids = conv.encode("x 2024 12", add_special_tokens=False)
    assert conv.convert_ids_to_tokens(ids)[-7:] == ["2", "0", "2", "4", "Ġ", "1", "2"]
    assert all(a + b in conv.get_vocab() for a, b in DIGIT_MERGES)


def test_special_tokens_and_bos(tiny):
    conv = AutoTokenizer.from_pretrained(str(tiny.out_dir))
    for i, t in enumerate(SPECIALS):
        assert conv.convert_tokens_to_ids(t) == i
        assert conv.added_tokens_decoder[i].special  # control tokens stay special
        assert conv.encode(f"a{t}b", add_special_tokens=False)[1:-1] == [i]
    assert (conv.bos_token, conv.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert (conv.pad_token, conv.unk_token) == ("<|im_end|>", "<|endoftext|>")
    text = "<|im_start|>hi<file_sep>there<|im_end|><repo_name>"
    assert conv.decode(conv.encode(text), skip_special_tokens=True) == "hithere"
    # the GGUF says tokenizer.ggml.add_bos_token = False: no BOS by default
    assert conv.encode("hi")[0] != conv.bos_token_id


def test_bos_follows_the_gguf(tiny, tmp_path):
    """A GGUF that says add_bos_token = True gives a tokenizer (and a Model) adding BOS."""
    from interp.models.loading import load

    path = write_gguf(tmp_path / "bos.gguf", tiny.model, tiny.tok, add_bos=True)
    out = convert_gguf(path, tmp_path / "bos", max_nll=None)
    conv = AutoTokenizer.from_pretrained(str(out))
    assert conv.encode("hi")[0] == conv.bos_token_id
    model = load(str(out))
    assert model.special_prefix == [conv.bos_token_id]
    ids, mask = model.tokenize(["hi there"])
    assert ids[0][mask[0].bool()].tolist() == conv.encode("hi there")


def test_chat_template_preserved(tiny):
    conv = AutoTokenizer.from_pretrained(str(tiny.out_dir))
    assert conv.chat_template == CHAT_TEMPLATE
    msgs = [{"role": "user", "content": "What is 2+2?"}]
    want = tiny.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    got = conv.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert got == want
    assert got.endswith("<|im_start|>assistant\n") and "<|im_start|>system" in got


# ---- errors and atomicity -------------------------------------------------------------------


def _no_leftovers(parent: Path, keep: set[str]) -> None:
    assert {p.name for p in parent.iterdir()} == keep


def test_unknown_architecture_is_rejected(tmp_path, tiny):
    path = write_gguf(tmp_path / "odd.gguf", tiny.model, tiny.tok, arch="nosucharch")
    with pytest.raises(InterpError, match="cannot load this GGUF") as exc:
        convert_gguf(path, tmp_path / "out", max_nll=None)
    assert "\n" not in str(exc.value)
    _no_leftovers(tmp_path, {"odd.gguf"})


def test_truncated_gguf_is_rejected(tmp_path, tiny):
    data = tiny.gguf_path.read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InterpError, match="cannot load this GGUF") as exc:
        convert_gguf(path, tmp_path / "out", max_nll=None)
    assert "\n" not in str(exc.value)
    _no_leftovers(tmp_path, {"cut.gguf"})


def test_missing_tensor_is_rejected(tmp_path, tiny):
    path = write_gguf(tmp_path / "cut.gguf", tiny.model, tiny.tok, skip=("blk.1.ffn_up.weight",))
    with pytest.raises(InterpError, match="missing"):
        convert_gguf(path, tmp_path / "out", max_nll=None)
    _no_leftovers(tmp_path, {"cut.gguf"})


def test_failure_mid_conversion_leaves_nothing(tmp_path, tiny, monkeypatch):
    parent = tmp_path / "models"
    out = parent / "tiny-hf"

    def boom(tok, out_dir):
        assert (out_dir / "config.json").exists()  # the model was already written
        raise RuntimeError("simulated crash while writing the tokenizer")

    monkeypatch.setattr(gc, "_save_tokenizer", boom)
    with pytest.raises(RuntimeError, match="simulated"):
        convert_gguf(tiny.gguf_path, out, max_nll=None)
    assert not out.exists()
    _no_leftovers(parent, set())

    # an existing conversion survives a failed rebuild untouched
    out.mkdir()
    (out / "marker").write_text("old")
    with pytest.raises(RuntimeError, match="simulated"):
        convert_gguf(tiny.gguf_path, out, max_nll=None)
    assert (out / "marker").read_text() == "old"
    _no_leftovers(parent, {"tiny-hf"})

    # and a successful one replaces it completely
    monkeypatch.undo()
    convert_gguf(tiny.gguf_path, out, max_nll=None)
    assert not (out / "marker").exists()
    assert (out / "interp_conversion.json").exists() and (out / "tokenizer.json").exists()
    _no_leftovers(parent, {"tiny-hf"})


# ---- loading through interp ----------------------------------------------------------------


def test_interp_load_converted_folder(tiny, tmp_path, monkeypatch):
    from interp.activations.capture import capture
    from interp.models.loading import load

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    model = load(str(tiny.out_dir))
    assert model.n_layers == N_LAYERS and model.d_model == D_MODEL
    assert model.d_vocab == len(tiny.tok)
    prompts = ["some text", "The capital of France is Paris."]
    acts = capture(model, prompts, layers=[1], positions="all", with_logits=True)
    assert acts.logits is not None
    m = acts.mask
    unembedded = model.unembed(acts[1]).float()
    torch.testing.assert_close(unembedded[m], acts.logits[m], atol=1e-4, rtol=1e-4)
    # and the bridge computes what the original HF model computes
    for i, p in enumerate(prompts):
        ids = tiny.tok.encode(p, add_special_tokens=False)
        assert acts.input_ids[i, : len(ids)].tolist() == ids
        want = hf_logits(tiny.model, [ids])[0]
        torch.testing.assert_close(acts.logits[i, : len(ids)], want, atol=1e-4, rtol=1e-4)


def test_interp_load_gguf_converts_once(tiny, tmp_path, monkeypatch):
    from interp.models import loading as models
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))
    calls: list[Path] = []
    real = gc.convert_gguf

    def counting(path, out_dir, **kw):
        calls.append(Path(out_dir))
        return real(path, out_dir, **kw)

    monkeypatch.setattr(gc, "convert_gguf", counting)
    first = models.load(str(tiny.gguf_path))
    assert first.model_id == "gguf:tiny.gguf"
    assert len(calls) == 1
    folder = Path(first.path)
    assert folder == calls[0]
    assert folder.parent == tmp_path / "cache" / "models"
    assert (folder / "interp_conversion.json").exists()
    assert first.n_layers == N_LAYERS and first.d_model == D_MODEL
    mtime = (folder / "interp_conversion.json").stat().st_mtime_ns

    second = models.load(str(tiny.gguf_path))
    assert len(calls) == 1  # reused the cache
    assert second.path == first.path
    assert (folder / "interp_conversion.json").stat().st_mtime_ns == mtime
    ids = torch.tensor([SEQUENCES[0]])
    torch.testing.assert_close(
        second.logits(ids)[0], hf_logits(tiny.model)[0], atol=1e-4, rtol=1e-4
    )
