"""A tool declared once becomes a verb: config, run function, result, report, output files.

A :class:`Tool` names what a tool is: its config (whose fields become the options, with
their defaults, help and checks), its run function ``run(model, config) -> result``, the
report that renders the result (a function, or a body template given as text; by default
the result's own headline), and any files it writes beside ``results.json``.
:func:`tool_command` builds the verb from it: the config's options, the model options
(``--model --device --dtype --batch-size --seed --profile``, whose defaults are the
config's), ``--out DIR`` (``results.json`` with the run manifest, ``report.html`` and
``figures/``) and ``--json``. :func:`register` puts the verb on a group
(:func:`interp.cli.app.add_tool`: on ``interp``).

So a new tool is its config, its run function and its result (and, when the headline is
not enough, a report), and nothing in the CLI is written for it::

    TOOL = Tool("toy", ToyConfig, run_toy, help="What the toy measures.")
    add_tool(TOOL)          # interp.cli.app: `interp toy --top-k 3 --out DIR`

Each field's checks give the tool's bad-input cases (:func:`bad_inputs`): a value just
outside a field's bounds must be refused in one line naming the flag, before the model
loads.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import click

from interp.cli.common import (
    MODEL_FIELDS,
    json_option,
    json_safe,
    load_model,
    log,
    make_model_options,
    model_fields,
    open_out,
    out_option,
    show_result,
)
from interp.cli.options import build_config, config_options, flag_of, strip_optional
from interp.runs.manifest import model_manifest
from interp.runs.outdir import OutDir
from interp.schema.result import Result
from interp.schema.settings import Config, setting_info, type_hints

C = TypeVar("C", bound=Config)
R = TypeVar("R", bound=Result)

@dataclass(frozen=True)
class Tool(Generic[C, R]):
    """What a tool is, declared once; :func:`tool_command` makes its verb."""

    #: The verb's name (``interp NAME``).
    name: str
    config: type[C]
    #: ``run(model, config) -> result``: the Python API the verb calls, or its
    #: ``"module:function"`` name (imported when the verb runs, so ``interp --help`` stays
    #: fast).
    run: Callable[[Any, C], R] | str
    #: The verb's help: its first line is the one ``interp --help`` lists.
    help: str = ""
    #: ``report(result)`` → a :class:`reports.html.Report`; None: :attr:`template` or the
    #: result's headline.
    report: Callable[[R], Any] | str | None = None
    #: A report body template (jinja2 text, rendered with ``result``) when no
    #: :attr:`report` function is given.
    template: str | None = None
    #: ``check(config)``: refuse what cannot run, before the model loads (or its
    #: ``"module:function"`` name, as for :attr:`run`).
    check: Callable[[C], None] | str | None = None
    #: ``write(result, out)``: the files beside ``results.json`` (named in ``files``).
    write: Callable[[R, OutDir], None] | None = None
    files: tuple[str, ...] = ()
    #: What ``--batch-size`` counts, for its help.
    batch_help: str = "Prompts per forward pass."
    #: Config fields given as positional arguments (``interp attention PROMPT``), in order.
    arguments: tuple[str, ...] = ()
    #: Whether ``--out`` must be given (a verb whose result is mostly its report).
    out_required: bool = False
    #: ``notes(result)``: lines for stderr after the run (what was left out, and why).
    notes: Callable[[R], list[str]] | None = None

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip() or " " in self.name:
            raise ValueError(f"a tool's name is one word, got {self.name!r}")
        if not (dataclasses.is_dataclass(self.config) and issubclass(self.config, Config)):
            raise TypeError(f"{self.name}: config must be a Config dataclass")
        if self.report is not None and self.template is not None:
            raise ValueError(f"{self.name}: give a report function or a template, not both")


def _config_fields(cls: type[Config], arguments: tuple[str, ...] = ()) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)
            if setting_info(f).cli and f.name not in MODEL_FIELDS + arguments]


def resolve(ref: Callable[..., Any] | str) -> Callable[..., Any]:
    """A function, or the one a ``"module:function"`` name points at."""
    if not isinstance(ref, str):
        return ref
    import importlib

    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def tool_command(tool: Tool[Any, Any]) -> click.Command:
    """The click verb of ``tool``: its config's options, the model options, ``--out`` and
    ``--json``; it runs the tool and writes ``results.json``, the report and its files."""

    def callback(model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
                 out_dir: str | None, as_json: bool, **settings: Any) -> None:
        given = {"batch_size": batch_size, "seed": seed}
        config = build_config(tool.config, settings,
                              **{n: given[n] for n in model_fields(tool.config)})
        if tool.check is not None:
            resolve(tool.check)(config)
        with open_out(out_dir) as out:
            model = load_model(model_name, device, dtype, seed)
            result = resolve(tool.run)(model, config)
            if result.manifest is None:
                result.manifest = model_manifest(model, seed=seed, config=config.to_dict())
            data = json_safe(result.to_dict())
            if isinstance(out, OutDir):
                out.write_json("results.json", data)
                tool_report(tool, result).write(out)
                if tool.write is not None:
                    tool.write(result, out)
        for line in tool.notes(result) if tool.notes is not None else ():
            log(line)
        show_result(result, data, as_json, "" if out_dir is None else
                    f"wrote {os.path.join(out_dir, 'report.html')} and results.json")

    callback.__doc__ = tool.help or f"Run {tool.name}."
    callback.__name__ = tool.name.replace("-", "_")
    fn: Callable[..., None] = callback
    fn = json_option(fn)
    written = ["report.html", "results.json", "figures/", *tool.files]
    wrote = ", ".join(written[:-1]) + " and " + written[-1]
    fn = out_option(f"Write {wrote} here.", required=tool.out_required)(fn)
    fn = make_model_options(tool.config, batch_help=tool.batch_help)(fn)
    fn = config_options(tool.config, only=_config_fields(tool.config, tool.arguments))(fn)
    for name in reversed(tool.arguments):
        fn = click.argument(name)(fn)
    return click.command(tool.name, help=tool.help or None)(fn)


def tool_report(tool: Tool[Any, R], result: R) -> Any:
    """The tool's report of ``result``: its report function, its template, or the result's
    headline with its figure."""
    if tool.report is not None:
        return resolve(tool.report)(result)
    from reports.generic import result_report

    return result_report(result, title=tool.name, template=tool.template)


def register(tool: Tool[Any, Any], group: click.Group) -> click.Command:
    """Put ``tool``'s verb on ``group`` (``interp.cli.cli``, or one of its groups); returns
    it."""
    if tool.name in group.commands:
        raise ValueError(f"interp already has a verb {tool.name!r}")
    command = tool_command(tool)
    group.add_command(command)
    return command


@dataclass(frozen=True)
class BadInput:
    """One value a tool must refuse: the flag, the value and what the refusal names."""

    flag: str
    value: str
    problem: str


def bad_inputs(tool: Tool[Any, Any]) -> Iterator[BadInput]:
    """From the config's field checks: for each bound, a value just outside it (an int field
    one below its lowest value, one above its highest; a float field's bound itself where
    the bound is open). Each must be refused in one line naming its flag."""
    hints = type_hints(tool.config)
    for name in _config_fields(tool.config, tool.arguments):
        f = next(f for f in dataclasses.fields(tool.config) if f.name == name)
        hint = strip_optional(hints.get(name, str))
        if hint not in (int, float):
            continue  # bounds on a number only: a list's or a string's checks say more
        flag = flag_of(tool.config, name).split("/")[0]
        for check in setting_info(f).checks:
            for bound, step in ((check.low, -1), (check.high, +1)):
                if bound is None:
                    continue
                candidates = [int(bound) + step] if hint is int else [bound + step, float(bound)]
                for value in candidates:
                    if check.fails(value):
                        yield BadInput(flag, str(value), check.problem)
                        break


__all__ = ["BadInput", "Tool", "bad_inputs", "register", "resolve", "tool_command",
           "tool_report"]
