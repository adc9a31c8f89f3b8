"""`interp eval constitutional` end to end on the embedded SmolLM2-135M (slow: ~1–2 min)."""

from __future__ import annotations

import json

import pytest

from evals.constitutional import load_prompts
from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run

LIMIT = 2


@pytest.mark.browser
def test_real_model_end_to_end(model, tmp_path, capsys):
    from datasets import load_dataset

    del model  # converts the embedded model once for the session; the CLI loads it
    out = tmp_path / "cai"
    code, stdout, err = run(["eval", "constitutional", "--limit", str(LIMIT),
                             "--max-new-tokens", "16", "--out", str(out)], capsys)
    assert code == 0, err
    assert "position flip rate" in stdout

    res = json.loads((out / "results.json").read_text())
    refs = sum(it.reference is not None for it in load_prompts()[:LIMIT])
    assert res["model"] == "smollm2-135m-instruct" and res["n_prompts"] == LIMIT
    assert res["win_rate_revised_n"] == LIMIT and res["n_pairs"] == LIMIT + refs
    assert res["self_preference_rate_n"] == refs
    for key in ("win_rate_revised", "position_flip_rate", "self_preference_rate",
                "first_position_rate"):
        v, (lo, hi) = res[key], res[f"{key}_ci95"]
        if res[f"{key}_n"]:
            assert 0.0 <= lo <= v <= hi <= 1.0, key
    c = res["length_preference_corr"]
    assert c is None or -1.0 <= c <= 1.0
    lc = res["letter_check"]
    assert res["valid"] == lc["valid"] and 0.0 < lc["letter_mass"] <= 1.0 + 1e-6
    assert sum(lc["letter_share"].values()) == pytest.approx(1.0)

    sft = load_dataset("json", data_files=str(out / "sft.jsonl"), split="train")
    assert len(sft) == LIMIT and all(len(r) == 1 for r in sft["revisions"])
    assert all(isinstance(t, str) for t in sft["final"])
    prefs = load_dataset("json", data_files=str(out / "preferences.jsonl"), split="train")
    assert len(prefs) == LIMIT + refs
    assert set(prefs["valid"]) == {res["valid"]}
    assert all(0.5 <= p <= 1.0 for p in prefs["p_chosen"])
    chains = {r["id"]: r for r in sft}
    for row in prefs:  # chosen/rejected are the pair's two answers
        chain = chains[row["id"]]
        if row["pair"] == "revision":
            assert {row["chosen"], row["rejected"]} == {chain["initial"], chain["final"]}
        else:
            assert chain["initial"] in (row["chosen"], row["rejected"])

    def check(page) -> int:
        assert page.locator("svg.mpl-fig").count() == 3
        return page.locator("details.chain").count()

    v = visit(out / "report.html", "constitutional_report_real.png", check)
    assert_clean(v)
    assert v.checks == LIMIT
