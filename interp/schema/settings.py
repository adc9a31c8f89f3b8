"""One declaration per setting: a config field carries its type, default, help text and check.

Every tool's settings are a frozen :class:`Config` dataclass whose fields are made with
:func:`setting`::

    @dataclass(frozen=True)
    class ProbeConfig(Config):
        C: float = setting(0.1, help="Inverse L2 strength.", check=positive)
        seeds: int = setting(5, help="Train/test splits.", check=at_least(1))

Building a config validates it (``__post_init__``): each field's type and checks, then the
config's own :meth:`Config.check` for rules that join several fields. A bad value raises
:class:`ConfigError`, one line that names the config, the field and the value
(``ProbeConfig.C must be > 0, got -1.0``); the command line derives its options from the same
fields (:mod:`interp.cli.options`) and rewrites the field's name as its flag
(``--C must be > 0, got -1.0``). So a Python caller gets every check the CLI makes.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar, Literal, Self, get_args, get_origin

from interp.errors import InterpError
from interp.schema.convert import fields_data, from_data
from interp.schema.hints import type_hints

#: The key of a field's :class:`SettingInfo` in its ``dataclasses.field`` metadata.
SETTING = "interp.setting"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "No value given" where None is a value (a CLI default that differs from the field's).
UNSET: Any = _Unset()


class ConfigError(InterpError):
    """A setting with an impossible value: names the config, the field and the value.

    The library's message is ``"ProbeConfig: C must be a positive finite number, got -1.0"``;
    the CLI renders the same error with the flag in place of the field
    (:meth:`render`).
    """

    def __init__(self, config: str, name: str, problem: str, value: Any = MISSING, *,
                 choices: Sequence[Any] | None = None) -> None:
        self.config, self.name, self.problem, self.value = config, name, problem, value
        self.choices = choices
        body = self.render(name)
        super().__init__(f"{config}: {body}" if config else body)

    def render(self, label: str) -> str:
        """The message with ``label`` (a field or a CLI flag) standing for the setting."""
        if self.choices is not None:
            return (f"unknown {label} {_show(self.value)}: use "
                    + " or ".join(repr(c) for c in self.choices))
        got = "" if self.value is MISSING else f", got {_show(self.value)}"
        return f"{label} {self.problem}{got}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class Check:
    """A rule a setting's value must follow; ``problem`` completes "X ..." when it fails."""

    test: Callable[[Any], bool]
    problem: str
    #: Bounds the CLI may show (``click.IntRange``-like), informative only.
    low: float | None = None
    high: float | None = None

    def fails(self, value: Any) -> bool:
        """Whether ``value`` breaks the rule (None always passes: "not set")."""
        if value is None:
            return False
        try:
            return not self.test(value)
        except (TypeError, ValueError):
            return True


def _finite(x: Any) -> bool:
    return isinstance(x, numbers.Real) and math.isfinite(float(x))


finite = Check(_finite, "must be a finite number")
positive = Check(lambda x: _finite(x) and x > 0, "must be a positive finite number", low=0)
non_negative = Check(lambda x: _finite(x) and x >= 0, "must be ≥ 0 and finite", low=0)
fraction = Check(lambda x: _finite(x) and 0 <= x <= 1, "must be in [0, 1]", low=0, high=1)
not_empty = Check(lambda x: len(x) > 0 and (not isinstance(x, str) or x.strip() != ""),
                  "must not be empty")


#: The dtypes a model's weights (or captured activations) can be in, by name: the
#: CLI's ``--dtype`` choices, the peak FLOP/s table's rows and a config's dtype setting.
Dtype = Literal["float32", "bfloat16", "float16"]
DTYPES: tuple[str, ...] = get_args(Dtype)

#: The largest seed: numpy's and scikit-learn's generators take 0 … 2³² − 1.
SEED_MAX = 2**32 - 1
#: A seed every library here takes (the CLI's ``--seed`` range derives from it).
seed_range = Check(lambda x: isinstance(x, int) and 0 <= x <= SEED_MAX,
                   f"must be an integer in [0, {SEED_MAX}]", low=0, high=SEED_MAX)


