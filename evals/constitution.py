"""The constitution, the prompts, and the records a constitutional-AI run is made of.

* :class:`Principle` / :class:`Constitution`: how to critique, revise and compare, read
  from JSON or YAML by :func:`load_constitution` (errors name the file, principle, line);
* :class:`PromptItem`: a prompt and, where the dataset has one, a reference answer, read
  by :func:`load_prompts`;
* :class:`Chain`: one prompt's answer and its critique → revision rounds;
* :class:`Pair`: two answers judged against one principle, shown in both :func:`orders`.

Shared by :mod:`evals.judge` (which shows pairs to the judge) and
:mod:`evals.constitutional` (which builds them); imports go one way, from those two to
this module.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.schema import to_data

__all__ = [
    "Chain",
    "Constitution",
    "Pair",
    "Principle",
    "PromptItem",
    "conversation",
    "default_constitution_path",
    "default_prompts_path",
    "load_constitution",
    "load_prompts",
    "orders",
    "sample_principle",
]

PRINCIPLE_FIELDS = ("critique_request", "revision_request")
#: Shown to the judge when a principle gives no ``comparison`` question.
DEFAULT_COMPARISON = "Which response better follows this principle: {revision_request}"


# ============================================================================ data
@dataclass(frozen=True)
class Principle:
    """One constitutional principle: how to critique, how to revise, how to compare."""

    name: str
    critique_request: str
    revision_request: str
    comparison: str


@dataclass(frozen=True)
class Constitution:
    """The principles, in order; ``name`` and ``source`` (its file) are recorded."""

    principles: tuple[Principle, ...]
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.principles:
            raise InterpError("constitution has no principles")

    def by_name(self, name: str) -> Principle:
        """The principle called ``name``; an unknown name is an
        :class:`~interp.errors.InterpError`."""
        for p in self.principles:
            if p.name == name:
                return p
        raise InterpError(f"constitution has no principle {name!r}")

    def sha256(self) -> str:
        """Hash of the principles (names and texts), for the run manifest."""
        from interp.runs.manifest import sha256_texts

        return sha256_texts([json.dumps(to_data(self.principles), sort_keys=True)])


@dataclass(frozen=True)
class PromptItem:
    """One prompt; ``reference`` is a good answer written by the dataset, when it has one."""

    id: str
    prompt: str
    reference: str | None = None
    category: str | None = None


def _datasets_file(relative: str) -> Path:
    from interp.runs.paths import shipped_dataset

    return shipped_dataset(relative)


def default_constitution_path() -> Path:
    """The shipped default constitution (``datasets/constitutional/constitution.json``)."""
    return _datasets_file("constitutional/constitution.json")


def default_prompts_path() -> Path:
    """The shipped prompts (``datasets/constitutional/prompts.jsonl``)."""
    return _datasets_file("constitutional/prompts.jsonl")


def _read_text(path: Path) -> str:
    from interp.data.readers import open_text

    text = open_text(path)
    if not text.strip():
        raise InterpError(f"{path}: empty file")
    return text


def _parse_structured(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{path}: line {exc.lineno} is not valid JSON ({exc.msg})") from None
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - PyYAML comes with datasets/transformers
            raise InterpError(f"cannot read {path}: PyYAML is not installed; use JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark is not None else "somewhere"
            problem = getattr(exc, "problem", None) or "syntax error"
            raise InterpError(f"{path}: {where} is not valid YAML ({problem})") from None
    raise InterpError(f"cannot read {path}: unknown constitution type {suffix or '(none)'}; "
                      "use .json, .yaml or .yml")


def _principle_lines(path: Path, text: str) -> list[int | None]:
    """Best-effort line number where each principle starts (for error messages)."""
    lines: list[int | None] = []
    suffix = path.suffix.lower()
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if suffix == ".json" and s.startswith("{") and n > 1:
            lines.append(n)
        elif suffix in (".yaml", ".yml") and s.startswith("- "):
            lines.append(n)
    return lines


def load_constitution(path: str | os.PathLike[str] | None = None) -> Constitution:
    """Read a constitution from JSON or YAML (``None``: the shipped default).

    The file holds a list of principles, or an object ``{"name": ..., "principles": [...]}``.
    Each principle is an object with ``critique_request`` and ``revision_request`` (strings),
    and optionally ``name`` and ``comparison`` (the question the judge answers). Problems
    raise :class:`InterpError` naming the file, the principle and, where known, the line.
    """
    p = Path(path).expanduser() if path is not None else default_constitution_path()
    if p.is_dir():
        raise InterpError(f"cannot read {p}: it is a folder, not a file")
    text = _read_text(p)
    data = _parse_structured(p, text)
    name = ""
    if isinstance(data, dict):
        if "principles" not in data:
            raise InterpError(f"{p}: no 'principles' list (keys: {', '.join(map(str, data))})")
        name = str(data.get("name") or "")
        data = data["principles"]
    if not isinstance(data, list):
        raise InterpError(f"{p}: expected a list of principles")
    if not data:
        raise InterpError(f"{p}: the constitution has no principles")
    starts = _principle_lines(p, text)
    principles: list[Principle] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        line = starts[i] if i < len(starts) and len(starts) == len(data) else None
        where = f"{p}: principle {i + 1}" + (f" (line {line})" if line else "")
        if not isinstance(raw, dict):
            raise InterpError(f"{where} is not an object")
        for key in PRINCIPLE_FIELDS:
            if key not in raw:
                raise InterpError(f"{where} has no {key!r}")
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise InterpError(f"{where} has an empty {key!r}")
        pname = str(raw.get("name") or f"principle_{i + 1}").strip()
        if pname in seen:
            raise InterpError(f"{where}: duplicate principle name {pname!r}")
        seen.add(pname)
        comparison = raw.get("comparison")
        if comparison is not None and (not isinstance(comparison, str) or not comparison.strip()):
            raise InterpError(f"{where} has an empty 'comparison'")
        principles.append(Principle(
            name=pname, critique_request=raw["critique_request"].strip(),
            revision_request=raw["revision_request"].strip(),
            comparison=(comparison or DEFAULT_COMPARISON.format(**raw)).strip(),
        ))
    return Constitution(tuple(principles), name=name, source=str(p))


def _record_lines(path: Path, n_records: int) -> list[int] | None:
    """Line number of each JSONL / CSV record (read_records skips blank JSONL lines)."""
    if path.suffix.lower() in (".csv", ".tsv"):
        return list(range(2, n_records + 2))  # after the header; no multi-line fields
    if path.suffix.lower() != ".jsonl":
        return None
    text = path.read_text(encoding="utf-8")
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return lines if len(lines) == n_records else None


def load_prompts(path: str | os.PathLike[str] | None = None, limit: int | None = None
                 ) -> list[PromptItem]:
    """Read prompts from JSONL / JSON / CSV / TSV / TXT (``None``: the shipped set).

    Each record needs a non-empty ``prompt`` (``text`` is accepted too); ``id``,
    ``reference`` (a good answer, for the self-preference measurement) and ``category`` are
    optional. Errors name the file and line. ``limit`` keeps the first N (after the whole
    file is checked).
    """
    from interp.data.readers import read_records

    p = Path(path).expanduser() if path is not None else default_prompts_path()
    if p.is_file() and not p.read_text(encoding="utf-8", errors="replace").strip():
        raise InterpError(f"{p}: empty file")
    records = read_records(p)
    lines = _record_lines(p, len(records))
    items: list[PromptItem] = []
    ids: set[str] = set()
    for i, rec in enumerate(records):
        where = f"{p}: line {lines[i]}" if lines else f"{p}: record {i + 1}"
        key = "prompt" if "prompt" in rec else "text" if "text" in rec else None
        if key is None:
            cols = ", ".join(sorted(map(str, rec))) or "none"
            raise InterpError(f"{where} has no 'prompt' field (fields: {cols})")
        text = rec[key]
        if not isinstance(text, str) or not text.strip():
            raise InterpError(f"{where} has an empty {key!r}")
        ref = rec.get("reference")
        if ref is not None and not isinstance(ref, str):
            raise InterpError(f"{where}: 'reference' must be a string")
        ref = ref if ref and ref.strip() else None
        item_id = str(rec.get("id") if rec.get("id") not in (None, "") else i + 1)
        if item_id in ids:
            raise InterpError(f"{where}: duplicate id {item_id!r}")
        ids.add(item_id)
        cat = rec.get("category")
        items.append(PromptItem(id=item_id, prompt=text, reference=ref,
                                category=str(cat) if cat not in (None, "") else None))
    return items if limit is None else items[:limit]


# ===================================================================== sampling
def sample_principle(constitution: Constitution, seed: int, *key: object) -> Principle:
    """A principle drawn by a generator keyed by ``seed`` and ``key`` (stable across runs)."""
    rng = random.Random("\0".join(map(str, (seed, *key))))
    return rng.choice(constitution.principles)


# ====================================================================== chains
@dataclass
class Chain:
    """One prompt's supervised-stage record: the answer and each critique → revision round."""

    id: str
    prompt: str
    initial: str
    principles: list[str] = field(default_factory=list)
    critiques: list[str] = field(default_factory=list)
    revisions: list[str] = field(default_factory=list)
    reference: str | None = None
    category: str | None = None

    @property
    def final(self) -> str:
        """The last revision (the initial answer when there was none)."""
        return self.revisions[-1] if self.revisions else self.initial

    def sft_record(self) -> dict[str, Any]:
        """The ``sft.jsonl`` row, with a ``messages`` field for chat SFT trainers."""
        return {
            "id": self.id, "prompt": self.prompt, "initial": self.initial,
            "principles": list(self.principles), "critiques": list(self.critiques),
            "revisions": list(self.revisions), "final": self.final,
            "messages": [{"role": "user", "content": self.prompt},
                         {"role": "assistant", "content": self.final}],
        }


def conversation(model: Any, messages: Sequence[dict[str, str]]) -> str:
    """The chat-template text of ``messages`` ending in an open assistant turn."""
    if not model.has_chat_template:
        raise InterpError(f"model {model.model_id} has no chat template; constitutional AI "
                          "needs a chat model")
    return model.tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=True)


# ======================================================================= pairs
@dataclass(frozen=True)
class Pair:
    """Two answers to one prompt, judged against one principle.

    ``x`` is the candidate (the revision, or the model's own answer), ``y`` the baseline
    (the initial answer, or the dataset's reference); ``kind`` is ``"revision"`` or
    ``"reference"``.
    """

    id: str
    prompt: str
    x: str
    y: str
    principle: str
    kind: str
    x_label: str
    y_label: str

    @property
    def identical(self) -> bool:
        """Whether the two answers are the same text (surrounding whitespace aside)."""
        return self.x.strip() == self.y.strip()


def orders(pairs: Sequence[Pair]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(A, B) answers of every pair in the forward order ``(x, y)`` and the reverse ``(y, x)``."""
    return [(p.x, p.y) for p in pairs], [(p.y, p.x) for p in pairs]

