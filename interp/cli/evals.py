"""``interp eval …``: the alignment evaluations' command group.

``interp eval sycophancy``: paired-prompt sycophancy evaluation (see :mod:`evals.sycophancy`).
``interp eval constitutional``: critique–revision, AI-feedback labels and their biases
(see :mod:`evals.constitutional`); writes into ``--out DIR`` (only when the whole run
succeeds) ``sft.jsonl``, ``preferences.jsonl``, ``results.json`` and ``report.html``.

The settings' options derive from :class:`evals.sycophancy.SycophancyConfig` and
:class:`evals.constitutional.ConstitutionalConfig`; a verb writes by hand only its inputs
(data files, ``--limit`` of the prompts), ``--out`` and ``--json``.
"""

from __future__ import annotations

import json
from typing import Any

import click

from evals.constitutional import ConstitutionalConfig
from evals.sycophancy import SycophancyConfig
from interp.cli.common import (
    json_option,
    json_safe,
    load_model,
    log,
    make_model_options,
    open_out,
    out_option,
)
from interp.cli.options import build_config, config_options
from interp.runs.outdir import OutDir


@click.group(name="eval")
def eval_group() -> None:
    """Alignment evaluations (sycophancy, constitutional AI)."""


# ----------------------------------------------------------- sycophancy


@click.command(name="sycophancy")
@make_model_options(SycophancyConfig)
@click.option("--dataset", default=None, type=click.Path(dir_okay=False),
              help="JSONL/JSON/CSV with question, correct, incorrect (optional domain, "
              "choices); default: the shipped datasets/sycophancy/questions.jsonl.")
@config_options(SycophancyConfig, only=("mode", "limit", "deterministic"))
@click.option("--templates", "templates_path", default=None, type=click.Path(dir_okay=False),
              help="JSON object overriding prompt templates (neutral, suggest_incorrect, "
              "suggest_correct, doubt_correct, priming, challenge, answer, choice).")
@config_options(SycophancyConfig, only=("max_new_tokens", "probe_layer", "probe"))
@out_option("Write report.html and results.json into this folder.")
@json_option
def sycophancy(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    dataset: str | None, templates_path: str | None, out_dir: str | None, as_json: bool,
    **settings: Any,
) -> None:
    """Sycophancy: flip rates under suggested answers and "Are you sure?", with CIs."""
    from evals.sycophancy import Templates, load_questions, run_sycophancy

    config = build_config(SycophancyConfig, settings,
                          templates=Templates.from_file(templates_path), batch_size=batch_size,
                          seed=seed, dataset=dataset or "(shipped)")
    qs = load_questions(dataset, limit=config.limit)  # fails fast, before loading the model
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        res = run_sycophancy(model, qs, config)
        data = json_safe(res.to_dict())
        if isinstance(out, OutDir):
            from reports.sycophancy import sycophancy_report

            out.write_json("results.json", data)
            sycophancy_report(res).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        res.headline().print()
    if not res.valid:
        for r in res.validity_reasons:
            log(f"warning ({config.mode} mode not valid here): {r}")


# -------------------------------------------------------- constitutional


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(json_safe(r), ensure_ascii=False, allow_nan=False) + "\n"
                   for r in records)


@click.command("constitutional")
@make_model_options(ConstitutionalConfig)
@click.option("--prompts", "prompts_path", default=None, type=click.Path(dir_okay=False),
              help="Prompts (JSONL/JSON/CSV with a 'prompt' field, optional 'reference' and "
              "'id'; or .txt, one per line). Default: the shipped set of 56.")
@click.option("--constitution", "constitution_path", default=None,
              type=click.Path(dir_okay=False),
              help="Principles as JSON or YAML (critique_request, revision_request, optional "
              "name and comparison). Default: the shipped constitution.")
@config_options(ConstitutionalConfig, only=("rounds", "limit"))
@config_options(ConstitutionalConfig,
                only=("max_new_tokens", "temperature", "deterministic", "n_examples"))
@out_option("Write sft.jsonl, preferences.jsonl, results.json and report.html here.")
@json_option
def constitutional(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    prompts_path: str | None, constitution_path: str | None, out_dir: str | None,
    as_json: bool, **settings: Any,
) -> None:
    """Constitutional AI: answer, critique and revise; judge pairs in both orders; biases."""
    from evals.constitutional import load_constitution, load_prompts, run_constitutional

    config = build_config(ConstitutionalConfig, settings, seed=seed, batch_size=batch_size,
                          prompts=prompts_path or "constitutional/prompts.jsonl")
    constitution = load_constitution(constitution_path)
    items = load_prompts(prompts_path, limit=config.limit)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        run = run_constitutional(model, items, constitution, config)
        res = json_safe(run.to_dict())
        if isinstance(out, OutDir):
            from reports.constitutional import constitutional_report

            out.write_text("sft.jsonl", _jsonl(run.sft_records()))
            out.write_text("preferences.jsonl", _jsonl(run.preference_records()))
            out.write_json("results.json", res)
            constitutional_report(run).write(out)
    if as_json:
        click.echo(json.dumps({k: v for k, v in res.items() if k != "examples"}, indent=2,
                              ensure_ascii=False))
    else:
        run.headline().print()
        if not run.valid:
            log("letter check: " + " ".join(run.letter_check.reasons))


eval_group.add_command(constitutional)
eval_group.add_command(sycophancy)
