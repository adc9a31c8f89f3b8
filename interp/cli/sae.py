"""``interp sae train|eval|browse|explain|export|import|probe``: SAEs from the command line.

Each verb's settings are its config's fields (:class:`~saes.train.SAETrainConfig`,
:class:`~saes.results.SAEEvalConfig`, :class:`~saes.results.BrowserConfig`,
:class:`~saes.features.probing.SparseProbeConfig`), and ``sae train``'s architecture options
come from the registered architectures (:mod:`saes.architectures`); the library makes each
result, with its manifest, and the verb writes it.

``interp sae train`` also runs under ``torchrun`` (DistributedDataParallel, gloo on CPU and
nccl on CUDA)::

    torchrun --nproc-per-node 2 --no-python interp sae train --layer 6 --out runs/l6
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from interp.cli.common import (
    cache_activations_option,
    json_option,
    layer_option,
    layers_option,
    load_model,
    log,
    make_model_options,
    out_option,
    probe_dataset_options,
    stop_at_option,
    text_options,
    throughput_text,
    write_run_results,
)
from interp.cli.options import F, build_config, config_options, flag_of
from interp.errors import InterpError
from interp.runs.outdir import OutDir, check_creatable
from interp.schema import Config, Headline
from interp.schema.settings import setting_info
from saes.architectures import ARCHITECTURES, Architecture, architecture
from saes.autointerp.results import AutoInterpConfig
from saes.features.probing import SparseProbeConfig
from saes.results import BrowserConfig, SAEEvalConfig
from saes.train import SAETrainConfig

if TYPE_CHECKING:
    from saes.train import SAETrainResult

_WINDOWS = "Text windows per forward pass."


@click.group(name="sae")
def sae_group() -> None:
    """Sparse autoencoders: train, evaluate, browse features, SAELens files."""


def _init_distributed(device: str) -> tuple[int, int]:
    """Join the torchrun process group when launched by torchrun; (rank, world)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if device.startswith("cuda") else "gloo"
        dist.init_process_group(backend=backend)
        # Leaving with the group alive lets gloo's threads be torn down mid-flight at exit
        # ("terminate called without an active exception", SIGABRT on one rank).
        click.get_current_context().call_on_close(dist.destroy_process_group)
        if device.startswith("cuda"):
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        local = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))
    return dist.get_rank(), dist.get_world_size()


def _join_training(device: str, settings: dict[str, Any]) -> tuple[int, int]:
    """A training verb's process group (:func:`_init_distributed`): (rank, world); the
    text's substreams (``data_shards`` in ``settings``) default to the number of
    processes."""
    rank, world = _init_distributed(device)
    settings["data_shards"] = settings.get("data_shards") or world
    return rank, world


def _processes(world: int) -> str:
    """`` (N processes)`` for a training verb's first line under torchrun."""
    return f" ({world} processes)" if world > 1 else ""


def _training_options(config: type[Config], out_help: str) -> Callable[[F], F]:
    """The options every training verb ends with, in this order: the activation cache,
    ``--checkpoint-every``, ``--stop-at``, the text, the model and batch, and ``--out``."""
    def apply(f: F) -> F:
        out: Any = f
        for option in (out_option(out_help, required=True),
                       make_model_options(config, batch_help="Activations (tokens) per "
                                                             "training step, over all "
                                                             "processes."),
                       text_options, stop_at_option,
                       config_options(config, only=["checkpoint_every"]),
                       cache_activations_option):
            out = option(out)
        return out
    return apply


class _TrainCommand(click.Command):
    """``sae train``: its ``--arch`` and architecture options come from the registry
    (:mod:`saes.architectures`), right after ``--d-sae``. ``params`` is rebuilt whenever the
    registry has changed since it was last read, so an architecture registered after this
    module was imported has its options too (in parsing, ``--help`` and ``params``)."""

    #: the architecture ``--arch`` defaults to (``sae train``: the SAE default's)
    default_arch: str | None = None

    @property  # type: ignore[override]
    def params(self) -> list[click.Parameter]:
        key = tuple(ARCHITECTURES.items())
        if key != self._registry:
            static = self._static
            at = next((i + 1 for i, p in enumerate(static) if p.name == "d_sae"), len(static))
            self._params[:] = [*static[:at], *architecture_params(self.default_arch),
                               *static[at:]]
            self._registry = key
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._static, self._params = list(value), list(value)
        self._registry: tuple[Any, ...] | None = None


_ARCH_PARAMS: dict[tuple[Any, ...], list[click.Parameter]] = {}


