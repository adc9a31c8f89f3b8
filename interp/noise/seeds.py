"""Seed noise: summarise a verb's runs under seeds 0…K−1, metric by metric.

``interp seeds K --out DIR -- VERB ARGS…`` runs ``interp VERB ARGS… --seed N --out
DIR/seed-N`` for N = 0…K−1 (the CLI does the running); :func:`summarise_seeds` reads
their ``results.json`` and gives every numeric metric's mean, standard deviation
(``ddof=1``), minimum and maximum. A metric missing from some runs is left out (and
named in the result's ``only_some`` list by the caller's report).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from interp.errors import InterpError
from interp.noise.metrics import flatten, read_results
from interp.noise.results import MetricSummary, SeedsResult
from interp.schema.settings import SEED_MAX

SEED_DIR = "seed-{}"


def check_seeds(k: int) -> None:
    """``k`` must be an int ≥ 2 (one run has no spread) whose seeds ``0 … k − 1`` are all
    seeds every library here takes (``k ≤ SEED_MAX + 1``); else an
    :class:`~interp.errors.InterpError`, before any run starts."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InterpError(f"seeds needs K ≥ 2 runs to measure a spread, got {k}")
    if k > SEED_MAX + 1:
        raise InterpError(f"seeds K must be at most {SEED_MAX + 1:,} (its seeds 0 … K − 1 "
                          f"must be valid seeds, at most {SEED_MAX:,}), got {k:,}")


def summarise_seeds(
    folders: Sequence[str | Path], *, verb: str, args: Sequence[str], seeds: Sequence[int]
) -> SeedsResult:
    """Every numeric metric present in all of ``folders``' results, over the runs; the
    result's manifest records the verb, its arguments and the number of seeds."""
    from interp.runs.manifest import run_manifest

    if len(folders) != len(seeds):
        raise InterpError("one result folder per seed is needed")
    check_seeds(len(folders))
    flat = [flatten(read_results(f))[0] for f in folders]
    common = set(flat[0]).intersection(*flat[1:])
    if not common:
        raise InterpError("the seed runs share no numeric metric")
    metrics = []
    for name in sorted(common, key=lambda n: list(flat[0]).index(n)):
        values = [f[name] for f in flat]
        metrics.append(MetricSummary(
            name=name, values=values, mean=statistics.fmean(values),
            std=statistics.stdev(values), min=min(values), max=max(values)))
    return SeedsResult(verb=verb, args=list(args), seeds=list(seeds),
                       runs=[str(f) for f in folders], metrics=metrics,
                       manifest=run_manifest(seed=None, config={"k": len(seeds), "verb": verb,
                                                                "args": list(args)}))


def seed_group_folders(folder: str | Path) -> list[Path]:
    """The run folders of a seed group written by ``interp seeds`` (``seed-0``, …)."""
    data = read_results(folder)
    if data.get("kind") != "seeds":
        raise InterpError(f"{folder}: not a seed group (written by `interp seeds`)")
    return [Path(folder) / SEED_DIR.format(s) for s in data.get("seeds", [])]
