"""The shipped circuit tasks (datasets/circuits/*.jsonl) and their generator."""

from __future__ import annotations

import importlib.util
import json

import pytest

from interp.runs.paths import datasets_dir
from tests.support import ROOT

SCRIPT = ROOT / "scripts" / "make_circuit_tasks.py"
KEYS = ["clean", "corrupted", "answer", "wrong", "labels", "template"]
LABELS = {
    "ioi": ["start", "IO", "and", "S1", "S1+1", "S2", "verb", "END"],
    "capitals": ["start", "country", "rest", "END"],
    "pronoun": ["start", "name", "rest", "END"],
}
SWAPPED = {"ioi": "S2", "capitals": "country", "pronoun": "name"}
ROLES = {"ioi": ["IO", "S1", "S2"], "capitals": ["country"], "pronoun": ["name"]}
TASKS = list(LABELS)


def _gen():
    spec = importlib.util.spec_from_file_location("make_circuit_tasks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(name: str) -> list[dict]:
    path = datasets_dir() / "circuits" / f"{name}.jsonl"
    assert path.is_file(), f"{path} missing: run scripts/make_circuit_tasks.py"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _summary() -> dict:
    return json.loads((datasets_dir() / "circuits" / "summary.json").read_text())


def _spans(row: dict) -> dict[str, str]:
    return {label: row["clean"][s:e] for label, s, e in row["labels"]}


@pytest.mark.parametrize("name", TASKS)
def test_schema_labels_and_corruption(name):
    gen = _gen()
    rows = _load(name)
    assert 100 <= len(rows) <= 200
    assert len({r["clean"] for r in rows}) == len(rows), "duplicate clean prompts"
    n_templates = len(gen.TASKS[name].templates)
    for r in rows:
        assert list(r) == KEYS
        clean, corrupted = r["clean"], r["corrupted"]
        assert isinstance(clean, str) and isinstance(corrupted, str) and clean != corrupted
        assert type(r["template"]) is int and 0 <= r["template"] < n_templates
        assert r["answer"] != r["wrong"]
        assert r["answer"].startswith(" ") and r["wrong"].startswith(" ")
        # spans: contiguous, in order, covering the clean prompt; the task's label sequence
        assert [lab for lab, _, _ in r["labels"]] == LABELS[name]
        pos = 0
        for _, s, e in r["labels"]:
            assert s == pos < e
            pos = e
        assert pos == len(clean)
        spans = _spans(r)
        for role in ROLES[name] + ["END"]:  # one word with its leading space
            assert spans[role].startswith(" ") and " " not in spans[role][1:], spans[role]
        assert clean.endswith(spans["END"])
        # the corrupted prompt differs from the clean one only inside the swapped span
        s, e = next((s, e) for lab, s, e in r["labels"] if lab == SWAPPED[name])
        tail = len(clean) - e
        assert corrupted[:s] == clean[:s] and corrupted[len(corrupted) - tail:] == clean[e:]
        assert corrupted[s:len(corrupted) - tail] != spans[SWAPPED[name]]


def test_ioi_names():
    for r in _load("ioi"):
        spans = _spans(r)
        assert spans["S1"] == spans["S2"] == r["wrong"] != spans["IO"] == r["answer"]
        s = next(s for lab, s, _ in r["labels"] if lab == "S2")
        assert r["corrupted"][s:].startswith(spans["IO"] + spans["verb"])


def test_capitals_answers():
    capital = dict(_gen().CAPITALS)
    for r in _load("capitals"):
        s, e = next((s, e) for lab, s, e in r["labels"] if lab == "country")
        country = r["clean"][s:e].strip()
        other = r["corrupted"][s:len(r["corrupted"]) - (len(r["clean"]) - e)].strip()
        assert r["answer"] == " " + capital[country]
        assert r["wrong"] == " " + capital[other]


def test_pronoun_genders():
    gen = _gen()
    rows = _load("pronoun")
    for r in rows:
        s, e = next((s, e) for lab, s, e in r["labels"] if lab == "name")
        name = r["clean"][s:e].strip()
        other = r["corrupted"][s:len(r["corrupted"]) - (len(r["clean"]) - e)].strip()
        assert (name in gen.FEMALE) != (other in gen.FEMALE)
        assert (name in gen.MALE) != (other in gen.MALE)
        assert r["answer"] == (" she" if name in gen.FEMALE else " he")
        assert r["wrong"] == (" he" if name in gen.FEMALE else " she")
    shes = sum(r["answer"] == " she" for r in rows)
    assert abs(2 * shes - len(rows)) <= len(rows) // 5  # near balance


def test_rows_are_the_kept_candidates_in_order():
    """The candidate list needs no model; the shipped rows are its kept prefix."""
    gen = _gen()
    summary = _summary()
    assert set(summary) == set(TASKS)
    for name in TASKS:
        rows, s = _load(name), summary[name]
        assert s["kept"] == len(rows) and s["candidates_tried"] >= len(rows)
        assert s["fraction_kept"] == round(len(rows) / s["candidates_tried"], 4)
        assert s["threshold"] == 1.0 and s["model"] == "smollm2-135m-instruct"
        assert s["mean_clean_ld"] > 1.0 and s["labels"] == LABELS[name]
        cands = gen.candidates(name, s["candidates_tried"])
        assert cands == gen.candidates(name, s["candidates_tried"])  # deterministic
        it = iter(cands)
        assert all(any(row == c for c in it) for row in rows), f"{name}: not a subsequence"
        assert len({c["clean"] for c in gen.candidates(name)}) == len(gen.candidates(name))


def test_summary_file_format():
    text = (datasets_dir() / "circuits" / "summary.json").read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=1) + "\n"
