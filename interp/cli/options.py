"""CLI options derived from config fields: a setting is declared once, in its config.

:func:`config_options` turns the fields of a :class:`~interp.schema.settings.Config` into click
options (flag, type, default, help, choices); :func:`build_config` turns the parsed values
back into the config, whose own checks then run. When a check fails, the error names the
flag the user typed (``--C must be a positive finite number, got nan``), not the field.

Written here rather than taken from a library: the click-from-dataclass packages on PyPI
(click-dataclass, dataclass-click) are small and little kept, and none reads the help text
and checks from field metadata the way :func:`~interp.schema.settings.setting` stores them; this
module is the ~120 lines that do.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING
from typing import Any, Literal, TypeVar, get_args, get_origin

import click

from interp.errors import InterpError
from interp.schema.settings import UNSET, Cli, Config, ConfigError, setting_info, type_hints

C = TypeVar("C", bound=Config)
F = TypeVar("F", bound=Callable[..., Any])

#: The running verb's flags by parameter name, for errors raised after the config is built.
_FLAGS: dict[str, str] = {}


def flag_of(cls: type[Config], name: str) -> str:
    """The CLI flag of ``cls``'s field ``name``."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return spelling(f).flag or "--" + name.replace("_", "-")


def spelling(f: dataclasses.Field) -> Cli:
    """How the command line spells field ``f`` (the plain ``--field-name`` when the setting
    says nothing, or is not on the command line by default)."""
    return setting_info(f).cli or _PLAIN


_PLAIN = Cli()


def strip_optional(hint: Any) -> Any:
    """``X`` of ``X | None`` (any other hint as it is)."""
    if get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _option(f: dataclasses.Field, hint: Any, default: Any, help_text: str | None) -> Callable:
    info, cli = setting_info(f), spelling(f)
    flag = cli.flag or "--" + f.name.replace("_", "-")
    decls = [flag, *cli.aliases, f.name]
    hint = strip_optional(hint)
    kwargs: dict[str, Any] = {"help": help_text if help_text is not None else info.help}
    if cli.metavar:
        kwargs["metavar"] = cli.metavar
    if cli.default is not UNSET:
        default = cli.default
    if hint is bool and cli.parse is None:
        if "/" in flag:  # an on/off pair, "--cache/--no-cache": click reads both spellings
            return click.option(*decls, default=default, show_default=True, **kwargs)
        if default is True:
            if not flag.startswith("--no-"):
                raise TypeError(f"{f.name}: a True-by-default flag needs a --no-… flag")
            return click.option(*decls, is_flag=True, flag_value=False, default=True, **kwargs)
        return click.option(*decls, is_flag=True, default=False, **kwargs)
    origin = get_origin(hint)
    if cli.path is not None:
        kwargs["type"] = click.Path(dir_okay=cli.path != "file", file_okay=cli.path != "dir")
    elif cli.parse is not None:
        kwargs["type"] = str
    elif origin is Literal:
        kwargs["type"] = click.Choice([str(a) for a in get_args(hint)])
    elif origin is tuple and get_args(hint)[1:] == (Ellipsis,):
        kwargs["multiple"] = True
        kwargs["type"] = strip_optional(get_args(hint)[0])
        default = tuple(default) if default not in (None, MISSING) else ()
    elif hint in (int, float) and _wants_range(info, cli, hint):
        kwargs["type"] = _range(info, hint)
    elif hint in (int, float, str):
        kwargs["type"] = hint
    else:
        kwargs["type"] = str
    if default is MISSING:
        kwargs["required"] = True
    else:
        kwargs["default"] = default
        kwargs["show_default"] = default is not None and default != () and default != ""
    return click.option(*decls, **kwargs)


def _wants_range(info: Any, cli: Cli, hint: type) -> bool:
    if cli.range is not None:
        return bool(cli.range)
    return hint is int and any(c.low is not None or c.high is not None for c in info.checks)


def _range(info: Any, hint: type) -> click.ParamType:
    """``click.IntRange``/``FloatRange`` over the closed bounds of a field's checks."""
    lows = [c.low for c in info.checks if c.low is not None]
    highs = [c.high for c in info.checks if c.high is not None]
    low, high = (max(lows) if lows else None), (min(highs) if highs else None)
    if hint is int:
        return click.IntRange(min=None if low is None else int(low),
                              max=None if high is None else int(high))
    return click.FloatRange(min=None if low is None else float(low),
                            max=None if high is None else float(high))


