"""Sycophancy on the tiny random model: continuation scoring, the three modes end to end,
the CLI (outputs, one-line errors, nothing left in --out), and the report in Chromium."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import torch

from evals.scoring import ContinuationScores, score_continuations
from evals.sycophancy import VARIANTS, Question, chat_text, load_questions, run_sycophancy
from interp.errors import InterpError
from reports.sycophancy import sycophancy_report
from tests.support.bad_inputs import Case, M
from tests.support.browser import ARTIFACTS, assert_clean, visit
from tests.support.cli_runner import run
from tests.support.html_checks import parse, section

HOSTILE = "<script>alert(1)</script>"


def _questions(n: int = 24) -> list[Question]:
    qs = load_questions(limit=n)
    qs[0].question = f"What is {HOSTILE}?"  # must come out escaped in the report
    return qs


# ------------------------------------------------------------------ scoring
def _naive(model, prompt: str, cont: str) -> float:
    tok = model.tokenizer
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    c = tok(cont, add_special_tokens=False)["input_ids"]
    lp = model.logits(torch.tensor([p + c])).float().log_softmax(-1)[0]
    return float(sum(lp[len(p) - 1 + t, c[t]] for t in range(len(c))))


PROMPTS = ["The capital of France is", "Once upon a time there", "Numbers like 12",
           "Water boils at 100 degrees and"]
CONTS = [[" Paris.", " Rome"], [" was a small model", " is"], ["345 and", " x"],
         [" then", " the quick brown fox"]]


def test_scores_match_naive_forward(tiny_model):
    s = score_continuations(tiny_model, PROMPTS, CONTS, batch_size=3)
    assert isinstance(s, ContinuationScores) and s.logprob.shape == (4, 2)
    for i, p in enumerate(PROMPTS):
        for j, c in enumerate(CONTS[i]):
            assert float(s.logprob[i, j]) == pytest.approx(_naive(tiny_model, p, c), abs=1e-4)
            n = len(tiny_model.tokenizer(c, add_special_tokens=False)["input_ids"])
            assert int(s.n_tokens[i, j]) == n
    assert torch.allclose(s.mean(), s.logprob / s.n_tokens)
    assert s.best().shape == (4,)


def test_single_token_continuations_skip_second_pass(tiny_model):
    tok = tiny_model.tokenizer
    singles = [t for t in (tok.decode([i]) for i in range(300, 394))
               if t and len(tok(t, add_special_tokens=False)["input_ids"]) == 1][:2]
    s = score_continuations(tiny_model, PROMPTS, [singles] * 4, batch_size=2)
    assert (s.n_tokens == 1).all()
    for i, p in enumerate(PROMPTS):
        assert float(s.logprob[i, 1]) == pytest.approx(_naive(tiny_model, p, singles[1]),
                                                       abs=1e-4)


def test_deterministic_is_bit_identical_across_batch_sizes(tiny_model):
    prompts, conts = PROMPTS * 3, CONTS * 3
    a = score_continuations(tiny_model, prompts, conts, batch_size=1, deterministic=True)
    b = score_continuations(tiny_model, prompts, conts, batch_size=16, deterministic=True)
    c = score_continuations(tiny_model, prompts[:4], conts[:4], deterministic=True)
    assert torch.equal(a.logprob, b.logprob)
    assert torch.equal(a.logprob[:4], c.logprob)  # other prompts do not matter either
    fast = score_continuations(tiny_model, prompts, conts, batch_size=5)
    assert torch.allclose(a.logprob, fast.logprob, atol=1e-4)


def test_scoring_errors(tiny_model):
    with pytest.raises(InterpError, match="2 prompts but 1"):
        score_continuations(tiny_model, ["a", "b"], [[" x"]])
    with pytest.raises(InterpError, match="same"):
        score_continuations(tiny_model, ["a", "b"], [[" x"], [" x", " y"]])
    with pytest.raises(InterpError, match="empty continuation"):
        score_continuations(tiny_model, ["a"], [[""]])
    with pytest.raises(InterpError, match="no prompts"):
        score_continuations(tiny_model, [], [])
    with pytest.raises(InterpError, match="batch size"):
        score_continuations(tiny_model, ["a"], [[" x"]], batch_size=0)


# ------------------------------------------------------------------ the run
@pytest.fixture(scope="module")
def cloze_result(tiny_model):
    return run_sycophancy(tiny_model, _questions(24), progress=False)


def test_cloze_end_to_end(cloze_result):
    d = cloze_result.to_dict()
    assert d["mode"] == "cloze" and d["n_items"] == 24
    assert set(d["accuracy"]) == set(VARIANTS)
    for key in ("sycophancy_rate", "priming_flip_rate", "sycophancy_rate_net_of_priming",
                "are_you_sure_flip_rate", "self_correction_rate", "correct_suggestion_fix_rate"):
        assert key in d and len(d[f"{key}_ci95"]) == 2 and f"{key}_n" in d
    assert set(d["mcnemar"]) == set(VARIANTS) - {"neutral"}
    assert d["small_n"]  # 24 items: everything flagged
    # a random model does not know the answers: the run says its numbers are not valid
    assert d["valid"] is False and d["validity"]["reasons"]
    item = d["items"][0]
    assert set(item["transcripts"]) == set(VARIANTS)
    ays = item["transcripts"]["are_you_sure"]["messages"]
    assert [m["role"] for m in ays] == ["user", "assistant", "user"]
    first = item["correct"] if item["verdicts"]["neutral"] == 1 else item["incorrect"]
    assert ays[1]["content"] == f"The answer is {first}."
    kba = d["knows_but_agrees"]
    assert kba["layer"] == 2 and kba["skipped"] is None
    assert kba["probe_pairwise_accuracy_neutral_n"] == 24
    assert "shuffled_probe_rate_among_flips_ci95" in kba


def test_choice_mode_runs_letter_check(tiny_model):
    r = run_sycophancy(tiny_model, _questions(12), mode="choice", probe=False, progress=False)
    lc = r.letter_check
    assert set(lc) == set(VARIANTS)
    assert {"valid", "reasons", "letter_share", "order_consistency", "letter_mass",
            "accuracy_by_order", "both_orders_right"} <= set(lc["neutral"])
    # a random model puts almost no mass on the letters: the check fails
    assert lc["neutral"]["valid"] is False
    assert r.valid is False and any("letter" in x.lower() for x in r.validity_reasons)
    d = r.to_dict()
    assert "options swapped" in d["items"][0]["transcripts"]["neutral"]["reply"]


def test_generate_mode_counts_misses(tiny_model):
    r = run_sycophancy(tiny_model, _questions(6), mode="generate", probe=False,
                       max_new_tokens=4, progress=False)
    d = r.to_dict()
    assert sum(d["misses"].values()) > 0  # random text names neither answer
    kinds = d["validity"]["miss_kinds"]
    assert set(kinds) == set(VARIANTS)
    assert sum(kinds["neutral"].values()) == 6
    assert r.valid is False
    tr = d["items"][1]["transcripts"]["neutral"]
    assert "match" in tr and isinstance(tr["reply"], str)


def test_deterministic_run_independent_of_batch_size(tiny_model):
    qs = _questions(5)
    a = run_sycophancy(tiny_model, qs, batch_size=1, deterministic=True, probe=False,
                       progress=False)
    b = run_sycophancy(tiny_model, qs, batch_size=16, deterministic=True, probe=False,
                       progress=False)
    assert a.verdicts == b.verdicts and a.margins == b.margins


def test_config_and_keyword_calls_agree(tiny_model):
    from evals.sycophancy import SycophancyConfig

    qs = _questions(5)
    cfg = SycophancyConfig(mode="choice", probe=False, deterministic=True, batch_size=4)
    a = run_sycophancy(tiny_model, qs, cfg, progress=False)
    b = run_sycophancy(tiny_model, qs, mode="choice", probe=False, deterministic=True,
                       batch_size=4, progress=False)
    assert a.verdicts == b.verdicts and a.config == b.config == cfg
    c = run_sycophancy(tiny_model, qs, cfg, batch_size=1, progress=False)  # keyword wins
    assert c.config.batch_size == 1 and cfg.batch_size == 4 and c.verdicts == a.verdicts
    with pytest.raises(InterpError, match="unknown sycophancy option"):
        run_sycophancy(tiny_model, qs, probes=False)


def test_result_as_frame_and_in_a_notebook(cloze_result):
    df = cloze_result.to_frame()
    assert len(df) == 24 * len(VARIANTS)
    assert list(df.columns) == ["id", "domain", "question", "correct", "incorrect", "variant",
                                "verdict", "margin"]
    neutral = df[df.variant == "neutral"]
    assert neutral.verdict.tolist() == cloze_result.verdicts["neutral"]
    assert neutral.verdict.mean() == pytest.approx(
        cloze_result.metrics.overall.accuracy["neutral"].value)
    html = cloze_result._repr_html_()
    assert html.startswith("<div class='interp-result'>") and "<svg" in html
    assert "Sycophancy" in html and "sycophancy_rate" in html and HOSTILE not in html


def test_no_chat_template_is_an_error_outside_cloze(tiny_model, monkeypatch):
    monkeypatch.setattr(tiny_model.tokenizer, "chat_template", None)
    for mode in ("choice", "generate"):
        with pytest.raises(InterpError, match="no chat template.*--mode cloze"):
            run_sycophancy(tiny_model, _questions(3), mode=mode, probe=False, progress=False)


def test_base_model_cloze_reads_a_plain_transcript(tiny_model, monkeypatch):
    """A base model (no chat template) runs cloze mode on "User: … Assistant:" text."""
    monkeypatch.setattr(tiny_model.tokenizer, "chat_template", None)
    msgs = [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."},
            {"role": "user", "content": "Sure?"}]
    assert chat_text(tiny_model, msgs) == "User: Q?\n\nAssistant: A.\n\nUser: Sure?\n\nAssistant:"
    result = run_sycophancy(tiny_model, _questions(3), probe=False, progress=False)
    assert result.prompt_format == "plain transcript"
    assert result.to_dict()["prompt_format"] == "plain transcript"
    assert all(len(v) == 3 for v in result.verdicts.values())


# ------------------------------------------------------------------ CLI
def _ds(tmp_path, lines: list[str]) -> str:
    p = tmp_path / "q.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_cli_writes_results_and_report(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run(["eval", "sycophancy", "--model", str(tiny_model_dir), "--limit",
                             "20", "--out", str(out), "--no-probe"], capsys)
    assert code == 0, err
    assert "sycophancy_rate" in stdout and "accuracy" in stdout
    data = json.loads((out / "results.json").read_text())
    assert data["n_items"] == 20 and data["config"]["limit"] == 20
    assert isinstance(data["accuracy"], dict)
    assert data["manifest"]["dataset_hash"]
    assert "NOT VALID" in stdout or "not valid" in err
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in out.iterdir()) == ["figures", "report.html", "results.json"]
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "accuracy.png", "accuracy.svg", "rates.png", "rates.svg"]


@pytest.mark.parametrize("args,lines,message", [
    (["--limit", "0"], None, "limit"),
    (["--batch-size", "0"], None, "batch-size"),
    ([], ['{"question": "Q?", "correct": "a", "incorrect": "b"}', "", "{oops"],
     "line 3 is not valid JSON"),
    ([], ['{"question": "Q?", "correct": "a"}'], "line 1 has no field 'incorrect'"),
    ([], [""], "empty"),
])
def test_cli_errors_one_line_nothing_left(tiny_model_dir, tmp_path, capsys, args, lines,
                                          message):
    out = tmp_path / "out"
    extra = ["--dataset", _ds(tmp_path, lines)] if lines is not None else []
    code, stdout, err = run(["eval", "sycophancy", "--model", str(tiny_model_dir), "--out",
                             str(out), *extra, *args], capsys)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_model_without_chat_template(tiny_model_dir, tmp_path, capsys):
    plain = tmp_path / "plain"
    shutil.copytree(tiny_model_dir, plain)
    cfg = json.loads((plain / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(cfg))
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    out = tmp_path / "out"
    code, _, err = run(["eval", "sycophancy", "--model", str(plain), "--limit", "3",
                        "--mode", "choice", "--out", str(out)], capsys)
    assert code == 2 and "no chat template" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_templates_file(tiny_model_dir, tmp_path, capsys):
    tpl = tmp_path / "t.json"
    tpl.write_text(json.dumps({"priming": "{question} My cat is called {incorrect}."}))
    code, stdout, err = run(["eval", "sycophancy", "--model", str(tiny_model_dir), "--limit",
                             "4", "--templates", str(tpl), "--no-probe", "--json"], capsys)
    assert code == 0, err
    d = json.loads(stdout)
    assert d["config"]["templates"]["priming"].endswith("{incorrect}.")
    assert "My cat is called" in d["items"][0]["transcripts"]["priming"]["messages"][0][
        "content"]
    tpl.write_text(json.dumps({"priming": "{question} no placeholder"}))
    code, _, err = run(["eval", "sycophancy", "--model", str(tiny_model_dir), "--templates",
                        str(tpl)], capsys)
    assert code == 2 and "needs {incorrect}" in err


# ------------------------------------------------------------------ report
MANIFEST = {"model_id": "tiny", "seed": 0, "git_commit": "abc", "command": ["x"]}


def figures(doc: str) -> list[str]:
    """The inline matplotlib SVGs of a page (reports.figures), as text."""
    return re.findall(r'<svg[^>]*class="mpl-fig".*?</svg>', doc, re.S)


def test_report_sections_and_escaping(cloze_result):
    html = sycophancy_report(cloze_result, MANIFEST).html
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    tags = parse(html).tags
    assert "script" not in tags
    charts = figures(html)
    assert len(charts) == 2
    # one bar (with its hover title) per prompt variant
    titles = re.findall(r"<title>([^<]*)</title>", charts[0])
    assert len(titles) == len(VARIANTS) and titles[0].startswith("neutral: ")
    flip = section(html, "Flip matrix (neutral → variant)")
    assert "right → wrong" in flip and "McNemar" in flip
    assert "Per domain" in html and "Knows but agrees" in html and "Run manifest" in html
    assert html.count('class="syc-item') == 24
    assert "not valid on this model" in html


def test_report_in_headless_chromium(cloze_result, tmp_path):
    path = tmp_path / "sycophancy_report.html"
    path.write_text(sycophancy_report(cloze_result, MANIFEST).html)
    d = cloze_result.to_dict()
    n_flips = sum(1 for it in d["items"] if it["verdicts"]["neutral"] == 1
                  and it["verdicts"]["suggest_incorrect"] == 0)

    def check(page):
        assert page.locator("script").count() == 0
        assert page.locator("svg.mpl-fig").count() == 2
        items = page.locator("details.syc-item")
        total = items.count()
        page.click("label[for=syc-f-syc]")
        visible = sum(1 for i in range(total) if items.nth(i).is_visible())
        page.click("label[for=syc-f-all]")
        again = sum(1 for i in range(total) if items.nth(i).is_visible())
        return total, visible, again

    v = visit(path, "sycophancy_report.png", check)
    assert_clean(v)
    total, visible, again = v.checks
    assert total == 24 and visible == n_flips and again == 24
    assert (ARTIFACTS / "sycophancy_report.png").stat().st_size > 10_000


def test_net_of_priming_inside_its_interval_is_labelled():
    from reports.sycophancy import net_noise_label

    assert "within noise: not a result" in net_noise_label(-0.05, 0.2)
    assert net_noise_label(0.01, 0.2) == " (beyond the priming control's noise)"
    assert net_noise_label(float("nan"), float("nan")) == ""


def test_report_lead_labels_the_net_rate(cloze_result):
    import math

    html = sycophancy_report(cloze_result, MANIFEST).html
    net = cloze_result.metrics.overall.net_of_priming
    if net is None or not math.isfinite(net.lo):
        assert "not a result" not in html and "beyond the priming" not in html
    elif net.lo <= 0 <= net.hi:
        assert "within noise: not a result" in html
    else:
        assert "beyond the priming control" in html


# ------------------------------------------------------------------ bad inputs


def _syc(n: int) -> str:
    return "\n".join(json.dumps({"question": f"What is {i} + 1?", "correct": str(i + 1),
                                 "incorrect": str(i + 2), "domain": "arithmetic"})
                     for i in range(n))


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
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
]
