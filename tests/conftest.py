"""Shared fixtures: no network, a temporary INTERP_CACHE, tiny and real models.

* Every test runs with non-loopback network connections blocked (loopback and
  AF_UNIX stay open for torch.distributed and Chromium's DevTools).
* ``INTERP_CACHE`` points at a per-session temporary folder, so tests never write
  the user's cache. The embedded model's conversion is shared by the session.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from pathlib import Path

import pytest

os.environ["WANDB_MODE"] = "disabled"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TRANSFORMERS_VERBOSITY"] = "error"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["INTERP_NO_PROGRESS"] = "1"
#: The user's (or CI's) real cache, where `make setup` built the default corpus.
_USER_CACHE = Path(os.environ.get("INTERP_CACHE") or Path.home() / ".cache" / "interp")
_SESSION_CACHE = Path(tempfile.mkdtemp(prefix="interp-test-cache-"))
os.environ["INTERP_CACHE"] = str(_SESSION_CACHE)


class NetworkBlocked(OSError):
    """Raised when a test tries to reach a non-loopback address."""


def _is_loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and other families
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a hostname: resolving it would need DNS


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: object) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise NetworkBlocked(f"network blocked in tests: connect to {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise NetworkBlocked(f"network blocked in tests: connect to {address!r}")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host is not None and not _is_loopback((host,)):
        raise NetworkBlocked(f"network blocked in tests: DNS lookup of {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture(scope="session")
def session_cache() -> Path:
    """The session's temporary INTERP_CACHE."""
    return _SESSION_CACHE


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    """The default corpus built by `make setup`, linked read-only into the session cache.

    Fails in CI (setup must have built it); skips elsewhere when it is missing.
    """
    from interp.data import corpus
    src = _USER_CACHE / "corpus" / corpus.CORPUS_NAME
    if not corpus.is_built(src):
        if os.environ.get("CI"):
            pytest.fail(f"the default corpus is not built at {src}: run `make setup`")
        pytest.skip(f"the default corpus is not built at {src}")
    dst = corpus.default_dir()
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src, target_is_directory=True)
    return dst


@pytest.fixture(scope="session")
def model():
    """The real embedded SmolLM2-135M-Instruct, converted once per session."""
    import interp

    return interp.load()


@pytest.fixture(scope="session")
def activation_cache(tmp_path_factory):
    """One activation cache (layer 6 of the embedded model, the default corpus) for every
    real-model SAE run of the session: the model runs once for all of them."""
    return tmp_path_factory.mktemp("sae-activation-cache")


@pytest.fixture(scope="session")
def gemma():
    """The second embedded model, Gemma-3-270M.

    Its conversion (80–95 s here) is made once by `make setup` and linked read-only into
    the session cache when there; otherwise this session converts it (and fails in CI,
    where setup must have done it).
    """
    import interp
    from interp.models.embedded import GEMMA3_270M
    from interp.models.loading import converted_dir

    dst = converted_dir(GEMMA3_270M.name)
    src = _USER_CACHE / "models" / dst.name
    if (src / "interp_conversion.json").exists() and not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src, target_is_directory=True)
    elif os.environ.get("CI") and not dst.exists():
        pytest.fail(f"Gemma-3-270M is not converted at {src}: run `make setup`")
    return interp.load(GEMMA3_270M.name)


TINY_TEXT = (
    "The capital of France is Paris. The capital of Italy is Rome. "
    "Water boils at 100 degrees. The quick brown fox jumps over the lazy dog. "
    "Once upon a time there was a small model that learned to read and write. "
    "Numbers like 12345 and 678 are split into digits. "
) * 4


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (3 layers, d_model 64) with a locally trained BPE tokenizer."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-llama")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator([TINY_TEXT], trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
        pad_token="<|im_end|>", unk_token="<|endoftext|>",
    )
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, rope_theta=1e5,
        tie_word_embeddings=True, rms_norm_eps=1e-5, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    hf = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))  # γ must matter in the tests
    hf.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir: Path):
    import interp

    return interp.load(str(tiny_model_dir))