def at_least(low: float) -> Check:
    """``value ≥ low`` (and finite)."""
    return Check(lambda x: _finite(x) and x >= low, f"must be ≥ {low:g}", low=low)


def at_most(high: float) -> Check:
    """``value ≤ high`` (and finite)."""
    return Check(lambda x: _finite(x) and x <= high, f"must be ≤ {high:g}", high=high)


def in_range(low: float, high: float, *, open_low: bool = False, open_high: bool = False) -> Check:
    """``low ≤ value ≤ high``; an open end excludes its bound."""
    left, right = ("(" if open_low else "["), (")" if open_high else "]")

    def test(x: Any) -> bool:
        if not _finite(x):
            return False
        return (x > low if open_low else x >= low) and (x < high if open_high else x <= high)

    return Check(test, f"must be in {left}{low:g}, {high:g}{right}", low=low, high=high)


def one_of(*choices: Any) -> Check:
    """``value`` is one of ``choices``."""
    shown = ", ".join(str(c) for c in choices)
    return Check(lambda x: x in choices, f"must be one of {shown}")


def each(check: Check) -> Check:
    """Every element of a sequence passes ``check``."""
    return Check(lambda xs: all(not check.fails(x) for x in xs), f"items {check.problem}",
                 low=check.low, high=check.high)


# --------------------------------------------------------------------------- fields
@dataclass(frozen=True)
class Cli:
    """How a setting appears on the command line, when not just ``--field-name`` with the
    field's type: what only the CLI needs, kept apart from the setting's science (its
    default, help and checks)."""

    #: The flag (``--no-…`` for a bool field defaulting to True: given → False).
    flag: str | None = None
    #: Other spellings the CLI accepts (old names kept working).
    aliases: tuple[str, ...] = ()
    metavar: str | None = None
    #: Turns the CLI's string into the field's value (for types click cannot parse).
    parse: Callable[[str], Any] | None = None
    #: The default as the CLI spells it, parsed by :attr:`parse` into the field's default
    #: (``"all"`` for ``None``, ``"1,2,5"`` for a tuple), never another value: the suite
    #: checks every option's default against its field's.
    default: Any = UNSET
    #: True: the option's click type is ``IntRange``/``FloatRange`` over the checks' bounds,
    #: so click itself refuses a value outside them ("Invalid value for '--rounds'"); the
    #: config's checks still run after. None: an int setting with bounds gets its range, a
    #: float setting does not.
    range: bool | None = None
    #: A path setting: ``"file"`` (a folder there is refused), ``"dir"`` (a file there is
    #: refused) or ``"any"``; click checks the kind as it parses the flag.
    path: Literal["file", "dir", "any"] | None = None


@dataclass(frozen=True)
class SettingInfo:
    """What :func:`setting` records on a field for checks, reports and the CLI."""

    help: str
    checks: tuple[Check, ...] = ()
    #: How the command line spells the setting; None: a Python-only setting (no CLI
    #: option), or one a verb declares itself.
    cli: Cli | None = Cli()


def setting(
    default: Any = MISSING,
    *,
    help: str,
    check: Check | Sequence[Check] = (),
    cli: Cli | bool = True,
    default_factory: Callable[[], Any] | Any = MISSING,
) -> Any:
    """A config field: its default, help text and checks, declared once. ``cli``: False for a
    Python-only setting (or one a verb declares itself), a :class:`Cli` for how the command
    line spells it."""
    checks = (check,) if isinstance(check, Check) else tuple(check)
    spelled = cli if isinstance(cli, Cli) else (Cli() if cli else None)
    info = SettingInfo(help=help, checks=checks, cli=spelled)
    kwargs: dict[str, Any] = {"metadata": {SETTING: info}}
    if default_factory is not MISSING:
        kwargs["default_factory"] = default_factory
    elif default is not MISSING:
        kwargs["default"] = default
    return field(**kwargs)


