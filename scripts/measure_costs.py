"""Measure what every documented command costs, into ``docs/costs.json``.

Every ``interp`` command in the README, the site's top-level pages and the tool pages
(``docs/_ext/costs.py`` finds them) is run here, in page order, in one scratch folder (so a
command that reads ``runs/topk`` finds what an earlier one wrote), each with the
embedded models' cache. Recorded per command: wall time, peak resident memory of the
command and everything it started (``wait4``), what it wrote (its folder and the cache),
the load average and the CPU. A command whose defaults run for hours is run twice at a
smaller size of the quantity that sets its cost (tokens, questions, features); the slope
between the two runs, from the larger one to the full size, gives the figure, and the line
says so. The full size is the command's own value or its CLI default, read from the CLI.

``make`` targets are measured in a clean clone (``--make``): ``make demo`` and ``make test``
from nothing, with a fresh cache; the phases of ``make test`` (setup, lint, docs, each test
tier) are timed from make's own echo of each recipe line.

    .venv/bin/python scripts/measure_costs.py              # every command (about an hour)
    .venv/bin/python scripts/measure_costs.py --missing    # only those without a figure
    .venv/bin/python scripts/measure_costs.py --only 'interp lens'   # keys starting so
    .venv/bin/python scripts/measure_costs.py --make       # make demo / test in a clone
    .venv/bin/python scripts/measure_costs.py --readme     # rewrite the README's table

Run it on a quiet machine: each figure carries the load average it was measured under.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import costs as doc_costs  # noqa: E402  (docs/_ext/costs.py: the one place commands are found)

BIN = ROOT / ".venv" / "bin"


def _lines(path: str) -> int:
    return sum(1 for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
               if line.strip())


@dataclass(frozen=True)
class Scale:
    """A command measured at two smaller sizes of ``by`` and extrapolated to ``full``."""

    by: str  # the quantity, in words: "tokens", "questions", "features"
    flag: str  # the CLI option that sets it
    short: int  # the larger of the two measured sizes
    form: str = "{n}"  # how the flag's value is written ("alive:{n}"; "list": the first n)
    full: Callable[[], int] | None = None  # when neither the command nor the CLI says
    small: int | None = None  # the smaller size (default: a quarter of ``short``)
    caveat: str = ""  # what the scaled figure leaves out, said in its cost line


@dataclass(frozen=True)
class Spec:
    """How to measure one documented command where running it as written is not enough."""

    needs: str = ""  # what it needs first, in words (shown in the cost line)
    scale: Scale | None = None
    before: tuple[str, ...] = ()  # commands run first, untimed (what it reads)
    files: dict[str, str] = field(default_factory=dict)  # inputs written into its folder
    like: str = ""  # another command of the same verb and settings whose two runs it reuses


#: The trainers' sizes, in whole chunks of the activation store (1,024 windows of 127
#: activations: 130,048 tokens, 31.75 steps of 4,096): below one chunk a run pays for a
#: whole chunk's forward passes, so a slope between two sizes inside the first chunk leaves
#: out the model's forward passes, and one between a part-chunk and a few chunks adds them
#: too often. 1 and 4 chunks: 31 and 127 steps.
TRAIN = Scale("tokens", "--tokens", 127 * 4096, small=31 * 4096)
#: Transcoders on every layer train one transcoder per layer at each step, so a chunk's
#: worth of steps costs far more than its forward passes: two sizes inside the first chunk
#: (2 and 7 steps; the pages' `--windows-per-chunk 256` makes a chunk 7.9 steps) keep the
#: measurement short; the slope is the training's, and the forward passes of the later
#: chunks are not in it (a low figure, by that much).
TRAIN_ALL_LAYERS = Scale("tokens", "--tokens", 7 * 4096, small=2 * 4096,
                         caveat="the training's steps only: the forward passes over the "
                                "later text chunks add to it")

_PROMPTS = '{"text": "The capital of France is"}\n{"text": "The capital of Italy is"}\n'
_TEXT = "\n\n".join(f"Paragraph {i}: the train left the station at dawn and the "
                    f"conductor checked every ticket twice before noon." for i in range(400))
CORPUS = "the offline corpus (`interp corpus build`)"
SAE = "a trained SAE (`interp sae train`)"

SPECS: dict[str, Spec] = {
    'interp lens "The capital of France is" --tuned default --out lens-out/':
        Spec(needs="a trained tuned lens (`interp tuned-lens train`)",
             # the tuned-lens trainings measured before leave this one (8,192 tokens) in
             # the default folder: rerunning it resumes (done), any other size is refused
             before=("interp tuned-lens train --tokens 8192",)),
    "interp capture --file prompts.jsonl --layers 6,12 --positions last --out acts/":
        Spec(files={"prompts.jsonl": _PROMPTS}),
    "interp generate --file prompts.jsonl --chat --temperature 0.7 --top-p 0.9 --seed 3 "
    "--out gen/": Spec(files={"prompts.jsonl": _PROMPTS}),
    "interp sae train --layer 6 --arch topk --k 32 --out runs/topk && interp sae browse "
    "runs/topk --out b/": Spec(needs=CORPUS, scale=TRAIN),
    "interp sae train --layer 6 --arch topk --k 32 --out runs/topk":
        Spec(needs=CORPUS, scale=TRAIN),
    "interp sae train --layer 6 --d-sae 4608 --l1 4 --tokens 3000000 --out runs/l6":
        Spec(needs=CORPUS, scale=TRAIN),
    "interp sae train --layer 6 --arch jumprelu --threshold-init 1 --out runs/jumprelu":
        Spec(needs=CORPUS, scale=TRAIN),
    "interp sae train --layers 2,6,12 --arch topk --k 32 --out runs/three":
        Spec(needs=CORPUS, scale=TRAIN),
    "interp sae train --layer 6 --tokens 200000 --out runs/mfu":
        Spec(needs=CORPUS, scale=TRAIN),
    "interp sae explain runs/topk --features alive:20 --out ex/":
        Spec(needs=SAE, scale=Scale("features", "--features", 8, form="alive:{n}")),
    "interp sae explain runs/topk --features alive:50 --out explain-out/":
        Spec(needs=SAE, scale=Scale("features", "--features", 8, form="alive:{n}"),
             like="interp sae explain runs/topk --features alive:20 --out ex/"),
    "interp sae explain runs/tc/layer-6 --out explain-tc/":
        Spec(needs="trained transcoders (`interp transcoder train`)",
             scale=Scale("features", "--features", 8, form="alive:{n}"),
             like="interp sae explain runs/topk --features alive:20 --out ex/"),
    "interp sae explain runs/topk --features 12,99,4000 --explainer self --scorer "
    "programmatic,self,gemma3-270m --out explain-out/":
        Spec(needs=SAE, scale=Scale("features", "--features", 2, form="list")),
    "interp transcoder train --layers all --windows-per-chunk 256 --out runs/tc && interp "
    "graph \"The capital of France is\" --transcoders runs/tc --target \" Paris, London\" "
    "--out g/":
        Spec(needs=CORPUS, scale=TRAIN_ALL_LAYERS),
    "interp transcoder train --layers all --d-sae 4608 --k 32 --tokens 1000000 "
    "--windows-per-chunk 256 --out runs/tc": Spec(needs=CORPUS, scale=TRAIN_ALL_LAYERS),
    "interp eval sycophancy --out syc-out":
        Spec(scale=Scale("questions", "--limit", 24,
                         full=lambda: _lines("datasets/sycophancy/questions.jsonl"))),
    "interp tuned-lens train": Spec(needs=CORPUS, scale=Scale("tokens", "--tokens", 8_192)),
    "interp tuned-lens train --text my.txt --tokens 50000 --out runs/tl":
        Spec(files={"my.txt": _TEXT}, scale=Scale("tokens", "--tokens", 8_192)),
    "interp tuned-lens train && interp tuned-lens eval --out tl-eval/":
        Spec(needs=CORPUS, scale=Scale("tokens", "--tokens", 8_192)),
    "interp tuned-lens eval --out tl-eval/":
        Spec(needs="a trained tuned lens (`interp tuned-lens train`)"),
    "interp compare runs/ runs-C1/":
        Spec(needs="two `interp seeds` groups",
             before=("interp seeds 2 --out runs-C1/ -- probe --layer 6",)),
    "interp sae eval runs/l6": Spec(needs=SAE),
    "interp sae browse runs/l6 --out l6-browser/": Spec(needs=SAE),
    "interp sae export runs/l6 --out l6-saelens/": Spec(needs=SAE),
    "interp sae import l6-saelens/ --out l6-again/": Spec(needs="an SAE in SAELens's layout"),
    "interp sae probe runs/l6 --dataset datasets/probes/sentiment.jsonl --out l6-probe/":
        Spec(needs=SAE),
    "interp steer train --sae runs/l6 --feature 123 --out vec-123/": Spec(needs=SAE),
    "interp steer generate \"I spent the afternoon at the library, and\" --vector vec/ "
    "--alpha 4": Spec(needs="a steering vector (`interp steer train`)"),
    "interp compare runs/seed-0 runs/seed-1": Spec(needs="an `interp seeds` group"),
    "interp transcoder eval runs/tc": Spec(needs="trained transcoders (`interp transcoder "
                                                 "train`)"),
    "interp graph \"The capital of France is\" --transcoders runs/tc --target \" Paris, "
    "London\" --out graph-out/": Spec(needs="trained transcoders (`interp transcoder train`)"),
    "interp corpus build": Spec(needs="Debian's `apt-get` (downloads ten packages)"),
    "interp patch --task ioi --family heads --method both --out ioi/":
        Spec(scale=Scale("pairs", "--limit", 24,
                         full=lambda: _lines("datasets/circuits/ioi.jsonl"))),
    "interp causal das --task pronoun --layers 4,12 --position name --out das/":
        Spec(scale=Scale("steps", "--steps", 20)),
    "interp causal das --task pronoun --layers 4,12,20 --position name --out das-out/":
        Spec(scale=Scale("steps", "--steps", 20)),
    "interp causal edges --task ioi --limit 40 --out edges/":
        Spec(scale=Scale("pairs", "--limit", 12)),
    "interp causal edges --task ioi --limit 40 --out edges-out/":
        Spec(scale=Scale("pairs", "--limit", 12),
             like="interp causal edges --task ioi --limit 40 --out edges/"),
    "interp eval constitutional --limit 24 --max-new-tokens 48 --out runs/cai":
        Spec(scale=Scale("questions", "--limit", 12)),
    "interp graph --task capitals --limit 20 --transcoders runs/tc --out capitals-check/":
        Spec(needs="trained transcoders (`interp transcoder train`)",
             scale=Scale("pairs", "--limit", 8)),
}


#: Figures the pages quote in prose (``{cost}`KEY```), each a command run with an empty
#: cache (so the embedded model is converted from its GGUF package, as on a first use).
FIRST_USE: dict[str, str] = {
    "first load of smollm2-135m": "python -c 'import interp; interp.load()'",
    "first load of gemma3-270m": "python -c 'import interp; interp.load(\"gemma3-270m\")'",
}

#: Documented commands whose work is filling the cache (a second run reads what the first
#: wrote): each is measured with an empty cache, as a user's first run meets it.
FILLS_CACHE = ("interp corpus build", "interp peak")


# ----------------------------------------------------------------------------- CLI facts
def _verb(command: str) -> Any:
    """The click command that ``command`` runs (``interp sae train ...`` → ``train``)."""
    import click

    from interp.cli import cli

    verb: Any = cli
    for word in shlex.split(command)[1:]:
        if not isinstance(verb, click.Group):
            break
        sub = verb.get_command(click.Context(verb), word)
        if sub is None:
            break
        verb = sub
    return verb


def cli_default(command: str, flag: str) -> Any:
    """The default of ``flag`` on the verb ``command`` runs, read from the CLI itself."""
    for param in _verb(command).params:
        if flag in getattr(param, "opts", []):
            return param.default
    return None


def with_flag(command: str, flag: str, value: str) -> str:
    """``command`` with ``flag`` set to ``value`` in its first verb (before any ``&&``)."""
    first, sep, rest = command.partition(" && ")
    pattern = rf"{re.escape(flag)}[ =]\S+"
    first = (re.sub(pattern, f"{flag} {value}", first) if re.search(pattern, first)
             else f"{first} {flag} {value}")
    return first + sep + rest


def full_size(command: str, scale: Scale) -> int:
    """The size the command runs at as written: its own value, else the CLI's default."""
    first = command.partition(" && ")[0]
    match = re.search(rf"{re.escape(scale.flag)}[ =](\S+)", first)
    if match and scale.form == "list":
        return len(match.group(1).split(","))
    if match:
        return int(re.sub(r"\D", "", match.group(1)))
    if scale.full is not None:
        return scale.full()
    default = cli_default(first, scale.flag)
    digits = re.sub(r"\D", "", str(default)) if default is not None else ""
    if not digits:
        raise SystemExit(f"measure_costs: no full size for {scale.flag} in {command!r}")
    return int(digits)


