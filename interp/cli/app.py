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

import json
import os
import sys
from typing import Any

import click

from interp.cli.common import (
    float_list,
    json_safe,
    load_model,
    log,
    manifest_for,
    model_options,
    open_out,
    prompts_from_args,
)
from interp.cli.tuned_lens import load_tuned_for_cli, tuned_lens_option
from interp.errors import InterpError


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
    transformers.logging.set_verbosity(
        transformers.logging.get_log_levels_dict().get(
            os.environ["TRANSFORMERS_VERBOSITY"], transformers.logging.ERROR
        )
    )


_quiet_environment()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="interp")
def cli() -> None:
    """Mechanistic interpretability for transformer language models."""


# ---------------------------------------------------------------------------- lens
@cli.command()
@click.argument("prompt")
@model_options
@click.option("--top-k", default=5, show_default=True, type=click.IntRange(min=1),
              help="Tokens kept per cell.")
@click.option("--layer", "layers", default="all", show_default=True,
              help="Layers to read: comma-separated (0-based, resid_post) or 'all'.")
@click.option("--chat", is_flag=True, help="Wrap the prompt in the model's chat template.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html and results.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
@click.option("--columns", "max_cols", default=6, show_default=True,
              type=click.IntRange(min=1), help="The table shows this many last positions.")
@tuned_lens_option
def lens(
    prompt: str, model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    top_k: int, layers: str, chat: bool, out_dir: str | None, as_json: bool, max_cols: int,
    tuned_path: str | None,
) -> None:
    """Logit lens (and --tuned lens): what each layer would predict next, at every position."""
    from interp.lenses.logit import logit_lens, run_lens

    del batch_size  # one prompt: a single forward pass
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    out = open_out(out_dir)
    with out:
        model = load_model(model_name, device, dtype, seed)
        tuned = load_tuned_for_cli(tuned_path, model) if tuned_path is not None else None
        result = logit_lens(model, prompt, layers=layers, top_k=top_k, chat=chat)
        data = result.to_dict()
        config = {"top_k": top_k, "layers": layers, "chat": chat}
        if tuned is not None:
            data["tuned"] = run_lens(
                model, prompt, lens=tuned, layers=layers, top_k=top_k, chat=chat
            ).to_dict()
            config["tuned_lens"] = str(tuned.path)
        man = manifest_for(model, seed, [prompt], config)
        data["manifest"] = man
        if out_dir is not None:
            from reports.lens import render_lens_report

            out.write_json("results.json", data)
            out.write_text("report.html", render_lens_report(data, man))
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_lens_table(data, max_cols)
        if "tuned" in data:
            _print_lens_table(data["tuned"], max_cols)
    if out_dir is not None:
        log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_lens_table(data: dict[str, Any], max_cols: int) -> None:
    from rich.console import Console
    from rich.table import Table

    from reports.html import visible_token

    tokens = data["tokens"]
    first = max(0, len(tokens) - max_cols)
    title = f"{data['lens']} lens · {data['model']} · top-1 next token per layer"
    table = Table(title=title, title_justify="left")
    table.add_column("layer", justify="right")
    for p in range(first, len(tokens)):
        table.add_column(f"{p}:{visible_token(tokens[p])}", overflow="fold")
    table.add_column("p (last)", justify="right")
    table.add_column("KL (last)", justify="right")
    table.add_column("H (last)", justify="right")
    for li, layer in enumerate(data["layers"]):
        cells = [visible_token(data["top1"][li][p]) for p in range(first, len(tokens))]
        table.add_row(
            str(layer), *cells, f"{data['top1_prob'][li][-1]:.3f}",
            f"{data['kl'][li][-1]:.3f}", f"{data['entropy'][li][-1]:.3f}",
        )
    table.add_row(
        "model", *[visible_token(t) for t in data["final_top1"][first:]],
        f"{data['final_top1_prob'][-1]:.3f}", "0", f"{data['final_entropy'][-1]:.3f}",
        style="bold",
    )
    Console(soft_wrap=False, width=max(120, 14 * (len(tokens) - first) + 40)).print(table)


# ------------------------------------------------------------------------- capture
@cli.command()
@click.argument("prompts", nargs=-1)
@click.option("--file", "file_", default=None, type=click.Path(dir_okay=False),
              help="Read prompts from a JSONL/JSON/CSV/TSV/TXT file.")
@click.option("--text-column", default="text", show_default=True,
              help="Column holding the prompt text in --file.")
@model_options
@click.option("--layer", "layers", default=None,
              help="Layers (resid_post): comma-separated or 'all'.")
@click.option("--hook", "hooks", multiple=True,
              help="Any TransformerLens hook point (repeatable), e.g. blocks.3.attn.hook_z.")
@click.option("--positions", default="last", show_default=True,
              help="last, mean, all, or a token index (0 = first, -1 = last).")
@click.option("--drop-first", is_flag=True,
              help="Leave each prompt's first token out of mean/all (its norm is an outlier).")
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template.")
@click.option("--save-dtype", default="float32", show_default=True,
              type=click.Choice(["float32", "bfloat16", "float16"]),
              help="dtype of the saved activations.")
@click.option("--max-memory-gb", default=None, type=float,
              help="Refuse captures needing more memory [default: $INTERP_MAX_MEMORY_GB or "
              "half the RAM].")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for activations/ (artifact), results.json and report.html.")
def capture(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, layers: str | None,
    hooks: tuple[str, ...], positions: str, drop_first: bool, chat: bool, save_dtype: str,
    max_memory_gb: float | None, out_dir: str,
) -> None:
    """Capture activations for PROMPTS (or --file) and save them as an artifact."""

    from interp.activations.capture import capture as run_capture
    from interp.activations.capture import summarize
    from interp.models.loading import parse_dtype
    from interp.runs.artifacts import save_artifact
    from reports.capture import render_capture_report

    texts = prompts_from_args(prompts, file_, text_column)
    pos: str | int = positions
    if positions not in ("last", "mean", "all"):
        try:
            pos = int(positions)
        except ValueError:
            raise InterpError(
                f"bad --positions {positions!r}: use last, mean, all or an integer"
            ) from None
    if layers is None and not hooks:
        raise InterpError("nothing to capture: give --layer and/or --hook")
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        acts = run_capture(
            model, texts, hooks=list(hooks) or None, layers=layers, positions=pos,
            batch_size=batch_size, dtype=parse_dtype(save_dtype), chat=chat,
            drop_first=drop_first, max_memory_gb=max_memory_gb,
        )
        from interp.runs.manifest import sha256_texts

        config = {"positions": pos, "layers": layers, "hooks": list(hooks), "chat": chat,
                  "drop_first": drop_first, "batch_size": batch_size, "dtype": save_dtype,
                  "dataset": file_ or "(command line)", "text_column": text_column}
        man = manifest_for(model, seed, texts, config)
        tensors = {name: acts.acts[name] for name in acts.hook_points}
        tensors["lengths"] = acts.lengths
        if pos == "all":
            tensors["mask"] = acts.mask
            tensors["input_ids"] = acts.input_ids
        save_artifact(
            out.stage_dir("activations"), tensors, kind="activations", config=config,
            model_id=model.model_id, d_model=model.d_model,
            hook_point=acts.hook_points[0] if len(acts.hook_points) == 1 else None,
            manifest=man,
        )
        hooks_summary = summarize(acts)
        result = {
            "model": model.model_id, "n_prompts": len(texts),
            "n_tokens": int(acts.lengths.sum()), "positions": pos, "dtype": save_dtype,
            "dataset": file_ or "(command line)", "dataset_hash": sha256_texts(texts),
            "artifact": "activations", "hooks": hooks_summary, "manifest": man,
        }
        out.write_json("results.json", result)
        out.write_text("report.html", render_capture_report(result, man))

    _print_capture_table(hooks_summary)
    log(f"wrote {os.path.join(out_dir, 'activations')}/, results.json and report.html")


def _print_capture_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="captured activations", title_justify="left")
    for col in ("hook point", "shape", "mean ‖h‖", "95% CI", "n"):
        table.add_column(col, justify="left" if col == "hook point" else "right")
    for r in rows:
        lo, hi = r["norm_ci95"]
        table.add_row(r["hook"], "×".join(map(str, r["shape"])), f"{r['norm_mean']:.2f}",
                      f"[{lo:.2f}, {hi:.2f}]", str(r["norm_n"]))
    Console(soft_wrap=False, width=120).print(table)


