"""The shipped circuit tasks on the real tokenizer, and their generator (which needs the
model)."""

from __future__ import annotations

import torch

from interp.runs.paths import datasets_dir
from tests.unit.interp.test_circuit_datasets import (
    ROLES,
    SWAPPED,
    TASKS,
    _gen,
    _load,
)


def test_tokenization(model):
    tok = model.tokenizer

    def enc(text):
        e = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return e["input_ids"], e["offset_mapping"]

    for name in TASKS:
        for r in _load(name):
            for t in (r["answer"], r["wrong"]):
                assert len(enc(t)[0]) == 1, t
            ids, offsets = enc(r["clean"])
            ids_c, _ = enc(r["corrupted"])
            assert len(ids) == len(ids_c), r
            per_span = {lab: [i for i, (a, b) in enumerate(offsets) if s <= a and b <= e]
                        for lab, s, e in r["labels"]}
            assert sum(map(len, per_span.values())) == len(ids), "a token crosses a span"
            assert all(per_span.values()), per_span
            for role in ROLES[name] + ["END"]:
                assert len(per_span[role]) == 1, (role, r["clean"])
            assert per_span["END"] == [len(ids) - 1]
            differ = [i for i, (x, y) in enumerate(zip(ids, ids_c, strict=True)) if x != y]
            assert differ == per_span[SWAPPED[name]], r


def test_generator_reproduces_shipped_files(model, tmp_path):
    # One thread: ~50 s on two cores, busy or not; two threads on busy cores take minutes.
    # The files do not depend on the thread count.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _gen().generate(tmp_path, model)
    finally:
        torch.set_num_threads(threads)
    for f in [f"{name}.jsonl" for name in TASKS] + ["summary.json"]:
        shipped = (datasets_dir() / "circuits" / f).read_bytes()
        assert (tmp_path / f).read_bytes() == shipped, f"{f} differs from the generator"

