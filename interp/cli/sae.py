"""``interp sae train|eval|browse|export|import``: sparse autoencoders from the command line.

``interp sae train`` also runs under ``torchrun`` (DistributedDataParallel, gloo on CPU and
nccl on CUDA)::

    torchrun --nproc-per-node 2 --no-python interp sae train --layer 6 --out runs/l6
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from interp.cli.common import (
    load_model,
    log,
    make_model_options,
    manifest_for,
    probe_dataset_options,
    text_options,
    throughput_text,
    write_run_results,
)
from interp.errors import InterpError
from interp.runs.outdir import OutDir, check_creatable

if TYPE_CHECKING:
    from saes.metrics import SAEEvalResult
    from saes.sparse_probing import SparseProbeResult
    from saes.train import TrainResult

_train_model_options = make_model_options(
    batch_size=4096, batch_help="Activations (tokens) per training step, over all processes.")
_window_options = make_model_options(batch_size=8, batch_help="Text windows per forward pass.")
_text_batch_options = make_model_options(batch_size=16, batch_help="Texts per forward pass.")

def _positive(name: str):  # noqa: ANN202
    def check(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:  # noqa: ARG001
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InterpError(f"{name} must be a positive finite number, got {value}")
        return value
    return check


def arch_text(arch: object) -> str:
    """``relu (λ 5)``, ``topk (k 32)``, ``jumprelu (λ 1)``: the run's sparsity knob."""
    name = getattr(arch, "name", "?")
    k = getattr(arch, "k", None)
    if k is not None:
        return f"{name} (k {k})"
    coef = getattr(arch, "l1_coefficient", getattr(arch, "l0_coefficient", None))
    return f"{name} (λ {coef})"


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


@sae_group.command("train")
@click.option("--layer", default=None, type=int,
              help="Residual stream after this block (blocks.L.hook_resid_post) [default: 6].")
@click.option("--layers", "layers_spec", default=None, metavar="L1,L2,…",
              help="Train one SAE per layer from the same model forward passes, each into "
                   "OUT/layer-L (instead of --layer).")
@click.option("--d-sae", default=4608, show_default=True, type=click.IntRange(min=1),
              help="Dictionary size (8 × d_model for the default model).")
@click.option("--arch", "architecture", default="relu", show_default=True,
              metavar="relu|topk|batchtopk|jumprelu",
              help="SAE architecture: ReLU + L1, TopK or BatchTopK (--k), JumpReLU (L0).")
@click.option("--k", "k", default=None, type=int,
              help="TopK/BatchTopK: active latents per token (default 32).")
@click.option("--l1", "l1_coefficient", default=5.0, show_default=True, type=float,
              callback=_positive("--l1"),
              help="ReLU: L1 coefficient λ (on inputs scaled to E‖x‖² = d).")
@click.option("--l0-coefficient", default=None, type=float, callback=_positive("--l0-coefficient"),
              help="JumpReLU: L0 coefficient λ (default 1).")
@click.option("--threshold-init", default=None, type=float,
              callback=_positive("--threshold-init"),
              help="JumpReLU: initial threshold of every latent (default 0.001, the paper's). "
                   "Thresholds move by at most about lr × steps in log space, so on short runs "
                   "this sets the L0.")
@click.option("--bandwidth", default=None, type=float, callback=_positive("--bandwidth"),
              help="JumpReLU: width ε of the straight-through kernel (default 0.001).")
@click.option("--aux-k", default=None, type=int,
              help="TopK/BatchTopK: dead latents AuxK uses per token (default d_model / 2).")
@click.option("--aux-coefficient", default=None, type=float,
              help="TopK/BatchTopK: weight of the AuxK loss (default 1/32; 0 turns it off).")
@click.option("--tokens", default=2_000_000, show_default=True, type=click.IntRange(min=1),
              help="Training tokens (activations).")
@click.option("--lr", default=4e-4, show_default=True, type=float, callback=_positive("--lr"))
@click.option("--l1-warmup", "sparsity_warmup", default=0.05, show_default=True,
              type=click.FloatRange(0, 1),
              help="Fraction of steps over which the L1 (ReLU) or L0 (JumpReLU) λ rises from 0.")
@click.option("--resample-every", default=0, show_default=True, type=click.IntRange(min=0),
              help="Resample dead features every N steps in the first half (0: never).")