def config_options(
    cls: type[Config],
    *,
    only: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    help: Mapping[str, str] | None = None,  # noqa: A002 - click's own word
) -> Callable[[F], F]:
    """A decorator adding one click option per CLI field of ``cls``.

    ``only``/``exclude`` pick fields (``only`` also sets their order); ``defaults`` and
    ``help`` replace a field's default or help text for this verb (the field keeps its own).
    """
    hints = type_hints(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    names = list(only) if only is not None else [
        n for n, f in by_name.items() if setting_info(f).cli]
    names = [n for n in names if n not in set(exclude)]
    defaults, help = dict(defaults or {}), dict(help or {})
    decorators = []
    for name in names:
        f = by_name[name]
        if name in defaults:
            default = defaults[name]
        elif f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            default = MISSING
        decorators.append(_option(f, hints.get(name, str), default, help.get(name)))

    def decorate(fn: F) -> F:
        for dec in reversed(decorators):
            fn = dec(fn)
        options_of(cls, names)(fn)
        return fn

    return decorate


#: The attribute on a verb's callback naming the configs its options come from.
CONFIGS_ATTR = "__interp_configs__"


def uses_config(*classes: type[Config]) -> Callable[[F], F]:
    """Record that a verb's options set fields of ``classes``: the suite then checks that
    every option named like one of their fields has that field's default."""

    def decorate(fn: F) -> F:
        known = fn.__dict__.setdefault(CONFIGS_ATTR, [])
        known.extend(c for c in classes if c not in known)
        return fn

    return decorate


#: The attribute on a verb's callback mapping an option's name to the config whose field it
#: sets (the options :func:`config_options` and the model options make).
OWNERS_ATTR = "__interp_option_configs__"


def options_of(cls: type[Config], names: Iterable[str]) -> Callable[[F], F]:
    """Record that the options ``names`` of a verb set ``cls``'s fields of those names."""

    def decorate(fn: F) -> F:
        owners = fn.__dict__.setdefault(OWNERS_ATTR, {})
        for name in names:
            owners[name] = cls
        return uses_config(cls)(fn)

    return decorate


def option_configs(command: click.Command) -> dict[str, type[Config]]:
    """Which config's field each recorded option of a verb sets (see :func:`options_of`)."""
    return dict(getattr(command.callback, OWNERS_ATTR, {}))


def field_default(cls: type[Config], name: str) -> Any:
    """The default of ``cls``'s field ``name`` (``MISSING`` when it has none)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def verb_configs(command: click.Command) -> list[type[Config]]:
    """The configs :func:`config_options` and :func:`uses_config` recorded on a verb."""
    return list(getattr(command.callback, CONFIGS_ATTR, []))


def build_config(cls: type[C], params: dict[str, Any], **fixed: Any) -> C:
    """The config from a verb's parsed ``params`` (its fields are popped) and ``fixed`` values.

    A failing check becomes one :class:`InterpError` naming the flag.
    """
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in fixed:
            values[f.name] = fixed[f.name]
        elif f.name in params:
            value = params.pop(f.name)
            parse = spelling(f).parse
            if parse is not None and isinstance(value, str):
                value = _parsed(cls, f.name, parse, value)
            values[f.name] = value
    remember_flags()
    try:
        return cls(**values)
    except ConfigError as exc:
        raise InterpError(exc.render(cli_flag(exc.name))) from None


def _parsed(cls: type[Config], name: str, parse: Callable[[str], Any], text: str) -> Any:
    """``parse(text)``; a plain ``ValueError`` from it becomes one line naming the flag
    (``bad --alphas '1,x': use comma-separated numbers``)."""
    try:
        return parse(text)
    except InterpError:
        raise
    except ValueError as exc:
        raise InterpError(f"bad {flag_of(cls, name)} {text!r}: {exc}") from None


def remember_flags() -> None:
    """Record the running verb's flags so that :func:`cli_flag` can name them later."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    for param in ctx.command.params:
        if isinstance(param, click.Option) and param.name:
            _FLAGS[param.name] = param.opts[0]


def cli_flag(name: str) -> str:
    """The running verb's flag for parameter ``name`` (``--name`` when unknown)."""
    if not _FLAGS:
        remember_flags()
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def config_error_line(exc: ConfigError) -> str:
    """A library's :class:`ConfigError` reworded for the command line."""
    return exc.render(cli_flag(exc.name))


__all__ = ["build_config", "cli_flag", "config_error_line", "config_options", "field_default",
           "spelling", "strip_optional",
           "flag_of", "option_configs", "options_of", "remember_flags", "uses_config",
           "verb_configs"]
