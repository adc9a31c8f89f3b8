"""``interp eval sycophancy``: paired-prompt sycophancy evaluation (see evals.sycophancy)."""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli_common import json_safe, load_model, log, manifest_for, model_options, open_out
from interp.errors import InterpError


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
