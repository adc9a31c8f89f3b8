"""Write the clean/corrupted prompt pairs for activation patching under datasets/circuits/.

Three tasks for the embedded SmolLM2-135M-Instruct, written by the project (no
third-party text), one JSON object per line with keys in a fixed order:
``{"clean", "corrupted", "answer", "wrong", "labels", "template"}``.

* ``ioi.jsonl``: indirect object identification. "When Mary and John went to the
  store, John gave a drink to" -> " Mary" (wrong: " John"). The corrupted prompt puts
  the IO name in place of the second subject occurrence (S2): "..., Mary gave a drink
  to", which makes " John" the answer. Only the ABB order (IO first): the label
  sequence must be the same on every row, and BAB would swap the IO and S1 slots.
* ``capitals.jsonl``: "The capital of France is the city of" -> " Paris"; the corrupted
  prompt names another country, and ``wrong`` is that country's capital.
* ``pronoun.jsonl``: gendered pronoun. "Yesterday, Mary went to the shop because" ->
  " she" (wrong: " he"); the corrupted prompt has a name of the other gender.

``labels`` are ``[label, char_start, char_end]`` spans over the clean prompt: contiguous,
covering it, a word's leading space inside the word's span, the same label sequence on
every row of a task, and ``END`` last, covering the final word (one token). Role words
(IO, S1, S2, country, name) and the answers are single tokens with a leading space, and
clean and corrupted tokenize to the same number of tokens, differing only inside the
one span that is swapped (S2, country, name).

Candidates are every clean prompt of a task (template and names, each once, with the
corrupted name or country drawn at random where there is a choice), shuffled by a
seeded ``random.Random`` and cut to ``MAX_CANDIDATES``. In that order, a pair is kept
when the model solves it: clean logit difference ``logit[answer] - logit[wrong]`` at
the last position above ``THRESHOLD`` nats (float32, CPU, batches of ``BATCH``), until
``MAX_KEPT`` are kept. ``summary.json`` gives, per task, candidates tried, kept, the
fraction kept and the mean clean and corrupted logit differences of the kept pairs.

Deterministic: re-running gives byte-identical files (on the same machine; a pair
within ~1e-5 of the threshold could flip elsewhere).

    python scripts/make_circuit_tasks.py [--out DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "datasets" / "circuits"
SEED = 20240617
THRESHOLD = 1.0
MAX_KEPT = 200
MAX_CANDIDATES = 1000
BATCH = 32
KEYS = ["clean", "corrupted", "answer", "wrong", "labels", "template"]

# --------------------------------------------------------------------------------------
# Names: each is one SmolLM2 token with a leading space (" Mary"); checked at run time.
# Names that are also common words (Rose, Grace, Mark, Bill, Frank, ...) and names used
# for both genders (Alex, Sam, Chris, Kim, ...) are left out.
# --------------------------------------------------------------------------------------
FEMALE = [
    "Mary", "Alice", "Sarah", "Emma", "Anna", "Kate", "Lisa", "Laura", "Lucy", "Jane",
    "Susan", "Rachel", "Amy", "Jessica", "Jennifer", "Helen", "Ruth", "Anne", "Sophie",
    "Olivia", "Linda", "Karen", "Emily", "Hannah", "Victoria", "Elizabeth", "Catherine",
    "Julia", "Amanda", "Nancy", "Betty", "Dorothy", "Margaret", "Patricia", "Barbara",
    "Carol", "Sandra", "Maria", "Julie", "Mia", "Ella", "Ann", "Eva", "Diana", "Claire",
    "Sophia", "Isabella", "Abigail", "Lauren", "Nicole", "Stephanie", "Rebecca", "Michelle",
    "Heather",
]
MALE = [
    "John", "Bob", "Tom", "James", "David", "Michael", "Paul", "Peter", "Jack", "Daniel",
    "Ben", "Dan", "Tim", "Ryan", "Adam", "Eric", "Kevin", "Robert", "William", "Richard",
    "Thomas", "George", "Henry", "Charles", "Edward", "Joe", "Steve", "Andrew", "Joseph",
    "Matt", "Mike", "Nick", "Jim", "Martin", "Luke", "Simon", "Brian", "Jason", "Justin",
    "Scott", "Josh", "Jacob", "Ethan", "Noah", "Harry", "Oliver", "Jeff", "Tony", "Greg",
    "Carl", "Fred", "Roger", "Larry", "Gary", "Jerry", "Sean", "Ian", "Alan", "Arthur",
    "Louis", "Albert", "Leo", "Hugo", "Jake", "Tyler",
]

# --------------------------------------------------------------------------------------
# Countries whose name and capital are each one token with a leading space. Capitals as
# in scripts/make_probe_sets.py (undisputed, not recently moved).
# --------------------------------------------------------------------------------------
CAPITALS: list[tuple[str, str]] = [
    ("Austria", "Vienna"), ("Belgium", "Brussels"), ("Bulgaria", "Sofia"),
    ("Denmark", "Copenhagen"), ("Finland", "Helsinki"), ("France", "Paris"),
    ("Germany", "Berlin"), ("Greece", "Athens"), ("Hungary", "Budapest"),
    ("Ireland", "Dublin"), ("Italy", "Rome"), ("Norway", "Oslo"), ("Poland", "Warsaw"),
    ("Portugal", "Lisbon"), ("Russia", "Moscow"), ("Spain", "Madrid"),
    ("Sweden", "Stockholm"), ("Switzerland", "Bern"), ("Afghanistan", "Kabul"),
    ("China", "Beijing"), ("Iran", "Tehran"), ("Iraq", "Baghdad"), ("Japan", "Tokyo"),
    ("Syria", "Damascus"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Tunisia", "Tunis"),
    ("Canada", "Ottawa"), ("Chile", "Santiago"), ("Cuba", "Havana"),
    ("Jamaica", "Kingston"), ("Peru", "Lima"), ("Australia", "Canberra"),
]

# --------------------------------------------------------------------------------------
# Templates. "{ROLE}" is a role word; the space before it belongs to the role's span.
# The text between roles gets the task's filler labels in order, and the last word of
# the template is END. Every template of a task has the same roles in the same order.
# --------------------------------------------------------------------------------------
IOI_TEMPLATES = [
    "When {IO} and {S1} went to the store, {S2} gave a drink to",
    "When {IO} and {S1} got a snack at the cafe, {S2} decided to give it to",
    "After {IO} and {S1} went to the park, {S2} gave a ball to",
    "Then, {IO} and {S1} had a long argument, and afterwards {S2} said to",
    "While {IO} and {S1} were working at the office, {S2} handed the report to",
    "After the lunch, {IO} and {S1} went to the garden. {S2} gave a flower to",
    "Yesterday {IO} and {S1} went to the school. {S2} sent a letter to",
    "As {IO} and {S1} were walking home, {S2} gave an apple to",
    "When {IO} and {S1} visited the library, {S2} showed a book to",
    "Then, {IO} and {S1} went to the station. {S2} gave a ticket to",
    "The friends {IO} and {S1} went to the beach. {S2} threw the ball to",
    "While {IO} and {S1} were cooking dinner, {S2} handed a knife to",
]
CAPITAL_TEMPLATES = [
    "The capital of {country} is the city of",
    "The capital city of {country} is called",
    "The government of {country} is based in the city of",
    "In {country}, the capital city is",
    "Question: What is the capital of {country}? Answer: The capital is",
    "The capital of {country}, as everyone knows, is",
    "The capital of {country} is a city called",
    "Which city is the capital of {country}? It is",
]
PRONOUN_TEMPLATES = [
    "Yesterday, {name} went to the shop because",
    "In the morning, {name} woke up early because",
    "After dinner, {name} said that",
    "At the party, {name} was tired, so",
    "Last week, {name} called the doctor because",
    "On Monday, {name} missed the bus, so",
    "At work, {name} finished the report early because",
    "Once upon a time, {name} lived in a small village where",
    "Later that day, {name} was very happy because",
    "On Sunday, {name} stayed at home because",
]
PRONOUNS = {"female": " she", "male": " he"}


#: (template index, clean role values, corrupted role values, answer, wrong)
Draw = tuple[int, dict[str, str], dict[str, str], str, str]


class Task(NamedTuple):
    """One task: its templates, label scheme and candidate generator."""

    name: str
    templates: list[str]
    roles: list[str]  # role placeholders, in template order
    fillers: list[str]  # labels of the text before, between and after the roles
    swapped: str  # the one role whose span differs in the corrupted prompt
    draw: Callable[[random.Random], Iterator[Draw]]

    @property
    def label_sequence(self) -> list[str]:
        seq = [self.fillers[0]]
        for role, filler in zip(self.roles, self.fillers[1:], strict=True):
            seq += [role, filler]
        return seq + ["END"]


def parse_template(template: str, task: Task) -> list[tuple[str, str]]:
    """``[(label, text)]`` of a template; a role's text is ``"{ROLE}"`` with its space."""
    pieces = re.split(r"( \{\w+\})", template)
    texts, roles = pieces[0::2], pieces[1::2]
    if [r.strip(" {}") for r in roles] != task.roles:
        raise SystemExit(f"{task.name}: template {template!r} has roles {roles}")
    last = texts[-1].rsplit(" ", 1)
    if len(last) != 2 or not last[0] or not last[1]:
        raise SystemExit(f"{task.name}: template {template!r} needs text before its last word")
    texts = texts[:-1] + [last[0]]
    parts: list[tuple[str, str]] = []
    for label, text in zip(task.fillers, texts, strict=True):
        if not text:
            raise SystemExit(f"{task.name}: template {template!r}: empty {label!r} span")
        parts.append((label, text))
        if roles:
            role = roles.pop(0)
            parts.append((role.strip(" {}"), role))
    return parts + [("END", " " + last[1])]


