"""``interp models`` and ``interp corpus build|info``: what models and text are here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from interp.cli.common import (
    log,
)
from interp.errors import InterpError


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def models(as_json: bool) -> None:
    """List the models available here and whether they are converted and cached."""
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
        table.add_row(r["name"], r["kind"], _yn(r["installed"]), _yn(r["cached"]), r["path"])
    Console(soft_wrap=False, width=160).print(table)
    log("any local HF checkpoint folder or hub name also works with --model")


def _yn(x: bool) -> str:
    return "yes" if x else "no"


@click.group()
def corpus() -> None:
    """The default offline text corpus (Debian documentation prose)."""


@corpus.command("build")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Folder (default: $INTERP_CACHE/corpus/debian-docs-v1).")
@click.option("--force", is_flag=True, help="Rebuild even if already built.")
def corpus_build(out_dir: str | None, force: bool) -> None:
    """Download the documentation packages and build train/heldout splits."""
    from interp.data import corpus as corpus_mod
    if corpus_mod.is_built(out_dir) and not force:
        log(f"corpus already built at {out_dir or corpus_mod.default_dir()} (use --force)")
    else:
        corpus_mod.build(Path(out_dir) if out_dir else None)
    _print_corpus_info(corpus_mod.manifest(out_dir))


@corpus.command("info")
@click.option("--path", default=None, type=click.Path(file_okay=False))
def corpus_info(path: str | None) -> None:
    """Show what the built corpus holds."""
    from interp.data import corpus as corpus_mod
    if not corpus_mod.is_built(path):
        raise InterpError(
            f"corpus not built at {path or corpus_mod.default_dir()}: run `interp corpus build`"
        )
    _print_corpus_info(corpus_mod.manifest(path))


def _print_corpus_info(man: dict[str, Any]) -> None:
    click.echo(json.dumps({k: v for k, v in man.items() if k != "packages"}, indent=2))