def architecture_settings() -> dict[str, tuple[type[Architecture], list[str]]]:
    """Each CLI setting of the registered architectures by field: the first class that
    declares it (its type, default, help and check) and the names of all that have it."""
    out: dict[str, tuple[type[Architecture], list[str]]] = {}
    for name, cls in ARCHITECTURES.items():
        for f in dataclasses.fields(cls):
            if f.init and setting_info(f).cli:
                out.setdefault(f.name, (cls, []))[1].append(name)
    return out


def architecture_params(default: str | None = None) -> list[click.Parameter]:
    """``--arch`` and one option per architecture setting (``--k``, ``--l1``, …), derived
    from the registry: the default architecture's (``default``, else the SAE trainer's)
    settings show their defaults; the others default to None, "the architecture's own
    default", named in their help."""
    default = default or SAETrainConfig().arch.name
    key = (*ARCHITECTURES.items(), default)
    if key not in _ARCH_PARAMS:
        names = list(ARCHITECTURES)

        @click.option("--arch", "architecture", default=default, show_default=True,
                      metavar="|".join(names),
                      help="SAE architecture: " + ", ".join(
                          f"{n} ({a.summary or a.label})" for n, a in ARCHITECTURES.items())
                      + ".")
        def fn() -> None: ...

        for field, (cls, owners) in architecture_settings().items():
            labels = "/".join(ARCHITECTURES[n].label for n in owners)
            info = cls.settings()[field]
            text = f"{labels}: {info.help}"
            if cls.name != default:
                value = next(f.default for f in dataclasses.fields(cls) if f.name == field)
                if value is not None:
                    text += f" (default {value:g})"
            fn = config_options(cls, only=[field], help={field: text + "."},
                                defaults={} if cls.name == default else {field: None})(fn)
        for stale in [k for k in _ARCH_PARAMS if k[:-1] != key[:-1]]:
            del _ARCH_PARAMS[stale]
        _ARCH_PARAMS[key] = list(fn.__click_params__)  # type: ignore[attr-defined]
    return _ARCH_PARAMS[key]


def build_architecture(name: str, settings: dict[str, Any]) -> Architecture:
    """Architecture ``name``'s settings from the verb's options (every architecture's are
    popped from ``settings``); an option given for another architecture is refused."""
    fields = architecture_settings()
    values = {f: settings.pop(f, None) for f in fields}
    ctx = click.get_current_context(silent=True)

    def given(field: str) -> bool:
        source = ctx.get_parameter_source(field) if ctx is not None else None
        return values[field] is not None and source is not ParameterSource.DEFAULT

    if name in ARCHITECTURES:
        for field, (cls, owners) in fields.items():
            if given(field) and name not in owners:
                raise InterpError(f"{flag_of(cls, field)} is for --arch {' or '.join(owners)}"
                                  f", not {name}")
    spec = architecture(name)
    return build_config(spec, {f: v for f, v in values.items()
                               if f in fields and name in fields[f][1] and given(f)})


@sae_group.command("train", cls=_TrainCommand)
@layer_option("Residual stream after this block (blocks.L.hook_resid_post) [default: 6].",
              type=int)
@layers_option("Train one SAE per layer from the same model forward passes, each into "
               "OUT/layer-L (instead of --layer).", dest="layers_spec", metavar="L1,L2,…")
@config_options(SAETrainConfig, only=["d_sae", "tokens", "lr", "sparsity_warmup_fraction",
                                      "resample_every", "dead_window", "seq_len",
                                      "windows_per_chunk", "data_shards"])
@_training_options(SAETrainConfig,
                   "Run folder (checkpoint/, sae/); rerun the same command to resume.")
