"""The shipped probe datasets (datasets/probes/*.jsonl) and their generator."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from interp.runs.paths import datasets_dir
from tests.support import ROOT

SCRIPT = ROOT / "scripts" / "make_probe_sets.py"
FILES = ["capitals_truefalse.jsonl", "sentiment.jsonl", "tense.jsonl"]
KEY_ORDER = {
    "capitals_truefalse.jsonl": ["text", "label", "group", "country", "answer"],
    "sentiment.jsonl": ["text", "label", "group", "target_tokens"],
    "tense.jsonl": ["text", "label", "group"],
}


def _gen():
    spec = importlib.util.spec_from_file_location("make_probe_sets", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(name: str) -> list[dict]:
    path = datasets_dir() / "probes" / name
    assert path.is_file(), f"{path} missing: run scripts/make_probe_sets.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _by_label(records: list[dict]) -> tuple[list[dict], list[dict]]:
    return ([r for r in records if r["label"] == 0], [r for r in records if r["label"] == 1])


@pytest.mark.parametrize("name", FILES)
def test_schema_size_balance_groups(name):
    records = _load(name)
    assert len(records) >= 1000
    for r in records:
        assert list(r) == KEY_ORDER[name]
        assert isinstance(r["text"], str) and r["text"].strip() == r["text"] != ""
        assert r["label"] in (0, 1) and type(r["label"]) is int
        assert isinstance(r["group"], str) and r["group"]
        if "target_tokens" in r:
            assert set(r["target_tokens"]) == {"0", "1"}
            assert all(isinstance(v, str) for v in r["target_tokens"].values())
    neg, pos = _by_label(records)
    assert len(neg) == len(pos)
    texts = [r["text"] for r in records]
    assert len(set(texts)) == len(texts), "duplicate texts"
    assert len({r["group"] for r in records}) >= 40


def test_capitals_true_false_in_trios():
    """Each statement names its country's capital (true) or the capital of another
    country of its trio (false); every city is named as often true as false, and only
    inside its own group, so a group split cannot put a city on both sides."""
    gen = _gen()
    truth = {country: city for country, city, _ in gen.CAPITALS}
    cities = set(truth.values())
    assert len(truth) >= 150 and len(cities) == len(truth)
    records = _load("capitals_truefalse.jsonl")
    per_country: dict[str, Counter] = defaultdict(Counter)
    members: dict[str, set[str]] = defaultdict(set)
    for r in records:
        assert r["country"] in truth and r["answer"] in cities
        assert r["answer"] in r["text"]
        assert r["country"].lower() in r["text"].lower()
        assert (r["answer"] == truth[r["country"]]) == (r["label"] == 1)
        per_country[r["country"]][r["label"]] += 1
        members[r["group"]].add(r["country"])
    assert set(per_country) == set(truth)
    for counts in per_country.values():  # every country: as many true as false statements
        assert counts[0] == counts[1] > 0
    sizes = Counter(len(m) for m in members.values())
    assert set(sizes) <= {3, 4, 5} and sizes[3] >= 45, sizes
    assert sum(len(m) for m in members.values()) == len(truth)  # groups partition countries
    group_cities = {g: {truth[c] for c in m} for g, m in members.items()}
    for r in records:  # a false answer is another capital of the same group
        assert r["answer"] in group_cities[r["group"]]
    neg, pos = _by_label(records)
    # every city is named as often in false statements as in true ones
    assert Counter(r["answer"] for r in neg) == Counter(r["answer"] for r in pos)


def test_sentiment_adjective_decides():
    gen = _gen()
    records = _load("sentiment.jsonl")
    assert len(gen.POSITIVE) >= 40 and len(gen.NEGATIVE) >= 40
    assert not set(gen.POSITIVE) & set(gen.NEGATIVE)
    labels_of: dict[str, set[int]] = defaultdict(set)
    for r in records:
        labels_of[r["group"]].add(r["label"])
        assert r["target_tokens"] == {"0": " bad", "1": " good"}
        assert re.search(rf"\b{re.escape(r['group'])}\.", r["text"])
        assert r["text"].endswith(" it was")
        expected = gen.POSITIVE if r["label"] == 1 else gen.NEGATIVE
        assert r["group"] in expected
    assert all(len(labels) == 1 for labels in labels_of.values()), "adjective with both labels"
    assert len([g for g, s in labels_of.items() if s == {1}]) >= 40
    assert len([g for g, s in labels_of.items() if s == {0}]) >= 40
    # with the adjective masked, both labels are the same multiset of texts: nouns,
    # templates and cues carry no label information
    neg, pos = _by_label(records)

    def masked(rs):
        return sorted(r["text"].replace(r["group"], "<ADJ>", 1) for r in rs)
    assert masked(neg) == masked(pos)


def test_tense_verb_decides():
    gen = _gen()
    forms = {lemma: (present, past) for lemma, present, past, _ in gen.VERBS}
    assert len(forms) >= 60
    records = _load("tense.jsonl")
    time_words = re.compile(
        r"\b(yesterday|today|tomorrow|now|tonight|ago|last|next|every|usually|often|daily)\b",
        re.IGNORECASE,
    )
    frames: dict[str, dict[int, list[str]]] = defaultdict(lambda: {0: [], 1: []})
    for r in records:
        present, past = forms[r["group"]]
        form = past if r["label"] == 1 else present
        assert re.search(rf"\b{re.escape(form)}\b", r["text"])
        assert r["text"].endswith(".")
        assert not time_words.search(r["text"]), r["text"]
        frames[r["group"]][r["label"]].append(
            re.sub(rf"\b{re.escape(form)}\b", "<V>", r["text"], count=1))
    assert set(frames) == set(forms)
    for by_label in frames.values():  # each verb: the same sentences in both tenses
        assert by_label[0] and sorted(by_label[0]) == sorted(by_label[1])


def test_generator_reproduces_shipped_files(tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in FILES:
        shipped = (datasets_dir() / "probes" / name).read_bytes()
        assert (tmp_path / name).read_bytes() == shipped, f"{name} differs from generator"
