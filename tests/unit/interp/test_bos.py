"""BOS from the tokenizer: every path sees the ids ``tokenizer(text)`` gives (issue 20).

A tiny random Llama whose tokenizer adds a BOS (``<|im_start|>``) stands for a model
trained with one (Gemma); the plain tiny model (no BOS, like SmolLM2) must be unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

TEXT = "The capital of France is"


@pytest.fixture(scope="module")
def bos_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import processors
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("tiny-bos") / "tiny"
    shutil.copytree(tiny_model_dir, out)
    tok = AutoTokenizer.from_pretrained(str(out))
    bos = tok.convert_tokens_to_ids("<|im_start|>")
    tok._tokenizer.post_processor = processors.TemplateProcessing(  # noqa: SLF001
        single="<|im_start|> $A", pair="<|im_start|> $A $B",
        special_tokens=[("<|im_start|>", bos)])
    tok.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def bos_model(bos_model_dir: Path):
    import interp

    return interp.load(str(bos_model_dir))


def _row(ids: torch.Tensor, mask: torch.Tensor) -> list[int]:
    return [int(i) for i, m in zip(ids.tolist(), mask.tolist(), strict=True) if m]


def test_prefix_read_from_the_tokenizer(tiny_model, bos_model):
    assert tiny_model.special_prefix == [] and not tiny_model.adds_bos
    bos = bos_model.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert bos_model.special_prefix == [bos] and bos_model.adds_bos
    assert bos_model.manifest_info()["special_prefix"] == [bos]
    want = list(bos_model.tokenizer(TEXT)["input_ids"])
    assert want[0] == bos
    assert bos_model.encode(TEXT) == want
    assert tiny_model.encode(TEXT) == list(tiny_model.tokenizer(TEXT)["input_ids"])
    assert bos_model.encode_continuation(" Paris")[0] != bos


def test_chat_template_bos_is_not_doubled(bos_model):
    text = bos_model.format_prompt("Hi", chat=True)
    assert text.startswith("<|im_start|>")
    ids = bos_model.encode(text)
    assert ids[:2] != bos_model.special_prefix * 2
    assert ids == list(bos_model.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_capture_lens_and_generate_see_the_tokenizers_ids(bos_model):
    import interp

    want = list(bos_model.tokenizer(TEXT)["input_ids"])
    acts = interp.capture(bos_model, [TEXT, TEXT + " Paris"], layers=[0], positions="all")
    assert _row(acts.input_ids[0], acts.mask[0]) == want
    ids, mask = bos_model.tokenize([TEXT, "a"])
    assert _row(ids[0], mask[0]) == want
    lens = interp.run_lens(bos_model, TEXT).logit
    assert lens.token_ids == want
    seen: list[list[int]] = []

    def record(module, args):  # noqa: ANN001, ANN202, ARG001
        if not seen:
            seen.append([int(i) for i in args[0][0].tolist()])

    handle = bos_model.bridge.embed.register_forward_pre_hook(record)
    try:
        interp.generate(bos_model, [TEXT], max_new_tokens=2)
    finally:
        handle.remove()
    assert seen and seen[0][-len(want):] == want


def test_no_bos_model_unchanged(tiny_model):
    import interp

    want = list(tiny_model.tokenizer(TEXT, add_special_tokens=False)["input_ids"])
    acts = interp.capture(tiny_model, [TEXT], layers=[0], positions="all")
    assert _row(acts.input_ids[0], acts.mask[0]) == want
