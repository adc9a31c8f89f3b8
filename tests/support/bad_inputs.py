"""The bad-input matrix's shared pieces: the case type, the context it runs in, the builders
that cases of several tools use, and :func:`all_cases`, which collects every tool's cases.

Each tool's cases live beside its tests, as a module-level ``BAD_INPUTS: list[Case]`` in its
unit-test module (``tests/unit/interp/test_lens.py``, ``tests/unit/saes/test_sae.py``, …);
``tests/unit/interp/test_bad_inputs.py`` runs them all as one matrix. A case's id names its
verb first (``probe-single-class``), and a verb's cases live in one module. A builder used by
one tool's cases only lives in that tool's module.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT

#: Where the modules holding ``BAD_INPUTS`` lists are looked for (``test_*.py`` below it).
UNIT_TESTS = ROOT / "tests" / "unit"
#: A module-level ``BAD_INPUTS`` assignment, found in the source text before any import.
_DECLARES_CASES = re.compile(r"^BAD_INPUTS\b", re.MULTILINE)


@dataclass
class Ctx:
    tmp: Path
    tiny: str
    other_d_model: str  # artifacts made for a model with another d_model
    no_template: str  # the tiny model without a chat template
    ggufs: dict[str, str]  # "odd-arch", "truncated": GGUF files transformers cannot load
    no_tokenizer: str  # the tiny model's folder without its tokenizer files

    def file(self, name: str, text: str) -> str:
        p = self.tmp / name
        p.write_text(text)
        return str(p)

    @property
    def out(self) -> str:
        return str(self.tmp / "out")


@dataclass
class Case:
    id: str
    args: Callable[[Ctx], list[str]]
    message: str
    out_is_artifact: bool = False  # --out names the artifact itself (created only on success)


def M(ctx: Ctx) -> list[str]:  # noqa: N802 - reads as a keyword in the BAD_INPUTS tables
    return ["--model", ctx.tiny]


def _probe_rows(labels: list[int]) -> str:
    return "\n".join(json.dumps({"text": f"sentence number {i} here", "label": lab,
                                 "group": f"g{i % 5}"}) for i, lab in enumerate(labels))


def _truncated_artifact(ctx: Ctx, kind: str) -> str:
    import torch

    from interp.runs.artifacts import save_artifact

    path = ctx.tmp / f"trunc_{kind}"
    tensors = {"vector": torch.ones(64)} if kind == "steering_vector" else {
        "A": torch.zeros(2, 64, 64), "b": torch.zeros(2, 64)}
    save_artifact(path, tensors, kind=kind, config={"layer": 1, "n_layers": 3},
                  model_id=ctx.tiny, d_model=64, manifest={})
    w = path / "weights.safetensors"
    w.write_bytes(w.read_bytes()[: len(w.read_bytes()) // 2])
    return str(path)


def _foreign_lens(ctx: Ctx) -> str:
    import torch

    from interp.runs.artifacts import save_artifact

    path = ctx.tmp / "foreign_lens"
    save_artifact(path, {"A": torch.zeros(2, 32, 32), "b": torch.zeros(2, 32)},
                  kind="tuned_lens", config={"n_layers": 3, "unembedding_sha256": "x"},
                  model_id=ctx.other_d_model, d_model=32, manifest={})
    return str(path)


def _under_file(ctx: Ctx) -> str:
    blocker = ctx.tmp / "a_file"
    blocker.write_text("x")
    return str(blocker / "sub")


def _folder(ctx: Ctx, name: str) -> str:
    (ctx.tmp / name).mkdir()
    return str(ctx.tmp / name)


def _pair(corrupted: str = "The capital of Italy is", answer: str = " Paris") -> str:
    return json.dumps({"clean": "The capital of France is", "corrupted": corrupted,
                       "answer": answer, "wrong": " Rome"}) + "\n"


def _sae_artifact(ctx: Ctx, name: str, d_in: int, model_id: str) -> Path:
    import torch

    from saes.sae import SAEConfig, SparseAutoencoder

    sae = SparseAutoencoder(SAEConfig(d_in=d_in, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                      layer=1, model_id=model_id))
    sae.init_weights(torch.Generator().manual_seed(0))
    return sae.save(ctx.tmp / name, manifest={})


def _truncated_sae(ctx: Ctx) -> str:
    path = _sae_artifact(ctx, "trunc_sae", 64, ctx.tiny)
    w = path / "weights.safetensors"
    w.write_bytes(w.read_bytes()[: len(w.read_bytes()) // 2])
    return str(path)


def _tiny_transcoders(ctx: Ctx, layers: list[int], d_in: int = 64) -> str:
    """Random TopK transcoders for ``layers`` of the tiny model (or another width), saved as
    ``interp transcoder train`` lays them out."""
    import torch

    from saes.transcoders.model import TranscoderConfig

    folder = ctx.tmp / f"tc_{'_'.join(map(str, layers))}_{d_in}"
    for layer in layers:
        cfg = TranscoderConfig(d_in=d_in, d_sae=16, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               model_id=ctx.tiny if d_in == 64 else ctx.other_d_model,
                               architecture="topk", k=4)
        tc = cfg.model_class()(cfg)
        tc.init_weights(torch.Generator().manual_seed(layer))
        tc.save(folder / f"layer-{layer}" / "transcoder", manifest={})
    return str(folder)


def _tiny_clt(ctx: Ctx, layers: tuple[int, ...] = (0, 1, 2)) -> str:
    """A random TopK cross-layer transcoder over ``layers`` of the tiny model, saved as
    ``interp transcoder train-clt`` lays it out."""
    import torch

    from saes.transcoders.crosslayer import CLTConfig, CrossLayerTranscoder

    folder = ctx.tmp / f"clt_{'_'.join(map(str, layers))}"
    clt = CrossLayerTranscoder(CLTConfig(d_in=64, d_sae=16, layers=layers, k=4,
                                         model_id=ctx.tiny))
    clt.init_weights(torch.Generator().manual_seed(0))
    clt.save(folder / "clt", manifest={})
    return str(folder)


def _tiny_sae(ctx: Ctx) -> str:
    return str(_sae_artifact(ctx, "tiny_sae", 64, ctx.tiny))


def _foreign_sae(ctx: Ctx) -> str:
    return str(_sae_artifact(ctx, "foreign_sae", 32, ctx.other_d_model))


def _text(ctx: Ctx) -> str:
    """A text file with held-out paragraphs (the sha256 rule keeps ~5% of 200)."""
    return ctx.file("t.txt", "\n\n".join(f"Paragraph {i} says something." for i in range(200)))



# ------------------------------------------------------------------ the collector
def case_modules() -> list[str]:
    """The dotted names of the unit-test modules that declare ``BAD_INPUTS``, sorted by path
    (only those are imported: the source text is checked first)."""
    return [".".join(path.relative_to(ROOT).with_suffix("").parts)
            for path in sorted(UNIT_TESTS.rglob("test_*.py"))
            if _DECLARES_CASES.search(path.read_text(encoding="utf-8"))]


def cases_by_module() -> dict[str, list[Case]]:
    """Each module's ``BAD_INPUTS``, by dotted name (the module objects pytest imports)."""
    return {name: list(importlib.import_module(name).BAD_INPUTS) for name in case_modules()}


def all_cases() -> list[Case]:
    """Every tool's bad-input cases, module by module in path order; a case id given twice
    (in one module or two) is an error."""
    cases: list[Case] = []
    home: dict[str, str] = {}
    for name, module_cases in cases_by_module().items():
        for case in module_cases:
            if case.id in home:
                raise ValueError(f"bad-input case id {case.id!r} is declared twice: in "
                                 f"{home[case.id]} and in {name}")
            home[case.id] = name
            cases.append(case)
    return cases
