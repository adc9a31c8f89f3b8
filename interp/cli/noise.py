"""``interp seeds K --out DIR -- VERB ARGS…`` and ``interp compare A B``: seed noise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from interp.cli.common import json_option, json_safe, log, out_option
from interp.errors import InterpError


def _root() -> click.Command:
    """The ``interp`` group this command runs under (found without importing the app)."""
    return click.get_current_context().find_root().command


def _leaf(args: list[str]) -> tuple[click.Command, list[str]]:
    """The verb's command and its name words (``["eval", "sycophancy"]``)."""
    group: click.Command = _root()
    words: list[str] = []
    for word in args:
        if not isinstance(group, click.Group):
            break
        sub = group.commands.get(word)
        if sub is None:
            raise InterpError(f"seeds: unknown verb {' '.join([*words, word])!r}")
        group, words = sub, [*words, word]
    if isinstance(group, click.Group) or not words:
        raise InterpError("seeds: give the verb to run after --, e.g. "
                          "`interp seeds 3 --out DIR -- probe --layer 6`")
    return group, words


def _check_verb(args: list[str]) -> tuple[str, list[str]]:
    cmd, words = _leaf(args)
    opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
    verb = " ".join(words)
    if "--seed" not in opts or "--out" not in opts:
        raise InterpError(f"seeds: `interp {verb}` has no --seed and --out to run it under")
    rest = args[len(words):]
    clash = [a for a in rest if a.split("=")[0] in ("--seed", "--out")]
    if clash:
        raise InterpError(f"seeds sets --seed and --out itself; drop {clash[0].split('=')[0]}")
    return verb, rest


@click.command("seeds")
@click.argument("k", type=int)
@out_option("Folder: DIR/seed-N/ per run, and the summary (results.json, report.html).",
            required=True)
@click.argument("verb_args", nargs=-1, type=click.UNPROCESSED)
def seeds(k: int, out_dir: str, verb_args: tuple[str, ...]) -> None:
    """Run a verb under seeds 0…K−1 and summarise every metric's spread.

    Example: ``interp seeds 3 --out runs/ -- probe --layer 6``.
    """
    from interp.noise.seeds import SEED_DIR, check_seeds, summarise_seeds
    from interp.runs.outdir import OutDir
    from interp.runs.progress import status
    from reports.noise import seeds_report

    check_seeds(k)
    root = _root()
    verb, rest = _check_verb(list(verb_args))
    words = verb.split()
    with OutDir(out_dir) as out:
        staged = []
        for s in range(k):
            folder = out.stage_dir(SEED_DIR.format(s))
            argv = [*words, *rest, "--seed", str(s), "--out", str(folder)]
            old_argv = sys.argv
            sys.argv = ["interp", *argv]  # the run's manifest records its own command
            try:
                with status(f"seed {s + 1} of {k}: interp {verb} … --seed {s}"):
                    root.main(args=argv, prog_name="interp", standalone_mode=False)
            finally:
                sys.argv = old_argv
            staged.append(folder)
        result = summarise_seeds(staged, verb=verb, args=rest, seeds=list(range(k)))
        result.runs = [str(Path(out_dir) / SEED_DIR.format(s)) for s in range(k)]
        out.write_json("results.json", json_safe(result.to_dict()))
        seeds_report(result).write(out)
    result.headline().print()
    log(f"wrote {Path(out_dir) / 'results.json'} and report.html")


@click.command("compare")
@click.argument("a", type=click.Path(file_okay=False))
@click.argument("b", type=click.Path(file_okay=False))
@out_option("Also write results.json and report.html here.")
@json_option
@click.option("--all", "show_all", is_flag=True, help="List every metric, not the first 30.")
def compare(a: str, b: str, out_dir: str | None, as_json: bool, show_all: bool) -> None:
    """Is B − A larger than the noise? Two result folders or two seed groups, per metric.

    Exits 0 whatever the verdicts.
    """
    from interp.noise.compare import compare_results
    from interp.noise.results import SHOWN_COMPARED
    from interp.runs.outdir import OutDir, check_creatable
    from reports.noise import compare_report

    if out_dir is not None:
        check_creatable(out_dir, inputs=(a, b))
    result = compare_results(a, b)
    data = json_safe(result.to_dict())
    if out_dir is not None:
        with OutDir(out_dir) as out:
            out.write_json("results.json", data)
            compare_report(result).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    result.headline(limit=None if show_all else SHOWN_COMPARED).print()
    if out_dir is not None:
        log(f"wrote {Path(out_dir) / 'report.html'} and results.json")