@click.option("--dead-window", default=1_000_000, show_default=True,
              type=click.IntRange(min=1), help="Tokens without firing before a feature is dead.")
@click.option("--seq-len", default=128, show_default=True, type=click.IntRange(min=3))
@click.option("--windows-per-chunk", default=1024, show_default=True, type=click.IntRange(min=1),
              help="Windows shuffled together (memory: this × seq-len × d × 4 bytes).")
@click.option("--data-shards", default=None, type=click.IntRange(min=1),
              help="Substreams of the text [default: the number of processes].")
@click.option("--cache-activations", "cache_dir", default=None, type=click.Path(file_okay=False),
              help="Keep activations on disk here; later runs on the same text skip the model.")
@click.option("--checkpoint-every", default=50, show_default=True, type=click.IntRange(min=1),
              help="Steps between checkpoints.")
@click.option("--stop-at", default=None, type=click.IntRange(min=0),
              help="Stop after this many steps in all (resumable later).")
@text_options
@_train_model_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Run folder (checkpoint/, sae/); rerun the same command to resume.")
def train(
    layer: int | None, layers_spec: str | None, d_sae: int, architecture: str, k: int | None,
    l1_coefficient: float,
    l0_coefficient: float | None, threshold_init: float | None, bandwidth: float | None,
    aux_k: int | None, aux_coefficient: float | None, tokens: int, lr: float,
    sparsity_warmup: float,
    resample_every: int, dead_window: int, seq_len: int, windows_per_chunk: int,
    data_shards: int | None, cache_dir: str | None, checkpoint_every: int,
    stop_at: int | None, text_file: str | None, hf_dataset: str | None,
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int, out_dir: str,
) -> None:
    """Train an SAE on one layer's residual stream (or one per layer of --layers from shared
    forward passes); resumes if interrupted."""
    from interp.data.corpus import text_source
    from saes.architectures import ARCHITECTURES, arch_config
    from saes.train import TrainConfig, train_sae, train_saes

    if layer is not None and layers_spec is not None:
        raise InterpError("give --layer or --layers, not both")
    several = layers_spec is not None
    layer = 6 if layer is None else layer

    for option, value, archs in (("--k", k, ("topk", "batchtopk")),
                                 ("--aux-k", aux_k, ("topk", "batchtopk")),
                                 ("--aux-coefficient", aux_coefficient, ("topk", "batchtopk")),
                                 ("--l0-coefficient", l0_coefficient, ("jumprelu",)),
                                 ("--threshold-init", threshold_init, ("jumprelu",)),
                                 ("--bandwidth", bandwidth, ("jumprelu",))):
        if value is not None and architecture in ARCHITECTURES and architecture not in archs:
            raise InterpError(f"{option} is for --arch {' or '.join(archs)}, not {architecture}")
    arch = arch_config(architecture, k=k, l1_coefficient=l1_coefficient,
                       l0_coefficient=l0_coefficient, threshold_init=threshold_init,
                       bandwidth=bandwidth, aux_k=aux_k,
                       aux_coefficient=aux_coefficient)
    rank, world = _init_distributed(device)
    shards = data_shards or world
    cfg = TrainConfig(
        layer=layer, d_sae=d_sae, arch=arch, tokens=tokens,
        batch_size=batch_size, lr=lr, sparsity_warmup_fraction=sparsity_warmup,
        resample_every=resample_every, dead_window=dead_window, checkpoint_every=checkpoint_every,
        seed=seed, seq_len=seq_len, windows_per_chunk=windows_per_chunk, data_shards=shards,
    )
    cfg.store_config()  # validate shards/chunk now, before anything slow
    docs, data = text_source("train", text_file=text_file, hf_dataset=hf_dataset)
    check_creatable(out_dir)
    if cache_dir is not None:
        check_creatable(cache_dir)
    model = load_model(model_name, device, dtype, seed)
    if several:
        assert layers_spec is not None
        layer_list = sorted(set(model.parse_layers(layers_spec)))
        cfg.layer = layer_list[0]
    else:
        layer_list = [model.check_layer(layer)]
    man = manifest_for(model, seed, docs[:0], {**asdict(cfg), "layers": layer_list})
    man["dataset_hash"] = data["sha256"]
    man["data_source"] = data["source"]
    if rank == 0:
        where = (", ".join(model.resid_hook(li) for li in layer_list) +
                 " (one forward for all)" if several else model.resid_hook(layer))
        log(f"training {len(layer_list)} × {arch_text(arch)} SAE on {where}: d_sae {d_sae}, "
            f"{cfg.steps} steps of {batch_size} tokens from {data['source']} into {out_dir}"
            + (f" ({world} processes)" if world > 1 else ""))
    if several:
        results = train_saes(model, docs, out_dir, layer_list, cfg, data=data,
                             cache_dir=cache_dir, stop_at=stop_at, manifest=man)
        if rank:
            return
        for li, res in results.items():
            _print_training(res, prefix=f"layer {li}: ")
        write_run_results(out_dir, {"layers": {str(li): res.to_dict()
                                               for li, res in results.items()},
                                    "manifest": man})
        return
    res = train_sae(model, docs, out_dir, cfg, data=data, cache_dir=cache_dir, stop_at=stop_at,
                    manifest=man)
    if rank:
        return
    _print_training(res)
    write_run_results(out_dir, {**res.to_dict(), "manifest": man})


