"""Read prompt sets: JSONL, JSON, CSV/TSV or plain text, with errors that name the line.

``read_prompts("prompts.jsonl", text_column="text")`` returns the text of every
record. Later features (probes, sycophancy) read labelled records with
:func:`read_records`. Shipped sets live in ``datasets/`` and are found with
:func:`interp.runs.paths.shipped_dataset`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.profiling.session import phased
from interp.schema.settings import Cli, Config, setting

SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".txt")


def open_text(path: Path) -> str:
    """The whole file as text (UTF-8, a byte-order mark dropped, newlines untouched); a missing
    path, a folder or non-UTF-8 bytes are an :class:`~interp.errors.InterpError`."""
    from interp.runs.paths import check_path_name

    check_path_name(path, "cannot read: file name")
    if not path.exists():
        raise InterpError(f"cannot read {path}: no such file")
    if path.is_dir():
        raise InterpError(f"cannot read {path}: it is a folder, not a file")
    try:
        # Bytes, not read_text: universal-newline translation would turn a "\r" inside a
        # quoted CSV field into "\n". A UTF-8 byte-order mark (Excel) is dropped.
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InterpError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InterpError(f"cannot read {path}: {exc.strerror or exc}") from None


def jsonl_objects(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-empty line of a JSONL file's ``text``.

    Lines end at a line feed (``\\n``) only, JSON Lines' separator: ``str.splitlines``
    would also cut at U+2028, U+2029 and U+0085, which JSON allows raw inside a string. A
    line that is not valid JSON, or not an object, is an
    :class:`~interp.errors.InterpError` naming ``path`` and the line.
    """
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{path}: line {n} is not valid JSON ({exc.msg})") from None
        if not isinstance(rec, dict):
            raise InterpError(f"{path}: line {n} is not a JSON object")
        yield n, rec


@phased("data")
def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All records of a JSONL / JSON (list of objects) / CSV / TSV file, as dicts.

    ``.txt`` files give one record ``{"text": line}`` per non-empty line. Malformed
    input raises :class:`InterpError` naming the file and line.
    """
    p = Path(path).expanduser()
    suffix = p.suffix.lower()
    if p.is_dir():
        raise InterpError(f"cannot read {p}: it is a folder, not a file")
    if suffix not in SUFFIXES:
        raise InterpError(
            f"cannot read {p}: unknown file type {suffix or '(none)'}; use "
            f"{', '.join(SUFFIXES)}"
        )
    text = open_text(p)
    records: list[dict[str, Any]] = []
    if suffix == ".jsonl":
        records = [rec for _, rec in jsonl_objects(p, text)]
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{p}: line {exc.lineno} is not valid JSON ({exc.msg})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InterpError(f"{p}: expected a JSON list of objects")
        records = data
    elif suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True,
                                delimiter="\t" if suffix == ".tsv" else ",")
        try:
            for row in reader:
                n = reader.line_num
                if None in row or any(v is None for v in row.values()):
                    raise InterpError(
                        f"{p}: line {n} has a different number of fields than the header"
                    )
                records.append(dict(row))
        except csv.Error as exc:
            raise InterpError(
                f"{p}: line {reader.line_num + 1} is not valid CSV ({exc})"
            ) from None
    else:
        records = [{"text": line} for line in text.splitlines() if line.strip()]
    if not records:
        raise InterpError(f"{p}: no records (empty dataset)")
    return records


@dataclass(frozen=True)
class PromptFile(Config):
    """A file of prompts and the column holding the text (:func:`read_prompts`)."""

    file_: str | None = setting(None, cli=Cli(flag="--file", path="file"),
                                help="Read prompts from a JSONL/JSON/CSV/TSV/TXT file.")
    text_column: str = setting("text", help="Column holding the prompt text in --file.")


def read_prompts(path: str | os.PathLike[str], text_column: str = "text") -> list[str]:
    """The ``text_column`` of every record in ``path`` (see :func:`read_records`)."""
    records = read_records(path)
    out: list[str] = []
    for n, rec in enumerate(records, start=1):
        if text_column not in rec:
            cols = ", ".join(sorted(rec)) or "none"
            raise InterpError(
                f"{path}: record {n} has no column {text_column!r} (columns: {cols})"
            )
        value = rec[text_column]
        if not isinstance(value, str) or not value.strip():
            raise InterpError(f"{path}: record {n} has an empty {text_column!r}")
        out.append(value)
    return out
