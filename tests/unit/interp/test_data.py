"""interp.data.readers: prompt-set readers and their one-line errors."""

from __future__ import annotations

import re

import pytest

from interp.data.readers import read_prompts, read_records
from interp.errors import InterpError


def test_formats(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n\n{"text": "two", "label": 1}\n')
    (tmp_path / "a.json").write_text('[{"text": "one"}, {"text": "two"}]')
    (tmp_path / "a.csv").write_text('text,label\n"one, with comma",0\ntwo,1\n')
    (tmp_path / "a.tsv").write_text("text\tlabel\none\t0\n")
    (tmp_path / "a.txt").write_text("one\n\ntwo\n")
    assert read_prompts(tmp_path / "a.jsonl") == ["one", "two"]
    assert read_prompts(tmp_path / "a.json") == ["one", "two"]
    assert read_prompts(tmp_path / "a.csv") == ["one, with comma", "two"]
    assert read_records(tmp_path / "a.tsv") == [{"text": "one", "label": "0"}]
    assert read_prompts(tmp_path / "a.txt") == ["one", "two"]


def test_jsonl_lines_end_at_newline_only(tmp_path):
    """JSON allows U+2028, U+2029 and U+0085 raw inside a string (``json.dumps(...,
    ensure_ascii=False)`` writes them): a JSONL line is not cut there; CRLF files read."""
    import json

    texts = ["a\u2028b", "c\u2029d", "e\x85f"]
    (tmp_path / "u.jsonl").write_text(
        "\r\n".join(json.dumps({"text": t}, ensure_ascii=False) for t in texts) + "\r\n",
        newline="")
    assert read_prompts(tmp_path / "u.jsonl") == texts


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("bad.jsonl", '{"text": "ok"}\n{"text": broken\n', "line 2 is not valid JSON"),
        ("list.jsonl", '{"text": "ok"}\n[1, 2]\n', "line 2 is not a JSON object"),
        ("bad.csv", "text,label\na,1\nb,2,3\n", "line 3 has a different number of fields"),
        ("empty.jsonl", "\n\n", "no records"),
        ("x.parquet", "", "unknown file type"),
        ("nocol.jsonl", '{"prompt": "x"}\n', "has no column 'text' (columns: prompt)"),
        ("blank.jsonl", '{"text": "  "}\n', "record 1 has an empty 'text'"),
    ],
)
def test_errors_name_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InterpError, match=re.escape(message)):
        read_prompts(path)


def test_missing_and_non_utf8(tmp_path):
    with pytest.raises(InterpError, match="no such file"):
        read_prompts(tmp_path / "nope.jsonl")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(InterpError, match="not UTF-8"):
        read_prompts(tmp_path / "latin.txt")
    with pytest.raises(InterpError, match="folder"):
        read_prompts(tmp_path)