def _print_training(res: TrainResult, prefix: str = "") -> None:
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


def sae_path(path: str) -> Path:
    """A run folder → its ``sae/``; an SAE folder stays."""
    from saes.train import SAE_SUBDIR

    p = Path(path).expanduser()
    if not p.exists():
        raise InterpError(f"no SAE at {p}: no such folder")
    if (p / SAE_SUBDIR / "config.json").is_file():
        return p / SAE_SUBDIR
    if not (p / "config.json").is_file() and (p / "checkpoint" / "config.json").is_file():
        raise InterpError(f"{p} holds an unfinished SAE run; rerun `interp sae train` to finish")
    layers = sorted(int(d.name.removeprefix("layer-")) for d in p.glob("layer-*")
                    if d.name.removeprefix("layer-").isdigit() and d.is_dir())
    if layers and not (p / "config.json").is_file():
        raise InterpError(f"{p} holds SAEs for layers {', '.join(map(str, layers))}: name one, "
                          f"e.g. {p / f'layer-{layers[0]}'}")
    return p


@sae_group.command("eval")
@click.argument("sae_dir", type=click.Path())
@text_options
@click.option("--tokens", default=102_400, show_default=True, type=click.IntRange(min=1),
              help="Held-out tokens for L0, explained variance and densities.")
@click.option("--ce-tokens", default=None, type=click.IntRange(min=0),
              help="Held-out tokens for the spliced CE metrics [default: --tokens].")
@click.option("--seq-len", default=128, show_default=True, type=click.IntRange(min=3))
@_window_options
@click.option("--baseline-cache/--no-baseline-cache", "cache_baselines", default=True,
              show_default=True,
              help="Keep the zero- and mean-ablation passes (they do not depend on the SAE) "
                   "in $INTERP_CACHE/sae-eval-baselines and reuse them: later evaluations "
                   "at the same layer on the same text run two spliced passes, not four.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write results.json and report.html here [default: the SAE folder].")
def eval_cmd(
    sae_dir: str, text_file: str | None, hf_dataset: str | None, tokens: int,
    ce_tokens: int | None, seq_len: int, model_name: str | None, device: str, dtype: str,
    batch_size: int, seed: int, cache_baselines: bool, out_dir: str | None,
) -> None:
    """L0, explained variance, CE-loss score (zero and mean ablation), ΔCE, KL, dead/dense."""
    from interp.cli.common import json_safe
    from interp.data.corpus import text_source
    from reports.sae import sae_report
    from saes.loading import load_sae
    from saes.metrics import EvalConfig, evaluate_sae
    from saes.results import DEFAULT_TARGETS, TRAINING_KEYS, TrainingRecord

    path = sae_path(sae_dir)
    cfg = EvalConfig(tokens=tokens, ce_tokens=ce_tokens, seq_len=seq_len,
                     batch_size=batch_size, seed=seed, cache_baselines=cache_baselines)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    target = out_dir or str(path)
    with OutDir(target) as out:
        model = load_model(model_name, device, dtype, seed)
        loaded = load_sae(path, model, device=device)
        res = evaluate_sae(model, loaded.sae, docs, cfg)
        res.sae_path = str(loaded.path)
        res.data = data
        res.targets = dict(DEFAULT_TARGETS)
        res.training = TrainingRecord.from_dict({k: loaded.config.get(k) for k in TRAINING_KEYS})
        man = manifest_for(model, seed, docs[:0], {**asdict(cfg), "sae": str(loaded.path)})
        man["dataset_hash"] = data["sha256"]
        man["sae_manifest"] = {k: loaded.manifest.get(k) for k in
                               ("git_commit", "timestamp", "dataset_hash", "seed", "config")}
        res.manifest = man
        out.write_json("results.json", json_safe(res.to_dict()))
        sae_report(res, man).write(out)
    _print_eval(res)
    log(f"wrote {os.path.join(target, 'report.html')} and results.json")