# --------------------------------------------------------------------------- probe
@cli.command()
@model_options
@click.option("--layer", "layer", default=None, help="One layer (0-based resid_post).")
@click.option("--layers", "layers", default=None,
              help="Layer sweep: comma-separated or 'all' (one capture pass).")
@click.option("--dataset", default=None, type=click.Path(dir_okay=False),
              help="JSONL/JSON/CSV/TSV (default: shipped probes/capitals_truefalse.jsonl).")
@click.option("--text-column", default="text", show_default=True)
@click.option("--label-column", default="label", show_default=True)
@click.option("--group-column", default="group", show_default=True,
              help="Hold out whole groups (the deciding word) when the column exists.")
@click.option("--position", default="last", show_default=True,
              help="Token read: last, mean, or an index (0 = first, -1 = last).")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(min=1))
@click.option("--C", "C", default=0.1, show_default=True, type=float,
              help="Inverse L2 strength of the logistic regression (on standardised inputs).")
@click.option("--no-random-weights", is_flag=True,
              help="Skip the random-weights control (saves one capture pass).")
@click.option("--ablate", is_flag=True,
              help="Ablation check at the layer (the best layer of a sweep).")
@click.option("--leace", is_flag=True,
              help="With --ablate: also erase with LEACE (concept-erasure), a second method.")
