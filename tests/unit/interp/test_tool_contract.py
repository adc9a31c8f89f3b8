"""A tool declared once (config, run, result, template) is a working verb: options and
defaults from its config, ``--out`` (results.json with the manifest, report.html), ``--json``,
and the bad-input cases its config's checks imply, with nothing in the CLI written for it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import click
import pytest
import torch

from interp.cli.tool import Tool, bad_inputs, register, tool_command
from interp.schema.result import Headline, Result
from interp.schema.settings import Config, at_least, fraction, setting
from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run


@dataclass(frozen=True)
class NextTokensConfig(Config):
    """The toy tool's settings: which prompt, how many tokens, a probability floor."""

    prompt: str = setting("Once upon a time", help="The prompt to continue.")
    top_k: int = setting(5, check=at_least(1), help="Next tokens to list.")
    min_prob: float = setting(0.0, check=fraction, help="Leave out tokens below this.")
    batch_size: int = setting(4, check=at_least(1), cli=False, help="Unused: one prompt.")
    seed: int = setting(0, cli=False, help="Recorded in the manifest.")


@dataclass
class NextTokensResult(Result):
    """The most likely next tokens of a prompt, with their probabilities."""

    config: NextTokensConfig = field(default_factory=NextTokensConfig)
    tokens: list[str] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)

    def headline(self) -> Headline:
        return Headline(title="next tokens", rows=[("prompt", self.config.prompt)],
                        columns=["token", "p"], table=[[t, p] for t, p in
                                                       zip(self.tokens, self.probs, strict=True)],
                        verdict=f"top token {self.tokens[0]!r} at p = {self.probs[0]:.3f}")


def run_next_tokens(model: Any, config: NextTokensConfig) -> NextTokensResult:
    ids = torch.tensor([model.encode(config.prompt)])
    with torch.no_grad():
        probs = model.bridge(ids)[0, -1].softmax(-1)
    p, i = probs.topk(config.top_k)
    keep = p >= config.min_prob
    return NextTokensResult(config=config, tokens=model.token_strs(i[keep]),
                            probs=[float(x) for x in p[keep]])


TEMPLATE = """{% import "macros.html.j2" as m with context %}
{% call m.card("Next tokens of the prompt") %}
  <p class="toy-prompt">{{ r.config.prompt }}</p>
  {{ m.table(["token", "p"], h.table) }}
{% endcall %}
"""

TOY = Tool("next-tokens", NextTokensConfig, run_next_tokens, template=TEMPLATE,
           help="The most likely next tokens of a prompt.")


@pytest.fixture(scope="module")
def toy_verb():
    from interp.cli.app import cli

    command = register(TOY, cli)
    yield command
    cli.commands.pop(TOY.name)


def test_a_declared_tool_is_a_verb_with_out_json_and_a_report(toy_verb, tiny_model_dir,
                                                              tmp_path, capsys):
    out = tmp_path / "run"
    code, stdout, err = run(["next-tokens", "--model", str(tiny_model_dir), "--top-k", "3",
                             "--prompt", "<b>bold</b>", "--out", str(out)], capsys)
    assert code == 0, err
    assert "next tokens" in stdout
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["top_k"] == 3 and len(data["tokens"]) == 3
    assert data["manifest"]["seed"] == 0 and data["manifest"]["model_id"]
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.json"]
    html = (out / "report.html").read_text()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html  # escaped
    assert "Next tokens of the prompt" in html and data["manifest"]["git_commit"][:7] in html
    code, stdout, _ = run(["next-tokens", "--model", str(tiny_model_dir), "--json"], capsys)
    assert code == 0 and json.loads(stdout)["config"]["top_k"] == 5  # the config's default


def test_the_report_opens_clean_in_a_browser(toy_verb, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert run(["next-tokens", "--model", str(tiny_model_dir), "--out", str(out)], capsys)[0] == 0
    v = visit(out / "report.html", "tool_contract_toy.png",
              check=lambda page: page.locator("p.toy-prompt").inner_text())
    assert_clean(v)
    assert v.checks == "Once upon a time"


def test_the_verb_takes_the_configs_options_and_defaults(toy_verb):
    params = {p.name: p for p in toy_verb.params if isinstance(p, click.Option)}
    assert {"prompt", "top_k", "min_prob", "model_name", "device", "batch_size", "seed",
            "out_dir", "as_json"} <= set(params)
    assert params["top_k"].default == 5 and params["batch_size"].default == 4


def test_bad_inputs_come_from_the_checks_and_fail_in_one_line(toy_verb, tiny_model_dir,
                                                              tmp_path, capsys):
    cases = list(bad_inputs(TOY))
    assert {(c.flag, c.value) for c in cases} == {("--top-k", "0"), ("--min-prob", "-1"),
                                                  ("--min-prob", "2")}
    for case in cases:
        out = tmp_path / f"bad{case.value}"
        code, stdout, err = run(["next-tokens", "--model", str(tiny_model_dir), case.flag,
                                 case.value, "--out", str(out)], capsys)
        assert code == 2 and stdout == "", (case, err)
        assert err.count("\n") == 1 and case.flag in err, err
        assert not out.exists()  # refused before anything was written


def test_a_tool_must_be_declared_whole():
    from interp.cli.app import cli

    with pytest.raises(ValueError, match="one word"):
        Tool("two words", NextTokensConfig, run_next_tokens)
    with pytest.raises(ValueError, match="not both"):
        Tool("x", NextTokensConfig, run_next_tokens, report=lambda r: r, template="x")
    with pytest.raises(ValueError, match="already has a verb"):
        register(Tool("lens", NextTokensConfig, run_next_tokens), cli)
    assert tool_command(TOY).name == "next-tokens"
