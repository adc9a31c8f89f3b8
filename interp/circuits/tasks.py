"""Clean/corrupted prompt pairs for patching: reading a task and tokenizing it.

A task is a JSONL file, one pair per line::

    {"clean": "When Mary and John went to the store, John gave a drink to",
     "corrupted": "When Mary and John went to the store, Mary gave a drink to",
     "answer": " Mary", "wrong": " John",
     "labels": [["start", 0, 4], ["IO", 4, 9], ..., ["END", 57, 60]]}

The same pair may be spelled counterfactually, as ``interp causal`` reads it:
``{"base", "source", "base_label", "source_label"}`` (base = corrupted, source = clean,
base_label = wrong, source_label = answer). ``answer`` and ``wrong`` must be single
tokens; the clean and corrupted prompts must tokenize to the same length (patching
swaps activations position by position).
``labels`` (optional) name character spans of the clean prompt, so that pairs of
different lengths align by role: a *position* of a position family is a label, and
patching it patches every token of that span. The final token is always its own
position, ``END``. Without labels, positions are counted from the end (``END``,
``END-1``, ...), as many as the shortest pair has tokens.

Any other column with a scalar value (``template`` in the shipped tasks, ``family``, ...)
is kept in :attr:`Pair.columns`; ``interp patch --group-by COLUMN`` groups the pairs by one.

Shipped tasks live in ``datasets/circuits/`` (``ioi``, ``capitals``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import sha256_file
from interp.runs.paths import datasets_dir

END = "END"
_KEYS = ("clean", "corrupted", "answer", "wrong")
#: the counterfactual spelling of a pair (interp causal): base = corrupted, source = clean
COUNTERFACTUAL_KEYS = {"source": "clean", "base": "corrupted", "source_label": "answer",
                       "base_label": "wrong"}
_SCALARS = (str, int, float, bool)


@dataclass
class Pair:
    """One clean/corrupted pair and the two tokens its metric compares."""

    clean: str
    corrupted: str
    answer: str
    wrong: str
    labels: list[tuple[str, int, int]] | None = None
    #: the line's other columns with a scalar value (``template``, ``family``, ...)
    columns: dict[str, str | int | float | bool] = field(default_factory=dict)


@dataclass
class Task:
    """The pairs of one task file."""

    name: str
    source: str
    sha256: str
    pairs: list[Pair]

    def write(self, path: str | Path) -> Path:
        """The pairs as a task file (JSONL, atomically): what :func:`load_task` reads back,
        their extra columns included."""
        import json

        from interp.runs.atomic import atomic_write_text

        lines = []
        for p in self.pairs:
            row: dict[str, object] = {"clean": p.clean, "corrupted": p.corrupted,
                                      "answer": p.answer, "wrong": p.wrong}
            if p.labels is not None:
                row["labels"] = [list(x) for x in p.labels]
            lines.append(json.dumps({**row, **p.columns}, ensure_ascii=False) + "\n")
        return atomic_write_text(path, "".join(lines))

    def column_names(self) -> list[str]:
        """The extra columns every pair has (a group column must be one of them)."""
        if not self.pairs:
            return []
        common = set(self.pairs[0].columns)
        for p in self.pairs[1:]:
            common &= set(p.columns)
        return sorted(common)

    def groups(self, column: str) -> list[str]:
        """Each pair's value of ``column`` as text (the group it belongs to); a pair
        without it is a one-line :class:`~interp.errors.InterpError`."""
        out = []
        for n, p in enumerate(self.pairs):
            if column not in p.columns:
                have = ", ".join(self.column_names()) or "none"
                raise InterpError(
                    f"group column {column!r} is missing on pair {n} of {self.name}: name a "
                    f"column every pair has (these have: {have})")
            v = p.columns[column]
            out.append(str(v).lower() if isinstance(v, bool) else str(v))
        return out


def shipped_tasks() -> list[str]:
    """Names of the tasks in ``datasets/circuits/``."""
    folder = datasets_dir() / "circuits"
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def _parse_labels(raw: object, where: str, text: str) -> list[tuple[str, int, int]]:
    if not isinstance(raw, list) or not raw:
        raise InterpError(f"{where}: 'labels' must be a non-empty list of [label, start, end]")
    out: list[tuple[str, int, int]] = []
    pos = 0
    for item in raw:
        if (not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], str)
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in item[1:])):
            raise InterpError(f"{where}: each label must be [name, start, end], got {item!r}")
        name, start, end = item
        if start != pos or end <= start:
            raise InterpError(
                f"{where}: label spans must be contiguous and non-empty from 0; "
                f"{name!r} is [{start}, {end}) after position {pos}"
            )
        out.append((name, start, end))
        pos = end
    if pos != len(text):
        raise InterpError(
            f"{where}: labels cover {pos} characters of a {len(text)}-character prompt"
        )
    return out


def load_task(spec: str, limit: int | None = None) -> Task:
    """A shipped task by name (``"ioi"``) or a JSONL file of pairs; the first ``limit``."""
    if not isinstance(spec, str) or not spec.strip():
        raise InterpError("empty task: give a shipped task name or a JSONL file")
    path = Path(spec)
    # A folder is never a task: `--task ioi --out ioi/` names the shipped task, though the
    # output folder of that name exists by the time the task is read.
    if not (spec.endswith(".jsonl") or path.is_file()):
        names = shipped_tasks()
        if spec not in names:
            raise InterpError(
                f"unknown task {spec!r}: use one of {', '.join(names) or '(none shipped)'}"
                " or a JSONL file of pairs"
            )
        path = datasets_dir() / "circuits" / f"{spec}.jsonl"
    if not path.is_file():
        raise InterpError(f"task file not found: {path}")
    from interp.data.readers import jsonl_objects, open_text  # the readers' one-line errors

    pairs: list[Pair] = []
    for n, row in jsonl_objects(path, open_text(path)):
        where = f"{path.name} line {n}"
        if "clean" not in row and "source" in row:  # the counterfactual spelling
            row = {COUNTERFACTUAL_KEYS.get(k, k): v for k, v in row.items()}
        missing = [k for k in _KEYS if not isinstance(row.get(k), str) or not row[k]]
        if missing:
            raise InterpError(f"{where}: missing or empty {', '.join(missing)}")
        if row["answer"] == row["wrong"]:
            raise InterpError(f"{where}: answer and wrong are the same token {row['answer']!r}")
        labels = row.get("labels")
        pairs.append(Pair(
            clean=row["clean"], corrupted=row["corrupted"], answer=row["answer"],
            wrong=row["wrong"],
            labels=None if labels is None else _parse_labels(labels, where, row["clean"]),
            columns={k: v for k, v in row.items()
                     if k not in _KEYS and k != "labels" and isinstance(v, _SCALARS)},
        ))
        if limit is not None and len(pairs) >= limit:
            break
    if not pairs:
        raise InterpError(f"task file {path} holds no pairs")
    has_labels = {p.labels is not None for p in pairs}
    if len(has_labels) > 1:
        raise InterpError(f"{path.name}: some pairs have labels and some do not")
    name = path.stem if path.parent.name == "circuits" else str(path)
    return Task(name=name, source=str(path), sha256=sha256_file(path), pairs=pairs)


def name_order_twins(task: Task) -> Task:
    """IOI-style pairs with both name orders, grouped by an ``order`` column.

    Each pair of ``task`` is ABBA ("When Mary and John ..., John gave a drink to": the
    answer's name first); its BABA twin swaps the first mentions of the two names ("When
    John and Mary ..., John gave a drink to"), keeping the answer and wrong tokens. The
    role labels are dropped (their order differs between the two), so positions count
    from the end. A pair whose prompts do not hold "ANSWER and WRONG" is an error.
    """
    out: list[Pair] = []
    for n, p in enumerate(task.pairs):
        io, s = p.answer.strip(), p.wrong.strip()
        first, swapped = f"{io} and {s}", f"{s} and {io}"
        if first not in p.clean or first not in p.corrupted:
            raise InterpError(f"pair {n} of {task.name} is not ABBA: {first!r} is not in "
                              "both prompts")
        base = {**p.columns, "order": "ABBA"}
        out.append(Pair(p.clean, p.corrupted, p.answer, p.wrong, None, base))
        out.append(Pair(p.clean.replace(first, swapped, 1),
                        p.corrupted.replace(first, swapped, 1), p.answer, p.wrong, None,
                        {**p.columns, "order": "BABA"}))
    return Task(f"{task.name} (ABBA + BABA)", task.source, task.sha256, out)


@dataclass
class TokenizedTask:
    """A task as token ids, left-padded to one width so that every batch shares it.

    ``position_mask[i, p, t]`` says whether padded token ``t`` of pair ``i`` belongs to
    position ``p`` (a label); the final token (index ``width - 1``) is ``END``.
    """

    clean_ids: Int[Tensor, "pairs width"]
    corrupted_ids: Int[Tensor, "pairs width"]
    attention_mask: Bool[Tensor, "pairs width"]
    answer: Int[Tensor, " pairs"]
    wrong: Int[Tensor, " pairs"]
    positions: list[str]
    position_mask: Bool[Tensor, "pairs positions width"]
    lengths: list[int]

    def __len__(self) -> int:
        return int(self.clean_ids.shape[0])

    def runs(
        self, direction: str
    ) -> tuple[Int[Tensor, "pairs width"], Int[Tensor, "pairs width"]]:
        """``(base, source)`` ids: denoising runs the corrupted prompts with clean values
        patched in, noising the clean prompts with corrupted ones."""
        if direction == "denoise":
            return self.corrupted_ids, self.clean_ids
        return self.clean_ids, self.corrupted_ids

    def subset(self, idx: list[int]) -> TokenizedTask:
        """The pairs at ``idx``, keeping the common width."""
        t = torch.as_tensor(idx, dtype=torch.long)
        return TokenizedTask(
            self.clean_ids[t], self.corrupted_ids[t], self.attention_mask[t],
            self.answer[t], self.wrong[t], list(self.positions), self.position_mask[t],
            [self.lengths[i] for i in idx],
        )


def _token_labels(
    offsets: list[tuple[int, int]], labels: list[tuple[str, int, int]]
) -> list[str]:
    """The label of each token: the span holding the token's last character."""
    out = []
    for start, end in offsets:
        char = max(start, end - 1)
        name = next((lab for lab, s, e in labels if s <= char < e), labels[-1][0])
        out.append(name)
    return out


def tokenize_task(model: Model, task: Task) -> TokenizedTask:
    """Token ids, answer/wrong ids and role positions of every pair (checked)."""
    tok = model.tokenizer
    rows_clean: list[list[int]] = []
    rows_corr: list[list[int]] = []
    token_labels: list[list[str]] = []
    answers, wrongs = [], []
    for n, pair in enumerate(task.pairs):
        where = f"pair {n}"
        enc = tok(pair.clean, add_special_tokens=False, return_offsets_mapping=True)
        prefix = model.special_prefix  # a BOS counts as the first label's
        clean = prefix + list(enc["input_ids"])
        offsets = [(0, 0)] * len(prefix) + [tuple(o) for o in enc["offset_mapping"]]
        corr = model.encode(pair.corrupted)
        if len(clean) != len(corr):
            raise InterpError(
                f"{where}: clean and corrupted prompts tokenize to {len(clean)} and "
                f"{len(corr)} tokens; patching needs equal lengths (make the swapped words "
                "the same number of tokens)"
            )
        if clean == corr:
            raise InterpError(f"{where}: clean and corrupted prompts are the same tokens")
        answers.append(model.single_token(pair.answer, f"{where}: answer"))
        wrongs.append(model.single_token(pair.wrong, f"{where}: wrong"))
        if pair.labels is not None:
            labs = _token_labels(offsets, pair.labels)
            labs[-1] = END
        else:
            labs = []
        rows_clean.append(clean)
        rows_corr.append(corr)
        token_labels.append(labs)

    if task.pairs[0].labels is not None:
        order: list[str] = []
        for lab in token_labels[0]:
            if lab not in order:
                order.append(lab)
        for n, labs in enumerate(token_labels):
            seq = []
            for lab in labs:
                if lab not in seq:
                    seq.append(lab)
            if seq != order:
                raise InterpError(
                    f"pair {n}: its tokens' labels run {seq}, pair 0's run {order}; every pair "
                    "of a task needs the same label sequence"
                )
        positions = order
    else:
        shortest = min(len(r) for r in rows_clean)
        positions = [END if k == 0 else f"END-{k}" for k in reversed(range(shortest))]

    width = max(len(r) for r in rows_clean)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    n = len(rows_clean)
    clean_ids = torch.full((n, width), pad, dtype=torch.long)
    corr_ids = torch.full((n, width), pad, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.bool)
    pos_mask = torch.zeros((n, len(positions), width), dtype=torch.bool)
    for i, (c, k) in enumerate(zip(rows_clean, rows_corr, strict=True)):
        off = width - len(c)
        clean_ids[i, off:] = torch.tensor(c)
        corr_ids[i, off:] = torch.tensor(k)
        mask[i, off:] = True
        if token_labels[i]:
            for j, lab in enumerate(token_labels[i]):
                pos_mask[i, positions.index(lab), off + j] = True
        else:
            for p in range(len(positions)):
                pos_mask[i, p, width - len(positions) + p] = True
    return TokenizedTask(
        clean_ids=clean_ids.to(model.device), corrupted_ids=corr_ids.to(model.device),
        attention_mask=mask.to(model.device),
        answer=torch.tensor(answers, device=model.device),
        wrong=torch.tensor(wrongs, device=model.device),
        positions=positions, position_mask=pos_mask.to(model.device),
        lengths=[len(r) for r in rows_clean],
    )
