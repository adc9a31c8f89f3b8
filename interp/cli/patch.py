"""``interp patch``: activation patching, attribution patching and DLA over a task."""

from __future__ import annotations

import click

from interp.cli.common import json_safe, load_model, log, make_model_options


@click.command()
@click.option("--task", default="ioi", show_default=True, metavar="NAME|FILE",
              help="A shipped task (ioi, capitals, ...) or a JSONL file of clean/corrupted pairs.")
@click.option("--family", default="resid", show_default=True,
              help="resid | attn | mlp (per layer × position) or heads (per layer × head).")
@click.option("--method", default="exact", show_default=True,
              help="exact | atp | atp-star (heads only) | both (exact and AtP, and AtP* for "
              "heads, with their agreement).")
@click.option("--direction", default="denoise", show_default=True,
              help="denoise: clean into corrupted; noise: corrupted into clean.")
@click.option("--per-position", is_flag=True, help="heads: one component per head × position.")
@click.option("--layers", default="all", show_default=True,
              help="Layers to patch: comma-separated (0-based) or 'all'.")
@click.option("--limit", default=None, type=click.IntRange(min=1),
              help="Use the first N pairs of the task.")
@click.option("--min-gap", default=0.1, show_default=True, type=click.FloatRange(min=0),
              help="Leave out pairs whose clean − corrupted logit difference gap is smaller.")
@click.option("--no-dla", is_flag=True, help="Skip direct logit attribution.")
@click.option("--top-heads", default=4, show_default=True, type=click.IntRange(min=0),
              help="Attention patterns of this many top heads in the report.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True,
              type=click.IntRange(min=100), help="Bootstrap resamples for the agreement CIs.")
@make_model_options(batch_size=32, batch_help="Patched runs (rows) per forward pass.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write report.html, results.json and figures/ here.")
def patch(task: str, family: str, method: str, direction: str, per_position: bool,
          layers: str, limit: int | None, min_gap: float, no_dla: bool, top_heads: int,
          n_boot: int, model_name: str | None, device: str, dtype: str, batch_size: int,
          seed: int, out_dir: str) -> None:
    """Patch every component of a family over clean/corrupted pairs; compare AtP with exact."""
    from interp.circuits.experiment import check_config, run_patch
    from interp.circuits.results import PatchConfig
    from interp.circuits.tasks import load_task
    from interp.runs.outdir import OutDir
    from reports.patching import patching_report

    load_task(task, limit)  # a missing or empty task fails before the model loads
    with OutDir(out_dir) as out:
        model = load_model(model_name, device, dtype, seed)
        config = PatchConfig(task=task, family=family,  # type: ignore[arg-type]
                             method=method, direction=direction,  # type: ignore[arg-type]
                             per_position=per_position,
                             layers=model.parse_layers(layers), limit=limit,
                             batch_size=batch_size, min_gap=min_gap, n_boot=n_boot,
                             seed=seed, dla=not no_dla, top_heads=top_heads)
        check_config(model, config)
        result = run_patch(model, config)
        out.write_json("results.json", json_safe({**result.to_dict(),
                                                  "manifest": result.manifest}))
        patching_report(result).write(out)
    _print(result)


def _print(result) -> None:
    t = result.task
    log(f"{t.name}: {t.n_used} of {t.n_read} pairs used ({t.n_left_out} left out: "
        f"{t.left_out_reason})")
    if result.dla_skipped:
        log(f"direct logit attribution skipped: {result.dla_skipped}")
    print(f"top components ({result.primary.method}, {result.family}, "
          f"{result.config.direction}; baseline {result.baseline:g}):")
    for name, effect in result.top_components(10):
        print(f"  {name:<22} {effect:+.3f}")
    for a in result.agreement:
        print(f"{a.method} vs exact: Spearman {a.spearman:.3f}, recall@10 {a.recall_at_10:.2f}, "
              f"recall@30 {a.recall_at_30:.2f}; {a.seconds_exact:.1f} s exact, "
              f"{a.seconds_approx:.1f} s {a.method}")
    if result.dla is not None:
        print(f"DLA: contributions sum to the logit difference within "
              f"{result.dla.max_sum_error:.1e}")


__all__ = ["patch"]
