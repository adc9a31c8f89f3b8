"""The ``interp`` command line.

Conventions every verb follows:

* verbs that use a model take ``--model --device --dtype --batch-size --seed``;
* layer lists are comma-separated, or ``all``;
* ``--out DIR`` is created if missing; only the command's own files are replaced,
  and only when it succeeds (see :mod:`interp.runs.outdir`);
* progress bars and logs go to stderr, stdout carries only the table or JSON;
* a user error prints one line on stderr and exits with code 2, no traceback.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from typing import Any

import click

from interp.cli.common import (
    model_options,
)
from interp.errors import InterpError
from interp.schema.settings import ConfigError


def _quiet_environment() -> None:
    """What the command line wants of third-party libraries (``import interp`` sets none of it).

    No telemetry, no wandb, no tokenizer worker warnings, no hub progress bars and
    transformers' warnings off: the CLI's own progress bars and one-line errors are
    the only things it prints on stderr.
    """
    os.environ.setdefault("WANDB_MODE", "disabled")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import huggingface_hub.utils
    import transformers

    if os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
        huggingface_hub.utils.disable_progress_bars()
        # transformers reads the variable once, when first imported; `import interp` may
        # already have imported it (the generation engine uses its KV-cache classes)
        transformers.utils.logging.disable_progress_bar()
    transformers.logging.set_verbosity(
        transformers.logging.get_log_levels_dict().get(
            os.environ["TRANSFORMERS_VERBOSITY"], logging.ERROR
        )
    )


_quiet_environment()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="interp")
def cli() -> None:
    """Mechanistic interpretability for transformer language models."""


def add_tool(tool: Any) -> click.Command:
    """Put a declared tool's verb (:class:`interp.cli.tool.Tool`) on the ``interp`` group;
    returns the verb."""
    from interp.cli.tool import register

    return register(tool, cli)


# -------------------------------------------------------------------------- helpers
def _register_verbs() -> None:
    """Every verb lives in its own module of :mod:`interp.cli` and joins the group here."""
    from interp.cli.attention import attention
    from interp.cli.capture import capture
    from interp.cli.causal import causal_group
    from interp.cli.data import corpus, models
    from interp.cli.evals import eval_group
    from interp.cli.generate import generate_cmd
    from interp.cli.graph import graph
    from interp.cli.lens import lens
    from interp.cli.noise import compare, seeds
    from interp.cli.patch import patch
    from interp.cli.peak import peak
    from interp.cli.probe import probe
    from interp.cli.sae import sae_group
    from interp.cli.steer import steer
    from interp.cli.transcoder import transcoder_group
    from interp.cli.tuned_lens import tuned_lens

    for command in (lens, capture, probe, generate_cmd, steer, models, corpus, tuned_lens,
                    sae_group, eval_group, patch, attention, causal_group, seeds, compare, peak,
                    transcoder_group, graph):
        cli.add_command(command)


_register_verbs()


#: Characters that would break the one error line (str.splitlines breaks on all of them).
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def one_line(message: str) -> str:
    """``message`` on one line: a line break or control character that came in with a
    user's value (a prompt, a file name) is shown escaped."""
    import unicodedata

    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if ch in _LINE_BREAKS or unicodedata.category(ch) in ("Cc", "Cs") else ch
        for ch in message)


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {one_line(message)}", err=True)
    sys.exit(code)


def _run(argv: list[str] | None) -> None:
    """The command, then its profile (``--profile DIR``), written only on success."""
    from interp.cli.common import finish_profile

    try:
        cli.main(args=argv, prog_name="interp", standalone_mode=False)
    except BaseException:
        finish_profile(failed=True)
        raise
    finish_profile(failed=False)


def check_utf8_arguments(argv: list[str]) -> None:
    """Refuse (one line) an argument that is not valid UTF-8: Python hands such bytes over as
    lone surrogates, which no tokenizer, JSON file or report can carry."""
    for n, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            shown = shown[:60] + ("…" if len(shown) > 60 else "")
            raise InterpError(f"argument {n} ({shown}) is not valid UTF-8 (at character "
                              f"{exc.start}): give text and file names in UTF-8") from None


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: user errors → one line on stderr, exit 2."""
    try:
        check_utf8_arguments(sys.argv[1:] if argv is None else list(argv))
        _run(argv)
    except ConfigError as exc:  # a library's check: name the flag the user typed
        from interp.cli.options import config_error_line

        _fail(config_error_line(exc))
    except InterpError as exc:
        _fail(str(exc))
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as exc:
        _fail(" ".join(exc.format_message().split()))
    except FileNotFoundError as exc:
        if os.environ.get("INTERP_DEBUG"):
            raise
        _fail(f"cannot read {exc.filename}: no such file")
    except PermissionError as exc:
        _fail(f"cannot access {exc.filename}: permission denied")
    except (IsADirectoryError, NotADirectoryError) as exc:
        _fail(f"cannot use {exc.filename}: {exc.strerror}")
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            _internal(exc)
        name = str(exc.filename or "")
        _fail(f"cannot use {name[:60]}{'…' if len(name) > 60 else ''}: file name too long")
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # a bug: keep it to one line unless debugging
        _internal(exc)


def _internal(exc: Exception) -> None:
    """A bug: one line (exit 1) unless ``INTERP_DEBUG`` asks for the traceback."""
    if os.environ.get("INTERP_DEBUG"):
        raise exc
    _fail(f"internal error: {type(exc).__name__}: {exc} (set INTERP_DEBUG=1 for a "
          "traceback and please report it)", 1)


if __name__ == "__main__":
    main()


__all__ = ["add_tool", "cli", "main", "model_options"]
