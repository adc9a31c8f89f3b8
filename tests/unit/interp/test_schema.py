"""The shared shape: settings declared once, one result base, one JSON converter, and CLI
options derived from config fields."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Literal

import click
import numpy as np
import pytest
from click.testing import CliRunner

from interp.cli.options import build_config, config_options, flag_of
from interp.errors import InterpError
from interp.schema import (
    Cli,
    Config,
    ConfigError,
    Headline,
    Result,
    at_least,
    from_data,
    in_range,
    json_field,
    positive,
    setting,
    to_data,
)


@dataclass(frozen=True)
class ToyConfig(Config):
    C: float = setting(0.1, help="Inverse L2 strength.", check=positive, cli=Cli(flag="--C"))
    seeds: int = setting(5, help="Splits.", check=at_least(1), cli=Cli(range=False))
    top_p: float = setting(1.0, help="Nucleus.", check=in_range(0, 1, open_low=True))
    solver: Literal["torch", "sklearn"] = setting("torch", help="Who fits.")
    random_weights: bool = setting(True, help="Random-weights control.",
                                   cli=Cli(flag="--no-random-weights"))
    leace: bool = setting(False, help="Also LEACE.")
    stop: tuple[str, ...] = setting((), help="Stop strings.")
    limit: int | None = setting(None, help="At most this many.", check=at_least(1))
    layers: tuple[int, ...] = setting((1,), help="Layers.", cli=False)

    def check(self) -> None:
        if self.leace and not self.random_weights:
            raise self.error("leace", "needs the random-weights control")


def test_config_checks_name_field_and_value() -> None:
    with pytest.raises(ConfigError, match=r"ToyConfig: C must be a positive finite number, "
                                          r"got -1\.0"):
        ToyConfig(C=-1.0)
    with pytest.raises(ConfigError, match="C must be a positive finite number, got nan"):
        ToyConfig(C=math.nan)
    with pytest.raises(ConfigError, match=r"seeds must be ≥ 1, got 0"):
        ToyConfig(seeds=0)
    with pytest.raises(ConfigError, match=r"top_p must be in \(0, 1\]"):
        ToyConfig(top_p=0.0)
    with pytest.raises(ConfigError,
                       match="ToyConfig: unknown solver 'adam': use 'torch' or 'sklearn'"):
        ToyConfig(solver="adam")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seeds must be int, got '5'"):
        ToyConfig(seeds="5")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="leace needs the random-weights control"):
        ToyConfig(leace=True, random_weights=False)
    assert ToyConfig(limit=None).limit is None  # None is "not set", never a failed check
    assert isinstance(ConfigError("X", "y", "bad"), InterpError)


def test_config_is_frozen_and_replace_validates() -> None:
    cfg = ToyConfig()
    with pytest.raises(AttributeError):
        cfg.C = 2.0  # type: ignore[misc]
    assert cfg.replace(C=2.0).C == 2.0
    with pytest.raises(ConfigError):
        cfg.replace(C=0.0)


def test_resolve_is_config_or_keywords_not_both() -> None:
    assert ToyConfig.resolve(None, {"seeds": 3}) == ToyConfig(seeds=3)
    cfg = ToyConfig(C=2.0)
    assert ToyConfig.resolve(cfg, {}) is cfg
    with pytest.raises(InterpError, match="not both"):
        ToyConfig.resolve(cfg, {"seeds": 3})
    with pytest.raises(InterpError, match="has no setting sedes"):
        ToyConfig.resolve(None, {"sedes": 3})
    with pytest.raises(ConfigError, match="seeds must be ≥ 1"):
        ToyConfig.resolve(None, {"seeds": 0})


def test_resolve_override_and_noun() -> None:
    """``override``: keywords change a copy of the given config; ``noun`` words an unknown
    name the tool's way."""
    cfg = ToyConfig(C=2.0)
    got = ToyConfig.resolve(cfg, {"seeds": 3}, override=True)
    assert got == ToyConfig(C=2.0, seeds=3) and cfg.seeds == 5
    assert ToyConfig.resolve(cfg, {}, override=True) is cfg
    with pytest.raises(InterpError, match=r"unknown toy option\(s\) sedes; known: C, layers"):
        ToyConfig.resolve(cfg, {"sedes": 3}, override=True, noun="toy")
    with pytest.raises(ConfigError, match="seeds must be ≥ 1"):
        ToyConfig.resolve(cfg, {"seeds": 0}, override=True)


def test_config_round_trips_through_json() -> None:
    cfg = ToyConfig(C=0.5, stop=("\n",), limit=3, layers=(2, 4))
    data = json.loads(json.dumps(cfg.to_dict()))
    assert data["layers"] == [2, 4]
    assert ToyConfig.from_dict(data) == cfg


@dataclass
class Inner:
    name: str
    values: list[float]


