"""The bad-input matrix: every CLI verb × the ways users get inputs wrong.

Each case must print exactly one line on stderr (``error: …``), exit with code 2, show
no traceback, and leave ``--out`` exactly as it was (or not create it). Case ids name
the verb first (``test_bad_input[probe-single-class]``). The tiny random Llama stands in
for the model: these are input checks, which run before or around any real compute.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_runner import run


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


def _pairs(n: int = 4) -> str:
    return "\n".join(json.dumps({"positive": f"I love it {i}", "negative": f"I hate it {i}"})
                     for i in range(n))


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


def _foreign_vector(ctx: Ctx) -> str:
    import torch

    from interp.runs.artifacts import save_artifact

    path = ctx.tmp / "foreign_vec"
    save_artifact(path, {"vector": torch.ones(32)}, kind="steering_vector",
                  config={"layer": 1}, model_id=ctx.other_d_model, d_model=32, manifest={})
    return str(path)


def _foreign_lens(ctx: Ctx) -> str:
    import torch

    from interp.runs.artifacts import save_artifact

    path = ctx.tmp / "foreign_lens"
    save_artifact(path, {"A": torch.zeros(2, 32, 32), "b": torch.zeros(2, 32)},
                  kind="tuned_lens", config={"n_layers": 3, "unembedding_sha256": "x"},
                  model_id=ctx.other_d_model, d_model=32, manifest={})
    return str(path)


def _damaged_run_lens(ctx: Ctx) -> str:
    """A tuned-lens run folder whose finished lens was truncated (its checkpoint is there)."""
    run_dir = ctx.tmp / "tl-run"
    (run_dir / "checkpoint").mkdir(parents=True)
    (run_dir / "checkpoint" / "config.json").write_text("{}")
    Path(_truncated_artifact(ctx, "tuned_lens")).rename(run_dir / "lens")
    return str(run_dir)


def _damaged_corpus(ctx: Ctx) -> str:
    """A corpus folder whose train.jsonl was edited after its manifest was written."""
    import hashlib

    from interp.data.corpus import BUILDER_VERSION

    folder = ctx.tmp / "corpus"
    folder.mkdir()
    files = {}
    for name, text in (("train.jsonl", "a"), ("heldout.jsonl", "b")):
        data = json.dumps({"text": text, "source": "x"}).encode() + b"\n"
        files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                       "paragraphs": 1, "words": 1}
        (folder / name).write_bytes(data.replace(b'"a"', b'"e"'))
    (folder / "manifest.json").write_text(json.dumps({"builder_version": BUILDER_VERSION,
                                                      "files": files}))
    return str(folder)


def _under_file(ctx: Ctx) -> str:
    blocker = ctx.tmp / "a_file"
    blocker.write_text("x")
    return str(blocker / "sub")


def _result(ctx: Ctx, name: str, data: dict) -> str:
    """A result folder ``name`` holding ``results.json`` = ``data``."""
    folder = ctx.tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(data))
    return str(folder)


def _seed_group(ctx: Ctx) -> str:
    for s in range(2):
        _result(ctx, f"group/seed-{s}", {"x": float(s)})
    return _result(ctx, "group", {"kind": "seeds", "verb": "probe", "seeds": [0, 1]})


def M(ctx: Ctx) -> list[str]:  # noqa: N802 - reads as a keyword in the table below
    return ["--model", ctx.tiny]


CASES = [
    # ------------------------------------------------------------------ lens
    Case("lens-empty-prompt", lambda c: ["lens", "  ", *M(c), "--out", c.out], "empty prompt"),
    Case("lens-missing-model", lambda c: ["lens", "hi", "--model", str(c.tmp / "nope"),
                                          "--out", c.out], "cannot read model path"),
    Case("lens-unknown-model", lambda c: ["lens", "hi", "--model", "no-org/no-model",
                                          "--out", c.out], "unknown model"),
    Case("lens-layer-out-of-range", lambda c: ["lens", "hi", *M(c), "--layer", "7",
                                               "--out", c.out], "out of range"),
    Case("lens-bad-layer-list", lambda c: ["lens", "hi", *M(c), "--layer", "1,x",
                                           "--out", c.out], "bad layer 'x'"),
    Case("lens-backward-layer-range", lambda c: ["lens", "hi", *M(c), "--layer", "2-0",
                                                 "--out", c.out], "bad layer range '2-0'"),
    Case("lens-top-k-zero", lambda c: ["lens", "hi", *M(c), "--top-k", "0", "--out", c.out],
         "--top-k"),
    Case("lens-unwritable-out", lambda c: ["lens", "hi", *M(c), "--out", _under_file(c)],
         "cannot create output folder"),
    Case("lens-truncated-tuned-lens", lambda c: ["lens", "hi", *M(c), "--tuned",
                                                 _truncated_artifact(c, "tuned_lens"),
                                                 "--out", c.out], "checksum mismatch"),
    Case("lens-damaged-run-lens", lambda c: ["lens", "hi", *M(c), "--tuned",
                                             _damaged_run_lens(c), "--out", c.out],
         "rebuild it from its checkpoint"),
    Case("lens-tuned-lens-other-model", lambda c: ["lens", "hi", *M(c), "--tuned",
                                                   _foreign_lens(c), "--out", c.out],
         "was trained on"),
    # ------------------------------------------------------------------ capture
    Case("capture-missing-file", lambda c: ["capture", "--file", str(c.tmp / "no.jsonl"), *M(c),
                                            "--layer", "0", "--out", c.out], "no such file"),
    Case("capture-malformed-jsonl", lambda c: ["capture", "--file", c.file(
        "bad.jsonl", '{"text": "ok"}\n{"text": oops}\n'), *M(c), "--layer", "0", "--out",
        c.out], "line 2"),
    Case("capture-malformed-csv", lambda c: ["capture", "--file", c.file(
        "bad.csv", 'text\n"unterminated\n'), *M(c), "--layer", "0", "--out", c.out], "bad.csv"),
    Case("capture-empty-dataset", lambda c: ["capture", "--file", c.file("empty.jsonl", ""),
                                             *M(c), "--layer", "0", "--out", c.out], "empty"),
    Case("capture-layer-out-of-range", lambda c: ["capture", "hi", *M(c), "--layer", "3",
                                                  "--out", c.out], "out of range"),
    Case("capture-bad-positions", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                             "--positions", "middle", "--out", c.out],
         "bad --positions"),
    Case("capture-unknown-hook", lambda c: ["capture", "hi", *M(c), "--hook", "blocks.0.nope",
                                            "--out", c.out], "unknown hook point"),
    Case("capture-over-memory-limit", lambda c: ["capture", "hi there", *M(c), "--layer", "all",
                                                 "--positions", "all", "--max-memory-gb",
                                                 "1e-7", "--out", c.out], "over the"),
    Case("capture-nan-memory-limit", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                                "--max-memory-gb", "nan", "--out", c.out],
         "memory limit"),
    Case("capture-unwritable-out", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                              "--out", _under_file(c)],
         "cannot create output folder"),
    # ------------------------------------------------------------------ generate
    Case("generate-nan-temperature", lambda c: ["generate", "hi", *M(c), "--temperature",
                                                "nan", "--out", c.out], "temperature"),
    Case("generate-negative-temperature", lambda c: ["generate", "hi", *M(c), "--temperature",
                                                     "-1", "--out", c.out], "temperature"),
    Case("generate-top-p-above-one", lambda c: ["generate", "hi", *M(c), "--top-p", "1.5",
                                                "--out", c.out], "top-p"),
    Case("generate-zero-new-tokens", lambda c: ["generate", "hi", *M(c), "--max-new-tokens",
                                                "0", "--out", c.out], "max new tokens"),
    Case("generate-zero-verify-every", lambda c: ["generate", "hi", *M(c), "--deterministic",
                                                  "--verify-every", "0"], "verify-every"),
    Case("generate-empty-file", lambda c: ["generate", "--file", c.file("e.txt", "\n\n"), *M(c),
                                           "--out", c.out], "empty dataset"),
    Case("generate-beyond-memory", lambda c: ["generate", "hi", *M(c), "--max-new-tokens",
                                              "1000000000", "--out", c.out],
         "would need about"),
    Case("generate-unwritable-out", lambda c: ["generate", "hi", *M(c), "--out",
                                               _under_file(c)], "cannot create output folder"),
    # ------------------------------------------------------------------ probe
    Case("probe-single-class", lambda c: ["probe", *M(c), "--layer", "1", "--dataset", c.file(
        "one.jsonl", _probe_rows([1] * 40)), "--out", c.out], "class"),
    Case("probe-missing-dataset", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                             str(c.tmp / "no.jsonl"), "--out", c.out],
         "no such file"),
    Case("probe-malformed-jsonl", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                             c.file("m.jsonl", _probe_rows([0, 1]) + "\n{bad\n"),
                                             "--out", c.out], "line 3"),
    Case("probe-empty-dataset", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                           c.file("e.jsonl", ""), "--out", c.out], "empty"),
    Case("probe-layer-out-of-range", lambda c: ["probe", *M(c), "--layer", "9", "--dataset",
                                                c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                                "--out", c.out], "out of range"),
    Case("probe-nan-C", lambda c: ["probe", *M(c), "--layer", "1", "--C", "nan", "--dataset",
                                   c.file("p.jsonl", _probe_rows([0, 1] * 20)), "--out", c.out],
         "C"),
    Case("probe-unknown-solver", lambda c: [
        "probe", *M(c), "--layer", "1", "--solver", "adam", "--dataset",
        c.file("p.jsonl", _probe_rows([0, 1] * 20)), "--out", c.out], "solver"),
    Case("probe-missing-label-column", lambda c: ["probe", *M(c), "--layer", "1",
                                                  "--label-column", "y", "--dataset",
                                                  c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                                  "--out", c.out], "y"),
    Case("probe-unwritable-out", lambda c: ["probe", *M(c), "--layer", "1", "--dataset",
                                            c.file("p.jsonl", _probe_rows([0, 1] * 20)),
                                            "--out", _under_file(c)],
         "cannot create output folder"),
    # ------------------------------------------------------------------ steer
    Case("steer-train-missing-pairs", lambda c: ["steer", "train", "--pairs",
                                                 str(c.tmp / "no.jsonl"), "--layer", "1", *M(c),
                                                 "--out", c.out], "no such file",
         out_is_artifact=True),
    Case("steer-train-malformed-pairs", lambda c: ["steer", "train", "--pairs", c.file(
        "p.jsonl", _pairs() + "\n{oops\n"), "--layer", "1", *M(c), "--out", c.out], "line 5",
        out_is_artifact=True),
    Case("steer-train-empty-pairs", lambda c: ["steer", "train", "--pairs",
                                               c.file("p.jsonl", ""), "--layer", "1", *M(c),
                                               "--out", c.out], "empty", out_is_artifact=True),
    Case("steer-train-layer-out-of-range", lambda c: ["steer", "train", "--pairs",
                                                      c.file("p.jsonl", _pairs()), "--layer",
                                                      "5", *M(c), "--out", c.out],
         "out of range", out_is_artifact=True),
    Case("steer-train-unwritable-out", lambda c: ["steer", "train", "--pairs",
                                                  c.file("p.jsonl", _pairs()), "--layer", "1",
                                                  *M(c), "--out", _under_file(c)],
         "not a folder", out_is_artifact=True),
    Case("steer-train-out-is-a-file", lambda c: ["steer", "train", "--pairs",
                                                 c.file("p.jsonl", _pairs()), "--layer", "1",
                                                 *M(c), "--out", c.file("vector", "keep me")],
         "is a file", out_is_artifact=True),
    Case("steer-generate-truncated-vector", lambda c: [
        "steer", "generate", "hi", "--vector", _truncated_artifact(c, "steering_vector"),
        *M(c)], "checksum mismatch"),
    Case("steer-generate-vector-other-d-model", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), *M(c)], "made for"),
    Case("steer-generate-nan-alpha", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), "--alpha", "nan", *M(c)],
        "alpha"),
    Case("steer-generate-missing-vector", lambda c: [
        "steer", "generate", "hi", "--vector", str(c.tmp / "none"), *M(c)], "none"),
    Case("steer-sweep-nan-alpha", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--alphas=0,nan", *M(c),
        "--layers", "1", "--out", c.out], "alphas"),
    Case("steer-sweep-layer-out-of-range", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--layers", "1,8", *M(c),
        "--out", c.out], "out of range"),
    Case("steer-sweep-negative-temperature", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--layers", "1",
        "--temperature", "-0.5", *M(c), "--out", c.out], "temperature"),
    # ------------------------------------------------------------------ models, corpus
    Case("models-unknown-option", lambda c: ["models", "--bogus"], "No such option"),
    Case("lens-profile-unwritable", lambda c: [
        "lens", "hi", *M(c), "--profile", _under_file(c), "--out", c.out], "--profile"),
    Case("peak-unknown-device", lambda c: ["peak", "--device", "tpu"], "no peak for device"),
    Case("peak-unknown-dtype", lambda c: ["peak", "--dtype", "int8"], "Invalid value"),
    Case("seeds-zero", lambda c: ["seeds", "0", "--out", c.out, "--", "probe", *M(c)],
         "K ≥ 2"),
    Case("seeds-k-beyond-the-seeds", lambda c: ["seeds", "18446744073709551615", "--out",
                                                c.out, "--", "probe", *M(c)],
         "must be at most 4,294,967,296"),
    Case("seeds-no-verb", lambda c: ["seeds", "2", "--out", c.out], "give the verb"),
    Case("seeds-unknown-verb", lambda c: ["seeds", "2", "--out", c.out, "--", "bogus"],
         "unknown verb"),
    Case("seeds-verb-without-seed", lambda c: [
        "seeds", "2", "--out", c.out, "--", "corpus", "info"], "has no --seed"),
    Case("seeds-sets-seed-itself", lambda c: [
        "seeds", "2", "--out", c.out, "--", "lens", "hi", *M(c), "--seed", "3"],
        "seeds sets --seed and --out itself"),
    Case("seeds-verb-fails", lambda c: [
        "seeds", "2", "--out", c.out, "--", "lens", "hi", *M(c), "--layer", "9"],
        "out of range"),
    Case("seeds-unwritable-out", lambda c: [
        "seeds", "2", "--out", _under_file(c), "--", "lens", "hi", *M(c)], "cannot create"),
    Case("compare-no-results", lambda c: [
        "compare", _folder(c, "x"), _folder(c, "y")], "no results.json"),
    Case("compare-missing-folder", lambda c: [
        "compare", str(c.tmp / "x"), str(c.tmp / "y")], "x: no such folder"),
    Case("compare-different-verbs", lambda c: [
        "compare", _result(c, "a", {"x": 1.0, "y": 2.0, "z": 3.0}),
        _result(c, "b", {"p": 1.0, "q": 2.0, "z": 3.0}), "--out", c.out],
        "not results of the same"),
    Case("compare-group-and-single", lambda c: [
        "compare", _seed_group(c), _result(c, "a", {"x": 1.0}), "--out", c.out],
        "not one of each"),
    Case("compare-unwritable-out", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}),
        "--out", _under_file(c)], "cannot create"),
    Case("models-verify-gguf-unknown-architecture", lambda c: [
        "models", "--verify", c.ggufs["odd-arch"]], "cannot load this GGUF"),
    Case("models-verify-truncated-gguf", lambda c: [
        "models", "--verify", c.ggufs["truncated"]], "cannot load this GGUF"),
    Case("models-verify-folder-without-tokenizer", lambda c: [
        "models", "--verify", c.no_tokenizer], "folder has no tokenizer"),
    Case("models-out-without-verify", lambda c: ["models", "--out", c.out], "--verify"),
    Case("lens-gguf-unknown-architecture", lambda c: [
        "lens", "hi", "--model", c.ggufs["odd-arch"], "--out", c.out], "cannot load this GGUF"),
    Case("capture-truncated-gguf", lambda c: [
        "capture", "hi", "--model", c.ggufs["truncated"], "--layer", "0", "--out", c.out],
        "cannot load this GGUF"),
    Case("generate-folder-without-tokenizer", lambda c: [
        "generate", "hi", "--model", c.no_tokenizer, "--out", c.out], "folder has no tokenizer"),
    Case("corpus-info-missing", lambda c: ["corpus", "info", "--path", str(c.tmp / "none")],
         "not built"),
    Case("corpus-info-empty-path", lambda c: ["corpus", "info", "--path", ""],
         "the corpus path is empty"),
    Case("corpus-info-edited-corpus", lambda c: ["corpus", "info", "--path", _damaged_corpus(c)],
         "damaged (train.jsonl: sha256 mismatch)"),
    Case("corpus-build-unwritable-out", lambda c: ["corpus", "build", "--out", _under_file(c)],
         "cannot create output folder"),
    # ------------------------------------------------------------------ tuned lens
    Case("tuned-lens-train-negative-lr", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"), "--lr",
        "-1", "--out", c.out], "learning rate", out_is_artifact=True),
    Case("tuned-lens-train-nan-weight-decay", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"),
        "--weight-decay", "nan", "--out", c.out], "weight decay", out_is_artifact=True),
    Case("tuned-lens-train-beyond-memory", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"),
        "--batch-size", "100000000", "--out", c.out], "would need about",
        out_is_artifact=True),
    Case("tuned-lens-train-missing-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", str(c.tmp / "none.txt"), "--out", c.out],
        "cannot read text file", out_is_artifact=True),
    Case("tuned-lens-train-empty-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("e.txt", "   \n"), "--out", c.out],
        "no text", out_is_artifact=True),
    Case("tuned-lens-train-unwritable-out", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n" * 30),
        "--out", _under_file(c)], "cannot create output folder", out_is_artifact=True),
    Case("tuned-lens-eval-missing-lens", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", str(c.tmp / "none"), "--out", c.out],
        "no tuned lens"),
    Case("tuned-lens-eval-truncated-lens", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _truncated_artifact(c, "tuned_lens"),
        "--text", _text(c), "--out", c.out], "checksum mismatch"),
    Case("tuned-lens-eval-other-model", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _foreign_lens(c), "--text", _text(c),
        "--out", c.out], "was trained on"),
    # ------------------------------------------------------------------ SAEs
    Case("sae-train-zero-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "0", "--out", c.out],
        "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-negative-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "-0.5",
        "--out", c.out], "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-nan-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "nan",
        "--out", c.out], "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-infinite-lr", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--lr", "inf",
        "--out", c.out], "--lr must be a positive", out_is_artifact=True),
    Case("sae-train-layer-out-of-range", lambda c: [
        "sae", "train", *M(c), "--layer", "7", "--text", _text(c), "--out", c.out],
        "out of range", out_is_artifact=True),
    Case("sae-train-layers-out-of-range", lambda c: [
        "sae", "train", *M(c), "--layers", "0,9", "--text", _text(c), "--out", c.out],
        "layer 9 out of range"),
    Case("sae-train-layer-and-layers", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--layers", "0,2", "--text", _text(c),
        "--out", c.out], "--layer or --layers, not both"),
    Case("sae-train-unknown-model", lambda c: [
        "sae", "train", "--model", "no-org/no-model", "--text", _text(c), "--out", c.out],
        "unknown model", out_is_artifact=True),
    Case("sae-train-missing-text", lambda c: [
        "sae", "train", *M(c), "--text", str(c.tmp / "none.txt"), "--out", c.out],
        "cannot read text file", out_is_artifact=True),
    Case("sae-train-empty-text", lambda c: [
        "sae", "train", *M(c), "--text", c.file("e.txt", "   \n"), "--out", c.out],
        "no text", out_is_artifact=True),
    Case("sae-train-bad-shards", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--data-shards", "3",
        "--out", c.out], "multiple of the data shards", out_is_artifact=True),
    Case("sae-train-d-sae-beyond-memory", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--d-sae", "2000000000",
        "--out", c.out], "would need about", out_is_artifact=True),
    Case("sae-train-layers-beyond-memory", lambda c: [
        "sae", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--d-sae", "1000000000",
        "--out", c.out], "training 2 SAEs of d_sae=1,000,000,000"),
    Case("sae-train-unwritable-out", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--out", _under_file(c)],
        "cannot create output folder", out_is_artifact=True),
    Case("sae-train-unknown-arch", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "gated",
        "--out", c.out], "unknown SAE architecture 'gated'", out_is_artifact=True),
    Case("sae-train-k-zero", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "topk",
        "--k", "0", "--d-sae", "64", "--out", c.out], "--k must be an integer from 1 to d_sae",
        out_is_artifact=True),
    Case("sae-train-k-above-d-sae", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "batchtopk",
        "--k", "65", "--d-sae", "64", "--out", c.out], "from 1 to d_sae = 64, got 65",
        out_is_artifact=True),
    Case("sae-train-k-with-relu", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--k", "8",
        "--out", c.out], "--k is for --arch topk or batchtopk, not relu", out_is_artifact=True),
    Case("sae-train-nan-l0-coefficient", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "jumprelu",
        "--l0-coefficient", "nan", "--out", c.out], "--l0-coefficient must be a positive",
        out_is_artifact=True),
    Case("sae-train-zero-threshold-init", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "jumprelu",
        "--threshold-init", "0", "--out", c.out], "--threshold-init must be a positive",
        out_is_artifact=True),
    Case("sae-train-bandwidth-with-topk", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "topk",
        "--bandwidth", "0.05", "--out", c.out], "--bandwidth is for --arch jumprelu, not topk",
        out_is_artifact=True),
    Case("sae-import-nan-jumprelu-threshold", lambda c: [
        "sae", "import", _nan_threshold_saelens(c), "--out", c.out],
        "threshold has 1 non-finite", out_is_artifact=True),
    Case("sae-eval-missing-sae", lambda c: [
        "sae", "eval", str(c.tmp / "none"), *M(c), "--out", c.out], "no SAE at"),
    Case("sae-eval-truncated-sae", lambda c: [
        "sae", "eval", _truncated_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "checksum mismatch"),
    Case("sae-eval-other-d-model", lambda c: [
        "sae", "eval", _foreign_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "d_in=32, but model"),
    Case("sae-eval-unwritable-out", lambda c: [
        "sae", "eval", _foreign_sae(c), *M(c), "--text", _text(c), "--out", _under_file(c)],
        "cannot create output folder", out_is_artifact=True),
    Case("steer-train-feature-out-of-range", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "16", "--text", _text(c), *M(c),
        "--out", c.out], "--feature 16 out of range: the SAE has 16 features",
        out_is_artifact=True),
    Case("steer-train-sae-and-pairs", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "1", "--pairs",
        c.file("p.jsonl", _pairs()), *M(c), "--out", c.out], "not both", out_is_artifact=True),
    Case("steer-train-sae-without-feature", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), *M(c), "--out", c.out],
        "--sae and --feature go together", out_is_artifact=True),
    Case("sae-probe-k-above-d-sae", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--ks", "1,40", *M(c), "--out", c.out], "k 40 > d_sae 16"),
    Case("sae-probe-bad-ks", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--ks", "0,2", *M(c), "--out", c.out], "bad --ks"),
    Case("sae-probe-seeds-too-many", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--seeds", "2147483648", *M(c), "--out", c.out], "--seeds"),
    Case("sae-probe-one-class", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([1] * 40)),
        *M(c), "--out", c.out], "single class"),
    Case("sae-browse-bad-features", lambda c: [
        "sae", "browse", _foreign_sae(c), *M(c), "--features", "alive:x", "--out", c.out],
        "features"),
    Case("sae-browse-other-d-model", lambda c: [
        "sae", "browse", _foreign_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "d_in=32, but model"),
    Case("sae-export-truncated-sae", lambda c: [
        "sae", "export", _truncated_sae(c), "--out", c.out], "checksum mismatch",
        out_is_artifact=True),
    Case("sae-export-missing-sae", lambda c: [
        "sae", "export", str(c.tmp / "none"), "--out", c.out], "no SAE at",
        out_is_artifact=True),
    Case("sae-import-malformed-cfg", lambda c: [
        "sae", "import", _saelens_dir(c, "{not json"), "--out", c.out], "cfg.json",
        out_is_artifact=True),
    Case("sae-import-missing-folder", lambda c: [
        "sae", "import", str(c.tmp / "none"), "--out", c.out], "none",
        out_is_artifact=True),
    # ------------------------------------------------------------------ evals
    Case("eval-sycophancy-malformed-line", lambda c: [
        "eval", "sycophancy", *M(c), "--dataset", c.file("s.jsonl", _syc(2) + "\n{nope\n"),
        "--out", c.out], "line 3"),
    Case("eval-sycophancy-empty-dataset", lambda c: [
        "eval", "sycophancy", *M(c), "--dataset", c.file("s.jsonl", ""), "--out", c.out],
        "empty"),
    Case("eval-sycophancy-no-chat-template", lambda c: [
        "eval", "sycophancy", "--model", c.no_template, "--dataset", c.file("s.jsonl", _syc(3)),
        "--mode", "generate", "--out", c.out], "chat template"),
    Case("eval-sycophancy-zero-limit", lambda c: [
        "eval", "sycophancy", *M(c), "--limit", "0", "--out", c.out], "limit"),
    Case("eval-constitutional-malformed-constitution", lambda c: [
        "eval", "constitutional", *M(c), "--constitution", c.file("c.json", "{not json"),
        "--out", c.out], "c.json"),
    Case("eval-constitutional-empty-prompts", lambda c: [
        "eval", "constitutional", *M(c), "--prompts", c.file("p.jsonl", ""), "--out", c.out],
        "empty"),
    Case("patch-unequal-lengths", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair("The capital of the Italy is")),
        "--out", c.out], "tokenize to 5 and 6 tokens"),
    Case("patch-multi-token-answer", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair(answer=" Parisian")),
        "--out", c.out], "must be one token"),
    Case("patch-unknown-family", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--family", "neurons",
        "--out", c.out], "unknown family"),
    Case("patch-empty-task", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", ""), "--out", c.out], "holds no pairs"),
    Case("patch-unknown-task", lambda c: [
        "patch", *M(c), "--task", "no-such-task", "--out", c.out], "unknown task"),
    Case("patch-group-column-missing", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--group-by", "family",
        "--out", c.out], "group column 'family' is missing on pair 0"),
    Case("causal-das-dim-too-large", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--dim", "64",
        "--out", c.out], "must be below d_model (64)"),
    Case("causal-das-unknown-position", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--position",
        "country", "--out", c.out], "unknown position 'country'"),
    Case("causal-das-one-fold", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--folds", "1",
        "--out", c.out], "1 is not in the range x>=2"),
    Case("causal-das-span-variance-zero", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--span-variance",
        "0", "--out", c.out], "span-variance must be above 0 and at most 1"),
    Case("causal-das-unknown-task", lambda c: [
        "causal", "das", *M(c), "--task", "no-such-task", "--out", c.out], "unknown task"),
    Case("causal-das-sae-of-another-model", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sae",
        str(_sae_artifact(c, "sae-other", 64, "other-model")), "--out", c.out],
        "was trained on model 'other-model'"),
    Case("causal-das-sae-latents-too-many", lambda c: [
        "causal", "das", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sae",
        str(_sae_artifact(c, "sae-tiny", 64, c.tiny)), "--sae-latents", "64",
        "--out", c.out], "--sae-latents 64 must be between 1 and d_in − 1 (63)"),
    Case("causal-das-probe-set-without-pairs", lambda c: [
        "causal", "das", *M(c), "--task", c.file("p.jsonl", _probe_rows([0, 1, 0, 1])),
        "--out", c.out], "no minimal pairs"),
    Case("causal-edges-sample-too-large", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sample",
        "1000", "--out", c.out], "--sample 1000 is larger than the model's 190 edges"),
    Case("causal-edges-top-over-sample", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sample", "10",
        "--top", "20", "--out", c.out], "top must be at most --sample (10)"),
    Case("causal-edges-unknown-method", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--method",
        "acdc", "--out", c.out], "acdc"),
    Case("causal-edges-old-method-name-eap", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--method",
        "eap", "--out", c.out], "eap-clean (Syed et al.'s EAP) or eap-corrupted"),
    Case("causal-edges-unpaired-row", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", json.dumps(
            {"clean": "The capital of France is", "answer": " Paris", "wrong": " Rome"})),
        "--out", c.out], "missing or empty corrupted"),
    Case("causal-edges-multi-token-label", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair(answer=" Parisian") * 4),
        "--out", c.out], "must be one token"),
    Case("patch-atp-star-not-heads", lambda c: [
        "patch", *M(c), "--task", c.file("t.jsonl", _pair()), "--method", "atp-star",
        "--out", c.out], "heads only"),
    Case("eval-constitutional-zero-rounds", lambda c: [
        "eval", "constitutional", *M(c), "--rounds", "0", "--out", c.out], "rounds"),
    Case("attention-head-out-of-range", lambda c: [
        "attention", "hello there", *M(c), "--layer", "1", "--head", "4", "--out", c.out],
        "head 4 out of range"),
    Case("attention-bad-head-list", lambda c: [
        "attention", "hello there", *M(c), "--layer", "1", "--head", "1,x", "--out", c.out],
        "bad --head '1,x'"),
    Case("attention-layer-out-of-range", lambda c: [
        "attention", "hello there", *M(c), "--layer", "3", "--out", c.out], "out of range"),
    Case("attention-empty-prompt", lambda c: [
        "attention", "  ", *M(c), "--layer", "0", "--out", c.out], "empty prompt"),
    Case("attention-no-chat-template", lambda c: [
        "attention", "hello", "--model", c.no_template, "--layer", "0", "--chat",
        "--out", c.out], "chat template"),
    # ----------------------------------------- found by the fuzzing (test_cli_fuzz.py)
    Case("lens-meta-device", lambda c: [
        "lens", "hi", *M(c), "--device", "meta", "--out", c.out], "cannot run a model"),
    Case("steer-generate-meta-device", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), *M(c), "--device", "meta"],
        "device 'meta' cannot run a model"),
    Case("sae-eval-meta-device", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--device", "meta",
        "--out", c.out], "cannot run a model"),
    Case("sae-browse-absent-gpu", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--device", "cuda:7", "--out", c.out], "cuda:7"),
    Case("lens-over-long-model-name", lambda c: [
        "lens", "hi", "--model", "m" * 10_000, "--out", c.out], "model name 'mmm"),
    Case("models-verify-over-long-name", lambda c: [
        "models", "--verify", "m" * 10_000], "is too long: 10,000 bytes"),
    Case("lens-prompt-not-utf8", lambda c: [
        "lens", "caf\udce9", *M(c), "--out", c.out], "argument 2 (caf\\udce9) is not valid UTF-8"),
    Case("generate-stop-not-utf8", lambda c: [
        "generate", "hi", *M(c), "--stop", "\udcff", "--out", c.out], "is not valid UTF-8"),
    Case("patch-binary-task", lambda c: [
        "patch", *M(c), "--task", _binary(c, "t.jsonl"), "--out", c.out], "not UTF-8 text"),
    Case("capture-position-too-large", lambda c: [
        "capture", "hi", *M(c), "--layer", "0", "--positions", str(10**30), "--out", c.out],
        "is out of range"),
    Case("tuned-lens-eval-seed-too-large", lambda c: [
        "tuned-lens", "eval", *M(c), "--seed", "1180591620717411303423", "--out", c.out],
        "--seed"),
    Case("compare-empty-out", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}), "--out", ""],
        "empty output folder name"),
    Case("sae-export-empty-out", lambda c: [
        "sae", "export", _tiny_sae(c), "--out", ""], "empty output folder name",
        out_is_artifact=True),
    Case("sae-eval-empty-out", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--out", ""],
        "empty output folder name"),
    Case("lens-empty-out", lambda c: ["lens", "hi", *M(c), "--out", ""],
         "empty output folder name"),
    Case("corpus-build-empty-out", lambda c: ["corpus", "build", "--out", ""],
         "empty output folder name"),
    Case("lens-out-is-current-folder", lambda c: [
        "lens", "hi", *M(c), "--out", "."], "is the current folder"),
    Case("generate-out-above-the-package", lambda c: [
        "generate", "hi", *M(c), "--out", str(Path(__file__).resolve().parents[4])],
        "holds interp's own source"),
    Case("capture-out-is-the-cache", lambda c: [
        "capture", "hi", *M(c), "--layer", "0", "--out", _cache()], "is interp's cache"),
    Case("compare-out-is-an-input", lambda c: [
        "compare", _result(c, "a", {"x": 1.0}), _result(c, "b", {"x": 2.0}), "--out",
        str(c.tmp / "a")], "is the input folder"),
    Case("sae-export-out-is-the-sae", lambda c: [
        "sae", "export", _tiny_sae(c), "--out", _tiny_sae(c)], "is the input folder",
        out_is_artifact=True),
    Case("sae-eval-line-break-in-name", lambda c: [
        "sae", "eval", str(c.tmp / "a\x1eb\nc"), *M(c), "--out", c.out], "a\\x1eb c"),
    Case("steer-train-over-long-out", lambda c: [
        "steer", "train", "--pairs", c.file("p.jsonl", _pairs()), "--layer", "1", *M(c),
        "--out", str(c.tmp / ("n" * 300))], "is too long", out_is_artifact=True),
    # ---------------------- requests beyond the text (issue 28): refused before the model runs
    Case("sae-train-tokens-beyond-text", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "SAE training asks for tokens=50,000,000", out_is_artifact=True),
    Case("sae-train-layers-tokens-beyond-text", lambda c: [
        "sae", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "lower tokens (or windows_per_chunk) or give more text",
        out_is_artifact=True),
    Case("sae-eval-tokens-beyond-text", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "5000",
        "--out", c.out], "SAE evaluation asks for tokens=5,000, ce_tokens=5,000"),
    Case("sae-eval-ce-tokens-beyond-text", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "10",
        "--ce-tokens", "5000", "--out", c.out], "ce_tokens=5,000 (40 windows of seq_len=128"),
    Case("sae-browse-tokens-beyond-text", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "5000",
        "--out", c.out], "the feature browser asks for tokens=5,000"),
    Case("sae-explain-feature-out-of-range", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), *_EXPLAIN, "--features",
        "99", "--out", c.out], "feature index 99 is out of range"),
    Case("sae-explain-dead-feature", lambda c: [
        "sae", "explain", _dead_feature_sae(c), *M(c), "--text", _text(c), *_EXPLAIN,
        "--features", "0,2", "--out", c.out], "feature 2 never fires"),
    Case("sae-explain-base-explainer", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), *_EXPLAIN,
        "--explainer", c.no_template, "--out", c.out], "is not an instruct model"),
    Case("sae-explain-unknown-method", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--methods", "simulation",
        "--out", c.out], "detection, fuzzing or both"),
    Case("sae-explain-too-few-permutations", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--permutations", "10",
        "--out", c.out], "Invalid value for '--permutations': 10 is not in the range x>=99"),
    Case("sae-explain-tokens-beyond-text", lambda c: [
        "sae", "explain", _tiny_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "automatic interpretation asks for tokens=65,536"),
    Case("sae-explain-transcoder-other-width", lambda c: [
        "sae", "explain", f"{_tiny_transcoders(c, [0], 32)}/layer-0", *M(c), "--text",
        _text(c), *_EXPLAIN, "--out", c.out], "reads activations of width d_in=32"),
    Case("sae-explain-transcoder-run-not-a-layer", lambda c: [
        "sae", "explain", _tiny_transcoders(c, [0, 1]), *M(c), "--text", _text(c),
        *_EXPLAIN, "--out", c.out], "holds transcoders for layers 0, 1: name one, e.g."),
    Case("sae-browse-explanations-not-records", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "200",
        "--seq-len", "24", "--explanations", c.file("y.jsonl", "[1, 2]\n"),
        "--out", c.out], "line 1 is not an explanation record"),
    Case("sae-browse-explanations-of-another-sae", lambda c: [
        "sae", "browse", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "200",
        "--seq-len", "24", "--explanations", c.file("x.jsonl", '{"feature": 40}\n'),
        "--out", c.out], "outside the SAE's d_sae=16"),
    Case("tuned-lens-train-tokens-beyond-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "tuned-lens training asks for tokens=50,000,000",
        out_is_artifact=True),
    Case("tuned-lens-eval-tokens-beyond-text", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _tiny_lens(c), "--text", _text(c),
        "--tokens", "5000", "--out", c.out], "lens evaluation asks for tokens=5,000"),
    # ---------------------- transcoders and attribution graphs (issue 31)
    Case("transcoder-train-tokens-beyond-text", lambda c: [
        "transcoder", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--tokens",
        "50000000", "--out", c.out], "lower tokens (or windows_per_chunk) or give more text",
        out_is_artifact=True),
    Case("transcoder-train-bad-layer", lambda c: [
        "transcoder", "train", *M(c), "--layers", "0,7", "--text", _text(c), "--out", c.out],
        "layer 7", out_is_artifact=True),
    Case("transcoder-eval-no-transcoders", lambda c: [
        "transcoder", "eval", _folder(c, "empty_tc"), *M(c), "--text", _text(c),
        "--out", c.out], "no transcoders in"),
    Case("transcoder-eval-an-sae", lambda c: [
        "transcoder", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "a 'sae' artifact, expected 'transcoder'"),
    Case("graph-no-transcoders", lambda c: [
        "graph", "The capital of France is", "--transcoders", _folder(c, "no_tc"), *M(c),
        "--no-contexts", "--out", c.out], "no transcoders in"),
    Case("graph-layer-mismatch", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 5]),
        *M(c), "--no-contexts", "--out", c.out], "has layers 0–2"),
    Case("graph-other-width", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0], 32),
        *M(c), "--no-contexts", "--out", c.out], "reads activations of width d_in=32"),
    Case("graph-target-not-one-token", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--target", " Parisian capital, Rome", *M(c), "--no-contexts", "--out", c.out],
        "must be one token"),
    Case("graph-target-not-a-pair", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--target", " Paris", *M(c), "--no-contexts", "--out", c.out], "ANSWER,WRONG"),
    Case("graph-prompt-too-long", lambda c: [
        "graph", "word " * 200, "--transcoders", _tiny_transcoders(c, [0, 1]), *M(c),
        "--no-contexts", "--out", c.out], "over the limit of 64"),
    Case("graph-prompt-and-task", lambda c: [
        "graph", "hi there", "--task", "ioi", "--transcoders", _tiny_transcoders(c, [0]),
        *M(c), "--out", c.out], "not both"),
    Case("graph-missing-task", lambda c: [
        "graph", "--task", str(c.tmp / "nope.jsonl"), "--transcoders",
        _tiny_transcoders(c, [0]), *M(c), "--out", c.out], "nope.jsonl"),
    Case("graph-max-edges-zero", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--max-edges", "0", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--max-edges': 0 is not in the range x>=1"),
    Case("graph-max-feature-nodes-zero", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--max-feature-nodes", "0", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--max-feature-nodes': 0 is not in the range x>=1"),
    Case("graph-control-graphs-negative", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--control-graphs", "-1", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--control-graphs': -1 is not in the range x>=0"),
    Case("graph-task-limit-zero", lambda c: [
        "graph", "--task", "ioi", "--limit", "0", "--transcoders", _tiny_transcoders(c, [0, 1]),
        *M(c), "--out", c.out], "Invalid value for '--limit': 0 is not in the range x>=1"),
    Case("graph-neither-prompt-nor-task", lambda c: [
        "graph", "--transcoders", _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "give a PROMPT (or --task capitals|ioi|pronoun|FILE)"),
    Case("graph-task-with-save-adjacency", lambda c: [
        "graph", "--task", "ioi", "--save-adjacency", "--transcoders",
        _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "--save-adjacency is for one PROMPT's graph, not --task"),
    Case("graph-task-with-target", lambda c: [
        "graph", "--task", "ioi", "--target", " Mary, John", "--transcoders",
        _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "--target is for one PROMPT's graph, not --task"),
    Case("steer-train-tokens-beyond-text", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "1", "--text", _text(c),
        "--tokens", "5000", *M(c), "--out", c.out],
        "a feature's steering scale asks for tokens=5,000", out_is_artifact=True),
]


def _folder(ctx: Ctx, name: str) -> str:
    (ctx.tmp / name).mkdir()
    return str(ctx.tmp / name)


def _binary(ctx: Ctx, name: str) -> str:
    (ctx.tmp / name).write_bytes(bytes(range(256)) * 4)
    return str(ctx.tmp / name)


def _cache() -> str:
    from interp.runs.paths import cache_dir

    return str(cache_dir())


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


def _tiny_lens(ctx: Ctx) -> str:
    """A tuned lens (identity translators) saved for the tiny model."""
    import interp
    from interp.lenses.tuned import Translators, TunedLens

    model = interp.load(ctx.tiny)
    tr = Translators(model.n_layers - 1, model.d_model)
    return str(TunedLens(model, tr).save(ctx.tmp / "tiny_lens", config={}, manifest={}))


def _truncated_sae(ctx: Ctx) -> str:
    path = _sae_artifact(ctx, "trunc_sae", 64, ctx.tiny)
    w = path / "weights.safetensors"
    w.write_bytes(w.read_bytes()[: len(w.read_bytes()) // 2])
    return str(path)


_EXPLAIN = ["--tokens", "120", "--seq-len", "24", "--ctx-len", "8", "--n-score", "2",
            "--bootstrap", "100"]


def _dead_feature_sae(ctx: Ctx) -> str:
    """The tiny SAE with feature 2 unable to fire."""
    import torch

    from saes.loading import load_sae

    path = _sae_artifact(ctx, "dead_sae", 64, ctx.tiny)
    sae = load_sae(path).sae
    with torch.no_grad():
        sae.b_enc[2] = -1e4
    return str(sae.save(ctx.tmp / "dead_sae2", manifest={}))


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


def _tiny_sae(ctx: Ctx) -> str:
    return str(_sae_artifact(ctx, "tiny_sae", 64, ctx.tiny))


def _foreign_sae(ctx: Ctx) -> str:
    return str(_sae_artifact(ctx, "foreign_sae", 32, ctx.other_d_model))


def _saelens_dir(ctx: Ctx, cfg_text: str) -> str:
    path = ctx.tmp / "saelens"
    path.mkdir(exist_ok=True)
    (path / "cfg.json").write_text(cfg_text)
    (path / "sae_weights.safetensors").write_bytes(b"")
    return str(path)


def _nan_threshold_saelens(ctx: Ctx) -> str:
    """A SAELens JumpReLU folder (our own export) whose threshold holds one NaN."""
    import safetensors.torch

    from saes.architectures import JumpReLUSAE
    from saes.sae import SAEConfig
    from saes.saelens import export_saelens

    sae = JumpReLUSAE(SAEConfig(d_in=8, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                layer=1, model_id="tiny", architecture="jumprelu"))
    out = export_saelens(sae, ctx.tmp / "jumprelu-saelens")
    weights = out / "sae_weights.safetensors"
    t = safetensors.torch.load_file(str(weights))
    t["threshold"][3] = float("nan")
    safetensors.torch.save_file(t, str(weights))
    return str(out)


def _text(ctx: Ctx) -> str:
    """A text file with held-out paragraphs (the sha256 rule keeps ~5% of 200)."""
    return ctx.file("t.txt", "\n\n".join(f"Paragraph {i} says something." for i in range(200)))


def _syc(n: int) -> str:
    return "\n".join(json.dumps({"question": f"What is {i} + 1?", "correct": str(i + 1),
                                 "incorrect": str(i + 2), "domain": "arithmetic"})
                     for i in range(n))


@pytest.fixture(scope="module")
def ctx_models(tiny_model_dir, tmp_path_factory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("no-template")
    nt = base / "tiny"
    shutil.copytree(tiny_model_dir, nt)
    cfg_path = nt / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("chat_template", None)
    cfg_path.write_text(json.dumps(cfg))
    (nt / "chat_template.jinja").unlink(missing_ok=True)
    return str(nt), "other-model-d32"


@pytest.fixture(scope="module")
def ctx_files(tiny_model_dir, tmp_path_factory) -> tuple[dict[str, str], str]:
    """Broken model sources: GGUFs transformers cannot load, a folder without a tokenizer."""
    from tests.unit.interp.test_gguf_convert import make_model, train_tokenizer, write_gguf

    base = tmp_path_factory.mktemp("bad-models")
    tok = train_tokenizer()
    model = make_model(len(tok))
    odd = write_gguf(base / "odd.gguf", model, tok, arch="nosucharch")
    good = write_gguf(base / "good.gguf", model, tok)
    cut = base / "cut.gguf"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    no_tok = base / "no-tokenizer"
    no_tok.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(Path(tiny_model_dir) / name, no_tok / name)
    return {"odd-arch": str(odd), "truncated": str(cut)}, str(no_tok)


def _cache_listing() -> list[str]:
    from interp.runs.paths import cache_dir

    models = cache_dir() / "models"
    return sorted(str(p.relative_to(models)) for p in models.rglob("*")) if models.exists() else []


def _snapshot(path: Path) -> dict[str, bytes] | None:
    if not path.exists():
        return None
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tiny_model_dir, ctx_models, ctx_files, tmp_path, capsys):
    no_template, other = ctx_models
    ggufs, no_tokenizer = ctx_files
    ctx = Ctx(tmp_path, str(tiny_model_dir), other, no_template, ggufs, no_tokenizer)
    out = Path(ctx.out)
    if not case.out_is_artifact:
        out.mkdir()
        (out / "keep.txt").write_text("keep me")
        (out / "report.html").write_text("previous report")
    args = case.args(ctx)
    before = _snapshot(out)
    cached = _cache_listing()
    code, _, err = run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and case.message in lines[0], lines[0]
    assert _snapshot(out) == before, "a failed command must leave --out as it was"
    assert _cache_listing() == cached, "a failed command must leave nothing in the cache"


def test_matrix_covers_every_verb():
    """Every CLI verb (leaf command) has at least one bad-input case."""
    import click

    from interp.cli import cli

    def leaves(group: click.Group, prefix: str) -> list[str]:
        out = []
        for name, cmd in group.commands.items():
            full = f"{prefix}{name}"
            out += leaves(cmd, f"{full}-") if isinstance(cmd, click.Group) else [full]
        return out

    verbs = leaves(cli, "")
    ids = [c.id for c in CASES]
    missing = [v for v in verbs if not any(i.startswith(v + "-") for i in ids)]
    assert not missing, f"verbs without bad-input cases: {missing}"
    assert len(CASES) >= 40


def test_the_reliability_page_states_the_count():
    """docs/reliability.md quotes the number of cases through the ``count`` role, which
    counts this table when the site is built (no number kept by hand)."""
    import sys

    root = Path(__file__).resolve().parents[3]
    page = (root / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert re.search(r"\{count\}`bad-inputs`\s+cases in\s+`tests/unit/interp/test_bad_inputs.py`",
                     page), "the page no longer quotes the generated count"
    sys.path.insert(0, str(root / "docs" / "_ext"))
    try:
        from counts import COUNTS
    finally:
        sys.path.remove(str(root / "docs" / "_ext"))
    assert COUNTS["bad-inputs"]() == len(CASES)
