"""Can the embedded models score detection? Planted explanations on real sentences.

    .venv/bin/python scripts/planted_scorers.py [--texts 60]

The first ``--texts`` sentences of ``datasets/probes/sentiment.jsonl``; every other one gets
a planted clause (" because it was so.", " on 12 May 2019.", " The dog and the cat
agreed."). For each scorer (SmolLM2-135M-Instruct, Gemma-3-270M) and each planted
explanation, the detection AUROC (:func:`saes.autointerp.scores`) of the true
explanation and of a shuffled one (another plant's), raw and as a contrast with the
log-odds under a null explanation ("nothing in particular"). An exploration for issue 32,
not a test: it prints a table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sklearn.metrics import roc_auc_score

import interp
from saes.autointerp import scores

ROOT = Path(__file__).resolve().parent.parent
PLANTS = {
    'the word "because"': " because it was so.",
    "numbers and digits": " on 12 May 2019.",
    "names of animals such as dogs and cats": " The dog and the cat agreed.",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=60)
    args = ap.parse_args()
    rows = [json.loads(line)["text"] for line in
            (ROOT / "datasets" / "probes" / "sentiment.jsonl").read_text().splitlines()
            if line.strip()][:args.texts]
    names = list(PLANTS)
    print("scorer | explanation | true | shuffled | true − null | shuffled − null")
    for scorer in ("smollm2-135m-instruct", "gemma3-270m"):
        model = interp.load(scorer)
        for i, expl in enumerate(names):
            texts = [t.rstrip(".") + PLANTS[expl] if j % 2 else t for j, t in enumerate(rows)]
            labels = [j % 2 for j in range(len(rows))]
            other = names[(i + 1) % len(names)]
            true = scores(model, expl, texts)
            shuf = scores(model, other, texts)
            null = scores(model, "nothing in particular", texts)
            auc = [roc_auc_score(labels, x.numpy()) for x in
                   (true, shuf, true - null, shuf - null)]
            print(f"{scorer} | {expl} | " + " | ".join(f"{a:.3f}" for a in auc))


if __name__ == "__main__":
    main()
