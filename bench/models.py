"""Benchmark: what the vocabulary costs a per-layer lens, SmolLM2 (49k) vs Gemma-3-270M (262k).

    .venv/bin/python bench/models.py [--repeats 5] [--tokens 256]

For each embedded model, on the same ``--tokens`` tokens of corpus text (one window),
timed in the same run and interleaved (median of repeats, the machine is shared):

* ``forward``: the model's forward pass with its logits;
* ``lens, all layers``: every layer's residual read through the final norm and the
  unembedding (:class:`interp.models.unembedding.Unembed`, float32), then
  ``log_softmax``: what ``interp lens`` and the tuned lens's loss add per token;
* ``lens, all layers, bf16``: the same with the bf16 unembedding matmul (training's default).

The figure is the ratio ``lens / forward`` per model: how many forward passes a full
per-layer read-out is worth. Results go to ``bench/results/models.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")

import torch  # noqa: E402

import interp  # noqa: E402
from interp.activations.capture import forward_with_hooks  # noqa: E402
from interp.data.corpus import load_texts  # noqa: E402
from interp.models.unembedding import Unembed  # noqa: E402

MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def _time(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "models.json"))
    args = ap.parse_args()
    text = " ".join(load_texts("heldout")[:20])
    cases = {}
    for name in MODELS:
        model = interp.load(name)
        ids = torch.tensor([model.encode(text)[: args.tokens]])
        names = [model.resid_hook(layer) for layer in range(model.n_layers)]
        unembed = Unembed(model)
        assert unembed.fast, f"{name}: expected the direct RMSNorm read-out"
        acts, _ = forward_with_hooks(model, ids, None, names, with_logits=False)

        def lens(dtype: torch.dtype, acts=acts, unembed=unembed) -> None:  # noqa: ANN001
            with torch.no_grad():
                for h in acts.values():
                    torch.log_softmax(unembed(h[0], matmul_dtype=dtype), -1)

        cases[name] = {
            "forward": lambda model=model, ids=ids: model.logits(ids),
            "lens, all layers": lambda lens=lens: lens(torch.float32),
            "lens, all layers, bf16": lambda lens=lens: lens(torch.bfloat16),
            "_facts": (model.n_layers, model.d_model, model.d_vocab, int(ids.shape[1])),
        }
        for key, fn in cases[name].items():  # warm-up
            if not key.startswith("_"):
                fn()
    times: dict[str, dict[str, list[float]]] = {m: {} for m in MODELS}
    for _ in range(args.repeats):
        for name in MODELS:
            for key, fn in cases[name].items():
                if not key.startswith("_"):
                    times[name].setdefault(key, []).append(_time(fn))
    results = {}
    for name in MODELS:
        n_layers, d_model, d_vocab, n_tok = cases[name]["_facts"]
        med = {k: statistics.median(v) for k, v in times[name].items()}
        fwd = med["forward"]
        results[name] = {
            "n_layers": n_layers, "d_model": d_model, "d_vocab": d_vocab, "tokens": n_tok,
            **{f"{k} (ms/token)": round(1000 * v / n_tok, 3) for k, v in med.items()},
            "lens / forward": round(med["lens, all layers"] / fwd, 2),
            "lens bf16 / forward": round(med["lens, all layers, bf16"] / fwd, 2),
        }
        print(name, json.dumps(results[name]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"threads": torch.get_num_threads(),
                                          "repeats": args.repeats, "models": results}, indent=2))


if __name__ == "__main__":
    main()
