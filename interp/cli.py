"""The ``interp`` command line.

Conventions every verb follows:

* verbs that use a model take ``--model --device --dtype --batch-size --seed``;
* layer lists are comma-separated, or ``all``;
* ``--out DIR`` is created if missing; only the command's own files are replaced,
  and only when it succeeds (see :mod:`interp.outdir`);
* progress bars and logs go to stderr, stdout carries only the table or JSON;
* a user error prints one line on stderr and exits with code 2, no traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from interp.errors import InterpError

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def model_options(fn: Callable) -> Callable:
    """``--model --device --dtype --batch-size --seed`` for every verb that loads a model."""
    decorators = [
        click.option("--model", "model_name", default=None, metavar="NAME|PATH",
                     help="Embedded model name (default smollm2-135m-instruct), a local HF "
                     "checkpoint folder, a .gguf file, or a hub name when online."),
        click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:N."),
        click.option("--dtype", default="float32", show_default=True,
                     type=click.Choice(["float32", "bfloat16", "float16"]),
                     help="Model weights dtype."),
        click.option("--batch-size", default=16, show_default=True,
                     type=click.IntRange(min=1), help="Prompts per forward pass."),
        click.option("--seed", default=0, show_default=True, type=int,
                     help="Random seed (recorded in the manifest)."),
    ]
    for dec in reversed(decorators):
        fn = dec(fn)
    return fn


def _load_model(model_name: str | None, device: str, dtype: str, seed: int):
    import torch

    from interp.models import load
    from interp.progress import status

    torch.manual_seed(seed)
    with status(f"loading {model_name or 'smollm2-135m-instruct'}"):
        return load(model_name, device=device, dtype=dtype)


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
def lens(
    prompt: str, model_name: str | None, device: str, dtype: str, batch_size: int, seed: int,
    top_k: int, layers: str, chat: bool, out_dir: str | None, as_json: bool, max_cols: int,
) -> None:
    """Logit lens: what each layer would predict next, at every position of PROMPT."""
    from interp.lens import logit_lens

    del batch_size  # one prompt: a single forward pass
    if not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    out = _open_out(out_dir)
    with out:
        model = _load_model(model_name, device, dtype, seed)
        result = logit_lens(model, prompt, layers=layers, top_k=top_k, chat=chat)
        data = result.to_dict()
        man = _manifest(model, seed, [prompt], {"top_k": top_k, "layers": layers, "chat": chat})
        data["manifest"] = man
        if out_dir is not None:
            from reports.lens import render_lens_report

            out.write_json("results.json", data)
            out.write_text("report.html", render_lens_report(data, man))
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_lens_table(data, max_cols)
    if out_dir is not None:
        _log(f"wrote {os.path.join(out_dir, 'report.html')} and results.json")


def _print_lens_table(data: dict[str, Any], max_cols: int) -> None:
    from rich.console import Console
    from rich.table import Table

    from reports.html import visible_token

    tokens = data["tokens"]
    first = max(0, len(tokens) - max_cols)
    title = f"logit lens · {data['model']} · top-1 next token per layer"
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
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for activations/ (artifact), results.json and report.html.")
def capture(
    prompts: tuple[str, ...], file_: str | None, text_column: str, model_name: str | None,
    device: str, dtype: str, batch_size: int, seed: int, layers: str | None,
    hooks: tuple[str, ...], positions: str, drop_first: bool, chat: bool, save_dtype: str,
    out_dir: str,
) -> None:
    """Capture activations for PROMPTS (or --file) and save them as an artifact."""

    from interp.artifacts import save_artifact
    from interp.capture import capture as run_capture
    from interp.capture import summarize
    from interp.data import read_prompts
    from interp.models import parse_dtype
    from reports.capture import render_capture_report

    if file_ and prompts:
        raise InterpError("give prompts as arguments or with --file, not both")
    texts = read_prompts(file_, text_column) if file_ else list(prompts)
    if not texts:
        raise InterpError("no prompts: pass them as arguments or with --file")
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
    with _open_out(out_dir) as out:
        model = _load_model(model_name, device, dtype, seed)
        acts = run_capture(
            model, texts, hooks=list(hooks) or None, layers=layers, positions=pos,
            batch_size=batch_size, dtype=parse_dtype(save_dtype), chat=chat,
            drop_first=drop_first,
        )
        from interp.manifest import sha256_texts

        config = {"positions": pos, "layers": layers, "hooks": list(hooks), "chat": chat,
                  "drop_first": drop_first, "batch_size": batch_size, "dtype": save_dtype,
                  "dataset": file_ or "(command line)", "text_column": text_column}
        man = _manifest(model, seed, texts, config)
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
    _log(f"wrote {os.path.join(out_dir, 'activations')}/, results.json and report.html")


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
    from interp.data import read_prompts
    from interp.generate import GenerationConfig, generate

    if file_ and prompts:
        raise InterpError("give prompts as arguments or with --file, not both")
    texts = read_prompts(file_, text_column) if file_ else list(prompts)
    if not texts:
        raise InterpError("no prompts: pass them as arguments or with --file")
    GenerationConfig(  # validate before loading the model
        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, stop=stop,
        batch_size=batch_size, verify_every=verify_every,
        inject_batch_noise=inject_batch_noise,
    ).check()
    with _open_out(out_dir) as out:
        model = _load_model(model_name, device, dtype, seed)
        result = generate(
            model, texts, max_new_tokens=max_new_tokens, temperature=temperature,
            top_p=top_p, seed=seed, stop=stop, chat=chat, batch_size=batch_size,
            deterministic=deterministic, verify_every=verify_every,
            inject_batch_noise=inject_batch_noise,
        )
        data = result.to_dict()
        if out_dir is not None:
            from reports.generate import render_generate_report

            man = _manifest(model, seed, texts, data["config"])
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
    _log(msg)


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


# -------------------------------------------------------------------------- models
@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def models(as_json: bool) -> None:
    """List the models available here and whether they are converted and cached."""
    from rich.console import Console
    from rich.table import Table

    from interp.models import list_models

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
    _log("any local HF checkpoint folder or hub name also works with --model")


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
    from interp import corpus as corpus_mod

    if corpus_mod.is_built(out_dir) and not force:
        _log(f"corpus already built at {out_dir or corpus_mod.default_dir()} (use --force)")
    else:
        corpus_mod.build(out_dir)
    _print_corpus_info(corpus_mod.manifest(out_dir))


@corpus.command("info")
@click.option("--path", default=None, type=click.Path(file_okay=False))
def corpus_info(path: str | None) -> None:
    """Show what the built corpus holds."""
    from interp import corpus as corpus_mod

    if not corpus_mod.is_built(path):
        raise InterpError(
            f"corpus not built at {path or corpus_mod.default_dir()}: run `interp corpus build`"
        )
    _print_corpus_info(corpus_mod.manifest(path))


def _print_corpus_info(man: dict[str, Any]) -> None:
    click.echo(json.dumps({k: v for k, v in man.items() if k != "packages"}, indent=2))


# -------------------------------------------------------------------------- helpers
def _open_out(out_dir: str | None):
    from interp.outdir import OutDir

    return _NullOut() if out_dir is None else OutDir(out_dir)


class _NullOut:
    def __enter__(self) -> _NullOut:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write_text(self, name: str, text: str) -> None:  # pragma: no cover
        raise AssertionError("no --out")

    write_json = write_text


def _manifest(model: Any, seed: int, texts: list[str], config: dict[str, Any]) -> dict[str, Any]:
    from interp.manifest import run_manifest, sha256_texts

    return run_manifest(
        model_id=model.model_id, seed=seed, dataset_hash=sha256_texts(texts),
        config=config, extra={"model": model.manifest_info()},
    )


def _log(message: str) -> None:
    from interp.progress import stderr_console

    stderr_console.print(message, highlight=False, markup=False)


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
