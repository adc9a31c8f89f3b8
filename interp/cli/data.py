"""``interp models`` and ``interp corpus build|info``: what models and text are here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from interp.cli.common import device_option, dtype_option, json_flag, log, out_option
from interp.cli.options import build_config, config_options
from interp.errors import InterpError
from interp.verify.results import VerifyConfig


@click.command()
@json_flag("Print JSON instead of a table.")
@click.option("--verify", "verify_name", default=None, metavar="NAME|PATH",
              help="Run the verified-models checks on this model (an embedded name, a "
              "checkpoint folder, a .gguf file) and print its row of the verified-models table.")
@config_options(VerifyConfig, help={
    "compare_hf": "With --verify: skip the comparison with the plain transformers model."})
@out_option("With --verify: write report.html, figures/ and results.json here.")
@device_option("With --verify: cpu, cuda.", check=False)
@dtype_option("With --verify: the model's dtype.")
@click.option("--support", is_flag=True,
              help="Print which tools run on which architecture family.")
def models(as_json: bool, verify_name: str | None, out_dir: str | None, device: str,
           dtype: str, support: bool, **settings: Any) -> None:
    """List the models available here, verify one (--verify NAME), or show which tools run
    on which architecture family (--support)."""
    config = build_config(VerifyConfig, settings)
    if support:
        if verify_name is not None or out_dir is not None:
            raise InterpError("--support goes alone (with --json at most)")
        _support(as_json)
        return
    if verify_name is not None:
        _verify(verify_name, config, out_dir, device, dtype, as_json)
        return
    if out_dir is not None or not config.compare_hf:
        raise InterpError("--out and --no-hf go with --verify NAME")
    from rich.console import Console
    from rich.table import Table

    from interp.models.loading import list_models

    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="models", title_justify="left")
    for col in ("name", "kind", "installed", "cached", "path"):
        table.add_column(col, overflow="fold")
    for r in rows:
        cached = (f"no: {r['damaged']}; converted again on its next load" if r["damaged"]
                  else _yn(r["cached"]))
        table.add_row(r["name"], r["kind"], _yn(r["installed"]), cached, r["path"])
    Console(soft_wrap=False, width=160).print(table)
    log("any local HF checkpoint folder or hub name also works with --model; "
        "`interp models --verify NAME` checks one")


def _support(as_json: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from interp.cli.support import columns, matrix

    rows = matrix()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    cols = columns()
    table = Table(title="architecture families × tools (tested on a tiny checkpoint of each)",
                  title_justify="left")
    for head in ("family", "model_type", *(c.name for c in cols)):
        table.add_column(head, overflow="fold")
    for r in rows:
        table.add_row(r["family"], r["model_type"], *(r[c.name] for c in cols))
    Console(soft_wrap=False, width=160).print(table)
    log("verbs per column: " + "; ".join(f"{c.name}: {c.verbs}" for c in cols))


def _verify(name: str, cfg: VerifyConfig, out_dir: str | None, device: str, dtype: str,
            as_json: bool) -> None:
    from interp.cli.common import json_safe, load_model
    from interp.runs.outdir import OutDir, check_creatable
    from interp.verify import verify_model

    if out_dir is not None:
        check_creatable(out_dir)
    model = load_model(name, device, dtype, 0)
    result = verify_model(model, cfg)
    data: dict[str, Any] = json_safe(result.to_dict())
    if out_dir is not None:
        from reports.verify import verify_report

        with OutDir(out_dir) as out:
            out.write_json("results.json", data)
            verify_report(result).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        result.headline().print()
        click.echo(result.table_header() + "\n" + result.table_row())
    if out_dir is not None:
        log(f"wrote {Path(out_dir) / 'report.html'} and results.json")
    if not result.passed:
        raise SystemExit(1)


def _yn(x: bool) -> str:
    return "yes" if x else "no"


@click.group()
def corpus() -> None:
    """The default offline text corpus (Debian documentation prose)."""


@corpus.command("build")
@out_option("Folder (default: $INTERP_CACHE/corpus/debian-docs-v1).")
@click.option("--force", is_flag=True, help="Rebuild even if already built.")
def corpus_build(out_dir: str | None, force: bool) -> None:
    """Download the documentation packages and build train/heldout splits."""
    from interp.data import corpus as corpus_mod
    if out_dir is not None:  # --out "" is refused, not read as the default folder
        from interp.runs.outdir import check_out_place

        check_out_place(out_dir)
    problem = corpus_mod.corpus_problem(out_dir)
    where = out_dir or corpus_mod.default_dir()
    if problem is None and not force:
        log(f"corpus already built at {where} (use --force)")
    else:
        if problem not in (None, corpus_mod.NOT_BUILT) and not force:
            from interp.runs.progress import note

            note(f"corpus at {where} is {problem}; rebuilding")
        corpus_mod.build(Path(out_dir) if out_dir else None)
    _print_corpus_info(corpus_mod.manifest(out_dir))


@corpus.command("info")
@click.option("--path", default=None, type=click.Path(file_okay=False))
def corpus_info(path: str | None) -> None:
    """Show what the built corpus holds."""
    from interp.data import corpus as corpus_mod

    # not built, damaged or another version's, an empty --path: one line (check_corpus)
    _print_corpus_info(corpus_mod.manifest(path))


def _print_corpus_info(man: dict[str, Any]) -> None:
    click.echo(json.dumps({k: v for k, v in man.items() if k != "packages"}, indent=2))
