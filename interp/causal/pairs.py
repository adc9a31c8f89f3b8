"""Counterfactual pairs from a labelled probe set (``datasets/probes/sentiment.jsonl``).

A probe set's rows ``{"text", "label", "group", "target_tokens"}`` come as minimal pairs:
two texts that differ in one word (the group: "wonderful" / "terrible") with opposite
labels. :func:`pairs_from_probe_set` pairs each row with the next when they do, and
writes the pair counterfactually: the label-0 text is the base, the label-1 text the
source, and the labels are the texts' ``target_tokens`` (" bad" / " good"). The two
deciding words are the pair's ``template`` ("terrible./wonderful."), so the held-out
split keeps whole word pairs apart, as the probe tool splits by the deciding word.
Pairs whose two texts tokenize to different lengths (or whose target tokens are not one
token each) are left out, since an interchange swaps position by position; so are the
pairs the model does not get right (``solved``): the source must prefer its label and the
base its own (logit(good) − logit(bad) above 0 on the source, below 0 on the base),
or an interchange's success would say nothing about the swap.
"""

from __future__ import annotations

from pathlib import Path

from interp.circuits.tasks import Pair, Task
from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import sha256_file


def _one_word_apart(a: str, b: str) -> int | None:
    """The index of the one whitespace-separated word where ``a`` and ``b`` differ."""
    wa, wb = a.split(), b.split()
    if len(wa) != len(wb):
        return None
    diff = [i for i, (x, y) in enumerate(zip(wa, wb, strict=True)) if x != y]
    return diff[0] if len(diff) == 1 else None


def pairs_from_probe_set(path: str | Path, model: Model, *, solved: bool = True) -> Task:
    """The probe set's minimal pairs as a counterfactual task (see the module docstring);
    a file with no usable pair is an error."""
    from interp.data.readers import jsonl_objects, open_text

    path = Path(path)
    rows = [row for _, row in jsonl_objects(path, open_text(path))]
    pairs: list[Pair] = []
    i = 0
    while i + 1 < len(rows):
        a, b = rows[i], rows[i + 1]
        at = _one_word_apart(str(a.get("text", "")), str(b.get("text", "")))
        targets = a.get("target_tokens") or {}
        if at is None or {a.get("label"), b.get("label")} != {0, 1} or \
                not isinstance(targets, dict) or not {"0", "1"} <= set(targets):
            i += 1
            continue
        base, source = (a, b) if a["label"] == 0 else (b, a)
        template = f"{str(base['text']).split()[at]}/{str(source['text']).split()[at]}"
        ok = (len(model.encode(base["text"])) == len(model.encode(source["text"]))
              and all(len(model.encode_continuation(targets[k])) == 1 for k in ("0", "1")))
        if ok:
            pairs.append(Pair(clean=source["text"], corrupted=base["text"],
                              answer=targets["1"], wrong=targets["0"],
                              columns={"template": template}))
        i += 2
    task = Task(f"{path.stem} pairs", str(path), sha256_file(path), pairs)
    if pairs and solved:
        from interp.circuits.patching import pair_lds
        from interp.circuits.tasks import tokenize_task

        clean, corr = pair_lds(model, tokenize_task(model, task), 32)
        task.pairs = [p for p, c, k in zip(pairs, clean.tolist(), corr.tolist(), strict=True)
                      if c > 0 > k]
    if not task.pairs:
        raise InterpError(f"{path}: no minimal pairs (two texts one word apart, labels 0 "
                          "and 1, target tokens for both, equal token lengths"
                          + (", solved by the model)" if solved else ")"))
    return task


def is_probe_set(task: str) -> bool:
    """``task`` names a JSONL file whose first row is a probe set's (``text`` and
    ``label``, no clean/corrupted or base/source pair)."""
    import json

    path = Path(task)
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), "")
        row = json.loads(first) if first else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return (isinstance(row, dict) and "text" in row and "label" in row
            and not {"clean", "base"} & set(row))


def load_counterfactual_task(task: str, model: Model, limit: int | None = None) -> Task:
    """A task for an interchange: a shipped task or a task file
    (:func:`~interp.circuits.tasks.load_task`), or a probe set's minimal pairs
    (:func:`pairs_from_probe_set`), the first ``limit`` pairs."""
    from interp.circuits.tasks import load_task

    if not is_probe_set(task):
        return load_task(task, limit)
    out = pairs_from_probe_set(task, model)
    if limit is not None:
        out.pairs = out.pairs[:limit]
    return out