def render(parts: list[tuple[str, str]], values: dict[str, str]) -> tuple[str, list[list]]:
    """The prompt with role values filled in, and its ``[label, start, end]`` spans."""
    text, labels = "", []
    for label, piece in parts:
        if piece.startswith(" {"):
            piece = " " + values[label]
        labels.append([label, len(text), len(text) + len(piece)])
        text += piece
    return text, labels


# --------------------------------------------------------------------------------------
# Candidate draws: (template index, clean roles, corrupted roles, answer, wrong), one per
# clean prompt (template and names), shuffled by the task's seeded generator.
# --------------------------------------------------------------------------------------
def _draw_ioi(rng: random.Random) -> Iterator[Draw]:
    names = FEMALE + MALE
    keys = [(t, io, s) for t in range(len(IOI_TEMPLATES))
            for io in names for s in names if io != s]
    rng.shuffle(keys)
    return ((t, {"IO": io, "S1": s, "S2": s}, {"IO": io, "S1": s, "S2": io},
             " " + io, " " + s) for t, io, s in keys)


def _draw_capitals(rng: random.Random) -> Iterator[Draw]:
    # one candidate per clean prompt; the corrupted country is drawn among the others
    keys = [(t, a) for t in range(len(CAPITAL_TEMPLATES)) for a in range(len(CAPITALS))]
    rng.shuffle(keys)
    for t, a in keys:
        b = rng.choice([b for b in range(len(CAPITALS)) if b != a])
        yield (t, {"country": CAPITALS[a][0]}, {"country": CAPITALS[b][0]},
               " " + CAPITALS[a][1], " " + CAPITALS[b][1])


