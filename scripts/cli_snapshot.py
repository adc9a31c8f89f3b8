"""Snapshot the ``interp`` command line and what its verbs write, and compare two snapshots.

For a refactor that must not change behaviour (issue 27: every CLI verb, flag and
``results.json`` key stays as it is), take a snapshot after the change and compare it
with the one committed from before it::

    python scripts/cli_snapshot.py snapshot --out /tmp/after.json --runs /tmp/snap-after \\
        && python scripts/cli_snapshot.py compare scripts/cli_snapshot_before.json \\
           /tmp/after.json

(``python`` being ``.venv/bin/python``, run from the repository root). ``compare``
prints every difference and exits 1 if there is any (0 and a one-line summary
otherwise). The snapshot runs every verb (``corpus build`` aside: it downloads) on the
default embedded model on the CPU with small settings; ``--only NAME`` runs a subset
while iterating, ``--no-runs`` records the option tree alone (seconds).

What a snapshot holds (``snapshot --out FILE.json [--runs DIR] [--model NAME]``):

* ``cli``: every verb and sub-verb of :data:`interp.cli.app.cli`, found by walking the
  click groups, with the first line of its help and, for every parameter, its spellings
  (``opts``, ``secondary_opts``), type (name, choices, range bounds), default,
  ``is_flag``, ``flag_value``, ``multiple``, ``required``, ``nargs``, ``count``,
  ``hidden`` and help text;
* ``runs``: for each run of :data:`RUNS` (every verb, some twice: ``lens`` with and
  without a tuned lens, ``graph`` on a prompt and on a task), run as a subprocess of the
  same Python with ``INTERP_NO_PROGRESS=1`` and its own ``--out`` folder under
  ``--runs``: the exit code, the first line of stdout,
  the sorted relative paths of every file written, and, for every ``*.json`` /
  ``*.jsonl`` file, each key path (list elements collapsed as ``[]``, e.g.
  ``ablation.probe.random.kl`` or ``layers[].accuracy``) with the JSON types of its
  values (number, string, bool, null, list, object). Values are not kept: numbers may
  move slightly between runs;
* ``meta``: where ``interp`` was imported from, its git commit, the Python version,
  each run's wall time and the tail of its stderr (recorded, never compared).

``compare`` reports verbs and options added, removed or changed, files added or
removed, JSON key paths added or removed and leaf type changes (number and null are
compatible: NaN is written as null). Key paths under a list that was empty in one of the
snapshots are listed as notes and do not count, since an empty list shows no element
schema; so are files whose names differ only in numbers when there are as many of each
kind (``patch`` names figures after its top heads). Folders in stdout are written as
``{out}``, ``{runs}``, ``{datasets}`` and its numbers as ``#`` before comparing. Options
are compared as the command line sees them: ``--no-x`` declared as ``no_x`` (default
False) or as ``x`` (default True, flag value False) is the same flag, and a
``multiple`` option's default None is its empty default.
``--ignore-help`` leaves out help-text differences, ``--ignore-stdout`` the first line
of stdout.

To snapshot another commit's code, check it out in a worktree and put it first on the
path; the verbs' subprocesses inherit ``PYTHONPATH``, and ``meta.interp_file`` says
which copy ran::

    git worktree add /tmp/baseline COMMIT && cd /tmp/baseline && \\
        PYTHONPATH=/tmp/baseline /work/main/.venv/bin/python \\
        /work/main/scripts/cli_snapshot.py snapshot --out before.json --runs /tmp/snap
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

JSON_SUFFIXES = (".json", ".jsonl")


# ----------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class RunSpec:
    """One verb run on the real model: ``{out}`` is its folder, ``{runs}`` the parent."""

    name: str
    argv: tuple[str, ...]
    needs: tuple[str, ...] = field(default_factory=tuple)


RUNS: tuple[RunSpec, ...] = (
    RunSpec("lens", ("lens", "The capital of France is", "--out", "{out}")),
    RunSpec("probe-ablate", (
        "probe", "--layer", "6", "--ablate", "--seeds", "2", "--random-directions", "2",
        "--ablate-examples", "64", "--out", "{out}",
    )),
    RunSpec("steer-sweep", (
        "steer", "sweep", "--pairs", "{datasets}/steering/sentiment.jsonl", "--layers", "6",
        "--alphas=0,4", "--n-prompts", "2", "--max-new-tokens", "8", "--out", "{out}",
    )),
    RunSpec("sae-train", (
        "sae", "train", "--layer", "6", "--d-sae", "256", "--tokens", "16384",
        "--batch-size", "1024", "--windows-per-chunk", "32", "--checkpoint-every", "8",
        "--out", "{out}",
    )),
    RunSpec("sae-eval", (
        "sae", "eval", "{runs}/sae-train", "--tokens", "2048", "--ce-tokens", "1024",
        "--out", "{out}",
    ), needs=("sae-train",)),
    RunSpec("patch", (
        "patch", "--task", "ioi", "--family", "heads", "--method", "both", "--limit", "4",
        "--bootstrap", "100", "--out", "{out}",
    )),
    RunSpec("eval-sycophancy", ("eval", "sycophancy", "--limit", "20", "--out", "{out}")),
    # every other verb, each with the smallest settings that still run it through
    RunSpec("capture", ("capture", "The capital of France is", "The capital of Italy is",
                        "--layers", "6,12", "--positions", "last", "--out", "{out}")),
    RunSpec("generate", ("generate", "The capital of France is", "--max-new-tokens", "8",
                         "--out", "{out}")),
    RunSpec("attention", ("attention", "The capital of France is", "--layer", "3",
                          "--out", "{out}")),
    RunSpec("models", ("models", "--verify", "smollm2-135m-instruct", "--no-hf", "--out",
                       "{out}")),
    RunSpec("corpus-info", ("corpus", "info")),
    RunSpec("peak", ("peak", "--json")),
    RunSpec("tuned-lens-train", ("tuned-lens", "train", "--tokens", "2048", "--out",
                                 "{out}")),
    RunSpec("tuned-lens-eval", ("tuned-lens", "eval", "--lens", "{runs}/tuned-lens-train",
                                "--tokens", "1024", "--out", "{out}"),
            needs=("tuned-lens-train",)),
    RunSpec("lens-tuned", ("lens", "The capital of France is", "--tuned",
                           "{runs}/tuned-lens-train", "--out", "{out}"),
            needs=("tuned-lens-train",)),
    RunSpec("probe-sweep", ("probe", "--layers", "0-2", "--seeds", "2", "--out", "{out}")),
    RunSpec("steer-train", ("steer", "train", "--pairs",
                            "{datasets}/steering/sentiment.jsonl", "--layer", "6",
                            "--out", "{out}")),
    RunSpec("steer-generate", ("steer", "generate", "I spent the afternoon at the library",
                               "--vector", "{runs}/steer-train", "--alpha", "4",
                               "--max-new-tokens", "8", "--json"),
            needs=("steer-train",)),
    RunSpec("steer-train-sae", ("steer", "train", "--sae", "{runs}/sae-train", "--feature",
                                "3", "--tokens", "2048", "--out", "{out}"),
            needs=("sae-train",)),
    RunSpec("sae-browse", ("sae", "browse", "{runs}/sae-train", "--tokens", "4096",
                           "--out", "{out}"), needs=("sae-train",)),
    RunSpec("sae-explain", ("sae", "explain", "{runs}/sae-train", "--features", "alive:2",
                            "--tokens", "4096", "--out", "{out}"), needs=("sae-train",)),
    RunSpec("sae-export", ("sae", "export", "{runs}/sae-train", "--out", "{out}"),
            needs=("sae-train",)),
    RunSpec("sae-import", ("sae", "import", "{runs}/sae-export", "--out", "{out}"),
            needs=("sae-export",)),
    RunSpec("sae-probe", ("sae", "probe", "{runs}/sae-train", "--dataset",
                          "{datasets}/probes/sentiment.jsonl", "--out", "{out}"),
            needs=("sae-train",)),
    RunSpec("transcoder-train", ("transcoder", "train", "--layers", "all", "--d-sae", "128",
                                 "--tokens", "4096", "--windows-per-chunk", "64",
                                 "--out", "{out}")),
    RunSpec("transcoder-eval", ("transcoder", "eval", "{runs}/transcoder-train", "--tokens",
                                "1024", "--out", "{out}"), needs=("transcoder-train",)),
    RunSpec("graph-prompt", ("graph", "The capital of France is", "--transcoders",
                             "{runs}/transcoder-train", "--target", " Paris, London",
                             "--out", "{out}"), needs=("transcoder-train",)),
    RunSpec("graph-task", ("graph", "--task", "capitals", "--limit", "2", "--transcoders",
                           "{runs}/transcoder-train", "--out", "{out}"),
            needs=("transcoder-train",)),
    RunSpec("causal-das", ("causal", "das", "--task", "pronoun", "--layers", "4",
                           "--position", "name", "--steps", "5", "--out", "{out}")),
    RunSpec("causal-edges", ("causal", "edges", "--task", "ioi", "--limit", "4",
                             "--out", "{out}")),
    RunSpec("eval-constitutional", ("eval", "constitutional", "--limit", "2",
                                    "--max-new-tokens", "8", "--out", "{out}")),
    RunSpec("seeds", ("seeds", "2", "--out", "{out}", "--", "probe", "--layer", "6")),
    RunSpec("compare", ("compare", "{runs}/seeds/seed-0", "{runs}/seeds/seed-1", "--out",
                        "{out}"), needs=("seeds",)),
)


# ------------------------------------------------------------------------ cli tree
def _plain(value: Any) -> Any:
    """A JSON-able copy of a click info value (tuples → lists, anything odd → its repr)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if callable(value):
        return f"<callable {getattr(value, '__name__', type(value).__name__)}>"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # no addresses: they vary