def train(
    layer: int | None, layers_spec: str | None, architecture: str, cache_dir: str | None,
    stop_at: int | None, text_file: str | None, hf_dataset: str | None,
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int, out_dir: str,
    **settings: Any,
) -> None:
    """Train an SAE on one layer's residual stream (or one per layer of --layers from shared
    forward passes); resumes if interrupted."""
    from interp.data.corpus import text_source
    from saes.train import check_memory, check_text, train_sae, train_saes

    if layer is not None and layers_spec is not None:
        raise InterpError("give --layer or --layers, not both")
    several = layers_spec is not None
    arch = build_architecture(architecture, settings)
    rank, world = _join_training(device, settings)
    fixed: dict[str, Any] = {"arch": arch, "batch_size": batch_size, "seed": seed}
    if layer is not None:
        fixed["layer"] = layer
    cfg = build_config(SAETrainConfig, settings, **fixed)  # every check, before anything slow
    docs, data = text_source("train", text_file=text_file, hf_dataset=hf_dataset)
    check_creatable(out_dir)
    if cache_dir is not None:
        check_creatable(cache_dir)
    model = load_model(model_name, device, dtype, seed)
    if several:
        assert layers_spec is not None
        layer_list = sorted(set(model.parse_layers(layers_spec)))
    else:
        layer_list = [model.check_layer(cfg.layer)]
    check_memory(model, cfg, n_saes=len(layer_list))  # before the first line says it starts
    check_text(model, docs, cfg)
    if rank == 0:
        where = (", ".join(model.resid_hook(li) for li in layer_list) +
                 " (one forward for all)" if several else model.resid_hook(cfg.layer))
        log(f"training {len(layer_list)} × {arch.knob_text()} SAE on {where}: d_sae "
            f"{cfg.d_sae}, {cfg.steps} steps of {batch_size} tokens from {data['source']} "
            f"into {out_dir}{_processes(world)}")
    if several:
        results = train_saes(model, docs, out_dir, layer_list, cfg, data=data,
                             cache_dir=cache_dir, stop_at=stop_at)
        if rank:
            return
        for li, res in results.items():
            _print_training(res, prefix=f"layer {li}: ")
        first = results[layer_list[0]]
        write_run_results(out_dir, {"layers": {str(li): _without_manifest(res.to_dict())
                                               for li, res in results.items()},
                                    "manifest": first.manifest})
        return
    res = train_sae(model, docs, out_dir, cfg, data=data, cache_dir=cache_dir, stop_at=stop_at)
    if rank:
        return
    _print_training(res)
    write_run_results(out_dir, res.to_dict())


def _without_manifest(data: dict[str, Any]) -> dict[str, Any]:
    """A layer's entry in a several-layer run's results.json (the run's one manifest is
    written once, beside ``layers``)."""
    return {k: v for k, v in data.items() if k != "manifest"}


def _print_training(res: SAETrainResult, prefix: str = "") -> None:
    if res.resumed_from and res.resumed_from < res.steps_done:
        log(f"{prefix}resumed from step {res.resumed_from}")
    if res.complete and res.resumed_from >= res.steps_total:
        log(f"{prefix}already trained ({res.steps_total} steps): {res.sae_path}")
    h = res.history
    k = min(20, len(h["loss"]))
    avg = {key: sum(h[key][-k:]) / k if k else float("nan")
           for key in ("loss", "l0", "explained_variance")}
    dead = h["dead_fraction"][-1] if h["dead_fraction"] else float("nan")
    click.echo(
        f"{prefix}steps {res.steps_done}/{res.steps_total}  loss {avg['loss']:.3f}  "
        f"L0 {avg['l0']:.1f}  "
        f"EV (train) {avg['explained_variance']:.3f}  dead {dead:.3f}  "
        f"{throughput_text(res.tokens_per_s, res.mfu, res.peak_flops)}  "
        + (f"SAE: {res.sae_path}" if res.complete else "unfinished: rerun to resume")
    )
    cal = res.calibration
    if cal and "threshold" in cal:
        click.echo(f"{prefix}inference threshold set from the final weights on "
                   f"{int(cal.get('tokens', 0)):,} tokens: {cal['threshold']:.4g} "
                   f"(training's moving average: {cal.get('threshold_moving_average', 0):.4g})")


def sae_path(path: str, *, transcoders: bool = False) -> Path:
    """A run folder → its ``sae/`` (or, with ``transcoders``, a transcoder run's layer
    folder → its ``transcoder/``); an artifact folder stays."""
    from interp.runs.paths import check_path_name
    from saes.train import SAE_SUBDIR
    from saes.transcoders.train import TRANSCODER_SUBDIR

    check_path_name(path, "SAE folder")
    p = Path(path).expanduser()
    if not p.exists():
        raise InterpError(f"no SAE at {p}: no such folder")
    for sub in (SAE_SUBDIR, TRANSCODER_SUBDIR) if transcoders else (SAE_SUBDIR,):
        if (p / sub / "config.json").is_file():
            return p / sub
    if not (p / "config.json").is_file() and (p / "checkpoint" / "config.json").is_file():
        raise InterpError(f"{p} holds an unfinished SAE run; rerun `interp sae train` to finish")
    layers = sorted(int(d.name.removeprefix("layer-")) for d in p.glob("layer-*")
                    if d.name.removeprefix("layer-").isdigit() and d.is_dir())
    if layers and not (p / "config.json").is_file():
        kind = ("transcoders" if any((p / f"layer-{i}" / TRANSCODER_SUBDIR).is_dir()
                                     for i in layers) else "SAEs")
        raise InterpError(f"{p} holds {kind} for layers {', '.join(map(str, layers))}: name "
                          f"one, e.g. {p / f'layer-{layers[0]}'}")
    return p


