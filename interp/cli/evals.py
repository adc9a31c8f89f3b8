"""``interp eval …``: the alignment evaluations' command group.

``interp eval sycophancy``: paired-prompt sycophancy evaluation (see :mod:`evals.sycophancy`).
``interp eval constitutional``: critique–revision, AI-feedback labels and their biases
(see :mod:`evals.constitutional`); writes into ``--out DIR`` (only when the whole run
succeeds) ``sft.jsonl``, ``preferences.jsonl``, ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import click

from interp.cli.common import json_safe, load_model, log, manifest_for, model_options, open_out
from interp.runs.outdir import OutDir

if TYPE_CHECKING:
    from evals.constitutional import ConstitutionalResult
    from evals.sycophancy import SycophancyResult


@click.group(name="eval")
def eval_group() -> None:
    """Alignment evaluations (sycophancy, constitutional AI)."""


# ----------------------------------------------------------- sycophancy


@click.command(name="sycophancy")
@model_options
@click.option("--dataset", default=None, type=click.Path(dir_okay=False),
              help="JSONL/JSON/CSV with question, correct, incorrect (optional domain, "
              "choices); default: the shipped datasets/sycophancy/questions.jsonl.")
@click.option("--mode", default="cloze", show_default=True,
              type=click.Choice(["cloze", "choice", "generate"]),
              help="cloze: score the answer texts; choice: option letters (with the "
              "degenerate-letter check); generate: free text with an answer matcher.")
@click.option("--limit", default=None, type=click.IntRange(min=1),
              help="Use the first N questions only.")
@click.option("--deterministic", is_flag=True,
              help="Batch-invariant scoring/generation: identical results for any --batch-size.")
@click.option("--templates", "templates_path", default=None, type=click.Path(dir_okay=False),
              help="JSON object overriding prompt templates (neutral, suggest_incorrect, "
              "suggest_correct, doubt_correct, priming, challenge, answer, choice).")
@click.option("--max-new-tokens", default=48, show_default=True, type=click.IntRange(min=1),
              help="generate mode: reply length.")
@click.option("--probe-layer", default=None, type=int,
              help="Layer of the 'knows but agrees' probe (default: two thirds of the depth).")
@click.option("--no-probe", is_flag=True, help="Skip the 'knows but agrees' probe.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html and results.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def sycophancy(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    dataset: str | None, mode: str, limit: int | None, deterministic: bool,
    templates_path: str | None, max_new_tokens: int, probe_layer: int | None, no_probe: bool,
    out_dir: str | None, as_json: bool,
) -> None:
    """Sycophancy: flip rates under suggested answers and "Are you sure?", with CIs."""
    from evals.sycophancy import SycophancyConfig, Templates, load_questions, run_sycophancy

    config = SycophancyConfig(
        mode=mode, templates=Templates.from_file(templates_path), batch_size=batch_size,
        deterministic=deterministic, seed=seed, max_new_tokens=max_new_tokens,
        probe=not no_probe, probe_layer=probe_layer, dataset=dataset or "(shipped)",
        limit=limit)
    qs = load_questions(dataset, limit=limit)  # fails fast, before loading the model
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        res = run_sycophancy(model, qs, config)
        man = manifest_for(model, seed, res.dataset_texts(), res.config.to_dict())
        safe = json_safe({**res.to_dict(), "manifest": man})
        if isinstance(out, OutDir):
            from reports.sycophancy import sycophancy_report

            out.write_json("results.json", safe)
            sycophancy_report(res, man).write(out)
    if as_json:
        click.echo(json.dumps(safe, indent=2, ensure_ascii=False))
    else:
        print_table(res)
    if not res.valid:
        for r in res.validity_reasons:
            log(f"warning ({mode} mode not valid here): {r}")


def _f(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.3f}"


def _ci(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None or not math.isfinite(lo):
        return "—"
    return f"[{lo:.2f}, {hi:.2f}]"


def print_table(res: SycophancyResult) -> None:
    """Accuracy per variant and the headline rates, each with its CI and n."""
    from rich.console import Console
    from rich.table import Table

    m = res.metrics
    console = Console(soft_wrap=False, width=120)
    valid = "valid" if res.valid else "NOT VALID"
    t = Table(title=f"sycophancy · {res.model_id} · {res.mode} mode ({valid}) · "
              f"{m.n_items} questions", title_justify="left")
    for col in ("variant", "accuracy", "95% CI", "n", "McNemar p vs neutral"):
        t.add_column(col, justify="right" if col != "variant" else "left")
    for v, acc in m.overall.accuracy.items():
        mc = m.mcnemar[v].p_value if v in m.mcnemar else None
        t.add_row(v, _f(acc.value), _ci(acc.lo, acc.hi), str(acc.n),
                  "—" if mc is None else f"{mc:.2g}")
    console.print(t)
    r = Table(title="rates (per item)", title_justify="left")
    for col in ("rate", "value", "95% CI", "n"):
        r.add_column(col, justify="right" if col != "rate" else "left")
    small = set(m.small_n)
    for key, value, lo, hi, n in m.overall.headline():
        flag = " (n < 30)" if key in small else ""
        r.add_row(key + flag, _f(value), _ci(lo, hi), str(n))
    kba = res.probe
    if kba is not None and kba.knows_but_agrees is not None and kba.shuffled is not None:
        for label, rate in (("knows_but_agrees_rate", kba.knows_but_agrees),
                            ("  baseline: shuffled-label probe", kba.shuffled)):
            r.add_row(label, _f(rate.value), _ci(rate.lo, rate.hi), str(rate.n))
    console.print(r)


# -------------------------------------------------------- constitutional


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(json_safe(r), ensure_ascii=False, allow_nan=False) + "\n"
                   for r in records)


@click.command("constitutional")
@model_options
@click.option("--prompts", "prompts_path", default=None, type=click.Path(dir_okay=False),
              help="Prompts (JSONL/JSON/CSV with a 'prompt' field, optional 'reference' and "
              "'id'; or .txt, one per line). Default: the shipped set of 56.")
@click.option("--constitution", "constitution_path", default=None,
              type=click.Path(dir_okay=False),
              help="Principles as JSON or YAML (critique_request, revision_request, optional "
              "name and comparison). Default: the shipped constitution.")
@click.option("--rounds", default=1, show_default=True, type=click.IntRange(min=1, max=20),
              help="Critique → revision rounds per prompt.")
@click.option("--limit", default=None, type=click.IntRange(min=1),
              help="Use only the first N prompts.")
@click.option("--max-new-tokens", default=96, show_default=True, type=click.IntRange(min=1),
              help="Tokens per answer, critique and revision.")
@click.option("--temperature", default=0.0, show_default=True,
              type=click.FloatRange(min=0.0), help="0 = greedy.")
@click.option("--deterministic", is_flag=True,
              help="Batch-invariant generation and judging (slower).")
@click.option("--examples", "n_examples", default=6, show_default=True,
              type=click.IntRange(min=0), help="Example chains shown in the report.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write sft.jsonl, preferences.jsonl, results.json and report.html here.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def constitutional(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    prompts_path: str | None, constitution_path: str | None, rounds: int, limit: int | None,
    max_new_tokens: int, temperature: float, deterministic: bool, n_examples: int,
    out_dir: str | None, as_json: bool,
) -> None:
    """Constitutional AI: answer, critique and revise; judge pairs in both orders; biases."""
    from evals.constitutional import (
        ConstitutionalConfig,
        load_constitution,
        load_prompts,
        run_constitutional,
    )

    config = ConstitutionalConfig(rounds=rounds, max_new_tokens=max_new_tokens,
                                  temperature=temperature, seed=seed, batch_size=batch_size,
                                  deterministic=deterministic, n_examples=n_examples)
    constitution = load_constitution(constitution_path)
    items = load_prompts(prompts_path, limit=limit)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        run = run_constitutional(model, items, constitution, config)
        res = json_safe(run.to_dict())
        man = manifest_for(model, seed, [it.prompt for it in items], {
            **res["config"], "prompts": prompts_path or "constitutional/prompts.jsonl",
            "constitution_sha256": constitution.sha256(),
        })
        res["manifest"] = man
        if isinstance(out, OutDir):
            from reports.constitutional import constitutional_report

            out.write_text("sft.jsonl", _jsonl(run.sft_records()))
            out.write_text("preferences.jsonl", _jsonl(run.preference_records()))
            out.write_json("results.json", res)
            constitutional_report(run, man).write(out)
    if as_json:
        click.echo(json.dumps({k: v for k, v in res.items() if k != "examples"}, indent=2,
                              ensure_ascii=False))
    else:
        _print(run)


def _print(run: ConstitutionalResult) -> None:
    from rich.console import Console
    from rich.table import Table

    m = run.measures
    flag = "" if run.valid else " · LABELS NOT VALID (degenerate letters)"
    table = Table(title=f"constitutional AI · {run.model_id} · {run.n_prompts} prompts, "
                  f"{run.config.rounds} round(s){flag}", title_justify="left")
    for col in ("measure", "value", "95% CI", "n"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    c = m.length_preference_corr
    for label, value, lo, hi, n in (
            ("win rate, revised over initial", m.win_rate_revised.value,
             m.win_rate_revised.lo, m.win_rate_revised.hi, m.win_rate_revised.n),
            ("position flip rate", m.position_flip_rate.value, m.position_flip_rate.lo,
             m.position_flip_rate.hi, m.position_flip_rate.n),
            ("length–preference correlation", c.value, c.lo, c.hi, c.n),
            ("self-preference vs reference", m.self_preference_rate.value,
             m.self_preference_rate.lo, m.self_preference_rate.hi, m.self_preference_rate.n)):
        table.add_row(label, *_fmt(value, lo, hi, n))
    for name, rate in m.per_principle.items():
        table.add_row(f"  win rate · {name}", *_fmt(rate.value, rate.lo, rate.hi, rate.n))
    Console(soft_wrap=False, width=120).print(table)
    if not run.valid:
        log("letter check: " + " ".join(run.letter_check.reasons))


def _fmt(value: float, lo: float | None, hi: float | None, n: int) -> tuple[str, str, str]:
    if not math.isfinite(value):
        return "—", "—", str(n or 0)
    cis = "—" if lo is None or hi is None or not math.isfinite(lo) else f"[{lo:.3f}, {hi:.3f}]"
    return f"{value:.3f}", cis, str(n)


eval_group.add_command(constitutional)
eval_group.add_command(sycophancy)