def _draw_pronoun(rng: random.Random) -> Iterator[Draw]:
    # one candidate per clean prompt, with a random name of the other gender; female
    # and male clean names alternate, so the kept pairs are close to balanced
    sides = []
    for own, other, gender, opposite in ((FEMALE, MALE, "female", "male"),
                                         (MALE, FEMALE, "male", "female")):
        keys = [(t, a) for t in range(len(PRONOUN_TEMPLATES)) for a in own]
        rng.shuffle(keys)
        sides.append([(t, {"name": a}, {"name": rng.choice(other)}, PRONOUNS[gender],
                       PRONOUNS[opposite]) for t, a in keys])
    for pair in zip(*sides, strict=False):  # as many of each gender
        yield from pair


TASKS = {
    "ioi": Task("ioi", IOI_TEMPLATES, ["IO", "S1", "S2"],
                ["start", "and", "S1+1", "verb"], "S2", _draw_ioi),
    "capitals": Task("capitals", CAPITAL_TEMPLATES, ["country"],
                     ["start", "rest"], "country", _draw_capitals),
    "pronoun": Task("pronoun", PRONOUN_TEMPLATES, ["name"],
                    ["start", "rest"], "name", _draw_pronoun),
}


def candidates(name: str, limit: int = MAX_CANDIDATES) -> list[dict[str, Any]]:
    """The first ``limit`` candidate rows of a task, in a fixed order (no model needed)."""
    task = TASKS[name]
    parsed = [parse_template(t, task) for t in task.templates]
    rng = random.Random(f"circuits/{name}/{SEED}")
    rows = []
    for t, clean_roles, corrupt_roles, answer, wrong in itertools.islice(task.draw(rng), limit):
        clean, labels = render(parsed[t], clean_roles)
        corrupted, _ = render(parsed[t], corrupt_roles)
        rows.append(dict(zip(KEYS, [clean, corrupted, answer, wrong, labels, t], strict=True)))
    return rows