@sae_group.command("eval")
@click.argument("sae_dir", type=click.Path())
@text_options
@config_options(SAEEvalConfig, only=["tokens", "ce_tokens", "seq_len"])
@make_model_options(SAEEvalConfig, batch_help=_WINDOWS)
@config_options(SAEEvalConfig, only=["cache_baselines"])
@out_option("Write results.json and report.html here [default: the SAE folder].")
@json_option
def eval_cmd(
    sae_dir: str, text_file: str | None, hf_dataset: str | None, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, out_dir: str | None, as_json: bool,
    **settings: Any,
) -> None:
    """L0, explained variance, CE-loss score (zero and mean ablation), ΔCE, KL, dead/dense."""
    from interp.cli.common import json_safe
    from interp.data.corpus import text_source
    from reports.sae import sae_report
    from saes.loading import load_sae
    from saes.metrics import evaluate_sae

    path = sae_path(sae_dir)
    cfg = build_config(SAEEvalConfig, settings, batch_size=batch_size, seed=seed)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    target = str(path) if out_dir is None else out_dir  # --out "" is refused, not the default
    check_creatable(target)
    with OutDir(target) as out:
        model = load_model(model_name, device, dtype, seed)
        res = evaluate_sae(model, load_sae(path, model, device=device), docs, cfg, data=data)
        data = json_safe(res.to_dict())
        out.write_json("results.json", data)
        sae_report(res).write(out)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_eval(res.headline())
    log(f"wrote {os.path.join(target, 'report.html')} and results.json")


def _print_eval(head: Headline) -> None:
    """The evaluation's headline as the plain lines ``sae eval`` has always printed: the
    table's title, then one metric per line."""
    click.echo(head.table_title or head.title)
    for metric, value in head.table:
        click.echo(f"  {metric:<24}{value}")


@sae_group.command("browse")
@click.argument("sae_dir", type=click.Path())
@text_options
@config_options(BrowserConfig, only=["tokens", "features", "top_k", "seq_len"])
@make_model_options(BrowserConfig, batch_help=_WINDOWS)
@click.option("--explanations", "explanations_file", default=None,
              type=click.Path(dir_okay=False),
              help="explanations.jsonl to show [default: the SAE folder's, if it has one].")
@out_option("Write browser.html (and features.json) here.", required=True)
def browse(
    sae_dir: str, text_file: str | None, hf_dataset: str | None, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, explanations_file: str | None,
    out_dir: str, **settings: Any,
) -> None:
    """One HTML feature browser: density, top contexts, promoted/suppressed tokens, search
    (by explanation too, with score badges, when the SAE has explanations.jsonl)."""
    from interp.data.corpus import text_source
    from reports.sae_browser import sae_browser_report
    from saes.autointerp.store import explanations_beside, read_explanations
    from saes.features.browser import collect_browser_data
    from saes.loading import load_sae

    path = sae_path(sae_dir)
    cfg = build_config(BrowserConfig, settings, batch_size=batch_size, seed=seed)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    check_creatable(out_dir, inputs=(sae_dir, path))
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        loaded = load_sae(path, model, device=device)
        d_sae = loaded.sae.cfg.d_sae
        explanations = (read_explanations(explanations_file, d_sae=d_sae) if explanations_file
                        else explanations_beside(path, d_sae))
        browser = collect_browser_data(model, loaded, docs, cfg, data=data)
        out.write_json("features.json", browser.to_dict())
        sae_browser_report(browser, explanations=explanations).write(out, page="browser.html")
    log(f"wrote {os.path.join(out_dir, 'browser.html')} ({len(browser.features)} features)")


@sae_group.command("explain")
@click.argument("sae_dir", type=click.Path())
@text_options
@config_options(AutoInterpConfig)
@make_model_options(AutoInterpConfig, batch_help=_WINDOWS)
@out_option("Write report.html, results.json, explanations.jsonl and figures/ here "
            "(explanations.jsonl also beside the SAE).", required=True)