def _print_eval(res: SAEEvalResult) -> None:
    def ci(key: str) -> str:
        lo, hi = getattr(res, f"{key}_ci95")
        return f"{res.value(key):.3f} [{lo:.3f}, {hi:.3f}]"

    lines = [
        f"SAE {res.hook_point} d_sae={res.d_sae} on {res.n_tokens} held-out tokens",
        f"  L0                      {ci('l0')}",
        f"  explained variance      {ci('explained_variance')}",
        f"  cosine similarity       {ci('cosine_similarity')}",
        f"  dead / dense fraction   {res.dead_fraction:.3f} / {res.dense_fraction:.3f}",
    ]
    if res.n_ce_tokens is not None:
        lines += [
            f"  CE clean / SAE / mean-abl / zero-abl  {res.ce_clean:.3f} / {res.ce_sae:.3f}"
            f" / {res.ce_mean_ablation:.3f} / {res.ce_zero_ablation:.3f} nats "
            f"({res.n_ce_tokens} tokens"
            f"{'; ablations from the baseline cache' if res.baselines_cached else ''})",
            f"  CE loss score (zero)    {ci('ce_loss_score')}",
            f"  CE loss score (mean)    {ci('ce_loss_score_mean_ablation')}",
            f"  ΔCE                     {ci('delta_ce')} nats",
            f"  KL(clean ‖ SAE)         {ci('kl_sae')} nats",
        ]
    click.echo("\n".join(lines))


@sae_group.command("browse")
@click.argument("sae_dir", type=click.Path())
@text_options
@click.option("--tokens", default=65_536, show_default=True, type=click.IntRange(min=1),
              help="Held-out tokens scanned for top activations.")
@click.option("--features", default="alive:300", show_default=True,
              help="Feature cards: 'all', 'alive:N' (a seeded sample of live ones) or '3,17,99'.")
@click.option("--top-k", default=12, show_default=True, type=click.IntRange(min=1),
              help="Top-activating contexts per feature.")
@click.option("--seq-len", default=128, show_default=True, type=click.IntRange(min=3))
@_window_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write browser.html (and features.json) here.")
def browse(
    sae_dir: str, text_file: str | None, hf_dataset: str | None, tokens: int, features: str,
    top_k: int, seq_len: int, model_name: str | None, device: str, dtype: str,
    batch_size: int, seed: int, out_dir: str,
) -> None:
    """One HTML feature browser: density, top contexts, promoted/suppressed tokens, search."""
    from interp.data.corpus import text_source
    from reports.sae_browser import sae_browser_report
    from saes.browser import BrowserConfig, collect_browser_data
    from saes.loading import load_sae

    path = sae_path(sae_dir)
    cfg = BrowserConfig(tokens=tokens, seq_len=seq_len, batch_size=batch_size, top_k=top_k,
                        features=features, seed=seed)
    docs, data = text_source("heldout", text_file=text_file, hf_dataset=hf_dataset)
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        loaded = load_sae(path, model, device=device)
        browser = collect_browser_data(model, loaded.sae, docs, cfg)
        browser.sae_path = str(loaded.path)
        browser.data = data
        man = manifest_for(model, seed, docs[:0], {**asdict(cfg), "sae": str(loaded.path)})
        man["dataset_hash"] = data["sha256"]
        out.write_json("features.json", browser.to_dict())
        sae_browser_report(browser, man).write(out, page="browser.html")
    log(f"wrote {os.path.join(out_dir, 'browser.html')} ({len(browser.features)} features)")


