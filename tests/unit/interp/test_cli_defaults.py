"""Every CLI option named like a field of its verb's config has that field's default, so a
default command-line run and a default Python run are the same run."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING
from typing import Any

import click
import pytest

from interp.cli.options import field_default, option_configs, spelling, verb_configs
from interp.schema.settings import Config
from tests.support.cli_runner import leaf_commands

VERBS = sorted(leaf_commands().items())

#: Options whose CLI default is not the like-named field's, each for a reason that keeps a
#: default command-line run equal to a default Python run (each is checked to still differ).
NOT_THE_FIELD = {
    ("eval sycophancy", "--dataset"): "the input file; the field records its source",
    ("graph", "--task"): "without --task the verb graphs PROMPT: the config's task is used "
                         "only when --task is given",
    ("probe", "--layers"): "--layer and --layers exclude each other; given neither, the "
                           "config's default ('all') applies",
    ("sae train", "--layer"): "--layer and --layers exclude each other; given neither, the "
                              "config's default applies",
    **{(verb, "--data-shards"): "the number of processes: 1 without torchrun, as the "
                                "field's default"
       for verb in ("sae train", "transcoder train", "transcoder train-clt")},
}


def _as_config_value(f: dataclasses.Field, option: click.Option, value: Any) -> Any:
    """An option's default read the way :func:`build_config` reads its value."""
    parse = spelling(f).parse
    if parse is not None and isinstance(value, str):
        return parse(value)
    if option.multiple and isinstance(value, (tuple, list)):
        return tuple(value)
    return value


def _normal(value: Any) -> Any:
    return tuple(value) if isinstance(value, (list, tuple)) else value


def differing_defaults(path: str, command: click.Command) -> list[str]:
    """``"verb --flag: CLI x, Config.field y"`` for each option whose default differs."""
    configs: list[type[Config]] = verb_configs(command)
    owners = option_configs(command)
    out = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.name is None:
            continue
        # an option made from a config field sets that field; a hand-written one, any
        # recorded config's field of its name
        for cls in [owners[param.name]] if param.name in owners else configs:
            f = next((f for f in dataclasses.fields(cls) if f.name == param.name), None)
            if f is None:
                continue
            want = field_default(cls, f.name)
            if want is MISSING or (param.required and param.default is None):
                continue
            got = _as_config_value(f, param, param.default)
            if _normal(got) != _normal(want):
                out.append(f"{path} {param.opts[0]}: CLI {got!r}, {cls.__name__}.{f.name} "
                           f"{want!r}")
    return out


def test_every_verb_records_its_configs():
    """A verb with options but no recorded config could drift unseen (the check below would
    pass vacuously); the verbs that take no config's settings are named here."""
    settle_nothing = {"compare", "corpus build", "corpus info", "peak", "sae export",
                      "sae import", "seeds"}
    unrecorded = {p for p, c in VERBS if not verb_configs(c)}
    assert unrecorded == settle_nothing


@pytest.mark.parametrize(("path", "command"), VERBS, ids=[p for p, _ in VERBS])
def test_cli_defaults_equal_the_configs(path: str, command: click.Command):
    differ = differing_defaults(path, command)
    excused = [d for d in differ if (path, d.split(":")[0].split()[-1]) in NOT_THE_FIELD]
    assert [d for d in differ if d not in excused] == []
    stale = {k for k in NOT_THE_FIELD if k[0] == path} - {
        (path, d.split(":")[0].split()[-1]) for d in excused}
    assert not stale, f"no longer differ, remove from NOT_THE_FIELD: {stale}"


def test_the_check_fires_on_a_verb_whose_default_drifted():
    """The check itself can fail: a verb declaring ``--top-k 7`` over a config saying 5."""
    from dataclasses import dataclass

    from interp.cli.options import config_options, uses_config
    from interp.schema.settings import setting

    @dataclass(frozen=True)
    class ToyConfig(Config):
        top_k: int = setting(5, help="k.")
        seed: int = setting(0, help="Seed.")

    @click.command()
    @uses_config(ToyConfig)
    @click.option("--seed", default=1)
    @config_options(ToyConfig, only=["top_k"], defaults={"top_k": 7})
    def toy(**_: Any) -> None: ...

    assert differing_defaults("toy", toy) == ["toy --seed: CLI 1, ToyConfig.seed 0",
                                              "toy --top-k: CLI 7, ToyConfig.top_k 5"]
