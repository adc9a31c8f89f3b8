"""Shared fixtures and the tiers: no network, a temporary INTERP_CACHE, tiny models.

* Every test runs with non-loopback network connections blocked (loopback and
  AF_UNIX stay open for torch.distributed and Chromium's DevTools).
* ``INTERP_CACHE`` points at a per-session temporary folder, so tests never write
  the user's cache. The embedded model's conversion is shared by the session; the folder
  is removed when the process exits.
* The tiers: ``tests/unit/`` (tiny random models or none), ``tests/browser/`` (reports in
  headless Chromium) and ``tests/integration/`` (the real embedded models, whose fixtures
  live in ``tests/integration/conftest.py``). Every test under ``tests/integration/`` and
  every test requesting a real-model fixture is marked ``slow`` here, at collection; a
  test not marked ``slow`` that loads an embedded model anyway fails. A bare ``pytest``
  runs the fast tier (``-m "not slow"`` in pyproject.toml); ``pytest -m slow`` the rest.
  Tests marked ``processes`` (several interp processes: SIGKILL and resume, torchrun) are
  in the slow tier too, for their process starts.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.text_fixtures import TINY_TEXT

os.environ["WANDB_MODE"] = "disabled"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TRANSFORMERS_VERBOSITY"] = "error"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["INTERP_NO_PROGRESS"] = "1"
# Under pytest-xdist (`make test` runs each tier with `-n 2`), the workers share the cores:
# each gets cores // workers threads, set before torch is imported so that the processes a
# test starts inherit it too. Two workers with two threads each ran the fast tier slower
# than one process (5:29 against 5:20 on 2 cores: the threads fought over the cores); with
# one thread each, 3:05.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _threads = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(_threads))
#: The user's (or CI's) real cache, where `make setup` built the default corpus. Passed on
#: to pytest-xdist's workers, which inherit the INTERP_CACHE this module sets below.
USER_CACHE = Path(os.environ.get("INTERP_TEST_USER_CACHE") or os.environ.get("INTERP_CACHE")
                  or Path.home() / ".cache" / "interp")
os.environ["INTERP_TEST_USER_CACHE"] = str(USER_CACHE)
_SESSION_CACHE = Path(tempfile.mkdtemp(prefix="interp-test-cache-"))
os.environ["INTERP_CACHE"] = str(_SESSION_CACHE)
# Each process (the controller and every xdist worker) makes its own and removes it on
# exit: a session that converts the embedded models leaves ~1 GB otherwise, and a machine
# that ran the suite a few dozen times filled its disk (CI then failed with ENOSPC).
_CREATOR = os.getpid()


@atexit.register
def _remove_session_cache() -> None:
    if os.getpid() == _CREATOR:  # not a forked child that happens to exit normally
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


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


# ------------------------------------------------------------------ the tiers
#: The fixtures that load (or feed) the real embedded models: tests/integration/conftest.py.
REAL_MODEL_FIXTURES = frozenset({"model", "gemma", "real_corpus", "activation_cache"})
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"


def multi_process(item: pytest.Item) -> bool:
    """A test marked ``processes``: it starts several interp processes (kills them at random
    steps and resumes, or trains under torchrun), each paying for its own start. The fast
    tier checks what it can in one process (an interrupted run resumes to the same weights;
    each rank's substream gives world-invariant batches)."""
    return item.get_closest_marker("processes") is not None


def uses_real_model(item: pytest.Item) -> bool:
    """A test of the slow tier: under tests/integration/, or requesting a real-model fixture."""
    return (INTEGRATION_DIR in item.path.parents
            or not REAL_MODEL_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())))


#: Under ``--dist loadgroup``, the tests sharing one of these costly session fixtures run on
#: one worker, so that it is built once (Gemma's load, the layer-6 activation cache the SAE
#: tests fill, the real-model transcoders the graph tests train: 3 minutes each time here),
#: and the site's tests share one build, as do the autointerp tests' tiny SAE and contexts.
SHARED_FIXTURE_GROUPS = {"gemma": "gemma", "activation_cache": "sae-activations",
                         "real_transcoders": "real-transcoders"}
SHARED_MODULE_GROUPS = {"test_docs_site.py": "docs-site",
                        "test_autointerp_run.py": "autointerp-run"}


def xdist_group(item: pytest.Item) -> str | None:
    """The worker group of a test whose fixtures are costly to build twice, if any."""
    names = getattr(item, "fixturenames", ())
    for fixture, group in SHARED_FIXTURE_GROUPS.items():
        if fixture in names:
            return group
    return SHARED_MODULE_GROUPS.get(item.path.name)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if uses_real_model(item) or multi_process(item):
            item.add_marker(pytest.mark.slow)
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``--dist loadgroup``, a grouped test's node id must carry its group (pytest-xdist
    sends on that suffix alone): otherwise the grouping silently does nothing and each
    worker builds the shared fixtures again (as with pytest 9.2 and pytest-xdist 3.8)."""
    if not session.config.getoption("loadgroup", default=False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup lost its groups ({len(lost)} tests, e.g. {lost[0]}): this "
            "pytest and pytest-xdist do not agree on node ids; install pyproject's pins")


@pytest.fixture(autouse=True)
def _fast_tests_load_no_real_model(request: pytest.FixtureRequest, monkeypatch):
    """A test outside the slow tier that loads an embedded model (``interp.load()``, a CLI
    verb without ``--model``) fails at once, before the load: it belongs in
    tests/integration/, where it shares the session's model."""
    if request.node.get_closest_marker("slow") is not None:
        return
    try:
        from interp.models import loading
    except Exception:  # noqa: BLE001 - a broken package: the test itself will say so
        return

    real = loading.resolve_source

    def guarded(source):  # type: ignore[no-untyped-def]
        em = loading.find_embedded(None if source is None else str(source))
        if em is None:
            return real(source)
        loading.check_installed(em)  # a missing package still fails in its one line
        pytest.fail(f"{request.node.nodeid} loads the embedded model {em.name} but is not "
                    "marked slow: move it to tests/integration/ and use the session's "
                    "`model` or `gemma` fixture", pytrace=False)

    monkeypatch.setattr(loading, "resolve_source", guarded)




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
def tiny_family(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """``family → (folder, model)``: a tiny random checkpoint of a registered architecture
    family (``tests/support/families.py``), built and loaded once per session."""
    import interp
    from tests.support.families import build_family

    built: dict[str, tuple[Path, Any]] = {}

    def get(family: str) -> tuple[Path, Any]:
        if family not in built:
            folder = build_family(family, tmp_path_factory.mktemp(f"tiny-{family}"),
                                  tiny_model_dir)
            built[family] = (folder, interp.load(str(folder)))
        return built[family]

    return get


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir: Path):
    import interp

    return interp.load(str(tiny_model_dir))


@pytest.fixture(scope="session")
def tiny_gemma3(tiny_model_dir, tmp_path_factory):
    """A tiny random Gemma-3 text model (sliding-window and global layers)."""
    import torch
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    import interp

    out = tmp_path_factory.mktemp("tiny-gemma3")
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    Gemma3ForCausalLM(cfg).save_pretrained(str(out))
    return interp.load(str(out))