# ----------------------------------------------------------------------------- running
def _du_mib(path: Path) -> float:
    """Bytes under ``path`` (links not followed: the linked models are not written)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                p = Path(root, name)
                if not p.is_symlink():
                    total += p.stat().st_size
    return total / 2**20


def run_timed(command: str, cwd: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``command`` under bash: seconds, peak RSS (MiB) of it and its children, exit."""
    with log.open("ab") as out:
        out.write(f"\n$ {command}\n".encode())
        out.flush()
        start = time.perf_counter()
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "rc": proc.returncode}


def machine() -> dict[str, Any]:
    """The CPU, its vector extensions and the memory, for the cost lines' caption."""
    cpu, flags = platform.processor() or platform.machine(), ""
    try:
        info = Path("/proc/cpuinfo").read_text()
        cpu = re.search(r"model name\s*:\s*(.+)", info).group(1).strip()  # type: ignore[union-attr]
        flags = re.search(r"flags\s*:\s*(.+)", info).group(1)  # type: ignore[union-attr]
    except (OSError, AttributeError):
        pass
    have = set(flags.split())
    isa = ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in have)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "isa": isa or "no AVX2", "cores": os.cpu_count(),
            "ram_gib": round(mem, 1), "torch_threads": env_threads()}


def env_threads() -> str:
    return os.environ.get("OMP_NUM_THREADS", "all cores")


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _value(command: str, scale: Scale, n: int) -> str:
    """The flag's value at size ``n`` (a list flag keeps the command's first ``n`` items)."""
    if scale.form != "list":
        return scale.form.format(n=n)
    match = re.search(rf"{re.escape(scale.flag)}[ =](\S+)", command)
    assert match is not None, command
    return ",".join(match.group(1).split(",")[:n])