def setting_info(f: dataclasses.Field) -> SettingInfo:
    """A field's :class:`SettingInfo` (an empty one for a plain dataclass field)."""
    info = f.metadata.get(SETTING)
    return info if isinstance(info, SettingInfo) else SettingInfo(help="")


def _type_ok(value: Any, hint: Any) -> bool:
    """A light type check: the scalar types a user can get wrong (not a full validator)."""
    origin = get_origin(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, h) for h in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True  # containers and classes: the field's checks say more


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(h) for h in get_args(hint))
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", str(hint))


# --------------------------------------------------------------------------- configs
@dataclass(frozen=True)
class Config:
    """Base of every tool's settings: validated when built, immutable, serialisable.

    Subclasses are ``@dataclass(frozen=True)`` with fields made by :func:`setting`, and may
    override :meth:`check` for rules that join fields (raise :meth:`error`). Use
    :meth:`replace` for a changed copy.
    """

    #: Names that are not settings of the run and stay out of ``to_dict()``.
    transient: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every field's type and rules, then :meth:`check`."""
        hints = type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            hint = hints.get(f.name, Any)
            if not _type_ok(value, hint):
                if get_origin(hint) is Literal and not isinstance(value, bool):
                    raise ConfigError(type(self).__name__, f.name, "", value,
                                      choices=get_args(hint))
                raise self.error(f.name, f"must be {_type_name(hint)}", value)
            for rule in setting_info(f).checks:
                if rule.fails(value):
                    raise self.error(f.name, rule.problem, value)
        self.check()

    def check(self) -> None:
        """Rules between fields; raise ``self.error(field, problem, value)``."""

    def error(self, name: str, problem: str, value: Any = MISSING) -> ConfigError:
        """A :class:`ConfigError` about field ``name`` of this config."""
        return ConfigError(type(self).__name__, name, problem, value)

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready data (``results.json``'s ``config``)."""
        data = fields_data(self)
        for name in self.transient:
            data.pop(name, None)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """A config from :meth:`to_dict`'s output (unknown keys are ignored)."""
        return from_data(cls, data)

    @classmethod
    def resolve(cls, config: Self | None = None, settings: dict[str, Any] | None = None, *,
                override: bool = False, noun: str | None = None) -> Self:
        """``config``, or one built from keyword ``settings``: the one implementation behind
        a tool's two call forms (``run_x(model, data, XConfig(...))`` and
        ``run_x(model, data, seeds=3)``). Giving both is an error, unless ``override``:
        then the keywords change a copy of ``config`` (``run_x(model, data, cfg,
        batch_size=1)``). An unknown name is an error; ``noun`` words it as "unknown
        {noun} option(s) …; known: …" (the tool's own phrase) instead of "XConfig has no
        setting …".
        """
        settings = settings or {}
        if config is not None and not isinstance(config, cls):
            raise InterpError(f"expected a {cls.__name__}, got {type(config).__name__}")
        if config is not None and settings and not override:
            raise InterpError(f"give a {cls.__name__} or keyword settings "
                              f"({', '.join(sorted(settings))}), not both")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            if noun is not None:
                raise InterpError(f"unknown {noun} option(s) {', '.join(unknown)}; known: "
                                  f"{', '.join(sorted(known))}")
            raise InterpError(f"{cls.__name__} has no setting {', '.join(unknown)} "
                              f"(its settings: {', '.join(sorted(known))})")
        if config is not None:
            return config.replace(**settings) if settings else config
        return cls(**settings)

    @classmethod
    def settings(cls) -> dict[str, SettingInfo]:
        """Every field's :class:`SettingInfo`, in declaration order."""
        return {f.name: setting_info(f) for f in dataclasses.fields(cls)}


__all__ = [
    "DTYPES",
    "UNSET",
    "Check",
    "Cli",
    "Config",
    "ConfigError",
    "Dtype",
    "SettingInfo",
    "at_least",
    "at_most",
    "each",
    "finite",
    "fraction",
    "in_range",
    "non_negative",
    "not_empty",
    "one_of",
    "positive",
    "setting",
    "setting_info",
    "type_hints",
]