@dataclass
class ToyResult(Result):
    model_id: str = json_field(key="model")
    per_layer: dict[int, Inner] = field(default_factory=dict)
    weights: np.ndarray = json_field(skip=True, default_factory=lambda: np.zeros(2),
                                     repr=False)
    curve: np.ndarray = field(default_factory=lambda: np.arange(3.0))
    calibration: dict[str, float] | None = json_field(None, omit_none=True)
    config: ToyConfig = field(default_factory=ToyConfig)

    def extra_data(self) -> dict:
        return {"best": max(self.per_layer, default=None)}

    def headline(self) -> Headline:
        return Headline(f"Toy · {self.model_id}", rows=[("best", self.extra_data()["best"])],
                        columns=["layer", "mean"],
                        table=[[k, float(np.mean(v.values))] for k, v in self.per_layer.items()],
                        verdict="Inside the noise: not a result.")


def test_result_serialises_from_type_hints() -> None:
    res = ToyResult(model_id="tiny", per_layer={3: Inner("a", [1.0, math.nan])},
                    warnings=["w"])
    data = res.to_dict()
    assert list(data) == ["model", "per_layer", "curve", "config", "warnings", "best"]
    assert data["per_layer"] == {"3": {"name": "a", "values": [1.0, math.nan]}}
    assert data["curve"] == [0.0, 1.0, 2.0]
    res.manifest = {"seed": 0}
    assert list(res.to_dict())[-1] == "manifest"  # the manifest goes last
    back = ToyResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.model_id == "tiny" and back.manifest == {"seed": 0}
    assert back.per_layer[3].values[0] == 1.0 and math.isnan(back.per_layer[3].values[1])
    assert isinstance(back.curve, np.ndarray) and back.curve.tolist() == [0.0, 1.0, 2.0]
    assert back.config == ToyConfig() and back.calibration is None


def test_from_data_is_tolerant_of_numbers_and_strict_about_kinds() -> None:
    back = from_data(Inner, {"name": "x", "values": [None, "oops", 2]})
    assert math.isnan(back.values[0]) and math.isnan(back.values[1]) and back.values[2] == 2.0
    with pytest.raises(InterpError, match="has no 'name'"):
        from_data(Inner, {"values": []})
    with pytest.raises(TypeError):
        from_data(Inner, {"name": 3, "values": []})
    assert to_data({1: np.float32(0.5), "t": (1, 2)}) == {"1": 0.5, "t": [1, 2]}


def test_headline_feeds_table_notebook_and_frame() -> None:
    res = ToyResult(model_id="<b>tiny</b>", per_layer={1: Inner("a", [0.5]),
                                                       2: Inner("b", [0.75])})
    html = res._repr_html_()
    assert "&lt;b&gt;tiny&lt;/b&gt;" in html and "<b>tiny</b>" not in html
    assert "Inside the noise" in html
    frame = res.to_frame()
    assert list(frame.columns) == ["layer", "mean"] and frame["mean"].tolist() == [0.5, 0.75]
    text = res.headline().text()
    assert "0.750" in text and "Inside the noise" in text
    assert "warning" not in html
    res.warn("below chance at layer 1: <check the split>")  # a trap that fired is shown
    html = res._repr_html_()
    assert "warning: below chance at layer 1: &lt;check the split&gt;" in html
    assert html.index("warning:") < html.index("Inside the noise")


def test_headline_prints_text_cells_as_they_are() -> None:
    """A cell that is text (a token "1", "nan") is shown as is, never read as a number."""
    head = Headline("t", rows=[("token", "7")], columns=["layer", "top-1", "p"],
                    table=[[0, "1", 0.5], [1, "nan", 0.25]], table_title="tokens")
    text = head.text()
    assert "│     1 │" in text and "│   nan │" in text and "1.000" not in text
    assert "0.500" in text and "0.250" in text


def test_headline_table_title_longer_than_its_table_stays_one_line() -> None:
    title = "top components (exact, heads, denoise; baseline 0):"
    head = Headline("t", columns=["c", "e"], table=[["L1H2", "+0.681"]], table_title=title)
    assert head.text().splitlines()[0].rstrip() == title


# ------------------------------------------------------------------------ the CLI
@click.command()
@config_options(ToyConfig)
@click.option("--out", default=None)
def toy(**params: object) -> None:
    cfg = build_config(ToyConfig, params)
    click.echo(json.dumps({**cfg.to_dict(), "rest": sorted(params)}))


