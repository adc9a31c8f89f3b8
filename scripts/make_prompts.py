"""Write datasets/prompts/mixed_256.jsonl: 256 English prompts of mixed length.

Used by the capture benchmark and examples. Written by the project (no third-party
text); deterministic: re-running gives the same file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

CAPITALS = [
    ("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Germany", "Berlin"),
    ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Canada", "Ottawa"), ("Kenya", "Nairobi"),
    ("Peru", "Lima"), ("Norway", "Oslo"), ("Greece", "Athens"), ("Poland", "Warsaw"),
    ("Portugal", "Lisbon"), ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Chile", "Santiago"),
]
SUBJECTS = ["The old lighthouse keeper", "A young engineer", "My grandmother", "The small robot",
            "A tired student", "The ship's captain", "Our neighbour", "The museum guide"]
ACTIONS = ["walked to the harbour", "opened the letter", "fixed the broken radio",
           "planted a row of tomatoes", "counted the coins twice", "climbed the narrow stairs",
           "wrote a long report", "listened to the rain"]
ENDINGS = ["before anyone else was awake", "while the kettle boiled", "and then sat down",
           "without saying a word", "because nobody else would", "as the sun went down"]
FACTS = ["Water boils at", "The largest planet in the solar system is",
         "The chemical symbol for gold is", "A week has", "The opposite of hot is",
         "The first month of the year is", "Bees make", "The colour of the clear sky is"]


def main() -> None:
    rng = random.Random(0)
    prompts: list[str] = []
    for country, _ in CAPITALS:
        prompts.append(f"The capital of {country} is")
        prompts.append(f"Q: What is the capital of {country}?\nA:")
    prompts += FACTS
    while len(prompts) < 256:
        kind = rng.random()
        s = f"{rng.choice(SUBJECTS)} {rng.choice(ACTIONS)}"
        if kind < 0.3:
            prompts.append(s)
        elif kind < 0.7:
            prompts.append(f"{s} {rng.choice(ENDINGS)}.")
        else:
            n = rng.randint(2, 4)
            parts = [f"{rng.choice(SUBJECTS)} {rng.choice(ACTIONS)} {rng.choice(ENDINGS)}."
                     for _ in range(n)]
            prompts.append(" ".join(parts) + " Then")
    out = Path(__file__).resolve().parent.parent / "datasets" / "prompts" / "mixed_256.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for i, p in enumerate(prompts[:256]):
            f.write(json.dumps({"id": i, "text": p}) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
