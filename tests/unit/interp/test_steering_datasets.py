"""The shipped steering contrast sets (datasets/steering/*.jsonl) and their generator."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from interp.runs.paths import datasets_dir
from tests.support import ROOT

SCRIPT = ROOT / "scripts" / "make_steering_sets.py"
PAIR_FILES = ["sentiment.jsonl", "formality.jsonl"]
FILES = [*PAIR_FILES, "neutral_prompts.jsonl"]
KEY_ORDER = {
    "sentiment.jsonl": ["positive", "negative", "topic"],
    "formality.jsonl": ["positive", "negative", "topic"],
    "neutral_prompts.jsonl": ["prompt"],
}
MIN_RECORDS = {"sentiment.jsonl": 60, "formality.jsonl": 60, "neutral_prompts.jsonl": 30}

POSITIVE_WORDS = {
    "love", "loved", "happy", "great", "good", "wonderful", "amazing", "excellent",
    "fantastic", "beautiful", "lovely", "nice", "enjoy", "enjoyed", "delighted", "pleased",
    "glad", "perfect", "best", "brilliant", "cheerful", "fun", "pleasant", "excited", "joy",
}
NEGATIVE_WORDS = {
    "hate", "hated", "sad", "terrible", "bad", "awful", "horrible", "dreadful", "miserable",
    "angry", "upset", "annoyed", "boring", "disappointed", "disappointing", "worst", "ugly",
    "unpleasant", "gloomy", "depressing", "frustrating", "furious", "worried", "anxious",
}
# Register markers, formal and casual, that a neutral prompt must not carry.
FORMALITY_MARKERS = {
    "kindly", "shall", "hereby", "sir", "madam", "cordially", "regret", "obliged", "dear",
    "please", "gonna", "wanna", "gotta", "u", "ur", "lol", "omg", "hey", "yo", "pls", "thx",
    "kinda", "nah", "yeah", "dude",
}
FIRST_PERSON = re.compile(r"\b(I|me|my|we|our|us)\b", re.IGNORECASE)
CONTRACTION = re.compile(r"n't\b|'(re|m|ll|ve|d)\b|\b(it|that|there|what|let|he|she)'s\b",
                         re.IGNORECASE)


def _load(name: str) -> list[dict]:
    path = datasets_dir() / "steering" / name
    assert path.is_file(), f"{path} missing: run scripts/make_steering_sets.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _overlap(a: str, b: str) -> float:
    """Shared words (as multisets) over the longer side's word count."""
    wa, wb = Counter(_words(a)), Counter(_words(b))
    return sum((wa & wb).values()) / max(sum(wa.values()), sum(wb.values()))


def _differing(a: str, b: str) -> set[str]:
    """Words of ``a`` that ``b`` lacks (multiset difference)."""
    return set(Counter(_words(a)) - Counter(_words(b)))


@pytest.mark.parametrize("name", FILES)
def test_schema_counts_no_duplicates(name):
    records = _load(name)
    assert len(records) >= MIN_RECORDS[name]
    texts = []
    for r in records:
        assert list(r) == KEY_ORDER[name]
        for value in r.values():
            assert isinstance(value, str) and value.strip() == value != ""
            assert value.isascii()
        texts += [v for k, v in r.items() if k != "topic"]
    assert len(set(texts)) == len(texts), "duplicate texts"
    assert len({t.lower() for t in texts}) == len(texts), "duplicates up to case"


@pytest.mark.parametrize("name", PAIR_FILES)
def test_pairs_differ_and_topics_vary(name):
    records = _load(name)
    for r in records:
        assert r["positive"] != r["negative"]
        assert r["positive"].lower() != r["negative"].lower()
    topics = Counter(r["topic"] for r in records)
    assert len(topics) >= 10
    assert max(topics.values()) <= len(records) // 4, topics


def test_sentiment_sides_differ_only_in_sentiment():
    for r in _load("sentiment.jsonl"):
        pos, neg = r["positive"], r["negative"]
        assert _overlap(pos, neg) >= 0.5, r
        # the same ending, so the last token (where activations are read) is shared
        assert _words(pos)[-1] == _words(neg)[-1] and pos[-1] == neg[-1], r
        assert pos[0].isupper() and pos[-1] == "."
        assert FIRST_PERSON.search(pos) and FIRST_PERSON.search(neg), r
        # the words that differ carry the sentiment, never the opposite one
        pos_only, neg_only = _differing(pos, neg), _differing(neg, pos)
        assert pos_only and neg_only, r
        assert not pos_only & NEGATIVE_WORDS and not neg_only & POSITIVE_WORDS, r
    # the sentiment lexicon is actually used on both sides
    records = _load("sentiment.jsonl")
    assert sum(bool(_differing(r["positive"], r["negative"]) & POSITIVE_WORDS)
               for r in records) >= 30
    assert sum(bool(_differing(r["negative"], r["positive"]) & NEGATIVE_WORDS)
               for r in records) >= 30


def test_formality_registers():
    for r in _load("formality.jsonl"):
        formal, casual = r["positive"], r["negative"]
        assert formal[0].isupper() and formal[-1] in ".?", formal
        assert not CONTRACTION.search(formal), formal
        assert not set(_words(formal)) & {"u", "ur", "gonna", "wanna", "gotta", "lol", "pls"}
        assert casual[0].islower() or casual[0].isdigit(), casual
        assert not set(_words(casual)) & {"kindly", "shall", "cordially", "obliged"}, casual


def test_neutral_prompts_are_neutral():
    for r in _load("neutral_prompts.jsonl"):
        prompt = r["prompt"]
        assert prompt[0].isupper() and prompt[-1] not in ".!?", prompt
        words = set(_words(prompt))
        assert not words & (POSITIVE_WORDS | NEGATIVE_WORDS), prompt
        assert not words & FORMALITY_MARKERS, prompt
        assert "!" not in prompt and "'" not in prompt, prompt


def test_word_lists_size():
    assert len(POSITIVE_WORDS | NEGATIVE_WORDS) >= 40
    assert not POSITIVE_WORDS & NEGATIVE_WORDS


def test_generator_reproduces_shipped_files(tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in FILES:
        shipped = (datasets_dir() / "steering" / name).read_bytes()
        assert (tmp_path / name).read_bytes() == shipped, f"{name} differs from generator"