@click.option("--random-directions", default=10, show_default=True,
              type=click.IntRange(min=1), help="Variance-matched random directions.")
@click.option("--ablate-examples", default=256, show_default=True,
              type=click.IntRange(min=10), help="Examples used by the ablation check.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html, results.json and the probe artifact here.")
@click.option("--json", "as_json", is_flag=True, help="Print results JSON instead of a table.")
def probe(
    model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    layer: str | None, layers: str | None, dataset: str | None, text_column: str,
    label_column: str, group_column: str, position: str, seeds: int, C: float,
    no_random_weights: bool, ablate: bool, leace: bool, random_directions: int,
    ablate_examples: int,
    out_dir: str | None, as_json: bool,
) -> None:
    """Linear probes with held-out accuracy, controls, seed noise and an ablation check."""
    import math

    from interp.probing.probes import dataset_hash, load_probe_dataset, run_probe, save_probe

    if layer is not None and layers is not None:
        raise InterpError("give --layer or --layers, not both")
    if leace and not ablate:
        raise InterpError("--leace needs --ablate")
    if not (C > 0 and math.isfinite(C)):
        raise InterpError(f"--C must be a positive number, got {C}")
    pos: str | int = position
    if position not in ("last", "mean"):
        try:
            pos = int(position)
        except ValueError:
            raise InterpError(f"bad --position {position!r}: use last, mean or an integer")\
                from None
    ds = load_probe_dataset(dataset, text_column=text_column, label_column=label_column,
                            group_column=group_column or None)
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        spec = layers if layers is not None else (layer if layer is not None else "all")
        layer_list = model.parse_layers(spec)  # validates before any heavy work
        res = run_probe(model, ds, layers=layer_list, position=pos, seeds=seeds, C=C,
                        batch_size=batch_size, random_weights=not no_random_weights)
        data = res.to_dict()
        data["dataset"] = {"path": ds.source, "n": len(ds), "label_names": ds.label_names,
                           "split": "group" if ds.groups else "stratified",
                           "n_groups": len(set(ds.groups)) if ds.groups else None}
        if ablate:
            data["ablation"] = _probe_ablation(model, ds, res, pos, batch_size, seed,
                                               random_directions, ablate_examples, leace)
        man = manifest_for(model, seed, ds.texts, data["config"])
        man["dataset_hash"] = dataset_hash(ds)
        data["manifest"] = man
        if out_dir is not None:
            from reports.probe import render_probe_report

            save_probe(res, res.best_layer(), out.stage_dir("probe"), man)
            data["artifact"] = "probe"
        safe = json_safe(data)  # NaN/inf → null: results.json stays strict JSON
        if out_dir is not None:
            out.write_json("results.json", safe)
            out.write_text("report.html", render_probe_report(safe, man))
    if as_json:
        click.echo(json.dumps(safe, indent=2))
    else:
        _print_probe_table(data)
    for w in res.warnings:
        log(f"warning: {w}")


