"""The real embedded models and what runs on them, once per session for the whole slow tier.

Every test here is marked ``slow`` by tests/conftest.py (so is any test elsewhere that
requests one of these fixtures). The fixtures are session-scoped: SmolLM2-135M and
Gemma-3-270M load once, the corpus is linked once, and the layer-6 activation cache is
filled by the first SAE test that needs it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import USER_CACHE

# a fixture the tiny-model tests of the same engine share (tests/unit/interp/)
from tests.unit.interp.test_model_forward import count_direct  # noqa: F401


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    """The default corpus built by `make setup`, linked read-only into the session cache.

    Fails in CI (setup must have built it); skips elsewhere when it is missing.
    """
    from interp.data import corpus
    src = USER_CACHE / "corpus" / corpus.CORPUS_NAME
    if not corpus.is_built(src):
        if os.environ.get("CI"):
            pytest.fail(f"the default corpus is not built at {src}: run `make setup`")
        pytest.skip(f"the default corpus is not built at {src}")
    dst = corpus.default_dir()
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src, target_is_directory=True)
    return dst


def link_conversion(name: str) -> None:
    """Link the embedded model ``name``'s conversion, made once by `make setup`, read-only
    into the session cache (16 s for SmolLM2 and 80–95 s for Gemma-3 here, otherwise paid
    by every test process); without one, this session converts it (and fails in CI, where
    setup must have done it). The conversion itself is tested from the GGUF in
    test_cache_integrity_real.py."""
    from interp.models.loading import converted_dir

    dst = converted_dir(name)
    src = USER_CACHE / "models" / dst.name
    if (src / "interp_conversion.json").exists() and not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src, target_is_directory=True)
    elif os.environ.get("CI") and not dst.exists():
        pytest.fail(f"{name} is not converted at {src}: run `make setup`")


@pytest.fixture(scope="session", autouse=True)
def _embedded_conversions() -> None:
    """Both embedded models' conversions, for the fixtures below and for every ``interp``
    process a test starts (they inherit the session cache)."""
    from interp.models.embedded import GEMMA3_270M, SMOLLM2

    for em in (SMOLLM2, GEMMA3_270M):
        link_conversion(em.name)


@pytest.fixture(scope="session")
def model():
    """The real embedded SmolLM2-135M-Instruct."""
    import interp

    return interp.load()


@pytest.fixture(scope="session")
def activation_cache(tmp_path_factory):
    """One activation cache (layer 6 of the embedded model, the default corpus) for every
    real-model SAE run of the session: the model runs once for all of them."""
    return tmp_path_factory.mktemp("sae-activation-cache")


@pytest.fixture(scope="session")
def gemma():
    """The second embedded model, Gemma-3-270M."""
    import interp
    from interp.models.embedded import GEMMA3_270M

    return interp.load(GEMMA3_270M.name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Real-model tests get 20 minutes each (the 300 s default is for the fast tier): on a
    loaded 2-core machine the sycophancy and constitutional runs took over 300 s."""
    for item in items:
        if "tests/integration/" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(1200))
