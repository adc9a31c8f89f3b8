"""Run the ``interp`` CLI in-process, as the console script would, and capture its output."""

from __future__ import annotations

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
