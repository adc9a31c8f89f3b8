"""Shared pieces of every ``interp`` CLI verb: model options, ``--out``, manifests, logs.

Verbs live in their own modules of :mod:`interp.cli` (``interp/cli/probe.py``,
``interp/cli/sae.py``, ``interp/cli/evals.py``, ...) and register on the ``interp`` group in
:mod:`interp.cli.app`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import click

from interp.cli.options import config_options, field_default, options_of
from interp.data.corpus import TextSource
from interp.data.readers import PromptFile
from interp.errors import InterpError
from interp.models.loading import ModelSettings
from interp.probing.results import ProbeData
from interp.runs.outdir import OutDir
from interp.schema.convert import json_safe
from interp.schema.settings import Config

#: The config fields the model options set (``--batch-size``, ``--seed``), where a config
#: has them.
MODEL_FIELDS = ("batch_size", "seed")


def model_fields(config: type[Config]) -> list[str]:
    """Which of :data:`MODEL_FIELDS` ``config`` has."""
    names = {f.name for f in dataclasses.fields(config)}
    return [n for n in MODEL_FIELDS if n in names]


def make_model_options(
    config: type[Config], *, batch_help: str = "Prompts per forward pass."
) -> Callable[[Callable], Callable]:
    """:func:`model_options` whose ``--batch-size`` and ``--seed`` set ``config``'s fields of
    those names and take their defaults from them (a verb's default is its config's)."""
    own = model_fields(config)

    def default(name: str, fallback: int) -> int:
        if name not in own:
            return fallback
        value = field_default(config, name)
        if not isinstance(value, int):
            raise TypeError(f"{config.__name__}.{name} needs an int default for the CLI, "
                            f"got {value!r}")
        return value

    def decorate(fn: Callable) -> Callable:
        fn = _model_options(fn, default("batch_size", 16), default("seed", 0), batch_help)
        return options_of(config, own)(fn)

    return decorate


def model_options(fn: Callable) -> Callable:
    """``--model --device --dtype --batch-size --seed`` for every verb that loads a model
    (``--batch-size`` 16 and ``--seed`` 0; :func:`make_model_options` takes a config's)."""
    return _model_options(fn, 16, 0, "Prompts per forward pass.")


def _model_options(fn: Callable, batch_size: int, seed: int, batch_help: str) -> Callable:
    decorators = [
        config_options(ModelSettings, only=["model_name"]),
        device_option(),
        config_options(ModelSettings, only=["dtype", "batch_size", "seed"],
                       defaults={"batch_size": batch_size, "seed": seed},
                       help={"batch_size": batch_help}),
        click.option("--profile", "profile_dir", default=None, expose_value=False,
                     type=click.Path(file_okay=False), callback=_start_profile,
                     help="Profile the run into this folder: trace.json (Perfetto), "
                     "profile.html, profile.json."),
    ]
    for dec in reversed(decorators):
        fn = dec(fn)
    return fn


def device_option(help: str = "cpu, cuda, cuda:N.", *, check: bool = True,  # noqa: A002
                  ) -> Callable[[Callable], Callable]:
    """``--device`` (default cpu); with ``check``, refused up front when no model can run
    on it (:func:`check_device`)."""
    return click.option("--device", default="cpu", show_default=True,
                        callback=check_device if check else None, help=help)


def dtype_option(help: str | None = None) -> Callable[[Callable], Callable]:  # noqa: A002
    """``--dtype`` of the model's weights (:class:`ModelSettings`' field; ``help`` replaces
    its help text)."""
    return config_options(ModelSettings, only=["dtype"],
                          help=None if help is None else {"dtype": help})


def check_device(_ctx: click.Context | None, _param: click.Parameter | None, value: str) -> str:
    """``--device``: refused up front when no model can run on it (``meta``, an absent GPU),
    not deep inside a run."""
    from interp.models.loading import parse_device

    parse_device(value)
    return value


#: Where the running command's profile goes (``--profile DIR``), set while it runs.
_PROFILE_OUT: list[str] = []


def _start_profile(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """``--profile DIR``: check DIR, then start timing before the model loads."""
    if value is None:
        return
    from interp.profiling.session import start
    from interp.runs.outdir import check_creatable

    try:
        check_creatable(value)
    except InterpError as exc:
        raise InterpError(f"--profile: {exc}") from None
    start(meta={"verb": ctx.command_path.removeprefix("interp ").strip(),
                "batch_size": ctx.params.get("batch_size")})
    _PROFILE_OUT.append(value)


def finish_profile(failed: bool) -> None:
    """End the command's profile: write it when the command succeeded, else drop it."""
    from interp.profiling import session

    if not _PROFILE_OUT:
        return
    out = _PROFILE_OUT.pop()
    if failed:
        session.abort()
        return
    from interp.runs.outdir import OutDir
    from reports.profile import profile_report

    result = session.finish(out)  # trace.json, written atomically; the result has its manifest
    with OutDir(out) as o:
        o.write_json("profile.json", json_safe(result.to_dict()))
        profile_report(result).write(o, page="profile.html")
    log(f"profile: {result.verdict} ({result.evidence}); wrote {out}/profile.html")


def out_option(help: str, *, required: bool = False) -> Callable[[Callable], Callable]:  # noqa: A002 - click's word
    """``--out DIR``, the folder a verb writes into (``out_dir``; a file there is refused)."""
    return click.option("--out", "out_dir", required=required, default=None,
                        type=click.Path(file_okay=False), help=help)


def json_flag(help: str = "Print results JSON instead of a table.",  # noqa: A002
              ) -> Callable[[Callable], Callable]:
    """``--json``: JSON on stdout instead of the table (``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


#: ``--json``: the results JSON on stdout instead of the table (``as_json``).
json_option = json_flag()


def layer_option(help: str, *, type: type | None = None, metavar: str | None = None,  # noqa: A002
                 ) -> Callable[[Callable], Callable]:
    """``--layer L``: one 0-based layer (``layer``; text unless ``type=int``)."""
    return click.option("--layer", "layer", default=None, type=type, metavar=metavar, help=help)


def layers_option(help: str, *, default: str | None = None, dest: str = "layers",  # noqa: A002
                  metavar: str | None = None) -> Callable[[Callable], Callable]:
    """``--layers L1,L2,…|all``: several 0-based layers, as text the verb parses (``dest``)."""
    return click.option("--layers", dest, default=default, show_default=default is not None,
                        metavar=metavar, help=help)


#: ``--stop-at N``: a training run stops after N steps in all, resumable later (``stop_at``).
stop_at_option = click.option("--stop-at", default=None, type=click.IntRange(min=0),
                              help="Stop after this many steps in all (resumable later).")

#: ``--cache-activations DIR``: a training run keeps its activations on disk (``cache_dir``).
cache_activations_option = click.option(
    "--cache-activations", "cache_dir", default=None, type=click.Path(file_okay=False),
    help="Keep activations on disk here; later runs on the same text skip the model.")

#: ``--file``: prompts read from a file instead of the arguments (``file_``).
prompt_file_option = config_options(PromptFile, only=["file_"])

#: ``--file`` and ``--text-column`` (the column of a JSONL/CSV file holding the prompt; a
#: verb whose config has a ``text_column`` takes that field's option instead).
prompt_file_options = config_options(PromptFile)

#: ``--text FILE`` and ``--hf-dataset NAME`` for verbs that read running text.
text_options = config_options(TextSource)


def probe_dataset_options(group_help: str) -> Callable[[Callable], Callable]:
    """``--dataset --text-column --label-column --group-column`` for verbs that read a
    labelled probe set (:func:`interp.probing.probes.load_probe_dataset`)."""
    return config_options(ProbeData, help={"group_column": group_help})


def load_model(model_name: str | None, device: str, dtype: str, seed: int):
    """Seed torch with ``seed``, then :func:`~interp.models.loading.load` the model (the embedded
    SmolLM2 when ``model_name`` is None) under a status line and the ``load model`` profiling
    phase."""
    import torch

    from interp.models.loading import load
    from interp.profiling.session import phase
    from interp.runs.progress import status

    torch.manual_seed(seed)
    with status(f"loading {model_name or 'smollm2-135m-instruct'}"), phase("load model"):
        return load(model_name, device=device, dtype=dtype)


def write_run_results(run_dir: str, results: dict[str, Any]) -> None:
    """A training run's ``results.json`` in its run folder (atomic; rewritten each run)."""
    import json
    from pathlib import Path

    from interp.runs.atomic import atomic_write_text

    atomic_write_text(Path(run_dir).expanduser() / "results.json",
                      json.dumps(json_safe(results), indent=2, allow_nan=False))


def throughput_text(tokens_per_s: float, mfu: float | None, peak: float | None) -> str:
    """``"1,234 tokens/s  MFU 3.1% of 262 GFLOP/s"`` for a trainer's closing line."""
    text = f"{tokens_per_s:,.0f} tokens/s"
    if mfu is not None and peak:
        text += f"  MFU {100 * mfu:.2f}% of {peak / 1e9:,.0f} GFLOP/s"
        if mfu > 1:  # impossible: the cached peak was measured low (a busy machine)
            text += " (above 100%: the cached peak is too low; run `interp peak --remeasure`)"
    return text


def prompts_from_args(prompts: tuple[str, ...], file_: str | None, text_column: str,
                       ) -> list[str]:
    """Prompts given as arguments, or read from ``--file`` (not both, not none)."""
    from interp.data.readers import read_prompts

    if file_ and prompts:
        raise InterpError("give prompts as arguments or with --file, not both")
    texts = read_prompts(file_, text_column) if file_ else list(prompts)
    if not texts:
        raise InterpError("no prompts: pass them as arguments or with --file")
    return texts


def open_out(out_dir: str | None) -> OutDir | NoOut:
    """The run's ``--out`` folder, or :class:`NoOut` when the verb was given none.

    Verbs test ``isinstance(out, OutDir)`` before writing files.
    """
    if out_dir is None:
        return NoOut()
    from interp.runs.outdir import check_out_place

    check_out_place(out_dir)  # "" is refused as empty (an OutDir would read it as ".")
    return OutDir(out_dir)


class NoOut:
    """Stands for a missing ``--out``: a context manager that writes nothing."""

    def __enter__(self) -> NoOut:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write_text(self, name: str, text: str) -> None:  # pragma: no cover
        """Never called: verbs check ``isinstance(out, OutDir)`` before writing (raises
        AssertionError)."""
        raise AssertionError("no --out")

    write_json = write_text


def manifest_for(model: Any, seed: int, texts: list[str], config: dict[str, Any]) -> dict[str, Any]:
    """The run's manifest: the model's id and loading info, ``seed``, the sha256 of ``texts`` and
    ``config``."""
    from interp.runs.manifest import run_manifest, sha256_texts

    return run_manifest(
        model_id=model.model_id, seed=seed, dataset_hash=sha256_texts(texts),
        config=config, extra={"model": model.manifest_info()},
    )


def show_result(result: Any, data: dict[str, Any], as_json: bool, wrote: str) -> None:
    """A verb's last words: each warning on stderr, the results JSON (``--json``) or the
    headline table on stdout, then what was written."""
    for w in result.warnings:
        log(f"warning: {w}")
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        result.headline().print()
    if wrote:
        log(wrote)


def log(message: str) -> None:
    """Print ``message`` to stderr as plain text (no rich markup or highlighting)."""
    from interp.runs.progress import stderr_console

    stderr_console.print(message, highlight=False, markup=False)