@sae_group.command("export")
@click.argument("sae_dir", type=click.Path())
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="SAELens folder to write (cfg.json + sae_weights.safetensors).")
def export_cmd(sae_dir: str, out_dir: str) -> None:
    """Write an SAE in SAELens's layout, for `SAE.load_from_disk`."""
    from saes.saelens import export_saelens

    path = export_saelens(sae_path(sae_dir), out_dir)
    click.echo(f"SAELens folder: {path}")


@sae_group.command("import")
@click.argument("saelens_dir", type=click.Path())
@click.option("--model-id", default=None, help="Model id to record [default: from cfg.json].")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="interp SAE folder to write.")
def import_cmd(saelens_dir: str, model_id: str | None, out_dir: str) -> None:
    """Read a SAELens SAE folder into an interp SAE."""
    from saes.saelens import import_saelens

    path = import_saelens(saelens_dir, out_dir, model_id=model_id)
    click.echo(f"interp SAE: {path}")


@sae_group.command("probe")
@click.argument("sae_dir", type=click.Path())
@probe_dataset_options("Split by this column (whole groups held out); '' for a stratified split.")
@click.option("--ks", default="1,2,5,20", show_default=True,
              help="Comma-separated numbers of latents the sparse probes may use.")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(min=1),
              help="Held-out splits.")
@click.option("--position", default="last", show_default=True,
              type=click.Choice(["last", "mean"]), help="Token(s) of each text to read.")
@click.option("--random-draws", default=5, show_default=True, type=click.IntRange(min=1),
              help="Draws of k random latents per split (averaged).")
@click.option("--C", "C", default=0.1, show_default=True, type=float,
              help="Inverse L2 strength of every probe.")
@_text_batch_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write results.json, report.html and the figure here.")
def probe_cmd(
    sae_dir: str, dataset: str | None, text_column: str, label_column: str,
    group_column: str, ks: str, seeds: int, position: str, random_draws: int, C: float,
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int, out_dir: str,
) -> None:
    """Sparse probing: k SAE latents vs k random latents vs the dense residual probe."""
    from interp.cli.common import float_list, json_safe
    from interp.probing.probes import load_probe_dataset
    from reports.sae_probe import sae_probe_report
    from saes.loading import load_sae
    from saes.sparse_probing import SparseProbeConfig, sparse_probe

    values = float_list(ks, "--ks")
    if any(v != int(v) or v < 1 for v in values):
        raise InterpError(f"bad --ks {ks!r}: use comma-separated positive integers")
    cfg = SparseProbeConfig(ks=[int(v) for v in values], seeds=seeds, position=position,
                            random_draws=random_draws, C=C, batch_size=batch_size, seed=seed)
    path = sae_path(sae_dir)
    data = load_probe_dataset(dataset, text_column=text_column, label_column=label_column,
                              group_column=group_column or None)
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        loaded = load_sae(path, model, device=device)
        res = sparse_probe(model, loaded.sae, data, cfg)
        res.sae_path = str(loaded.path)
        man = manifest_for(model, seed, data.texts, {**asdict(cfg), "sae": str(loaded.path),
                                                     "dataset": data.source})
        res.manifest = man
        out.write_json("results.json", json_safe(res.to_dict()))
        sae_probe_report(res, man).write(out)
    _print_probe(res)
    log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_probe(res: SparseProbeResult) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"sparse probing · {res.hook_point} · {res.dataset}",
                  title_justify="left")
    for col in ("k", "k-sparse", "k random", "sparse − random", ""):
        table.add_column(col, justify="right")
    frame = res.to_frame()
    for i, k in enumerate(res.ks):
        d = res.difference(i)
        sp = frame[(frame.method == "sparse") & (frame.k == k)].accuracy.iloc[0]
        rd = frame[(frame.method == "random") & (frame.k == k)].accuracy.iloc[0]
        table.add_row(str(k), f"{sp:.3f}", f"{rd:.3f}", f"{d['mean']:+.3f}",
                      "within noise" if d["within_noise"] else "")
    dense = frame[frame.method == "dense"].accuracy.iloc[0]
    chance = frame[frame.method == "majority"].accuracy.iloc[0]
    table.add_row("dense", f"{dense:.3f}", "", "", f"chance {chance:.3f}")
    Console(soft_wrap=False, width=120).print(table)
    for w in res.warnings:
        log(f"warning: {w}")
