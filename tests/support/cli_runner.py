"""Run the ``interp`` CLI in-process, as the console script would, and capture its output."""

from __future__ import annotations

import click

from interp.cli import main


def run(args: list[str], capsys) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``interp ARGS`` (``capsys``: pytest's fixture)."""
    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def leaf_commands() -> dict[str, click.Command]:
    """Every verb of the app by its words (``"sae train"``), from the click tree."""
    from interp.cli import cli

    out: dict[str, click.Command] = {}

    def walk(group: click.Group, prefix: str) -> None:
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                walk(cmd, f"{prefix}{name} ")
            else:
                out[f"{prefix}{name}"] = cmd

    walk(cli, "")
    return out