def _probe_ablation(model, ds, res, pos, batch_size, seed, n_random, n_examples,  # noqa: ANN001, ANN202
                    leace=False):
    import numpy as np

    from interp.activations.capture import capture
    from interp.probing.ablation import run_ablation

    layer = res.best_layer()
    idx = np.arange(len(ds))
    if len(idx) > n_examples:  # balanced, seeded subsample
        rng = np.random.default_rng(seed)
        per = n_examples // 2
        idx = np.sort(np.concatenate([
            rng.choice(np.flatnonzero(ds.labels == c), min(per, int((ds.labels == c).sum())),
                       replace=False) for c in (0, 1)]))
    texts = [ds.texts[i] for i in idx]
    labels = ds.labels[idx]
    groups = [ds.groups[i] for i in idx] if ds.groups else None
    x = capture(model, texts, layers=[layer], positions=pos, batch_size=batch_size,
                progress=False)[layer].float().numpy()
    ab = run_ablation(
        model, texts, labels,
        {"probe": res.directions[layer], "mean_difference": res.mean_differences[layer]},
        layer=layer, x_layer=x, groups=groups, targets=ds.target_tokens, n_random=n_random,
        position=pos, batch_size=batch_size, seed=seed, leace=leace,
    )
    return ab.to_dict()