def _walk_commands(command: Any, path: str, ctx: Any) -> Iterator[tuple[str, Any, Any]]:
    import click

    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            if sub is None:
                continue
            sub_ctx = click.Context(sub, info_name=name, parent=ctx)
            yield from _walk_commands(sub, f"{path} {name}", sub_ctx)


PARAM_FIELDS = ("param_type_name", "name", "opts", "secondary_opts", "type", "default",
                "is_flag", "flag_value", "multiple", "required", "nargs", "count", "hidden",
                "envvar", "help", "show_default")


def cli_tree() -> dict[str, Any]:
    """Every verb of the ``interp`` click app: help line, sub-verbs and parameters."""
    import click

    from interp.cli.app import cli

    root = click.Context(cli, info_name="interp")
    tree: dict[str, Any] = {}
    for path, command, ctx in _walk_commands(cli, "interp", root):
        params = []
        for param in command.get_params(ctx):
            info = param.to_info_dict()
            record = {k: _plain(info.get(k)) for k in PARAM_FIELDS if k in info}
            if isinstance(param, click.Option):
                record["show_default"] = _plain(param.show_default)
            params.append(record)
        help_text = (command.help or command.short_help or "").strip()
        tree[path] = {
            "group": isinstance(command, click.Group),
            "subcommands": (sorted(command.list_commands(ctx))
                            if isinstance(command, click.Group) else []),
            "help": help_text.splitlines()[0] if help_text else "",
            "hidden": bool(command.hidden),
            "params": params,
        }
    return tree


