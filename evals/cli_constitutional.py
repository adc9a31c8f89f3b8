"""``interp eval constitutional``: critique–revision, AI-feedback labels and their biases.

Writes into ``--out DIR`` (only when the whole run succeeds): ``sft.jsonl``,
``preferences.jsonl``, ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import json
from typing import Any

import click

from interp.cli_common import json_safe, load_model, log, manifest_for, model_options, open_out
from interp.errors import InterpError


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
    from interp.manifest import sha256_texts

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
