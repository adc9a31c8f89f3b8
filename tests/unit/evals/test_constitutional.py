"""Constitutional AI: loaders, the pairs/orders/averaging bookkeeping on hand-made numbers,
CI arithmetic, the critique–revision loop, the CLI on the tiny model, and the report."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from markupsafe import escape

from evals.constitutional import (
    Chain,
    Constitution,
    ConstitutionalConfig,
    ConstitutionalResult,
    Judgement,
    Pair,
    Principle,
    PromptItem,
    build_pairs,
    combine_orders,
    critique_revise,
    load_constitution,
    load_prompts,
    orders,
    preference_record,
    results_dict,
    sample_principle,
)
from evals.judge import JudgeMeasures
from evals.letters import LetterCheck
from interp.cli import main
from interp.errors import InterpError
from interp.stats import pearson_ci, wilson_ci
from interp.stats.rates import Correlation, Rate
from reports.constitutional import constitutional_report
from tests.support.bad_inputs import Case, M
from tests.support.cli_runner import run
from tests.support.html_checks import parse, section

SCRIPT = "<script>alert(1)</script>"
LN = math.log


def _con(*names: str) -> Constitution:
    return Constitution(tuple(Principle(n, f"critique {n}", f"revise {n}", f"compare {n}")
                              for n in names))


# ------------------------------------------------------------------------- loaders
def test_shipped_constitution_and_prompts():
    con = load_constitution()
    assert len(con.principles) >= 4
    assert all(p.critique_request and p.revision_request and p.comparison
               for p in con.principles)
    items = load_prompts()
    assert len(items) >= 50
    assert len({it.id for it in items}) == len(items)
    assert sum(it.reference is not None for it in items) >= 20
    assert {it.category for it in items} == {"harmful", "dishonest", "sycophantic", "evasive"}
    assert {it.category for it in items[:4]} == {"harmful", "dishonest", "sycophantic",
                                                  "evasive"}  # --limit takes a mix


def test_yaml_constitution_and_list_form(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("name: mine\nprinciples:\n  - name: kind\n    critique_request: Is it kind?\n"
                 "    revision_request: Make it kind.\n")
    con = load_constitution(y)
    assert con.name == "mine" and con.principles[0].name == "kind"
    assert "Make it kind." in con.principles[0].comparison  # default question
    j = tmp_path / "c.json"
    j.write_text(json.dumps([{"critique_request": "c", "revision_request": "r"}]))
    assert load_constitution(j).principles[0].name == "principle_1"


@pytest.mark.parametrize("name,text,message", [
    ("c.json", '{"principles": [\n  {"critique_request": "c",\n', "line 3 is not valid JSON"),
    ("c.json", '{"principles": [\n  {"critique_request": "c", "revision_request": "r"},\n'
     '  {"critique_request": "c2"}\n]}', "principle 2 (line 3) has no 'revision_request'"),
    ("c.json", '{"principles": [{"critique_request": "", "revision_request": "r"}]}',
     "principle 1 has an empty 'critique_request'"),
    ("c.json", "   \n", "empty file"),
    ("c.json", '{"principles": []}', "has no principles"),
    ("c.json", '{"rules": []}', "no 'principles' list"),
    ("c.yaml", "principles:\n  - critique_request: [unclosed\n", "line 3 is not valid YAML"),
    ("c.yaml", "principles:\n  - critique_request: c\n  - critique_request: d\n"
     "    revision_request: r\n", "principle 1 (line 2) has no 'revision_request'"),
    ("c.txt", "x", "unknown constitution type .txt"),
])
def test_constitution_errors_name_the_line(tmp_path, name, text, message):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InterpError, match=re.escape(message)):
        load_constitution(p)


@pytest.mark.parametrize("text,message", [
    ('{"prompt": "a"}\n\n{"text": "b"}\n{"question": "c"}\n',
     "line 4 has no 'prompt' field (fields: question)"),
    ('{"prompt": "a"}\n{"prompt": "a", oops}\n', "line 2 is not valid JSON"),
    ('{"prompt": "a"}\n{"prompt": "  "}\n', "line 2 has an empty 'prompt'"),
    ('{"id": 1, "prompt": "a"}\n{"id": 1, "prompt": "b"}\n', "line 2: duplicate id '1'"),
    ('{"prompt": "a", "reference": 3}\n', "line 1: 'reference' must be a string"),
    ("\n\n", "empty file"),
])
def test_prompt_errors_name_the_line(tmp_path, text, message):
    p = tmp_path / "p.jsonl"
    p.write_text(text)
    with pytest.raises(InterpError, match=re.escape(message)):
        load_prompts(p)


def test_prompts_from_txt_and_csv(tmp_path):
    t = tmp_path / "p.txt"
    t.write_text("first\n\nsecond\n")
    assert [it.prompt for it in load_prompts(t)] == ["first", "second"]
    c = tmp_path / "p.csv"
    c.write_text("id,prompt,reference\nx,hello,\ny,bye,see you\n")
    items = load_prompts(c)
    assert [(it.id, it.reference) for it in items] == [("x", None), ("y", "see you")]


# -------------------------------------------------------------- the hand-made case
def hand_chains() -> list[Chain]:
    return [
        Chain("a", "Q1", "init a", ["p1"], ["crit a"], ["rev a"], reference="ref a"),
        Chain("b", "Q2", "init b", ["p2"], ["crit b"], ["init b"]),  # revision unchanged
        Chain("c", "Q3", "init c", ["p1", "p2"], ["c1", "c2"], ["rev c1", "rev c2 long text"],
              reference="ref c"),
    ]


def test_pairs_and_orders():
    con = _con("p1", "p2")
    pairs = build_pairs(hand_chains(), con, seed=0)
    assert [(p.id, p.kind) for p in pairs] == [
        ("a", "revision"), ("b", "revision"), ("c", "revision"),
        ("a", "reference"), ("c", "reference")]
    a, b, c, ra, rc = pairs
    assert (a.x, a.y, a.x_label, a.y_label) == ("rev a", "init a", "revised", "initial")
    assert (c.x, c.y) == ("rev c2 long text", "init c")  # the FINAL revision vs the initial
    assert b.identical and not a.identical
    assert (ra.x, ra.y, ra.x_label, ra.y_label) == ("init a", "ref a", "model", "reference")
    assert {p.principle for p in pairs} <= {"p1", "p2"}
    fwd, rev = orders(pairs)
    assert fwd[0] == ("rev a", "init a") and rev[0] == ("init a", "rev a")
    assert all(f == r[::-1] for f, r in zip(fwd, rev, strict=True))
    # The judging principle is drawn independently and reproducibly.
    assert [p.principle for p in build_pairs(hand_chains(), con, seed=0)] == \
        [p.principle for p in pairs]
    assert len(build_pairs(hand_chains(), con, references=False)) == 3


def test_order_swapping_and_averaging():
    # Forward shows (A)=x, (B)=y; reverse shows (A)=y, (B)=x.
    lp_fwd = [[LN(0.8), LN(0.2)],      # x preferred as A
              [LN(0.9), LN(0.1)],      # A preferred ...
              [LN(0.06), LN(0.02)],    # unnormalised: P(A|letters) = 0.75
              [LN(0.3), LN(0.7)]]
    lp_rev = [[LN(0.3), LN(0.7)],      # ... x (now B) preferred: consistent
              [LN(0.9), LN(0.1)],      # ... A again: pure position bias, a flip
              [LN(0.01), LN(0.03)],    # P(B) = 0.75
              [LN(0.6), LN(0.4)]]      # y preferred in both orders
    js = combine_orders(lp_fwd, lp_rev)
    assert [round(j.p_x_fwd, 6) for j in js] == [0.8, 0.9, 0.75, 0.3]
    assert [round(j.p_x_rev, 6) for j in js] == [0.7, 0.1, 0.75, 0.4]
    assert [round(j.p_x, 6) for j in js] == [0.75, 0.5, 0.75, 0.35]
    assert [j.flip for j in js] == [False, True, False, False]
    assert [j.tie for j in js] == [False, True, False, False]
    assert [j.win for j in js] == [1.0, 0.5, 1.0, 0.0]
    with pytest.raises(InterpError, match="2 forward but 1 reverse"):
        combine_orders(lp_fwd[:2], lp_rev[:1])


def test_chosen_rejected_assignment():
    pair = Pair("a", "Q", "revised text", "initial text", "p1", "revision", "revised", "initial")
    rec = preference_record(pair, Judgement(0.8, 0.7), valid=True)
    assert (rec["chosen"], rec["rejected"], rec["chosen_is"]) == \
        ("revised text", "initial text", "revised")
    assert rec["p_chosen"] == pytest.approx(0.75) and rec["valid"] is True
    assert rec["position_flip"] is False and rec["prompt"] == "Q" and rec["principle"] == "p1"
    rec = preference_record(pair, Judgement(0.3, 0.4), valid=False)
    assert (rec["chosen"], rec["rejected"], rec["chosen_is"]) == \
        ("initial text", "revised text", "initial")
    assert rec["p_chosen"] == pytest.approx(0.65) and rec["valid"] is False
    same = Pair("b", "Q", "x", "x", "p1", "revision", "revised", "initial")
    rec = preference_record(same, Judgement(0.9, 0.1), valid=True)
    assert rec["tie"] and rec["identical"] and rec["position_flip"] is None
    assert rec["p_chosen"] == pytest.approx(0.5)


def test_results_dict_on_the_hand_made_case():
    con = _con("p1", "p2")
    pairs = build_pairs(hand_chains(), con, seed=0)  # a, b(identical), c, ref a, ref c
    js = [Judgement(0.8, 0.7), Judgement(0.9, 0.1), Judgement(0.3, 0.4),
          Judgement(0.9, 0.2), Judgement(0.6, 0.6)]
    r = results_dict(pairs, js, valid=True, principles=["p1", "p2", "p3"])
    # Revised wins a (1), ties b (0.5: identical), loses c (0).
    assert r["win_rate_revised"] == pytest.approx(0.5) and r["win_rate_revised_n"] == 3
    assert r["win_rate_revised_ci95"] == pytest.approx(wilson_ci(1.5, 3))
    assert r["revisions_identical"] == 1
    # Flips among the 4 non-identical pairs: only "ref a" (0.9 as A, 0.2 as B).
    assert r["position_flip_rate"] == pytest.approx(0.25) and r["position_flip_rate_n"] == 4
    assert r["position_flip_rate_ci95"] == pytest.approx(wilson_ci(1, 4))
    # Verdicts for whatever was shown as (A): fwd picks x (a, ref a, ref c) or y (c); rev
    # picks A = y when p_x_rev < 0.5 (c, ref a).
    assert r["first_position_rate"] == pytest.approx(5 / 8) and r["first_position_rate_n"] == 8
    # Self-preference: own answer beats the reference for "ref a" (0.55) and "ref c" (0.6).
    assert r["self_preference_rate"] == 1.0 and r["self_preference_rate_n"] == 2
    # Length: word-count differences x - y vs p_x over the 4 non-identical pairs.
    dx = [0.0, 2.0, 0.0, 0.0]  # "rev a"/"init a", "rev c2 long text"/"init c", refs
    py = [0.75, 0.35, 0.55, 0.6]
    assert r["length_preference_corr"] == pytest.approx(pearson_ci(dx, py)[0])
    assert r["length_preference_corr_n"] == 4
    assert r["length_preference_corr_ci95"] == pytest.approx(pearson_ci(dx, py)[1])
    assert r["per_principle"]["p3"]["win_rate_revised_n"] == 0
    assert r["per_principle"]["p3"]["win_rate_revised"] is None
    assert sum(v["win_rate_revised_n"] for v in r["per_principle"].values()) == 3
    for key in ("win_rate_revised", "position_flip_rate", "length_preference_corr"):
        assert len(r[f"{key}_ci95"]) == 2 and isinstance(r[f"{key}_n"], int)
    assert r["valid"] is True


def test_ci_arithmetic():
    assert wilson_ci(8, 10) == pytest.approx([0.49016, 0.94332], abs=1e-5)
    assert wilson_ci(0, 5)[0] == 0.0 and wilson_ci(5, 5)[1] == 1.0
    assert wilson_ci(0, 3)[1] == pytest.approx(0.5615, abs=1e-4)  # the known 0/3 bound
    assert wilson_ci(0, 0) == [None, None]
    from scipy.stats import pearsonr

    xs = [1.0, 2.0, 3.5, 4.0, 5.0, 7.0, 8.0, 9.5]
    ys = [0.2, 0.1, 0.5, 0.4, 0.45, 0.8, 0.6, 0.9]
    ref = pearsonr(xs, ys)
    r, ci = pearson_ci(xs, ys)
    assert r == pytest.approx(ref.statistic)
    lo, hi = ref.confidence_interval(0.95)
    assert ci == pytest.approx([lo, hi])
    assert Correlation.of(xs, ys) == Correlation(r, ci[0], ci[1], len(xs))
    assert pearson_ci([1.0, 2.0, 3.0], [0.2, 0.1, 0.5])[1] == [None, None]  # Fisher needs 4
    assert pearson_ci([1, 1, 1], [0, 1, 2])[0] is None


# ------------------------------------------------------------------ the supervised loop
def test_critique_revise_conversation_and_rounds():
    con = _con("p1", "p2", "p3")
    items = [PromptItem("i1", "Q1", "R1"), PromptItem("i2", "Q2")]
    calls: list[list[str]] = []

    def render(messages):
        return " | ".join(f"{m['role']}: {m['content']}" for m in messages)

    def gen(texts):
        calls.append(list(texts))
        return [f" out{len(calls)}.{i} " for i in range(len(texts))]

    chains = critique_revise(items, con, gen, render, rounds=2, seed=3)
    assert len(calls) == 1 + 2 * 2 and all(len(c) == 2 for c in calls)
    assert calls[0] == ["user: Q1", "user: Q2"]
    c = chains[0]
    assert c.initial == "out1.0" and c.critiques == ["out2.0", "out4.0"]
    assert c.revisions == ["out3.0", "out5.0"] and c.final == "out5.0"
    p0 = con.by_name(c.principles[0])
    assert calls[1][0] == f"user: Q1 | assistant: out1.0 | user: {p0.critique_request}"
    assert calls[2][0] == (f"user: Q1 | assistant: out1.0 | user: {p0.critique_request} | "
                           f"assistant: out2.0 | user: {p0.revision_request}")
    # Round 2 critiques the round-1 revision, in a fresh short conversation.
    p1 = con.by_name(c.principles[1])
    assert calls[3][0] == f"user: Q1 | assistant: out3.0 | user: {p1.critique_request}"
    assert c.reference == "R1" and chains[1].reference is None
    rec = c.sft_record()
    assert rec["messages"][-1] == {"role": "assistant", "content": "out5.0"}
    assert set(rec) >= {"prompt", "initial", "critiques", "revisions", "final"}
    # Principles: deterministic in the seed, and the seed matters.
    again = critique_revise(items, con, lambda t: ["x"] * len(t), render, rounds=2, seed=3)
    assert [ch.principles for ch in again] == [ch.principles for ch in chains]
    draws = {sample_principle(con, s, "i1", "round", 0).name for s in range(30)}
    assert len(draws) == 3


# ----------------------------------------------------------------------- the CLI
def _cli_args(model_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "constitutional", "--model", str(model_dir), "--limit", "5",
            "--max-new-tokens", "6", "--out", str(out), *extra]


@pytest.fixture(scope="module")
def tiny_run(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("cai") / "out"
    code = 0
    try:
        main(_cli_args(tiny_model_dir, out, "--json"))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out


def test_cli_writes_all_files(tiny_run, capsys):
    code, out = tiny_run
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"sft.jsonl", "preferences.jsonl",
                                               "results.json", "report.html", "figures"}
    assert {p.name for p in (out / "figures").iterdir()} == {
        f"{name}.{ext}" for name in ("bias", "correlation", "principles")
        for ext in ("svg", "png")}
    res = json.loads((out / "results.json").read_text())
    for key in ("win_rate_revised", "position_flip_rate", "length_preference_corr"):
        assert key in res and len(res[f"{key}_ci95"]) == 2 and isinstance(res[f"{key}_n"], int)
    assert isinstance(res["valid"], bool) and res["n_prompts"] == 5
    assert res["win_rate_revised_n"] == 5
    refs = sum(it.reference is not None for it in load_prompts()[:5])
    assert res["self_preference_rate_n"] == refs and res["n_pairs"] == 5 + refs
    assert set(res["per_principle"]) == {p.name for p in load_constitution().principles}
    assert res["manifest"]["seed"] == 0 and "letter_check" in res
    prefs = [json.loads(x) for x in (out / "preferences.jsonl").read_text().splitlines()]
    assert len(prefs) == 5 + refs
    assert all(p["valid"] == res["valid"] for p in prefs)
    assert all(0.5 <= p["p_chosen"] <= 1.0 for p in prefs)
    sft = [json.loads(x) for x in (out / "sft.jsonl").read_text().splitlines()]
    assert [s["prompt"] for s in sft] == [it.prompt for it in load_prompts()[:5]]
    assert all(len(s["critiques"]) == len(s["revisions"]) == 1 for s in sft)


def test_outputs_load_with_hf_datasets(tiny_run):
    from datasets import load_dataset

    _, out = tiny_run
    sft = load_dataset("json", data_files=str(out / "sft.jsonl"), split="train")
    assert len(sft) == 5 and {"prompt", "initial", "critiques", "revisions", "final"} <= set(
        sft.column_names)
    prefs = load_dataset("json", data_files=str(out / "preferences.jsonl"), split="train")
    assert {"prompt", "chosen", "rejected", "p_chosen", "principle", "valid"} <= set(
        prefs.column_names)
    assert len(prefs) == json.loads((out / "results.json").read_text())["n_pairs"]


def test_cli_is_deterministic_given_the_seed(tiny_run, tiny_model_dir, tmp_path, capsys):
    _, first = tiny_run
    code, stdout, _ = run(_cli_args(tiny_model_dir, tmp_path / "again", "--json"), capsys)
    assert code == 0
    assert json.loads(stdout)["win_rate_revised_n"] == 5  # --json: results on stdout
    for name in ("sft.jsonl", "preferences.jsonl"):
        assert (tmp_path / "again" / name).read_text() == (first / name).read_text()


@pytest.mark.parametrize("args,files,message", [
    (["--rounds", "0"], {}, "Invalid value for '--rounds'"),
    (["--limit", "0"], {}, "Invalid value for '--limit'"),
    (["--constitution", "{d}/c.json"], {"c.json": '{"principles": [{"critique_request": "x"}]}'},
     "principle 1 has no 'revision_request'"),
    (["--constitution", "{d}/c.json"], {"c.json": ""}, "empty file"),
    (["--prompts", "{d}/p.jsonl"], {"p.jsonl": '{"prompt": "a"}\n{"q": 1}\n'},
     "line 2 has no 'prompt' field"),
    (["--prompts", "{d}/p.jsonl"], {"p.jsonl": ""}, "empty file"),
    (["--prompts", "{d}/missing.jsonl"], {}, "no such file"),
])
def test_cli_errors_one_line_exit_2_nothing_left(tiny_model_dir, tmp_path, capsys, args,
                                                  files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    code, stdout, stderr = run(_cli_args(tiny_model_dir, out,
                                         *[a.format(d=tmp_path) for a in args]), capsys)
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and message in stderr
    assert stdout == "" and not out.exists()


# --------------------------------------------------------------------- the report
def make_result(valid: bool = True) -> ConstitutionalResult:
    names = ["harmless", "honest", SCRIPT]
    con = Constitution(tuple(Principle(n, f"crit {n}", "rev <i>x</i>", "which?") for n in names),
                       name="c", source=f"{SCRIPT}.json")
    chains = [
        Chain("e1", f"Tell me {SCRIPT} & more", "<b>bold</b> answer", ["harmless", "honest"],
              ["crit one", "crit <two>"], ["rev one", ""]),
        Chain("e2", "plain", "a", ["honest"], ["c"], ["r"]),
    ]
    pairs = [Pair("e1", chains[0].prompt, "", chains[0].initial, "honest", "revision",
                  "revised", "initial")]
    lo, hi = math.tanh(math.atanh(0.32) - 1.96 / math.sqrt(17)), \
        math.tanh(math.atanh(0.32) + 1.96 / math.sqrt(17))
    measures = JudgeMeasures(
        valid=valid, win_rate_revised=Rate.of(9, 12), mean_p_revised=0.61,
        revisions_identical=1, position_flip_rate=Rate.of(8, 20),
        first_position_rate=Rate.of(12, 40), length_preference_corr=Correlation(0.32, lo, hi, 20),
        longer_preferred_rate=Rate.of(14, 20), self_preference_rate=Rate.of(0, 0),
        per_principle={"harmless": Rate.of(4, 5), "honest": Rate.of(5, 7), SCRIPT: Rate.of(0, 0)})
    check = LetterCheck(valid=valid, reasons=[] if valid else [
        "The model answers 'B' in 95% of verdicts <b>!</b>"], n=19,
        letter_share={"A": 0.3, "B": 0.7}, order_consistency=0.6, letter_mass=0.9)
    return ConstitutionalResult(ConstitutionalConfig(rounds=2), "tiny/<b>model</b>", con, 12,
                                chains, pairs, [Judgement(0.7, 0.62)], check, measures)


def test_bias_figures_rows_reference_and_tooltips():
    from matplotlib.figure import Figure

    from evals.figures import (
        INVALID,
        POINT,
        bias_figure,
        bias_rows,
        correlation_figure,
        hover_titles,
        principle_figure,
    )

    r = make_result(True)
    fig = bias_figure(r)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "win rate, revised over initial", "position flip rate",
        "verdicts for the answer shown first", "verdicts for the longer answer",
        "own answer over the reference"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # first row on top
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert [ln.get_xdata()[0] for ln in dashed] == [0.5]  # the no-preference reference
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(points) == 4  # the self-preference rate has n = 0: no point
    assert {ln.get_color() for ln in points} == {POINT}
    assert {ln.get_color() for ln in bias_figure(make_result(False)).axes[0].get_lines()
            if ln.get_marker() == "o"} == {INVALID}
    lo, hi = wilson_ci(8, 20)
    assert hover_titles(bias_rows(r), ci_digits=3, with_n=False)["row-1"] == \
        f"position flip rate: 0.400 [{lo:.3f}, {hi:.3f}]"
    assert correlation_figure(r).axes[0].get_xlim() == (-1.0, 1.0)
    labels = [t.get_text() for t in principle_figure(r).axes[0].get_yticklabels()]
    assert labels == ["harmless", "honest", SCRIPT]


def test_principle_names_are_literal_text_in_figures():
    from reports.figures import inline_svg

    r = make_result(True)
    r.measures.per_principle["costs $5 or $6"] = Rate.of(1, 2)  # no mathtext
    from evals.figures import principle_figure

    svg = inline_svg(principle_figure(r), "principles")
    assert "costs $5 or $6" in svg and str(escape(SCRIPT)) in svg and SCRIPT not in svg


def test_result_dict_frame_and_notebook_view():
    r = make_result(False)
    d = r.to_dict()
    assert d["n_pairs"] == 1 and d["rounds"] == 2 and d["valid"] is False
    assert d["win_rate_revised"] == 0.75 and d["self_preference_rate"] is None
    assert d["self_preference_rate_ci95"] == [None, None]
    assert d["examples"][0]["p_revised"] == pytest.approx(0.66)
    assert "judge_principle" not in d["examples"][1]
    assert d["config"]["constitution"] == f"{SCRIPT}.json"
    df = r.to_frame()
    assert len(df) == 1 and df.p_x[0] == pytest.approx(0.66) and df.principle[0] == "honest"
    html = r._repr_html_()
    assert "<svg" in html and "tiny/&lt;b&gt;model&lt;/b&gt;" in html and "<b>model" not in html
    assert "position flip rate" in html


def make_manifest() -> dict:
    return {"interp_version": "0.1.0", "git_commit": "0123456789abcdef", "git_dirty": False,
            "timestamp": "2025-01-01T00:00:00+00:00", "model_id": "tiny/<b>model</b>",
            "command": ["interp", "eval", "constitutional", "--prompts", SCRIPT], "seed": 0}


@pytest.mark.parametrize("valid", [True, False])
def test_report_escapes_everything_and_is_self_contained(valid):
    page = constitutional_report(make_result(valid), make_manifest()).html
    low = page.lower()
    assert "<script" not in low and "<b>" not in low and "<i>" not in low
    doc = parse(page)
    assert not {"script", "img", "iframe", "link", "object"} & set(doc.tags)
    assert not [a for _, a, _ in doc.attrs if a.startswith("on")]
    assert "https://" not in page
    assert str(escape(f"Tell me {SCRIPT} & more")) in page
    assert str(escape("<b>bold</b> answer")) in page and str(escape("crit <two>")) in page
    charts = re.findall(r'<svg[^>]*class="mpl-fig".*?</svg>', page, re.S)
    assert len(charts) == 3  # rates, correlation, per principle
    # a hover title per row: five rates, one correlation, three principles
    assert [c.count("<title>") for c in charts] == [5, 1, 3]
    assert str(escape(SCRIPT)) in page  # the principle's name, escaped in the figure too
    assert not re.search(r"\bnan\b", page, re.I)


def test_report_content_and_invalid_banner():
    page = constitutional_report(make_result(True), make_manifest()).html
    bias = section(page, "Judge bias panel")
    assert "position flip rate" in bias and "0.400" in bias
    lo, hi = wilson_ci(8, 20)
    assert f"[{lo:.3f}, {hi:.3f}]" in bias
    assert "Labels not valid" not in page and "labels valid" in page
    per = section(page, "Win rate by principle")
    assert "harmless" in per and "0.800" in per
    chains = section(page, "Example chains")
    assert chains.count("<details") == 2 and "critique, round 2" in chains
    assert "principle: honest" in chains and "(empty)" in chains
    bad = constitutional_report(make_result(False), make_manifest()).html
    assert "Labels not valid" in bad and "valid: false" in bad
    assert str(escape("The model answers 'B' in 95% of verdicts <b>!</b>")) in bad


def test_report_labels_measures_within_noise_of_their_reference():
    """Each bias measure and per-principle win rate is badged "within noise" when its
    95% interval holds its no-effect reference (0.5, or 0 for the flip rate and the
    correlation), and "no noise estimate" when it has no interval (n = 0)."""
    page = constitutional_report(make_result(True), make_manifest()).html
    bias = section(page, "Judge bias panel")
    # win 9/12, longer 14/20 and r = 0.32 (n = 20) hold their reference; flips 8/20
    # exclude 0 and first position 12/40 excludes 0.5; self-preference has n = 0
    assert bias.count(">within noise</span>") == 3
    assert bias.count(">no noise estimate</span>") == 1
    per = section(page, "Win rate by principle")
    assert per.count(">within noise</span>") == 2 and per.count(">no noise estimate</span>") == 1
    assert "within noise: not a result; the interval contains 0.5" in page


def test_api_config_and_unknown_option(tiny_model):
    from evals.constitutional import run_constitutional

    con, items = load_constitution(), load_prompts(limit=2)
    assert [it.id for it in items] == [it.id for it in load_prompts()[:2]]
    cfg = ConstitutionalConfig(max_new_tokens=3, batch_size=2)
    a = run_constitutional(tiny_model, items, con, cfg, progress=False)
    b = run_constitutional(tiny_model, items, con, max_new_tokens=3, batch_size=2,
                           progress=False)
    # each result carries its own manifest (timestamps apart, the same settings)
    assert a.manifest is not None and b.manifest is not None
    assert a.manifest["config"] == b.manifest["config"]
    a.manifest = b.manifest = None
    assert a.to_dict() == b.to_dict() and a.config == cfg
    # the config's limit means in Python what --limit means on the command line
    c = run_constitutional(tiny_model, load_prompts(), con, cfg, limit=2, progress=False)
    assert c.n_prompts == 2 and c.sft_records() == a.sft_records() and c.config.limit == 2
    with pytest.raises(InterpError, match="limit must be"):
        run_constitutional(tiny_model, items, con, limit=0)
    with pytest.raises(InterpError, match="unknown constitutional option"):
        run_constitutional(tiny_model, items, con, round=2)
    with pytest.raises(InterpError, match="rounds must be"):
        run_constitutional(tiny_model, items, con, rounds=0)


def test_api_deterministic_mode_is_batch_invariant(tiny_model):
    from evals.constitutional import judge_pairs, run_constitutional

    con, items = load_constitution(), load_prompts()[:4]
    kw = {"rounds": 1, "max_new_tokens": 5, "deterministic": True, "progress": False}
    a = run_constitutional(tiny_model, items, con, batch_size=4, **kw)
    b = run_constitutional(tiny_model, items, con, batch_size=1, **kw)
    assert a.sft_records() == b.sft_records()
    pa, pb = a.preference_records(), b.preference_records()
    for x, y in zip(pa, pb, strict=True):
        assert x["chosen"] == y["chosen"]
        assert x["p_x_fwd"] == pytest.approx(y["p_x_fwd"], abs=1e-6)
    # judge_pairs: any pairs, e.g. two hand-written answers.
    pairs = [Pair("q", "Q?", "yes", "no", con.principles[0].name, "samples", "s1", "s2")]
    js, check = judge_pairs(tiny_model, pairs, con)
    assert len(js) == 1 and 0.0 <= js[0].p_x <= 1.0 and check["n"] == 1


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("eval-constitutional-malformed-constitution", lambda c: [
        "eval", "constitutional", *M(c), "--constitution", c.file("c.json", "{not json"),
        "--out", c.out], "c.json"),
    Case("eval-constitutional-empty-prompts", lambda c: [
        "eval", "constitutional", *M(c), "--prompts", c.file("p.jsonl", ""), "--out", c.out],
        "empty"),
    Case("eval-constitutional-zero-rounds", lambda c: [
        "eval", "constitutional", *M(c), "--rounds", "0", "--out", c.out], "rounds"),
]