def _stamp(load: tuple[float, float, float], commit: str | None = None) -> dict[str, Any]:
    """When and under what a figure was measured: the load when the run started and when
    it ended (a long run's 1-minute load at its end says whether something else ran beside
    it), the date and the commit measured (``commit``: a clone's, taken when it was made;
    this checkout's HEAD may have moved on while a long run ran)."""
    return {"load_average": [round(x, 2) for x in load],
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "date": datetime.date.today().isoformat(), "commit": commit or _commit()}


def _start_over(command: str, work: Path, cache: Path) -> None:
    """Remove what a trainer would resume from, so each measured size trains from zero:
    the first verb's ``--out`` folder, else the scratch cache's default lens folder."""
    first = shlex.split(command.partition(" && ")[0])
    if "--out" in first:
        shutil.rmtree(work / first[first.index("--out") + 1], ignore_errors=True)
    else:
        shutil.rmtree(cache / "lenses", ignore_errors=True)


def scratch_cache(work: Path) -> Path:
    """A cache for the measured commands: the models and corpus of the user's cache,
    linked (never written through: a trainer's default folder lands in this one)."""
    real = Path(os.environ.get("INTERP_CACHE", Path.home() / ".cache" / "interp"))
    cache = work / "cache"
    cache.mkdir()
    for name in ("models", "corpus", "peak.json"):
        if (real / name).exists():
            (cache / name).symlink_to(real / name)
    return cache


