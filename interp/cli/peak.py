"""``interp peak``: this machine's peak FLOP/s, the denominator of every MFU figure."""

from __future__ import annotations

import json

import click

from interp.cli.common import device_option, json_flag
from interp.runs.progress import status
from interp.schema.settings import DTYPES


@click.command("peak")
@device_option("cpu, cuda or cuda:N.", check=False)
@click.option("--dtype", "dtypes", multiple=True, default=("float32", "bfloat16"),
              show_default=True, type=click.Choice(DTYPES),
              help="Repeat for several dtypes.")
@click.option("--remeasure", is_flag=True,
              help="Measure again and replace the cached figures (also on a known GPU).")
@json_flag("Print JSON instead of a table.")
def peak(device: str, dtypes: tuple[str, ...], remeasure: bool, as_json: bool) -> None:
    """Peak FLOP/s of a matmul microbenchmark (cached), or a known GPU's datasheet."""
    from interp.mfu.peak import device_peak
    from interp.schema import to_data

    results = []
    for dtype in dict.fromkeys(dtypes):
        with status(f"peak of {device} in {dtype} (a matmul microbenchmark if not cached)"):
            results.append(device_peak(device, dtype, remeasure=remeasure))
    if as_json:
        click.echo(json.dumps([to_data(r) for r in results], indent=2))
        return
    for r in results:
        how = (f"measured: best of 5 {r.matmul_size}² matmuls, {r.threads} threads"
               if r.source == "measured" else "datasheet, dense")
        click.echo(f"{r.device}  {r.dtype:<8}  {r.flops / 1e9:>10,.0f} GFLOP/s  ({how})")
