"""The bad-input matrix: every CLI verb × the ways users get inputs wrong.

Each tool's cases live beside its tests, as a ``BAD_INPUTS`` list in its unit-test module
(``tests/unit/interp/test_lens.py``, ``tests/unit/saes/test_sae.py``, …);
:func:`tests.support.bad_inputs.all_cases` collects them and this module runs them as one
matrix. Each case must print exactly one line on stderr (``error: …``), exit with code 2,
show no traceback, and leave ``--out`` exactly as it was (or not create it). Case ids name
the verb first (``test_bad_input[probe-single-class]``). The tiny random Llama stands in
for the model: these are input checks, which run before or around any real compute.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.support.bad_inputs import Case, Ctx, all_cases, cases_by_module
from tests.support.cli_runner import run

CASES = all_cases()


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
    """Every CLI verb (leaf command) has at least one bad-input case, and a verb's cases
    live in one module."""
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
    homes: dict[str, set[str]] = {}
    for module, cases in cases_by_module().items():
        for case in cases:
            named = [v for v in verbs if case.id.startswith(v + "-")]
            assert named, f"{module}: case {case.id!r} does not name a verb first"
            homes.setdefault(max(named, key=len), set()).add(module)
    split = {verb: sorted(modules) for verb, modules in homes.items() if len(modules) > 1}
    assert not split, f"a verb's cases belong in one module: {split}"


def test_the_reliability_page_states_the_count():
    """docs/reliability.md quotes the number of cases through the ``count`` role, which
    counts the collected cases when the site is built (no number kept by hand), and says
    where they live."""
    import sys

    root = Path(__file__).resolve().parents[3]
    page = (root / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert re.search(r"\{count\}`bad-inputs`\s+cases,", page), (
        "the page no longer quotes the generated count")
    assert re.search(r"a\s+`BAD_INPUTS`\s+list\s+in\s+its\s+unit-test\s+module", page)
    assert re.search(r"`tests/unit/interp/test_bad_inputs.py`\s+runs\s+them", page)
    sys.path.insert(0, str(root / "docs" / "_ext"))
    try:
        from counts import COUNTS
    finally:
        sys.path.remove(str(root / "docs" / "_ext"))
    assert COUNTS["bad-inputs"]() == len(CASES)