def derived(key: str, spec: Spec, measured: dict[str, Any]) -> dict:
    """A command whose cost is another's line through its two runs, at its own full size
    (the same verb and settings, another size: measuring it again would say the same)."""
    assert spec.scale is not None
    base = measured.get(spec.like)
    if base is None or "scale" not in base:
        raise RuntimeError(f"{key!r} is derived from {spec.like!r}, which is not measured")
    s = base["scale"]
    slope = 1 / s["rate"]
    full = full_size(key, spec.scale)
    return {**base, "needs": spec.needs,
            "seconds": s["measured_seconds"] + (full - s["measured"]) * slope,
            "scale": {**s, "full": full, "from": spec.like}}


def measure(key: str, work: Path, env: dict[str, str], cache: Path, log: Path,
            data_commands: dict[str, Any]) -> dict:
    """One documented command's entry (raises on a failed run: a figure must be real)."""
    spec = SPECS.get(key, Spec())
    for name, text in spec.files.items():
        (work / name).write_text(text, encoding="utf-8")
    for before in spec.before:
        done = run_timed(before, work, env, log)
        if done["rc"] != 0:
            raise RuntimeError(f"{before!r} (needed by {key!r}) exited {done['rc']}; see {log}")
    if spec.like:
        return derived(key, spec, data_commands)
    disk0 = _du_mib(work)  # the scratch cache is inside it
    load = os.getloadavg()
    entry: dict[str, Any] = {"needs": spec.needs}
    sc = spec.scale
    full = full_size(key, sc) if sc is not None else 0
    if sc is None or full <= sc.short:
        # short enough to measure as written (scaling down would only add error)
        if sc is not None:
            _start_over(key, work, cache)  # a trainer would resume an earlier run
        done = run_timed(key, work, env, log)
        if done["rc"] != 0:
            raise RuntimeError(f"{key!r} exited {done['rc']}; see {log}")
        entry.update(seconds=done["seconds"], peak_rss_mib=done["peak_rss_mib"])
    else:
        sizes = [sc.small or max(1, sc.short // 4), sc.short]
        times, peak = [], 0.0
        for n in sizes:
            cmd = with_flag(key, sc.flag, _value(key, sc, n))
            _start_over(cmd, work, cache)
            done = run_timed(cmd, work, env, log)
            if done["rc"] != 0:
                raise RuntimeError(f"{cmd!r} exited {done['rc']}; see {log}")
            times.append(done["seconds"])
            peak = max(peak, done["peak_rss_mib"])
        slope = (times[1] - times[0]) / (sizes[1] - sizes[0])
        if slope <= 0:  # inside the noise: the conservative whole-run rate
            slope = times[1] / sizes[1]
        seconds = times[1] + (full - sizes[1]) * slope
        entry.update(seconds=seconds, peak_rss_mib=peak,
                     scale={"by": sc.by, "flag": sc.flag, "measured": sizes[1],
                            "measured_seconds": times[1], "also_measured": sizes[0],
                            "also_measured_seconds": times[0], "rate": 1 / slope,
                            "full": full, **({"caveat": sc.caveat} if sc.caveat else {})})
    entry["disk_mib"] = max(0.0, _du_mib(work) - disk0)
    return {**entry, **_stamp(load)}


def measure_empty_cache(key: str, command: str, needs: str, work: Path,
                        env: dict[str, str], log: Path) -> dict:
    """``command`` with an empty cache: a first use (a model's conversion from its GGUF
    package, the corpus's build, the peak's matmuls) is what is timed."""
    empty = work / "empty-cache"
    shutil.rmtree(empty, ignore_errors=True)
    empty.mkdir()
    load = os.getloadavg()
    done = run_timed(command, work, {**env, "INTERP_CACHE": str(empty)}, log)
    if done["rc"] != 0:
        raise RuntimeError(f"{command!r} (for {key!r}) exited {done['rc']}; see {log}")
    entry = {"seconds": done["seconds"], "peak_rss_mib": done["peak_rss_mib"],
             "disk_mib": _du_mib(empty), "needs": needs, **_stamp(load)}
    shutil.rmtree(empty, ignore_errors=True)
    return entry


def measure_commands(args: argparse.Namespace) -> int:
    data = doc_costs.load_costs()
    data.setdefault("commands", {})
    keys = [k for k in doc_costs.documented_commands() if k.startswith("interp")]
    keys += list(FIRST_USE)
    if args.only:
        keys = [k for k in keys if any(k.startswith(o) for o in args.only)]
    if args.skip:
        keys = [k for k in keys if not any(k.startswith(s) for s in args.skip)]
    if args.missing:
        keys = [k for k in keys if k not in data["commands"]]
    if args.work is not None:  # an earlier run's folder (--keep): what it wrote is reused
        work = args.work.resolve()
        cache = work / "cache"
    else:
        work = Path(tempfile.mkdtemp(prefix="interp-costs-"))
        cache = scratch_cache(work)
        # the pages' commands run from the repository's root: `datasets/...` is there
        (work / "datasets").symlink_to(ROOT / "datasets")
    log = work / "measure.log"
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", INTERP_NO_PROGRESS="1",
               INTERP_CACHE=str(cache))
    print(f"measure_costs: {len(keys)} commands in {work} (log: {log})", file=sys.stderr)
    data["machine"] = machine()
    failed = 0
    for i, key in enumerate(keys, 1):
        try:
            if key in FIRST_USE:
                entry = measure_empty_cache(key, FIRST_USE[key], "the model's GGUF package "
                                            "(setup installs it)", work, env, log)
            elif key in FILLS_CACHE:
                entry = measure_empty_cache(key, key, SPECS.get(key, Spec()).needs, work,
                                            env, log)
            else:
                entry = measure(key, work, env, cache, log, data["commands"])
        except RuntimeError as exc:
            failed += 1
            print(f"measure_costs: [{i}/{len(keys)}] FAILED {exc}", file=sys.stderr)
            continue
        data["commands"][key] = entry
        print(f"measure_costs: [{i}/{len(keys)}] {key[:70]}: {doc_costs.cost_text(entry)} "
              f"(load {entry['load_average'][0]})", file=sys.stderr)
        write(data)  # after each, so an interrupted run keeps what it measured
    if not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def write(data: dict[str, Any]) -> None:
    """Atomic write of docs/costs.json, keys sorted so diffs stay small."""
    data["commands"] = dict(sorted(data["commands"].items()))
    tmp = doc_costs.COSTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(doc_costs.COSTS)


# ----------------------------------------------------------------------------- make
_PHASES = {  # make's echo of a recipe line → the phase it starts
    "scripts/setup.sh": "setup", "ruff check": "lint", "scripts/execute_docs.py": "docs",
    "-m pytest -q --durations": "fast tier", "-m pytest -m slow": "slow tier",
}


def measure_make(args: argparse.Namespace) -> int:
    """``make demo`` then ``make test`` in a clean clone with a fresh cache."""
    data = doc_costs.load_costs()
    base = Path(tempfile.mkdtemp(prefix="interp-make-"))
    clone, cache = base / "clone", base / "cache"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True,
                            capture_output=True, text=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV",))}
    env.update(INTERP_CACHE=str(cache), CI="1")
    for target in ("demo", "test"):
        load = os.getloadavg()
        start = time.perf_counter()
        phases: list[tuple[str, float]] = []
        log = base / f"make-{target}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(["make", target], cwd=clone, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                for marker, phase in _PHASES.items():
                    if marker in line and (not phases or phases[-1][0] != phase):
                        phases.append((phase, time.perf_counter() - start))
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            print(f"measure_costs: make {target} failed; see {log}", file=sys.stderr)
            return 1
        ends = [t for _, t in phases[1:]] + [seconds]
        data["commands"][f"make {target}"] = {
            "seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024,
            "disk_mib": _du_mib(clone) + _du_mib(cache),
            "needs": "Python 3.11" + (", Debian's `apt-get` as root (corpus, Chromium)"
                                      if target == "test" else ""),
            "phases": {p: round(e - t, 1) for (p, t), e in zip(phases, ends, strict=True)},
            **_stamp(load, commit),
            "from": "a clean clone, fresh venv and cache"
                    + (" after `make demo`" if target == "test" else "")}
        print(f"measure_costs: make {target}: {seconds / 60:.1f} min, phases "
              f"{data['commands'][f'make {target}']['phases']}", file=sys.stderr)
        if target == "test":  # the single targets, as phases of the run from nothing
            whole = data["commands"]["make test"]
            for single, phase in (("make docs", "docs"), ("make test-fast", "fast tier"),
                                  ("make test-slow", "slow tier")):
                if phase in whole["phases"]:
                    data["commands"][single] = {
                        **{k: whole[k] for k in ("peak_rss_mib", "load_average", "date",
                                                 "commit")},
                        "seconds": whole["phases"][phase], "disk_mib": 0.0,
                        # the phase's own peak is not measured: the whole run's bounds it
                        "peak_of": "make test",
                        "needs": "`make setup` (`make test` does it)",
                        "from": f"the {phase} phase of a clean clone's `make test`"}
        write(data)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def rewrite_readme() -> int:
    """Replace the README's generated cost section with the current rendering."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(doc_costs.README_START), text.find(doc_costs.README_END)
    if start < 0 or end < 0:
        raise SystemExit("measure_costs: the README has no cost section markers")
    section = doc_costs.readme_section(doc_costs.load_costs())
    readme.write_text(text[:start] + section + text[end + len(doc_costs.README_END):],
                      encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--missing", action="store_true", help="Only commands without a figure.")
    parser.add_argument("--only", action="append", default=[], metavar="PREFIX",
                        help="Only commands whose key starts with PREFIX (repeatable).")
    parser.add_argument("--skip", action="append", default=[], metavar="PREFIX",
                        help="Leave out commands whose key starts with PREFIX.")
    parser.add_argument("--make", action="store_true", help="make demo / make test, clean clone.")
    parser.add_argument("--readme", action="store_true", help="Rewrite the README's table.")
    parser.add_argument("--keep", action="store_true", help="Keep the scratch folder.")
    parser.add_argument("--work", type=Path, default=None,
                        help="Run in this kept scratch folder (with --missing: what the "
                             "measured commands wrote there is what the others read).")
    args = parser.parse_args(argv)
    if args.readme:
        return rewrite_readme()
    status = measure_make(args) if args.make else measure_commands(args)
    if status == 0 and doc_costs.README_START in (ROOT / "README.md").read_text("utf-8"):
        rewrite_readme()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