def _print_probe_table(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    def f(x: Any) -> str:
        return "—" if x is None or x != x else f"{x:.3f}"

    table = Table(title=f"probe · {d['model']} · {d['dataset']['path']} "
                  f"({d['n_examples']} examples, split by {d['dataset']['split']})",
                  title_justify="left")
    for col in ("layer", "test acc", "± std", "AUROC", "control", "ctrl task", "select.",
                "shuffled", "majority", "train"):
        table.add_column(col, justify="right")
    for i, layer in enumerate(d["layers"]):
        style = "bold" if layer == d["best_layer"] else None
        table.add_row(
            str(layer), f(d["test_accuracy_mean"][i]), f(d["test_accuracy_std"][i]),
            f(d["test_auroc_mean"][i]), f(d["control_accuracy_mean"][i]),
            f(d["control_task_accuracy_mean"][i]), f(d["selectivity"][i]),
            f(d["shuffled_accuracy_mean"][i]), f(d["majority_rate_mean"][i]),
            f(d["train_accuracy_mean"][i]), style=style,
        )
    Console(soft_wrap=False, width=130).print(table)
    ab = d.get("ablation")
    if ab:
        t2 = Table(title=f"ablation at layer {ab['layer']} vs "
                   f"{len(ab['probe']['random']['kl'])} variance-matched random directions",
                   title_justify="left")
        for col in ("direction", "KL", "KL pct", "KL z", "logit-gap change", "removed",
                    f"probe@L{ab['later_layer']}"):
            t2.add_column(col, justify="right")
        for name in ("probe", "mean_difference", "leace"):
            if name not in ab:
                continue
            r = ab[name]
            t2.add_row(name, f(r["kl"]), f"{r['kl_percentile']:.0f}", f(r["kl_z"]),
                       f(r["logit_diff_change"]), f(r["logit_diff_removed_fraction"]),
                       f(r["later_probe_accuracy"]))
        Console(soft_wrap=False, width=130).print(t2)


# ------------------------------------------------------------------------ generate
@cli.command(name="generate")
@click.argument("prompts", nargs=-1)
@click.option("--file", "file_", default=None, type=click.Path(dir_okay=False),
              help="Read prompts from a JSONL/JSON/CSV/TSV/TXT file.")
@click.option("--text-column", default="text", show_default=True)
@model_options
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template.")
@click.option("--max-new-tokens", default=64, show_default=True, type=int)
@click.option("--temperature", default=0.0, show_default=True, type=float,
              help="0 = greedy.")
@click.option("--top-p", default=1.0, show_default=True, type=float)
@click.option("--stop", multiple=True, help="Stop string (repeatable).")
@click.option("--deterministic", is_flag=True,
              help="Decode-verify-rollback: outputs independent of batch size.")
@click.option("--verify-every", default=8, show_default=True, type=int,
              help="Tokens proposed per request between verifications.")
@click.option("--inject-batch-noise", default=0.0, show_default=True, type=float,
              help="Testing aid: perturb logits by a fixed function of the batch shape.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of {prompt, text, ...} and nothing else on stdout.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.html and results.json into this folder.")
def generate_cmd(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, chat: bool, max_new_tokens: int,
    temperature: float, top_p: float, stop: tuple[str, ...], deterministic: bool,
    verify_every: int, inject_batch_noise: float, as_json: bool, out_dir: str | None,
) -> None:
    """Generate continuations of PROMPTS (or --file), batched and KV-cached."""
    from interp.generation.engine import GenerationConfig, generate

    texts = prompts_from_args(prompts, file_, text_column)
    GenerationConfig(  # validate before loading the model
        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, stop=stop,
        batch_size=batch_size, verify_every=verify_every,
        inject_batch_noise=inject_batch_noise,
    ).check()
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        result = generate(
            model, texts, max_new_tokens=max_new_tokens, temperature=temperature,
            top_p=top_p, seed=seed, stop=stop, chat=chat, batch_size=batch_size,
            deterministic=deterministic, verify_every=verify_every,
            inject_batch_noise=inject_batch_noise,
        )
        data = result.to_dict()
        if out_dir is not None:
            from reports.generate import render_generate_report

            man = manifest_for(model, seed, texts, data["config"])
            data["manifest"] = man
            out.write_json("results.json", data)
            out.write_text("report.html", render_generate_report(data, man))
    if as_json:
        click.echo(json.dumps(
            [{"prompt": g.prompt, "text": g.text, "stop_reason": g.stop_reason,
              "token_ids": g.token_ids} for g in result.generations],
            ensure_ascii=False, indent=2,
        ))
    else:
        _print_generations(result.generations)
    st = result.stats
    msg = f"{st.new_tokens} tokens in {st.seconds:.1f} s ({st.tokens_per_second:.1f} tok/s)"
    if deterministic:
        msg += (f"; verified {st.tokens_verified}, rollbacks {st.rollbacks}, "
                f"regenerated {st.regenerated_tokens}")
    log(msg)


def _print_generations(gens: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("prompt", overflow="fold")
    table.add_column("continuation", overflow="fold")
    table.add_column("stop")
    from rich.text import Text

    for g in gens:  # Text(): user strings are never parsed as rich markup
        table.add_row(str(g.index), Text(g.prompt), Text(g.text), g.stop_reason)
    Console(soft_wrap=False, width=120).print(table)


# --------------------------------------------------------------------------- steer
@cli.group()
def steer() -> None:
    """Steering vectors: build them from contrast pairs and generate with them."""


@steer.command("train")
@click.option("--pairs", required=True, type=click.Path(dir_okay=False),
              help="JSONL/CSV of contrast pairs with 'positive' and 'negative' columns.")
@click.option("--layer", required=True, type=int, help="0-based layer (resid_post).")
@click.option("--method", default="mean_diff", show_default=True,
              type=click.Choice(["mean_diff", "pca"]))
@click.option("--positive-key", default="positive", show_default=True)
@click.option("--negative-key", default="negative", show_default=True)
@model_options
@click.option("--out", "out_path", required=True, type=click.Path(),
              help="Artifact folder for the vector (safetensors + config.json).")
def steer_train(pairs: str, layer: int, method: str, positive_key: str, negative_key: str,
                model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
                out_path: str) -> None:
    """Build a steering vector at LAYER from contrast pairs."""
    from interp.steering.vectors import load_pairs, train_vector

    cp = load_pairs(pairs, positive_key, negative_key)
    model = load_model(model_name, device, dtype, seed)
    vec = train_vector(model, cp, layer, method=method, batch_size=batch_size)
    man = manifest_for(model, seed, cp.positive + cp.negative,
                    {"layer": layer, "method": method, "pairs": pairs})
    path = vec.save(out_path, man)
    click.echo(json.dumps({"vector": str(path), "layer": vec.layer, "method": vec.method,
                           "n_pairs": vec.n_pairs, "norm": vec.norm,
                           "scale": vec.scale_note}, indent=2))


@steer.command("generate")
@click.argument("prompts", nargs=-1)
@click.option("--vector", "vector_path", required=True, type=click.Path(),
              help="A steering-vector artifact from `interp steer train`.")
@click.option("--alpha", default=1.0, show_default=True, type=float,
              help="Coefficient: h ← h + alpha·v (negative steers the other way).")
@click.option("--positions", "steer_positions", default="all", show_default=True,
              type=click.Choice(["all", "prompt", "generated"]),
              help="Which tokens the vector is added to.")
@click.option("--layer", default=None, type=int, help="Override the vector's layer.")
@click.option("--file", "file_", default=None, type=click.Path(dir_okay=False))
@click.option("--text-column", default="text", show_default=True)
@model_options
@click.option("--chat", is_flag=True)
@click.option("--max-new-tokens", default=48, show_default=True, type=int)
@click.option("--temperature", default=0.0, show_default=True, type=float)
@click.option("--json", "as_json", is_flag=True)
def steer_generate(prompts: tuple[str, ...], vector_path: str, alpha: float,
                   layer: int | None, file_: str | None, text_column: str,
                   model_name: str | None, device: str, dtype: str, batch_size: int,
                   seed: int, chat: bool, max_new_tokens: int, temperature: float,
                   as_json: bool, steer_positions: str) -> None:
    """Generate with a steering vector added at its layer, next to the unsteered text."""
    import math

    from interp.generation.engine import generate
    from interp.steering.vectors import load_vector
    from interp.steering.vectors import steer as steer_ctx

    if not math.isfinite(alpha):
        raise InterpError(f"--alpha must be finite, got {alpha}")
    texts = prompts_from_args(prompts, file_, text_column)
    model = load_model(model_name, device, dtype, seed)
    vec = load_vector(vector_path, model)
    kw = {"max_new_tokens": max_new_tokens, "temperature": temperature, "seed": seed,
          "chat": chat, "batch_size": batch_size}
    base = generate(model, texts, **kw)
    with steer_ctx(model, vec, layer=layer, alpha=alpha, positions=steer_positions):
        steered = generate(model, texts, **kw)
    rows = [{"prompt": p, "alpha": alpha, "layer": vec.layer if layer is None else layer,
             "text": s, "unsteered": b}
            for p, s, b in zip(texts, steered.texts, base.texts, strict=True)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=True, title=f"steering at layer {rows[0]['layer']}, alpha {alpha}")
    for col in ("prompt", "unsteered", "steered"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(Text(r["prompt"]), Text(r["unsteered"]), Text(r["text"]))
    Console(soft_wrap=False, width=140).print(table)


@steer.command("sweep")
@click.option("--vector", "vector_path", default=None, type=click.Path(),
              help="A steering-vector artifact, applied as it is at every swept layer.")
@click.option("--pairs", default=None, type=click.Path(dir_okay=False),
              help="Contrast pairs: a vector is built at each swept layer.")
@click.option("--layers", default="2,6,10,14,18", show_default=True)
@click.option("--alphas", default="-4,-1,0,1,2,4,8,16", show_default=True,
              help="Comma-separated coefficients (0 is always added).")
@click.option("--prompts", "prompts_path", default=None, type=click.Path(dir_okay=False),
              help=".txt (one prompt per line) or JSONL with a 'prompt' field; default: "
              "shipped neutral prompts.")
@click.option("--n-prompts", default=20, show_default=True, type=click.IntRange(min=1),
              help="Use the first N prompts.")
@click.option("--method", default="mean_diff", show_default=True,
              type=click.Choice(["mean_diff", "pca"]))
@click.option("--max-new-tokens", default=24, show_default=True, type=click.IntRange(min=1))
@click.option("--temperature", default=0.0, show_default=True, type=float)
@click.option("--seeds", default="0", show_default=True, help="Sampling seeds, comma list.")
@click.option("--positions", "steer_positions", default="all", show_default=True,
              type=click.Choice(["all", "prompt", "generated"]),
              help="Which tokens the vector is added to.")
@click.option("--chat", is_flag=True)
@model_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
def steer_sweep(vector_path: str | None, pairs: str | None, layers: str, alphas: str,
                prompts_path: str | None, n_prompts: int, method: str, max_new_tokens: int,
                temperature: float, seeds: str, steer_positions: str, chat: bool,
                model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
                out_dir: str) -> None:
    """Sweep coefficient × layer; score target, perplexity, distinct-2, side effects."""
    from interp.steering.sweep import run_sweep
    from interp.steering.vectors import load_pairs, load_vector
    from reports.steering import render_steering_report

    if (vector_path is None) == (pairs is None):
        raise InterpError("give --vector or --pairs (exactly one)")
    alpha_list = float_list(alphas, "--alphas")
    seed_list = [int(x) for x in float_list(seeds, "--seeds")]
    texts = _sweep_prompts(prompts_path)[:n_prompts]
    cp = load_pairs(pairs) if pairs is not None else None
    with open_out(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        layer_list = model.parse_layers(layers)
        vec = load_vector(vector_path, model) if vector_path is not None else None
        res = run_sweep(model, texts, layers=layer_list, alphas=alpha_list, pairs=cp,
                        vector=vec, method=method, max_new_tokens=max_new_tokens,
                        temperature=temperature, seeds=seed_list, chat=chat,
                        batch_size=batch_size, positions=steer_positions)
        man = manifest_for(model, seed, texts, res["config"])
        res["manifest"] = man
        out.write_json("results.json", json_safe(res))
        out.write_text("report.html", render_steering_report(json_safe(res), man))
    _print_sweep(res)


def _sweep_prompts(path: str | None) -> list[str]:
    from interp.data.readers import read_prompts
    from interp.runs.paths import shipped_dataset

    if path is None:
        return read_prompts(shipped_dataset("steering/neutral_prompts.jsonl"), "prompt")
    if path.endswith(".txt"):
        return read_prompts(path, "text")
    return read_prompts(path, "prompt")


def _print_sweep(res: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"steering sweep · {res['model']} · VADER of the continuation "
                  "(Δ vs α=0, perplexity ratio)", title_justify="left")
    table.add_column("layer", justify="right")
    base = res["alphas"].index(0.0)
    for a in res["alphas"]:
        table.add_column(f"α={a:g}", justify="right")
    for li, layer in enumerate(res["layers"]):
        cells = []
        for ai in range(len(res["alphas"])):
            d = res["target_score"][li][ai] - res["target_score"][li][base]
            r = res["perplexity"][li][ai] / res["perplexity"][li][base]
            flag = " ⚠" if res["collapse"][li][ai] > 0.25 else ""
            cells.append(f"{d:+.2f} ({r:.1f}×){flag}")
        table.add_row(str(layer), *cells)
    Console(soft_wrap=False, width=160).print(table)
    sweet = res.get("sweet_spot")
    if sweet:
        log(f"sweet spot: layer {sweet['layer']}, alpha {sweet['alpha']:g}: VADER "
             f"{sweet['effect']:+.3f} (spread {sweet['effect_spread']:.3f}) within "
             f"{sweet['tolerance']}")


# -------------------------------------------------------------------------- models
@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def models(as_json: bool) -> None:
    """List the models available here and whether they are converted and cached."""
    from rich.console import Console
    from rich.table import Table

    from interp.models.loading import list_models

    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="models", title_justify="left")
    for col in ("name", "kind", "installed", "cached", "path"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["kind"], _yn(r["installed"]), _yn(r["cached"]), r["path"])
    Console(soft_wrap=False, width=160).print(table)
    log("any local HF checkpoint folder or hub name also works with --model")


def _yn(x: bool) -> str:
    return "yes" if x else "no"


# -------------------------------------------------------------------------- corpus
@cli.group()
def corpus() -> None:
    """The default offline text corpus (Debian documentation prose)."""


@corpus.command("build")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Folder (default: $INTERP_CACHE/corpus/debian-docs-v1).")
@click.option("--force", is_flag=True, help="Rebuild even if already built.")
def corpus_build(out_dir: str | None, force: bool) -> None:
    """Download the documentation packages and build train/heldout splits."""
    from interp.data import corpus as corpus_mod
    if corpus_mod.is_built(out_dir) and not force:
        log(f"corpus already built at {out_dir or corpus_mod.default_dir()} (use --force)")
    else:
        corpus_mod.build(out_dir)
    _print_corpus_info(corpus_mod.manifest(out_dir))


@corpus.command("info")
@click.option("--path", default=None, type=click.Path(file_okay=False))
def corpus_info(path: str | None) -> None:
    """Show what the built corpus holds."""
    from interp.data import corpus as corpus_mod
    if not corpus_mod.is_built(path):
        raise InterpError(
            f"corpus not built at {path or corpus_mod.default_dir()}: run `interp corpus build`"
        )
    _print_corpus_info(corpus_mod.manifest(path))


def _print_corpus_info(man: dict[str, Any]) -> None:
    click.echo(json.dumps({k: v for k, v in man.items() if k != "packages"}, indent=2))


# -------------------------------------------------------------------------- helpers
def _register_verbs() -> None:
    """Verbs defined in their own modules join the ``interp`` group here."""
    from interp.cli.evals import eval_group
    from interp.cli.sae import sae_group
    from interp.cli.tuned_lens import tuned_lens

    cli.add_command(eval_group)
    cli.add_command(tuned_lens)
    cli.add_command(sae_group)


_register_verbs()


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: user errors → one line on stderr, exit 2."""
    try:
        cli.main(args=argv, prog_name="interp", standalone_mode=False)
    except InterpError as exc:
        _fail(str(exc))
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as exc:
        _fail(" ".join(exc.format_message().split()))
    except FileNotFoundError as exc:
        _fail(f"cannot read {exc.filename}: no such file")
    except PermissionError as exc:
        _fail(f"cannot access {exc.filename}: permission denied")
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # a bug: keep it to one line unless debugging
        if os.environ.get("INTERP_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set INTERP_DEBUG=1 for a "
              "traceback and please report it)", 1)


if __name__ == "__main__":
    main()


__all__ = ["cli", "main", "model_options"]