# --------------------------------------------------------------------- json schema
def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def _key_paths(value: Any, path: str, types: dict[str, set[str]], empty: dict[str, bool]) -> None:
    """Record each path's value types; ``empty[path]`` is True while every list seen there was."""
    types.setdefault(path, set()).add(_json_type(value))
    if isinstance(value, dict):
        for key, child in value.items():
            _key_paths(child, f"{path}.{key}" if path else str(key), types, empty)
    elif isinstance(value, list):
        empty[path] = empty.get(path, True) and not value
        for child in value:
            _key_paths(child, f"{path}[]", types, empty)


def json_schema(file: Path) -> dict[str, Any]:
    """Key paths → their JSON types (sorted, ``|``-joined), and the always-empty lists."""
    types: dict[str, set[str]] = {}
    empty: dict[str, bool] = {}
    try:
        if file.suffix == ".jsonl":
            records = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
            _key_paths(records, "", types, empty)
        else:
            _key_paths(json.loads(file.read_text()), "", types, empty)
    except (ValueError, UnicodeDecodeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "keys": {}, "empty_lists": []}
    types.pop("", None)  # the root
    return {
        "keys": {k: "|".join(sorted(v)) for k, v in sorted(types.items())},
        "empty_lists": sorted(k for k, was_empty in empty.items() if was_empty),
    }