def test_cli_options_derive_from_fields() -> None:
    names = {p.name: p for p in toy.params}
    assert "layers" not in names  # cli=False
    assert names["C"].opts == ["--C"] and names["seeds"].opts == ["--seeds"]
    assert isinstance(names["solver"].type, click.Choice)
    assert names["random_weights"].opts == ["--no-random-weights"]
    assert names["stop"].multiple and names["seeds"].help == "Splits."
    assert flag_of(ToyConfig, "random_weights") == "--no-random-weights"
    out = CliRunner().invoke(toy, ["--C", "0.5", "--no-random-weights", "--stop", "a",
                                   "--stop", "b", "--limit", "2"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["C"] == 0.5 and got["random_weights"] is False and got["stop"] == ["a", "b"]
    assert got["limit"] == 2 and got["rest"] == ["out"]
    assert json.loads(CliRunner().invoke(toy, []).output)["random_weights"] is True


def test_cli_range_is_a_click_range() -> None:
    """``cli_range=True``: click itself refuses a value outside the checks' closed bounds,
    with its own "Invalid value for" message, as options written with click ranges did."""

    @dataclass(frozen=True)
    class RangeConfig(Config):
        rounds: int = setting(1, check=in_range(1, 20), help="Rounds.", cli=Cli(range=True))
        temperature: float = setting(0.0, check=at_least(0), help="T.", cli=Cli(range=True))
        limit: int | None = setting(None, check=at_least(1), help="N.", cli=Cli(range=True))
        seeds: int = setting(5, check=at_least(1), help="Splits.", cli=Cli(range=False))
        splits: int = setting(2, check=at_least(1), help="An int with bounds: a range.")
        lr: float = setting(0.1, check=at_least(0), help="A float: no range unless asked.")

    @click.command()
    @config_options(RangeConfig)
    def cmd(**params: object) -> None:
        click.echo(json.dumps(build_config(RangeConfig, params).to_dict()))

    types = {p.name: p.type for p in cmd.params}
    assert isinstance(types["rounds"], click.IntRange)
    assert (types["rounds"].min, types["rounds"].max) == (1, 20)
    assert isinstance(types["temperature"], click.FloatRange)
    assert types["temperature"].min == 0.0 and types["temperature"].max is None
    assert isinstance(types["limit"], click.IntRange) and types["limit"].min == 1
    assert not isinstance(types["seeds"], click.IntRange)  # turned off: a plain int
    assert isinstance(types["splits"], click.IntRange) and types["splits"].min == 1
    assert not isinstance(types["lr"], click.FloatRange)
    out = CliRunner().invoke(cmd, ["--rounds", "0"])
    assert out.exit_code == 2 and "Invalid value for '--rounds'" in out.output
    out = CliRunner().invoke(cmd, ["--temperature", "-1"])
    assert out.exit_code == 2 and "Invalid value for '--temperature'" in out.output
    out = CliRunner().invoke(cmd, ["--rounds", "20", "--limit", "3"])
    assert out.exit_code == 0 and json.loads(out.output)["limit"] == 3


def test_cli_errors_name_the_flag() -> None:
    out = CliRunner().invoke(toy, ["--C", "nan"])
    assert isinstance(out.exception, InterpError)
    assert str(out.exception) == "--C must be a positive finite number, got nan"
    out = CliRunner().invoke(toy, ["--seeds", "0"])
    assert str(out.exception) == "--seeds must be ≥ 1, got 0"
    out = CliRunner().invoke(toy, ["--solver", "adam"])
    assert out.exit_code == 2 and "adam" in out.output


def test_cli_on_off_flag_pair() -> None:
    """A bool field whose flag is ``--x/--no-x`` takes both spellings (True by default)."""

    @dataclass(frozen=True)
    class CacheConfig(Config):
        cache: bool = setting(True, help="Reuse the cache.", cli=Cli(flag="--cache/--no-cache"))

    @click.command()
    @config_options(CacheConfig)
    def cmd(**params: object) -> None:
        click.echo(json.dumps(build_config(CacheConfig, params).to_dict()))

    (param,) = cmd.params
    assert param.opts == ["--cache"] and param.secondary_opts == ["--no-cache"]
    for argv, want in (([], True), (["--cache"], True), (["--no-cache"], False)):
        out = CliRunner().invoke(cmd, argv)
        assert out.exit_code == 0 and json.loads(out.output) == {"cache": want}, argv


def test_cli_path_kind_is_checked_as_the_flag_is_parsed(tmp_path) -> None:
    """``Cli(path="file")`` refuses a folder and ``"dir"`` a file, in click's one line,
    before the command runs; a path that does not exist yet is accepted (it may be made)."""

    @dataclass(frozen=True)
    class PathConfig(Config):
        data: str | None = setting(None, help="A file.", cli=Cli(path="file"))
        cache: str | None = setting(None, help="A folder.", cli=Cli(path="dir"))
        either: str | None = setting(None, help="Either.", cli=Cli(path="any"))

    ran = []

    @click.command()
    @config_options(PathConfig)
    def cmd(**params: object) -> None:
        ran.append(build_config(PathConfig, params))

    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    out = CliRunner().invoke(cmd, ["--data", str(tmp_path)])
    assert out.exit_code == 2 and "is a directory" in out.output and not ran
    out = CliRunner().invoke(cmd, ["--cache", str(a_file)])
    assert out.exit_code == 2 and "is a file" in out.output and not ran
    for argv in (["--either", str(a_file)], ["--either", str(tmp_path)],
                 ["--data", str(a_file), "--cache", str(tmp_path / "new")]):
        assert CliRunner().invoke(cmd, argv).exit_code == 0, argv
    assert ran[-1].data == str(a_file) and ran[-1].cache == str(tmp_path / "new")


def test_headline_never_reads_text_as_markup() -> None:
    """User text in a table (a prompt "The [/x] weather") prints as it is: rich would
    otherwise parse it as markup and fail on the unmatched closing tag."""
    head = Headline("t", columns=["prompt [b]"], table=[["The [/x] weather"], ["[bold]hi"]],
                    table_title="gen [/y]")
    text = head.text()
    assert "The [/x] weather" in text and "[bold]hi" in text
    assert "gen [/y]" in text and "prompt [b]" in text


def test_cli_parse_errors_name_the_flag() -> None:
    """A ``parse=`` function's ValueError is one line naming the flag and the text; its
    value then meets the field's checks."""
    from interp.schema import each, finite

    def numbers(text: str) -> list[float]:
        try:
            return [float(x) for x in text.split(",")]
        except ValueError:
            raise ValueError("use comma-separated numbers") from None

    @dataclass(frozen=True)
    class AlphaConfig(Config):
        alphas: list[float] = setting(default_factory=lambda: [1.0], check=each(finite),
                                      help="Alphas.", cli=Cli(parse=numbers, default="1"))

    @click.command()
    @config_options(AlphaConfig)
    def cmd(**params: object) -> None:
        click.echo(json.dumps(build_config(AlphaConfig, params).to_dict()))

    assert json.loads(CliRunner().invoke(cmd, []).output) == {"alphas": [1.0]}
    out = CliRunner().invoke(cmd, ["--alphas", "1,x"])
    assert isinstance(out.exception, InterpError)
    assert str(out.exception) == "bad --alphas '1,x': use comma-separated numbers"
    out = CliRunner().invoke(cmd, ["--alphas", "1,nan"])
    assert str(out.exception) == "--alphas items must be a finite number, got [1.0, nan]"


def test_shared_formatters() -> None:
    from interp.display import FILTERS, ci_text, percent, plus_minus, signed

    assert signed(0.12) == "+0.120" and signed(-0.12) == "−0.120" and signed(math.nan) == "—"
    assert plus_minus(0.9123, 0.0131) == "0.912 ± 0.013" and plus_minus(None) == "—"
    assert ci_text(0.9, 0.8) == "[0.800, 0.900]" and ci_text(0.1, math.inf) == "—"
    assert percent(0.0625) == "6.25%"
    from interp.display import compact

    assert [compact(3_657_235), compact(36_512), compact(4_480), compact(None)] == [
        "3.66M", "36.5k", "4,480", "—"]
    assert {"fmt", "signed", "pm", "ci", "pct", "compact"} <= set(FILTERS)


def _all_configs() -> list[type[Config]]:
    """Every config class of the four packages' tools (imported here, so the list is whole)."""
    import importlib
    import pkgutil

    for pkg in ("interp", "saes", "evals"):
        root = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(root.__path__, f"{pkg}."):
            if ".cli" not in info.name and not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    seen, todo = [], list(Config.__subclasses__())
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in seen if c.__module__.split(".")[0] in {"interp", "saes", "evals"}]


def test_every_seed_setting_refuses_what_no_generator_takes() -> None:
    """A seed outside 0 … 2³² − 1 (numpy's and scikit-learn's range) is refused by the
    config itself, so a Python caller gets the CLI's check (issue 28), never an overflow
    deep inside a run."""
    import dataclasses

    from interp.schema import SEED_MAX

    checked = []
    for cls in _all_configs():
        for f in dataclasses.fields(cls):
            if f.name not in {"seed", "seeds"} or f.type in {"int", int} and f.name == "seeds":
                continue
            rules = cls.__dataclass_fields__[f.name].metadata["interp.setting"].checks
            bad = [SEED_MAX + 1, -1] if f.name == "seed" else [[0, SEED_MAX + 1], [-1]]
            for value in bad:
                assert any(r.fails(value) for r in rules), (cls.__name__, f.name, value)
            ok = 0 if f.name == "seed" else [0]
            assert not any(r.fails(ok) for r in rules), (cls.__name__, f.name)
            checked.append(f"{cls.__name__}.{f.name}")
    assert len(checked) >= 15, checked