@json_option
def explain(
    sae_dir: str, text_file: str | None, hf_dataset: str | None, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, out_dir: str, as_json: bool,
    **settings: Any,
) -> None:
    """Explain SAE features (or a transcoder's: give its layer folder) and score the
    explanations against shuffled ones, random-SAE features and planted features."""
    from interp.cli.common import show_result
    from interp.data.corpus import text_source
    from interp.runs.atomic import atomic_write_text
    from interp.schema import json_safe
    from reports.autointerp import autointerp_report
    from saes.autointerp import run_autointerp
    from saes.autointerp.store import EXPLANATIONS, explanations_text

    path = sae_path(sae_dir, transcoders=True)
    cfg = build_config(AutoInterpConfig, settings, batch_size=batch_size, seed=seed)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    check_creatable(out_dir, inputs=(sae_dir, path))
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = run_autointerp(model, _load_sae_or_transcoder(path, model, device), docs,
                                cfg, data=data)
        body: dict[str, Any] = json_safe(result.to_dict())
        out.write_json("results.json", body)
        text = explanations_text(result)
        out.write_text(EXPLANATIONS, text)
        autointerp_report(result).write(out)
    beside = ""
    try:
        atomic_write_text(path / EXPLANATIONS, text)
        beside = f" and {path / EXPLANATIONS}"
    except OSError as e:  # a read-only SAE folder: the copy in --out is the record
        log(f"could not write {path / EXPLANATIONS} ({e.strerror or e}); it is in {out_dir}")
    show_result(result, body, as_json, f"wrote {os.path.join(out_dir, 'report.html')}, "
                                       f"results.json, {EXPLANATIONS}{beside}")


def _load_sae_or_transcoder(path: Path, model: Any, device: str) -> Any:
    """The artifact at ``path`` by its kind: an SAE, or a transcoder (its features read the
    MLP's input, so ``sae explain`` labels them for ``interp graph``'s viewer)."""
    from interp.runs.artifacts import read_config
    from saes.loading import load_sae
    from saes.transcoders.files import load_transcoder
    from saes.transcoders.model import KIND as TRANSCODER

    if read_config(path)["kind"] == TRANSCODER:
        return load_transcoder(path, model, device=device)
    return load_sae(path, model, device=device)


@sae_group.command("export")
@click.argument("sae_dir", type=click.Path())
@out_option("SAELens folder to write (cfg.json + sae_weights.safetensors).", required=True)
def export_cmd(sae_dir: str, out_dir: str) -> None:
    """Write an SAE in SAELens's layout, for `SAE.load_from_disk`."""
    from saes.saelens import export_saelens

    check_creatable(out_dir, inputs=(sae_dir,))
    path = export_saelens(sae_path(sae_dir), out_dir)
    click.echo(f"SAELens folder: {path}")


@sae_group.command("import")
@click.argument("saelens_dir", type=click.Path())
@click.option("--model-id", default=None, help="Model id to record [default: from cfg.json].")
@out_option("interp SAE folder to write.", required=True)
def import_cmd(saelens_dir: str, model_id: str | None, out_dir: str) -> None:
    """Read a SAELens SAE folder into an interp SAE."""
    from saes.saelens import import_saelens

    check_creatable(out_dir, inputs=(saelens_dir,))
    path = import_saelens(saelens_dir, out_dir, model_id=model_id)
    click.echo(f"interp SAE: {path}")


@sae_group.command("probe")
@click.argument("sae_dir", type=click.Path())
@probe_dataset_options("Split by this column (whole groups held out); '' for a stratified split.")
@config_options(SparseProbeConfig, only=["ks", "seeds", "position", "random_draws", "C"])
@make_model_options(SparseProbeConfig, batch_help="Texts per forward pass.")
@out_option("Write results.json, report.html and the figure here.", required=True)
def probe_cmd(
    sae_dir: str, dataset: str | None, text_column: str, label_column: str,
    group_column: str, model_name: str | None, device: str, dtype: str, batch_size: int,
    seed: int, out_dir: str, **settings: Any,
) -> None:
    """Sparse probing: k SAE latents vs k random latents vs the dense residual probe."""
    from interp.cli.common import json_safe
    from interp.probing.probes import load_probe_dataset
    from reports.sae_probe import sae_probe_report
    from saes.features.probing import sparse_probe
    from saes.loading import load_sae

    cfg = build_config(SparseProbeConfig, settings, batch_size=batch_size, seed=seed)
    path = sae_path(sae_dir)
    data = load_probe_dataset(dataset, text_column=text_column, label_column=label_column,
                              group_column=group_column or None)
    check_creatable(out_dir, inputs=(sae_dir, path))
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        res = sparse_probe(model, load_sae(path, model, device=device), data, cfg)
        out.write_json("results.json", json_safe(res.to_dict()))
        sae_probe_report(res).write(out)
    res.headline().print()
    for w in res.warnings:
        log(f"warning: {w}")
    log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")