# --------------------------------------------------------------------------- snapshot
def _verb_command() -> list[str]:
    """The ``interp`` console script, run by this very interpreter (so PYTHONPATH holds)."""
    return [sys.executable, "-c", "import sys; from interp.cli import main; "
            "sys.argv[0] = 'interp'; main()"]


def _datasets_dir() -> str:
    from interp.runs.paths import datasets_dir

    return str(datasets_dir())


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["INTERP_NO_PROGRESS"] = "1"
    return env


def _placeholders(text: str, subs: dict[str, str]) -> str:
    """``text`` with this snapshot's folders written as ``{out}``, ``{runs}``, ``{datasets}``."""
    for key, value in subs.items():  # {out} lies under {runs}: replace it first
        text = text.replace(value, "{" + key + "}")
    return text


def run_verb(spec: RunSpec, runs: Path, model: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one verb into ``runs/<name>``; its record, and its meta (timing, stderr)."""
    out = runs / spec.name
    if out.exists():
        shutil.rmtree(out)  # sae train would resume an old run
    subs = {"out": str(out), "runs": str(runs), "datasets": _datasets_dir()}
    argv = [a.format(**subs) for a in spec.argv]
    if model:
        argv += ["--model", model]
    start = time.perf_counter()
    proc = subprocess.run([*_verb_command(), *argv], capture_output=True, text=True,
                          env=_subprocess_env(), check=False)
    seconds = time.perf_counter() - start
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                   if p.is_file()) if out.is_dir() else []
    record = {
        # the argv as written in RUNS, so two snapshots taken in different folders agree
        "argv": list(spec.argv) + (["--model", model] if model else []),
        "exit_code": proc.returncode,
        "stdout_first_line": _placeholders((proc.stdout.splitlines() or [""])[0].rstrip(),
                                           subs),
        "files": files,
        "json": {f: json_schema(out / f) for f in files if f.endswith(JSON_SUFFIXES)},
    }
    meta = {"seconds": round(seconds, 1), "stderr_tail": proc.stderr[-2000:]}
    return record, meta


def _git_commit(path: Path) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=False)
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--",
                                "interp", "saes", "evals", "reports"],
                               capture_output=True, text=True, check=False)
    except OSError:
        return None
    if proc.returncode:
        return None
    return proc.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")


def _subprocess_interp_file() -> str:
    proc = subprocess.run([sys.executable, "-c", "import interp; print(interp.__file__)"],
                          capture_output=True, text=True, env=_subprocess_env(), check=False)
    return proc.stdout.strip() or proc.stderr.strip()[-300:]


def snapshot(out_file: Path, runs: Path | None, model: str | None, only: list[str] | None,
             no_runs: bool) -> int:
    os.environ["INTERP_NO_PROGRESS"] = "1"
    import interp

    package = Path(interp.__file__).resolve().parent
    child_file = _subprocess_interp_file()
    print(f"interp from {interp.__file__} (verbs' subprocesses: {child_file})", file=sys.stderr)
    meta: dict[str, Any] = {
        "interp_file": interp.__file__,
        "subprocess_interp_file": child_file,
        "git_commit": _git_commit(package.parent),
        "python": platform.python_version(),
        "model": model,
        "runs": {},
    }
    start = time.perf_counter()
    tree = cli_tree()
    print(f"{len(tree)} verbs, {sum(len(v['params']) for v in tree.values())} parameters",
          file=sys.stderr)
    records: dict[str, Any] = {}
    if not no_runs:
        runs = (runs or Path(tempfile.mkdtemp(prefix="cli-snapshot-"))).resolve()
        runs.mkdir(parents=True, exist_ok=True)
        wanted = set(only) if only else {s.name for s in RUNS}
        for spec in RUNS:
            if spec.name not in wanted:
                continue
            missing = [n for n in spec.needs if (records[n]["exit_code"] != 0 if n in records
                                                 else not (runs / n).is_dir())]
            if missing:
                print(f"skip {spec.name}: needs {', '.join(missing)}", file=sys.stderr)
                continue
            record, run_meta = run_verb(spec, runs, model)
            records[spec.name] = record
            meta["runs"][spec.name] = run_meta
            keys = sum(len(s["keys"]) for s in record["json"].values())
            print(f"{spec.name}: exit {record['exit_code']} in {run_meta['seconds']:.0f} s, "
                  f"{len(record['files'])} files, {keys} JSON key paths", file=sys.stderr)
            if record["exit_code"]:
                print(run_meta["stderr_tail"], file=sys.stderr)
        meta["runs_dir"] = str(runs)
    meta["seconds"] = round(time.perf_counter() - start, 1)
    data = {"schema": SCHEMA_VERSION, "meta": meta, "cli": tree, "runs": records}
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out_file} in {meta['seconds']:.0f} s", file=sys.stderr)
    failed = [n for n, r in records.items() if r["exit_code"]]
    if failed:
        print(f"verbs that failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


# ---------------------------------------------------------------------------- compare
HELP_FIELDS = ("help", "show_default")
NOT_COMPARED = ("name",)  # the Python parameter name: internal, not part of the CLI


def _param_label(p: dict[str, Any]) -> str:
    if p.get("param_type_name") == "argument":
        return str(p.get("name", "?")).upper()
    return "/".join([*p.get("opts", []), *p.get("secondary_opts", [])])


def _match_params(before: list[dict[str, Any]], after: list[dict[str, Any]]
                  ) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]],
                             list[dict[str, Any]], list[dict[str, Any]]]:
    """Pair parameters: same spellings, then any shared spelling, then the same name."""
    def spellings(p: dict[str, Any]) -> set[str]:
        if p.get("param_type_name") == "argument":
            return {f"ARG:{p.get('name')}"}
        return set(p.get("opts", [])) | set(p.get("secondary_opts", []))

    left, right = list(before), list(after)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for same in (lambda a, b: spellings(a) == spellings(b),
                 lambda a, b: bool(spellings(a) & spellings(b)),
                 lambda a, b: a.get("name") == b.get("name")
                 and a.get("param_type_name") == b.get("param_type_name")):
        for a in list(left):
            for b in right:
                if same(a, b):
                    pairs.append((a, b))
                    left.remove(a)
                    right.remove(b)
                    break
    return pairs, left, right


def _compatible(a: str, b: str) -> bool:
    """Equal type sets, reading null as number where either side has a number (NaN)."""
    sa, sb = set(a.split("|")), set(b.split("|"))
    if "number" in sa | sb:
        sa = {"number" if t == "null" else t for t in sa}
        sb = {"number" if t == "null" else t for t in sb}
    return sa == sb


def _under_empty_list(path: str, empty: set[str]) -> str | None:
    """The nearest list ancestor of ``path`` (``x`` for ``x[].y``) when it is in ``empty``."""
    idx = path.rfind("[]")
    while idx != -1:
        parent = path[:idx]
        if parent in empty:
            return parent
        idx = path.rfind("[]", 0, idx)
    return None


def _compare_files(name: str, before: list[str], after: list[str]
                   ) -> tuple[list[str], list[str]]:
    """Files added or removed; those whose names differ only in numbers are notes.

    Some names come from the results (``figures/attn-l20h0.png``: the top heads), so a
    near tie may swap one for another; what must hold is how many of each kind there are.
    """
    diffs: list[str] = []
    notes: list[str] = []
    removed = sorted(set(before) - set(after))
    added = sorted(set(after) - set(before))
    if not removed and not added:
        return diffs, notes
    kinds_before = Counter(_norm_line(f) for f in before)
    kinds_after = Counter(_norm_line(f) for f in after)
    for f in removed:
        same_kind = kinds_before[_norm_line(f)] == kinds_after[_norm_line(f)]
        (notes if same_kind else diffs).append(f"{name}: file removed: {f}")
    for f in added:
        same_kind = kinds_before[_norm_line(f)] == kinds_after[_norm_line(f)]
        (notes if same_kind else diffs).append(f"{name}: file added: {f}")
    return diffs, notes


def _norm_line(line: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "#", line)


def _comparable(param: dict[str, Any]) -> dict[str, Any]:
    """A parameter as the user sees it: a one-way flag is on or off unless given.

    ``--no-dla`` declared as ``no_dla`` (default False, flag_value True) or as ``dla``
    (default True, flag_value False) behaves the same on the command line; so does a
    ``multiple`` option whose default is None or empty.
    """
    p = dict(param)
    default, value = p.get("default"), p.get("flag_value")
    if p.get("is_flag") and not p.get("secondary_opts") and isinstance(default, bool) \
            and isinstance(value, bool):
        p["on_unless_given"] = default == value
        del p["default"], p["flag_value"]
    if p.get("multiple") and p.get("default") in (None, []):
        p["default"] = []  # click passes () for both
    if p.get("show_default") is None:
        p["show_default"] = False  # None: the context's, which no verb sets
    return p


def compare_cli(before: dict[str, Any], after: dict[str, Any], ignore_help: bool) -> list[str]:
    diffs: list[str] = []
    for path in sorted(set(before) - set(after)):
        diffs.append(f"verb removed: {path}")
    for path in sorted(set(after) - set(before)):
        diffs.append(f"verb added: {path}")
    for path in sorted(set(before) & set(after)):
        vb, va = before[path], after[path]
        for key in ("group", "subcommands", "hidden") + (() if ignore_help else ("help",)):
            if vb.get(key) != va.get(key):
                diffs.append(f"verb changed: {path}: {key} {vb.get(key)!r} -> {va.get(key)!r}")
        pairs, removed, added = _match_params(vb["params"], va["params"])
        for p in removed:
            diffs.append(f"option removed: {path} {_param_label(p)}")
        for p in added:
            diffs.append(f"option added: {path} {_param_label(p)}")
        for pb, pa in ((_comparable(b), _comparable(a)) for b, a in pairs):
            for key in sorted(set(pb) | set(pa)):
                if key in NOT_COMPARED or (ignore_help and key in HELP_FIELDS):
                    continue
                if pb.get(key) != pa.get(key):
                    diffs.append(f"option changed: {path} {_param_label(pb)}: {key} "
                                 f"{pb.get(key)!r} -> {pa.get(key)!r}")
    return diffs


def compare_runs(before: dict[str, Any], after: dict[str, Any], ignore_stdout: bool
                 ) -> tuple[list[str], list[str]]:
    diffs: list[str] = []
    notes: list[str] = []
    for name in sorted(set(before) - set(after)):
        diffs.append(f"run missing after: {name}")
    for name in sorted(set(after) - set(before)):
        diffs.append(f"run new after: {name}")
    for name in sorted(set(before) & set(after)):
        rb, ra = before[name], after[name]
        if rb["argv"] != ra["argv"]:
            diffs.append(f"{name}: run with different arguments {rb['argv']} -> {ra['argv']}")
        if rb["exit_code"] != ra["exit_code"]:
            diffs.append(f"{name}: exit code {rb['exit_code']} -> {ra['exit_code']}")
        if not ignore_stdout and (_norm_line(rb["stdout_first_line"])
                                  != _norm_line(ra["stdout_first_line"])):
            diffs.append(f"{name}: stdout first line {rb['stdout_first_line']!r} -> "
                         f"{ra['stdout_first_line']!r}")
        diffs_files, notes_files = _compare_files(name, rb["files"], ra["files"])
        diffs += diffs_files
        notes += notes_files
        for f in sorted(set(rb["json"]) & set(ra["json"])):
            sb, sa = rb["json"][f], ra["json"][f]
            for side, s in (("before", sb), ("after", sa)):
                if s.get("error"):
                    diffs.append(f"{name}: {f}: unreadable {side}: {s['error']}")
            kb, ka = sb["keys"], sa["keys"]
            eb, ea = set(sb["empty_lists"]), set(sa["empty_lists"])
            for key, side, empty in ([(k, "removed", ea) for k in sorted(set(kb) - set(ka))]
                                     + [(k, "added", eb) for k in sorted(set(ka) - set(kb))]):
                parent = _under_empty_list(key, empty)
                line = f"{name}: {f}: key {side}: {key}"
                if parent is not None:
                    other = "after" if side == "removed" else "before"
                    notes.append(f"{line} (list {parent} is empty {other})")
                else:
                    diffs.append(line)
            for key in sorted(set(kb) & set(ka)):
                if not _compatible(kb[key], ka[key]):
                    diffs.append(f"{name}: {f}: type of {key}: {kb[key]} -> {ka[key]}")
    return diffs, notes


def compare(before_file: Path, after_file: Path, ignore_help: bool, ignore_stdout: bool) -> int:
    before = json.loads(before_file.read_text())
    after = json.loads(after_file.read_text())
    cli_diffs = compare_cli(before["cli"], after["cli"], ignore_help)
    run_diffs, notes = compare_runs(before["runs"], after["runs"], ignore_stdout)
    for line in cli_diffs + run_diffs:
        print(line)
    for line in notes:
        print(f"note: {line}")
    n_params = sum(len(v["params"]) for v in before["cli"].values())
    n_keys = sum(len(s["keys"]) for r in before["runs"].values() for s in r["json"].values())
    summary = (f"{len(before['cli'])} verbs, {n_params} parameters, {len(before['runs'])} runs, "
               f"{n_keys} JSON key paths compared: {len(cli_diffs)} CLI and {len(run_diffs)} "
               f"output differences" + (f", {len(notes)} notes" if notes else ""))
    print(("DIFFERENT: " if cli_diffs or run_diffs else "same: ") + summary)
    return 1 if cli_diffs or run_diffs else 0


# ------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="Record the CLI tree and the verbs' outputs.")
    snap.add_argument("--out", type=Path, required=True, help="The snapshot JSON to write.")
    snap.add_argument("--runs", type=Path, default=None,
                      help="Folder for the verbs' --out folders (default: a temporary one).")
    snap.add_argument("--model", default=None, help="--model for every verb (default: theirs).")
    snap.add_argument("--only", action="append", choices=[s.name for s in RUNS],
                      help="Run only this verb (repeatable).")
    snap.add_argument("--no-runs", action="store_true", help="Record the CLI tree only.")
    comp = sub.add_parser("compare", help="Print every difference; exit 1 if any.")
    comp.add_argument("before", type=Path)
    comp.add_argument("after", type=Path)
    comp.add_argument("--ignore-help", action="store_true", help="Skip help-text differences.")
    comp.add_argument("--ignore-stdout", action="store_true",
                      help="Skip the first line of stdout.")
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        return snapshot(args.out, args.runs, args.model, args.only, args.no_runs)
    return compare(args.before, args.after, args.ignore_help, args.ignore_stdout)


if __name__ == "__main__":
    sys.exit(main())
