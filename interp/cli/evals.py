"""``interp eval …``: the alignment evaluations' command group.

``interp eval sycophancy``: paired-prompt sycophancy evaluation (see :mod:`evals.sycophancy`).
``interp eval constitutional``: critique–revision, AI-feedback labels and their biases
(see :mod:`evals.constitutional`); writes into ``--out DIR`` (only when the whole run
succeeds) ``sft.jsonl``, ``preferences.jsonl``, ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli.common import json_safe, load_model, log, manifest_for, model_options, open_out
from interp.errors import InterpError


@click.group(name="eval")
def eval_group() -> None:
    """Alignment evaluations (sycophancy, constitutional AI)."""


# ----------------------------------------------------------- sycophancy


def _read_templates(path: str | None) -> Any:
    from evals.sycophancy import Templates

    if path is None:
        return Templates()
    from pathlib import Path

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InterpError(f"cannot read templates {p}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InterpError(f"cannot read templates {p}: not a JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise InterpError(f"templates {p}: expected a JSON object of template texts")
    return Templates.from_dict(data)


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
    from evals.sycophancy import load_questions, run_sycophancy

    templates = _read_templates(templates_path)
    qs = load_questions(dataset, limit=limit)  # fails fast, before loading the model
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        res = run_sycophancy(
            model, qs, mode=mode, templates=templates, batch_size=batch_size,
            deterministic=deterministic, seed=seed, max_new_tokens=max_new_tokens,
            probe=not no_probe, probe_layer=probe_layer, dataset=dataset or "(shipped)",
            limit=limit,
        )
        data = res.to_dict()
        texts = [f"{q.question}\0{q.correct}\0{q.incorrect}" for q in qs]
        man = manifest_for(model, seed, texts, data["config"])
        data["manifest"] = man
        safe = json_safe(data)
        if out_dir is not None:
            from reports.sycophancy import render_sycophancy_report

            out.write_json("results.json", safe)
            out.write_text("report.html", render_sycophancy_report(safe, man))
    if as_json:
        click.echo(json.dumps(safe, indent=2, ensure_ascii=False))
    else:
        print_table(safe)
    if not res.valid:
        for r in res.validity_reasons:
            log(f"warning ({mode} mode not valid here): {r}")


def _f(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(ci: Any) -> str:
    if not ci or ci[0] is None:
        return "—"
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def print_table(d: dict[str, Any]) -> None:
    """Accuracy per variant and the headline rates, each with its CI and n."""
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False, width=120)
    valid = "valid" if d["valid"] else "NOT VALID"
    t = Table(title=f"sycophancy · {d['model']} · {d['mode']} mode ({valid}) · "
              f"{d['n_items']} questions", title_justify="left")
    for col in ("variant", "accuracy", "95% CI", "n", "McNemar p vs neutral"):
        t.add_column(col, justify="right" if col != "variant" else "left")
    for v, acc in d["accuracy"].items():
        mc = d["mcnemar"].get(v)
        t.add_row(v, _f(acc), _ci(d["accuracy_ci95"][v]), str(d["accuracy_n"][v]),
                  "—" if mc is None else f"{mc['p_value']:.2g}")
    console.print(t)
    r = Table(title="rates (per item)", title_justify="left")
    for col in ("rate", "value", "95% CI", "n"):
        r.add_column(col, justify="right" if col != "rate" else "left")
    small = set(d.get("small_n", []))
    for key in ("sycophancy_rate", "priming_flip_rate", "sycophancy_rate_net_of_priming",
                "correct_suggestion_fix_rate", "doubt_flip_rate", "are_you_sure_flip_rate",
                "self_correction_rate"):
        if key in d:
            flag = " (n < 30)" if key in small else ""
            r.add_row(key + flag, _f(d[key]), _ci(d[f"{key}_ci95"]), str(d[f"{key}_n"]))
    kba = d.get("knows_but_agrees") or {}
    if kba and not kba.get("skipped"):
        r.add_row("knows_but_agrees_rate", _f(kba["knows_but_agrees_rate"]),
                  _ci(kba["knows_but_agrees_rate_ci95"]), str(kba["knows_but_agrees_rate_n"]))
        r.add_row("  baseline: shuffled-label probe", _f(kba["shuffled_probe_rate_among_flips"]),
                  _ci(kba["shuffled_probe_rate_among_flips_ci95"]),
                  str(kba["shuffled_probe_rate_among_flips_n"]))
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
    from evals.constitutional import load_constitution, load_prompts, run_constitutional
    from interp.runs.manifest import sha256_texts

    constitution = load_constitution(constitution_path)
    items = load_prompts(prompts_path)
    if limit is not None:
        items = items[:limit]
    if not items:  # pragma: no cover - load_prompts refuses empty files
        raise InterpError("no prompts")
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        run = run_constitutional(
            model, items, constitution, rounds=rounds, max_new_tokens=max_new_tokens,
            temperature=temperature, seed=seed, batch_size=batch_size,
            deterministic=deterministic, n_examples=n_examples)
        res = json_safe(run.results)
        texts = [it.prompt for it in items]
        man = manifest_for(model, seed, texts, {
            **res["config"], "prompts": prompts_path or "constitutional/prompts.jsonl",
            "constitution_sha256": sha256_texts([json.dumps(constitution.to_dict()["principles"],
                                                            sort_keys=True)]),
        })
        res["manifest"] = man
        if out_dir is not None:
            from reports.constitutional import render_constitutional_report

            out.write_text("sft.jsonl", _jsonl(run.sft_records()))
            out.write_text("preferences.jsonl", _jsonl(run.preference_records()))
            out.write_json("results.json", res)
            out.write_text("report.html", render_constitutional_report(res, man))
    if as_json:
        click.echo(json.dumps({k: v for k, v in res.items() if k != "examples"}, indent=2,
                              ensure_ascii=False))
    else:
        _print(res)


def _fmt(res: dict[str, Any], key: str) -> tuple[str, str, str]:
    v, ci, n = res.get(key), res.get(f"{key}_ci95") or [None, None], res.get(f"{key}_n")
    if v is None:
        return "—", "—", str(n or 0)
    cis = "—" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    return f"{v:.3f}", cis, str(n)


def _print(res: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    flag = "" if res["valid"] else " · LABELS NOT VALID (degenerate letters)"
    table = Table(title=f"constitutional AI · {res['model']} · {res['n_prompts']} prompts, "
                  f"{res['rounds']} round(s){flag}", title_justify="left")
    for col in ("measure", "value", "95% CI", "n"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    for key, label in (("win_rate_revised", "win rate, revised over initial"),
                       ("position_flip_rate", "position flip rate"),
                       ("length_preference_corr", "length–preference correlation"),
                       ("self_preference_rate", "self-preference vs reference")):
        table.add_row(label, *_fmt(res, key))
    for name, sub in res["per_principle"].items():
        table.add_row(f"  win rate · {name}", *_fmt(sub, "win_rate_revised"))
    Console(soft_wrap=False, width=120).print(table)
    if not res["valid"]:
        log("letter check: " + " ".join(res["letter_check"].get("reasons", [])))


eval_group.add_command(constitutional)
eval_group.add_command(sycophancy)
