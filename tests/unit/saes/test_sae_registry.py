"""An SAE architecture is one registered class: a toy one, registered here and nowhere else,
shows up in ``interp sae train``'s ``--arch`` and options, trains on the tiny model, loads,
and goes to SAELens and back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import click
import pytest
import torch

from interp.schema import positive, setting
from saes.architectures import ARCHITECTURES, Architecture, arch_name, register, unregister
from saes.loading import load_sae
from saes.sae import SparseAutoencoder
from tests.support.cli_runner import run
from tests.support.text_fixtures import text_file_fixture


class ToySAE(SparseAutoencoder):
    """A ReLU SAE whose penalty is the toy's own setting (only its class matters here)."""


@dataclass(frozen=True)
class ToyConfig(Architecture):
    """Training settings of the toy architecture."""

    label: ClassVar[str] = "Toy"
    summary: ClassVar[str] = "a test's ReLU twin"
    sae_class: ClassVar[type[SparseAutoencoder]] = ToySAE
    saelens: ClassVar[str] = "standard"
    saelens_import: ClassVar[bool] = False  # a foreign "standard" SAE stays ReLU

    toy_penalty: float = setting(2.0, check=positive, help="the toy's L1 coefficient")
    name: str = arch_name("toy")

    def coefficient(self) -> float:
        return float(self.toy_penalty)


@pytest.fixture
def toy():
    register(ToyConfig)
    yield ToyConfig
    unregister("toy")


text_file = text_file_fixture(120, seed=2)


def _train_args(model_dir, text_file, out, *extra: str) -> list[str]:
    return ["sae", "train", "--model", str(model_dir), "--text", str(text_file), "--layer", "1",
            "--d-sae", "32", "--tokens", str(64 * 4), "--batch-size", "64", "--seq-len", "16",
            "--windows-per-chunk", "8", "--out", str(out), *extra]


def test_toy_architecture_is_in_the_options_training_and_export(toy, tiny_model_dir,
                                                                  text_file, tmp_path, capsys):
    from interp.cli.sae import train

    assert list(ARCHITECTURES)[-1] == "toy"
    params = {p.name: p for p in train.params if isinstance(p, click.Option)}
    assert params["architecture"].metavar == "relu|topk|batchtopk|jumprelu|toy"
    assert "toy (a test's ReLU twin)" in (params["architecture"].help or "")
    opt = params["toy_penalty"]  # derived from the field: flag, type, help, default
    assert opt.opts == ["--toy-penalty"] and opt.type is click.FLOAT and opt.default is None
    assert opt.help == "Toy: the toy's L1 coefficient (default 2)."
    code, out, _ = run(["sae", "train", "--help"], capsys)
    assert code == 0 and "--toy-penalty" in out and "jumprelu|toy" in out

    # its setting is refused for another architecture, and checked for its own
    code, _, err = run(_train_args(tiny_model_dir, text_file, tmp_path / "x", "--toy-penalty",
                                   "3"), capsys)
    assert code == 2 and "--toy-penalty is for --arch toy, not relu" in err
    code, _, err = run(_train_args(tiny_model_dir, text_file, tmp_path / "x", "--arch", "toy",
                                   "--toy-penalty", "-1"), capsys)
    assert code == 2 and "--toy-penalty must be a positive finite number, got -1.0" in err

    # training: the run records the toy's settings, the artifact loads as a ToySAE
    run_dir = tmp_path / "run"
    code, out, err = run(_train_args(tiny_model_dir, text_file, run_dir, "--arch", "toy",
                                     "--toy-penalty", "3"), capsys)
    assert code == 0, err
    assert "toy (λ 3.0) SAE" in err and "steps 4/4" in out
    arch = json.loads((run_dir / "results.json").read_text())["train"]["arch"]
    assert arch == {"toy_penalty": 3.0, "name": "toy"}
    loaded = load_sae(run_dir / "sae")
    assert type(loaded.sae) is ToySAE and loaded.sae.cfg.architecture == "toy"
    assert loaded.config["train"]["arch"]["name"] == "toy"

    # export: the toy's SAELens format; import: the toy again, weights bit for bit
    code, _, err = run(["sae", "export", str(run_dir), "--out", str(tmp_path / "sl")], capsys)
    assert code == 0, err
    cfg = json.loads((tmp_path / "sl" / "cfg.json").read_text())
    assert cfg["architecture"] == "standard" and cfg["interp"]["architecture"] == "toy"
    code, _, err = run(["sae", "import", str(tmp_path / "sl"), "--out", str(tmp_path / "back")],
                       capsys)
    assert code == 0, err
    back = load_sae(tmp_path / "back")
    assert type(back.sae) is ToySAE
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(back.sae, name), getattr(loaded.sae, name))


def test_unregistered_toy_leaves_the_family_as_it_was(toy):
    unregister("toy")
    assert list(ARCHITECTURES) == ["relu", "topk", "batchtopk", "jumprelu"]
    from interp.cli.sae import train

    names = {p.name for p in train.params}
    assert "toy_penalty" not in names and "k" in names and "l1_coefficient" in names
