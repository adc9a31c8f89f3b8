"""The numeric metrics of a verb's ``results.json``, flattened to ``name → value``.

Every verb writes ``results.json``; its numbers are the metrics seed runs summarise and
comparisons test. A number nested in dicts is named by its path (``mcnemar.priming.
p_value``), one in a short list by its index (``test_accuracy_mean[6]``). Left out:
the manifest and config (settings, not results), booleans, lists longer than
:data:`MAX_LIST` (per-token or per-item data) and lists of records (items, texts).
A ``NAME_ci95`` pair is a metric's noise, kept apart under the metric's name.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from interp.errors import InterpError

SKIP_KEYS = frozenset({"manifest", "config", "dataset", "artifact", "args", "runs"})
MAX_LIST = 64


def read_results(folder: str | Path) -> dict[str, Any]:
    """``folder/results.json`` as a dict; one line when it is missing or not JSON."""
    from interp.runs.paths import check_path_name

    check_path_name(folder, "result folder")
    if not Path(folder).exists():
        raise InterpError(f"{folder}: no such folder")
    if not Path(folder).is_dir():
        raise InterpError(f"{folder}: not a folder (give a result folder, with results.json)")
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise InterpError(f"{folder}: no results.json (not an interp result folder)")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InterpError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InterpError(f"{path}: results must be a JSON object")
    return data


def flatten(data: dict[str, Any]) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """``(metrics, intervals)``: every numeric leaf, and each ``NAME_ci95`` as NAME's interval."""
    metrics: dict[str, float] = {}
    cis: dict[str, tuple[float, float]] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int | float):
            if math.isfinite(value):
                metrics[name] = float(value)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                if k in SKIP_KEYS:
                    continue
                key = f"{name}.{k}" if name else str(k)
                if k.endswith("_ci95") and _is_interval(v):
                    cis[key.removesuffix("_ci95")] = (float(v[0]), float(v[1]))
                elif k.endswith("_ci95") and isinstance(v, list) and all(
                        _is_interval(x) for x in v) and len(v) <= MAX_LIST:
                    for i, x in enumerate(v):
                        cis[f"{key.removesuffix('_ci95')}[{i}]"] = (float(x[0]), float(x[1]))
                else:
                    walk(v, key)
            return
        if isinstance(value, list) and len(value) <= MAX_LIST and all(
                isinstance(x, int | float | type(None)) and not isinstance(x, bool)
                for x in value):
            for i, x in enumerate(value):
                walk(x, f"{name}[{i}]")

    walk(data, "")
    return metrics, cis


def _is_interval(v: Any) -> bool:
    return (isinstance(v, list | tuple) and len(v) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool)
                    and math.isfinite(x) for x in v))


def verb_of(data: dict[str, Any]) -> str | None:
    """Which verb wrote a result (``"probe"``, ``"eval sycophancy"``), or ``None`` if unknown.

    A seed group records its verb; a single run's manifest records the command line.
    """
    if data.get("kind") == "seeds":
        return str(data.get("verb")) or None
    man = data.get("manifest")
    command = man.get("command") if isinstance(man, dict) else None
    if not isinstance(command, list) or not command or not str(command[0]).endswith("interp"):
        return None
    words = []
    for part in command[1:3]:
        if str(part).startswith("-"):
            break
        words.append(str(part))
    return " ".join(words[:2] if words[:1] in (["eval"], ["sae"], ["steer"], ["tuned-lens"])
                    else words[:1]) or None