def check_row(row: dict[str, Any], task: Task, tokenizer: Any) -> None:
    """Raise unless the row meets the format and tokenization rules of the module doc."""
    def encode(text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    clean, corrupted = row["clean"], row["corrupted"]
    labels = row["labels"]
    where = f"{task.name}: {clean!r}"
    if [lab for lab, _, _ in labels] != task.label_sequence:
        raise SystemExit(f"{where}: labels {labels}")
    ends = [0] + [e for _, _, e in labels]
    if [s for _, s, _ in labels] != ends[:-1] or ends[-1] != len(clean):
        raise SystemExit(f"{where}: spans not contiguous and covering: {labels}")
    span = {lab: (s, e) for lab, s, e in labels}
    s, e = span[task.swapped]
    tail = len(clean) - e
    if corrupted[:s] != clean[:s] or corrupted[len(corrupted) - tail:] != clean[e:]:
        raise SystemExit(f"{where}: corrupted {corrupted!r} differs outside {task.swapped}")
    for tok in (row["answer"], row["wrong"]):
        if len(encode(tok)[0]) != 1 or not tok.startswith(" "):
            raise SystemExit(f"{where}: answer/wrong {tok!r} is not one token")
    if row["answer"] == row["wrong"]:
        raise SystemExit(f"{where}: answer == wrong")
    ids, offsets = encode(clean)
    ids_c, _ = encode(corrupted)
    if len(ids) != len(ids_c):
        raise SystemExit(f"{where}: {len(ids)} tokens, corrupted {len(ids_c)}")
    count = dict.fromkeys(span, 0)
    swapped_pos = set()
    for i, (a, b) in enumerate(offsets):
        inside = [lab for lab, (ls, le) in span.items() if ls <= a and b <= le]
        if len(inside) != 1:
            raise SystemExit(f"{where}: token {i} {clean[a:b]!r} crosses a span boundary")
        count[inside[0]] += 1
        if inside[0] == task.swapped:
            swapped_pos.add(i)
    single = task.roles + ["END"]
    if any(count[lab] != 1 for lab in single) or min(count.values()) < 1:
        raise SystemExit(f"{where}: tokens per span {count}")
    if offsets[-1][1] != len(clean) or span["END"][0] != offsets[-1][0]:
        raise SystemExit(f"{where}: END is not the last token")
    diff = {i for i, (x, y) in enumerate(zip(ids, ids_c, strict=True)) if x != y}
    if not diff or not diff <= swapped_pos:
        raise SystemExit(f"{where}: corrupted differs at token positions {sorted(diff)}")


def logit_diffs(model: Any, prompts: list[str], answers: list[str],
                wrongs: list[str]) -> list[float]:
    """``logit[answer] - logit[wrong]`` at the last position, one batch."""
    import torch

    tid = {t: model.tokenizer(t, add_special_tokens=False)["input_ids"][0]
           for t in set(answers) | set(wrongs)}
    ids, mask = model.tokenize(prompts)
    last = model.logits(ids, mask)[:, -1].float()
    rows = torch.arange(len(prompts))
    a = torch.tensor([tid[t] for t in answers])
    w = torch.tensor([tid[t] for t in wrongs])
    return (last[rows, a] - last[rows, w]).tolist()


def select(name: str, model: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The kept rows of a task and its summary entry."""
    task = TASKS[name]
    cands = candidates(name)
    kept, clean_lds, corrupt_lds = [], [], []
    tried = 0
    while tried < len(cands) and len(kept) < MAX_KEPT:
        # no bigger a batch than the pairs still missing, so no forward pass is wasted
        batch = cands[tried:tried + min(BATCH, MAX_KEPT - len(kept))]
        for row in batch:
            check_row(row, task, model.tokenizer)
        answers, wrongs = [r["answer"] for r in batch], [r["wrong"] for r in batch]
        clean = logit_diffs(model, [r["clean"] for r in batch], answers, wrongs)
        corrupt = logit_diffs(model, [r["corrupted"] for r in batch], answers, wrongs)
        tried += len(batch)
        for row, ld_clean, ld_corrupt in zip(batch, clean, corrupt, strict=True):
            if ld_clean > THRESHOLD:
                kept.append(row)
                clean_lds.append(ld_clean)
                corrupt_lds.append(ld_corrupt)
    if not kept:
        raise SystemExit(f"{name}: no pair kept")
    summary = {
        "candidates_tried": tried,
        "kept": len(kept),
        "fraction_kept": round(len(kept) / tried, 4),
        "mean_clean_ld": round(sum(clean_lds) / len(kept), 3),
        "mean_corrupted_ld": round(sum(corrupt_lds) / len(kept), 3),
        "threshold": THRESHOLD,
        "model": model.model_id,
        "templates": len(task.templates),
        "labels": task.label_sequence,
    }
    return kept, summary


def write_jsonl(path: Path, records: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def generate(out: Path, model: Any) -> dict[str, dict[str, Any]]:
    """Write every task's kept rows and ``summary.json`` under ``out``; the summary."""
    for names in (FEMALE, MALE, [c for c, _ in CAPITALS], [k for _, k in CAPITALS]):
        for word in names:
            if len(model.tokenizer(" " + word, add_special_tokens=False)["input_ids"]) != 1:
                raise SystemExit(f"{word!r} is not one token with a leading space")
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name in TASKS:
        kept, summary[name] = select(name, model)
        write_jsonl(out / f"{name}.jsonl", kept)
        s = summary[name]
        print(f"wrote {out / name}.jsonl: {s['kept']}/{s['candidates_tried']} kept, "
              f"mean LD clean {s['mean_clean_ld']:.2f}, corrupted {s['mean_corrupted_ld']:.2f}")
    with open(out / "summary.json", "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(summary, sort_keys=True, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    import interp

    generate(args.out, interp.load())


if __name__ == "__main__":
    main()
