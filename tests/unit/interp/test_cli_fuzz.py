"""Every option of every verb, fuzzed: hostile values drawn by the option's click type.

The verbs and their options are read off the click app itself (:data:`interp.cli.cli`), so a
verb is fuzzed the day it lands. For each (verb, option) the test starts from a valid, cheap
invocation of the verb on the tiny random model (:data:`BASES`), replaces that one option (or
argument) by a hostile value drawn with hypothesis from its type (numbers at their extremes,
NaN and infinity, empty and over-long strings, text that is not valid UTF-8, paths that are
missing, empty, binary, a folder where a file is expected, wrong choices, malformed layer
lists), runs the verb in-process through the console entry point and asserts the contract:

* exit 0, or exit 2 with exactly one line on stderr (``error: …``) and no traceback;
* after a failure, every file of the case (``--out``, the inputs, run folders) is
  byte-identical to before;
* nothing is written outside ``--out`` (the current folder, a fresh temporary one, stays
  empty; the shared inputs stay byte-identical).

Seeded (``derandomize``) and bounded: ``INTERP_FUZZ_EXAMPLES`` examples per (verb, option)
(default 6 in the fast tier, about 20 s here; ``make accept`` sets its own). The fast tier
stops each case where its model would load (every up-front check is fuzzed; the verbs without
a model run to their end); ``INTERP_FUZZ_DEEP=1`` runs every case to its end. The hand-picked
semantic cases are each tool's ``BAD_INPUTS`` (run by ``test_bad_inputs.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.cli_runner import leaf_commands, run

EXAMPLES = int(os.environ.get("INTERP_FUZZ_EXAMPLES", "6"))
#: ``INTERP_FUZZ_DEEP=1`` (``make accept``) runs every case to its end (up to
#: :data:`CASE_SECONDS`); the fast tier stops a case where its model would load: every check
#: made before that point is fuzzed, and the verbs without a model run to their end.
DEEP = os.environ.get("INTERP_FUZZ_DEEP", "") not in ("", "0")
#: A case still running after this many seconds took its value and is stopped there.
CASE_SECONDS = float(os.environ.get("INTERP_FUZZ_CASE_SECONDS", "60"))
OVERRUNS: list[str] = []
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large],
                    phases=[Phase.explicit, Phase.generate, Phase.shrink])
#: Exit codes a verb may end with besides 0 and 2 (``models --verify``: a model that fails
#: its checks exits 1 after printing its table, by design).
OTHER_EXITS = {"models": {1}}
#: Trainers whose run folder keeps its last good checkpoint when a run stops midway.
RESUMABLE = ("sae train", "tuned-lens train", "transcoder train", "transcoder train-clt")
#: Options naming where a verb writes (a relative one lands in the current folder).
OUTPUT_OPTIONS = ("--out", "--profile", "--cache-activations")
REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ the verbs
def fuzzed_params(cmd: click.Command) -> list[click.Parameter]:
    return [p for p in cmd.params if p.name not in ("help",) and not (
        isinstance(p, click.Option) and p.hidden)]


def param_key(p: click.Parameter) -> str:
    return p.opts[0] if isinstance(p, click.Option) else f"<{p.name}>"


# ------------------------------------------------------------------ valid inputs
@dataclass
class Inputs:
    """Valid inputs built once for the module, on the tiny model."""

    root: Path
    tiny: str
    text: str  # paragraphs for the trainers and evaluations
    prompts: str  # one prompt per line
    pairs: str  # contrast pairs
    probe: str  # labelled probe set
    task: str  # clean/corrupted pairs for patch
    syc: str  # sycophancy questions
    sae: str  # an SAE folder for the tiny model
    saelens: str  # the same SAE in SAELens's layout
    lens: str  # a tuned-lens training run
    vector: str  # a steering vector
    result_a: str  # two result folders for compare
    result_b: str
    transcoders: str = ""  # transcoders for layers 0 and 1, as `transcoder train` lays out


@dataclass
class Case:
    """One run: its scratch folder, and where a valid ``--out`` goes."""

    dir: Path

    @property
    def out(self) -> str:
        return str(self.dir / "out")


#: A valid, cheap invocation of each verb: ``(positional arguments, options)`` where an
#: option maps to its value (``True``: a flag given; a list: the option repeated). Options
#: a verb needs to be cheap (``--tokens``, ``--max-new-tokens``) are here; the fuzzed
#: option replaces its entry.
Base = tuple[list[str], dict[str, object]]


def _m(i: Inputs) -> dict[str, object]:
    return {"--model": i.tiny}


BASES: dict[str, Callable[[Inputs, Case], Base]] = {
    "lens": lambda i, c: (["The capital"], {**_m(i), "--out": c.out}),
    "capture": lambda i, c: (["hi there"], {**_m(i), "--layer": "1", "--out": c.out}),
    "probe": lambda i, c: ([], {**_m(i), "--layer": "1", "--dataset": i.probe, "--seeds": "1",
                                "--out": c.out}),
    "generate": lambda i, c: (["Once upon"], {**_m(i), "--max-new-tokens": "2",
                                              "--out": c.out}),
    "steer train": lambda i, c: ([], {**_m(i), "--pairs": i.pairs, "--layer": "1",
                                      "--out": c.out}),
    "steer generate": lambda i, c: (["Once upon"], {**_m(i), "--vector": i.vector,
                                                    "--max-new-tokens": "2"}),
    "steer sweep": lambda i, c: ([], {**_m(i), "--pairs": i.pairs, "--layers": "1",
                                      "--alphas": "0,2", "--prompts": i.prompts,
                                      "--n-prompts": "2", "--max-new-tokens": "2",
                                      "--seeds": "0", "--out": c.out}),
    "models": lambda i, c: ([], {}),
    "corpus build": lambda i, c: ([], {"--out": c.out}),
    "corpus info": lambda i, c: ([], {"--path": c.out}),
    "tuned-lens train": lambda i, c: ([], {**_m(i), "--text": i.text, "--tokens": "64",
                                           "--seq-len": "16", "--batch-size": "2",
                                           "--positions-per-window": "4",
                                           "--init-tokens": "32", "--out": c.out}),
    "tuned-lens eval": lambda i, c: ([], {**_m(i), "--lens": i.lens, "--text": i.text,
                                          "--tokens": "32", "--seq-len": "16",
                                          "--out": c.out}),
    "sae train": lambda i, c: ([], {**_m(i), "--layer": "1", "--text": i.text,
                                    "--d-sae": "16", "--tokens": "256", "--batch-size": "128",
                                    "--seq-len": "16", "--out": c.out}),
    "sae eval": lambda i, c: ([i.sae], {**_m(i), "--text": i.text, "--tokens": "32",
                                        "--ce-tokens": "32", "--seq-len": "16",
                                        "--out": c.out}),
    "sae browse": lambda i, c: ([i.sae], {**_m(i), "--text": i.text, "--tokens": "32",
                                          "--seq-len": "16", "--out": c.out}),
    # a copy of the SAE: explain writes explanations.jsonl beside the SAE it reads
    "sae explain": lambda i, c: ([_sae_copy(i, c)], {
        **_m(i), "--text": i.text, "--tokens": "120", "--seq-len": "24", "--ctx-len": "2",
        "--n-explain": "2", "--n-score": "2", "--n-hard": "1", "--features": "alive:3",
        "--scorer": "programmatic", "--random-features": "0", "--planted": "0",
        "--bootstrap": "100", "--out": c.out}),
    "sae export": lambda i, c: ([i.sae], {"--out": c.out}),
    "sae import": lambda i, c: ([i.saelens], {"--out": c.out}),
    "sae probe": lambda i, c: ([i.sae], {**_m(i), "--dataset": i.probe, "--ks": "1,2",
                                         "--seeds": "1", "--random-draws": "1",
                                         "--out": c.out}),
    "eval constitutional": lambda i, c: ([], {**_m(i), "--limit": "1", "--rounds": "1",
                                              "--max-new-tokens": "2", "--examples": "1",
                                              "--out": c.out}),
    "eval sycophancy": lambda i, c: ([], {**_m(i), "--dataset": i.syc, "--limit": "2",
                                          "--no-probe": True, "--out": c.out}),
    "patch": lambda i, c: ([], {**_m(i), "--task": i.task, "--family": "resid",
                                "--method": "exact", "--no-dla": True, "--bootstrap": "10",
                                "--out": c.out}),
    "attention": lambda i, c: (["hello there"], {**_m(i), "--layer": "1", "--out": c.out}),
    "causal das": lambda i, c: ([], {**_m(i), "--task": i.task, "--layers": "1",
                                     "--steps": "1", "--no-control": True, "--out": c.out}),
    "causal edges": lambda i, c: ([], {**_m(i), "--task": i.task, "--sample": "20",
                                       "--top": "5", "--ig-steps": "1", "--max-edges": "30",
                                       "--circuit-edges": "10", "--bootstrap": "100",
                                       "--out": c.out}),
    "transcoder train": lambda i, c: ([], {**_m(i), "--layers": "0,1", "--text": i.text,
                                           "--d-sae": "16", "--k": "4", "--tokens": "256",
                                           "--batch-size": "128", "--seq-len": "16",
                                           "--out": c.out}),
    "transcoder train-clt": lambda i, c: ([], {**_m(i), "--layers": "0,1", "--text": i.text,
                                               "--d-sae": "16", "--k": "4", "--tokens": "256",
                                               "--batch-size": "128", "--seq-len": "16",
                                               "--out": c.out}),
    "transcoder eval": lambda i, c: ([i.transcoders], {**_m(i), "--text": i.text,
                                                      "--tokens": "32", "--seq-len": "16",
                                                      "--out": c.out}),
    "graph": lambda i, c: (["The capital of France is"], {
        **_m(i), "--transcoders": i.transcoders, "--check-features": "2",
        "--random-subgraphs": "2", "--no-contexts": True, "--out": c.out}),
    "seeds": lambda i, c: (["2"], {"--out": c.out}),
    "compare": lambda i, c: ([i.result_a, i.result_b], {"--out": c.out}),
    "peak": lambda i, c: ([], {"--dtype": ["float32"]}),
}
#: What ``seeds`` runs under each seed (after ``--``).
SEEDS_VERB = ["lens", "hi", "--model"]


def _sae_copy(i: Inputs, c: Case) -> str:
    """The inputs' SAE copied into the case's folder (once per case)."""
    dst = c.dir / "sae-copy"
    if not dst.exists():
        shutil.copytree(i.sae, dst)
    return str(dst)


def _write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def inputs(tiny_model_dir, tiny_model, tmp_path_factory) -> Inputs:
    import torch

    from saes.sae import SAEConfig, SparseAutoencoder
    from saes.saelens import export_saelens

    root = tmp_path_factory.mktemp("fuzz-inputs")
    tiny = str(tiny_model_dir)
    text = _write(root / "text.txt", "\n\n".join(
        f"Paragraph {i} says that the capital of France is Paris." for i in range(200)))
    pairs = _write(root / "pairs.jsonl", "\n".join(json.dumps(
        {"positive": f"I love it {i}", "negative": f"I hate it {i}"}) for i in range(4)))
    probe = _write(root / "probe.jsonl", "\n".join(json.dumps(
        {"text": f"sentence number {i} here", "label": i % 2, "group": f"g{i % 5}"})
        for i in range(40)))
    task = _write(root / "task.jsonl", "\n".join(json.dumps(
        {"clean": "The capital of France is", "corrupted": "The capital of Italy is",
         "answer": " Paris", "wrong": " Rome"}) for _ in range(2)))
    syc = _write(root / "syc.jsonl", "\n".join(json.dumps(
        {"question": f"What is {i} + 1?", "correct": str(i + 1), "incorrect": str(i + 2),
         "domain": "arithmetic"}) for i in range(3)))
    prompts = _write(root / "prompts.txt", "Once upon a time\nThe capital of\n")
    sae = SparseAutoencoder(SAEConfig(d_in=64, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                      layer=1, model_id=str(Path(tiny).resolve())))
    sae.init_weights(torch.Generator().manual_seed(0))
    sae_dir = sae.save(root / "sae", manifest={})
    saelens = export_saelens(sae_dir, root / "saelens")
    ra, rb = root / "results" / "a", root / "results" / "b"
    for folder, x in ((ra, 1.0), (rb, 2.0)):
        _write(folder / "results.json", json.dumps({"x": x, "y": 2 * x, "z": 3.0}))
    i = Inputs(root, tiny, text, prompts, pairs, probe, task, syc, str(sae_dir), str(saelens),
               str(root / "lens"), str(root / "vector"), str(ra), str(rb),
               str(root / "transcoders"))
    from saes.transcoders.model import TranscoderConfig

    for layer in (0, 1):
        cfg = TranscoderConfig(d_in=64, d_sae=16, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               model_id=str(Path(tiny).resolve()), architecture="topk", k=4)
        tc = cfg.model_class()(cfg)
        tc.init_weights(torch.Generator().manual_seed(layer))
        tc.save(root / "transcoders" / f"layer-{layer}" / "transcoder", manifest={})
    _import_everything()
    from interp.lenses.tuned import Translators, TunedLens
    from interp.steering.vectors import load_pairs, train_vector

    TunedLens(tiny_model, Translators(tiny_model.n_layers - 1, tiny_model.d_model)).save(
        i.lens, config={}, manifest={})
    train_vector(tiny_model, load_pairs(pairs), 1).save(i.vector, {})
    return i


def _import_everything() -> None:
    """Every module of the packages (and pyplot) imported up front: a case stopped at its time
    limit must not leave a module half-imported for the next one."""
    import importlib

    import matplotlib.pyplot  # noqa: F401

    for pkg in ("interp", "saes", "evals", "reports"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(
                ".__init__")
            if name.endswith("__main__"):
                continue
            importlib.import_module(name)


# ------------------------------------------------------------------ hostile values
HUGE = [str(10**30), str(-(10**30)), str(2**63), str(2**63 - 1), str(-(2**63) - 1),
        "1180591620717411303423", str(2**31), str(2**53 + 1)]
BAD_UTF8 = ["\udcff", "caf\udce9", "a\udc80b"]  # argv bytes that are not UTF-8, as Python
# receives them (surrogateescape)
#: Over-long values, drawn as short tokens (hypothesis prints what it draws) and expanded
#: in the command line.
LONG, LONG_NAME = "@long", "@long-name"
EXPAND = {LONG: "x" * 10_000, LONG_NAME: "n" * 300}


INTS = ["0", "-1", "1", *HUGE, "nan", "1.5", "", " ", "1e3", "0x10", "\u0661"]
FLOATS = ["nan", "-nan", "inf", "-inf", "0", "-0", "-1", "1e308", "1e400", "-1e400", "5e-324",
          "", "x", "1,2", *HUGE]
TEXTS = ["", " ", "\t\n", LONG, "-", "--", "all", "1,,2", "-1", "1,x", "0-2", "all,1", "1e3",
         str(10**30), "nan", "\x1b[31mred", "\u202e", "\ufeff", *BAD_UTF8]
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


def _paths(case: Case) -> list[str]:
    d = case.dir / "hostile"
    return ["", ".", str(d / "missing.jsonl"), str(d / "missing" / "deeper"),
            str(d / "empty.jsonl"), str(d / "binary.jsonl"), str(d / "latin1.txt"),
            str(d / "folder"), str(d / "binary.jsonl" / "under-a-file"), f"{d}/{LONG_NAME}",
            LONG, str(d / "caf\udce9"), str(d / "bad.gguf"), str(d / "missing.gguf"),
            str(REPO), str(REPO.parent), os.environ.get("INTERP_CACHE", str(d / "cache"))]


def _hostile_files(case: Case) -> None:
    d = case.dir / "hostile"
    (d / "folder").mkdir(parents=True)
    (d / "folder" / "results.json").write_text("[1, 2]")
    (d / "empty.jsonl").write_bytes(b"")
    (d / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (d / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n\n{\"text\": \"\xff\"}\n".encode("latin-1"))
    (d / "bad.gguf").write_bytes(b"GGUF" + bytes(range(200)))


def _rotated(values: list[str], key: str) -> st.SearchStrategy[str]:
    """``sampled_from(values)`` starting at a place set by ``key``: hypothesis tries a
    strategy's first value first, so with one example per option each option still gets a
    different hostile value (and every value is some option's first)."""
    k = zlib.crc32(key.encode()) % len(values)
    return st.sampled_from(values[k:] + values[:k])


def values_for(p: click.Parameter, case: Case, key: str) -> st.SearchStrategy[object]:
    """Hostile values for parameter ``p``, by its click type: first a catalogue of known
    troublemakers, then values drawn at random of the same kind."""
    t = p.type
    if isinstance(p, click.Option) and p.is_flag:
        return st.booleans()
    if isinstance(t, click.Choice):
        choices = [str(c) for c in t.choices]
        one = st.one_of(_rotated(["", "NOPE", LONG, *BAD_UTF8, *[c.upper() for c in choices],
                                  *[f" {c}" for c in choices]], key), st.sampled_from(choices))
    elif isinstance(t, click.IntRange | click.types.IntParamType):
        one = st.one_of(_rotated(INTS, key), st.integers().map(str))
    elif isinstance(t, click.FloatRange | click.types.FloatParamType):
        one = st.one_of(_rotated(FLOATS, key), st.floats().map(repr))
    elif isinstance(t, click.Path) or p.name in _PATHLIKE:
        one = st.one_of(_rotated(_paths(case) + TEXTS, key), st.text(_CHARS, max_size=40))
    else:
        one = st.one_of(_rotated(TEXTS, key), st.text(_CHARS, max_size=40))
    if (isinstance(p, click.Option) and p.multiple) or p.nargs == -1:
        return st.lists(one, min_size=1, max_size=3)
    return one


#: String options that name files or folders (their type is STRING: a name or a path).
_PATHLIKE = {"model_name", "verify_name", "task", "tuned", "sae_dir", "saelens_dir"}


# ------------------------------------------------------------------ one run
def _expand(value: str) -> str:
    for token, text in EXPAND.items():
        value = value.replace(token, text)
    return value


def build_argv(verb: str, cmd: click.Command, base: Base, p: click.Parameter,
               value: object, inputs: Inputs) -> list[str]:
    argv = _argv(verb, cmd, base, p, value, inputs)
    return [_expand(a) for a in argv]


def _argv(verb: str, cmd: click.Command, base: Base, p: click.Parameter,
          value: object, inputs: Inputs) -> list[str]:
    args, opts = list(base[0]), dict(base[1])
    tail = ["--", *SEEDS_VERB, inputs.tiny] if verb == "seeds" else []
    if p.name == "verb_args":
        tail = ["--", *(str(v) for v in value)] if isinstance(value, list) else tail
    elif isinstance(p, click.Argument):
        positional = [q for q in cmd.params if isinstance(q, click.Argument)
                      and q.name != "verb_args"]
        idx = positional.index(p)
        if isinstance(value, list):
            args = [str(v) for v in value]
        else:
            args = (args + [""] * len(positional))[: len(positional)]
            args[idx] = str(value)
    else:
        for name in p.opts + p.secondary_opts:
            opts.pop(name, None)
        opts[p.opts[0]] = value
    argv = [*verb.split(), *args]
    for name, v in opts.items():
        if v is True:
            argv.append(name)
        elif v is False or v is None:
            continue
        elif isinstance(v, list):
            for x in v:
                argv += [name, str(x)]
        else:
            argv += [name, str(v)]
    return argv + tail


def tree_digest(path: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file and folder under ``path`` (not following links) → a hash of its bytes."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for p in sorted(path.rglob("*")):
        if any(p == s or s in p.parents for s in skip):
            continue
        rel = str(p.relative_to(path))
        if p.is_symlink():
            out[rel] = "link"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


class Overrun(BaseException):
    """A case ran past :data:`CASE_SECONDS`: the verb took the value and is at work (an
    enormous ``--tokens`` is a long job, not an error); it is stopped there."""


def _overrun(_signum: int, _frame: object) -> None:
    raise Overrun


def run_limited(argv: list[str], capsys) -> tuple[int | None, str]:
    """``(exit code, stderr)``; the code is None when the run was stopped at the limit."""
    old = signal.signal(signal.SIGALRM, _overrun)
    # repeating: a library that catches BaseException and carries on is stopped again
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS, 0.5)
    code: int | None = None
    try:
        try:
            code, _, err = run(argv, capsys)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)  # disarmed first, before anything else
    except (Overrun, ModelLoad):
        return None, capsys.readouterr().err
    finally:
        signal.signal(signal.SIGALRM, old)
    return code, err


class ModelLoad(BaseException):
    """The fast tier's stop: the case got through every up-front check to the model load."""


def _stop_at_load(*_args: object, **_kwargs: object) -> None:
    raise ModelLoad


def check_case(verb: str, argv: list[str], case: Case, inputs_before: dict[str, str],
               inputs: Inputs, capsys) -> None:
    cwd = case.dir / "cwd"
    before = tree_digest(case.dir)
    code, err = run_limited(argv, capsys)
    shown = " ".join(repr(a) if len(a) < 80 else repr(a[:60] + "…") for a in argv)
    err = err if len(err) < 2000 else err[:2000] + "…"
    OVERRUNS.extend([shown] if code is None else [])
    lines = err.strip().splitlines()
    assert "Traceback" not in err, f"interp {shown}\n{err}"
    assert code in (None, 0, 2, *OTHER_EXITS.get(verb, ())), f"interp {shown}: exit {code}\n{err}"
    if code == 2:
        assert lines and lines[-1].startswith("error: "), f"interp {shown}\n{err}"
        if len(lines) > 1:
            # only in depth: the run had started (said so on stderr) and stopped at run time
            # (a loss gone NaN); a resumable trainer keeps its last good checkpoint, by design
            assert DEEP and not any(x.startswith("error") for x in lines[:-1]), \
                f"interp {shown}\n{err}"
            skip = (Path(argv[argv.index("--out") + 1]),) if verb in RESUMABLE else ()
            assert tree_digest(case.dir, skip) == {
                k: v for k, v in before.items()
                if not any(s == case.dir / k or s in (case.dir / k).parents for s in skip)}, \
                f"interp {shown}: a failure changed files"
        else:
            assert tree_digest(case.dir) == before, f"interp {shown}: a failure changed files"
    outputs = [(cwd / v).resolve() for k, v in zip(argv, argv[1:], strict=False)
               if k in OUTPUT_OPTIONS and v.strip()]
    stray = [p for p in cwd.iterdir() if not any(o == p or o in p.parents for o in outputs
                                                 if o != cwd)]
    assert not stray, f"interp {shown} wrote {stray} into the current folder"
    assert tree_digest(inputs.root) == inputs_before, f"interp {shown} changed its inputs"


# ------------------------------------------------------------------ the tests
VERBS = leaf_commands()
PAIRS = [(verb, param_key(p)) for verb, cmd in VERBS.items() for p in fuzzed_params(cmd)]


def test_every_verb_has_a_base():
    """A new verb needs its valid, cheap invocation in BASES to be fuzzed in depth."""
    missing = sorted(set(VERBS) - set(BASES))
    assert not missing, f"add a valid tiny-model invocation to BASES for: {missing}"
    assert len(PAIRS) >= 250


@pytest.mark.parametrize("verb,key", PAIRS, ids=[f"{v.replace(' ', '-')}{k}" for v, k in PAIRS])
def test_option_fuzz(verb, key, inputs, capsys, monkeypatch):
    cmd = VERBS[verb]
    param = next(p for p in fuzzed_params(cmd) if param_key(p) == key)
    inputs_before = tree_digest(inputs.root)
    if verb == "corpus build":  # no downloads in tests: building fails where apt-get is needed
        monkeypatch.setenv("PATH", str(inputs.root / "no-bin"))
    if not DEEP:
        from interp.models import loading

        monkeypatch.setattr(loading, "load", _stop_at_load)

    @SETTINGS
    @given(st.data())
    def one(data):
        case = Case(Path(tempfile.mkdtemp(prefix="fuzz-case-")))
        home = os.getcwd()
        try:
            (case.dir / "cwd").mkdir()
            _hostile_files(case)
            value = data.draw(values_for(param, case, f"{verb} {key}"), label=key)
            base = BASES.get(verb, lambda i, c: ([], {}))(inputs, case)
            argv = build_argv(verb, cmd, base, param, value, inputs)
            monkeypatch.chdir(case.dir / "cwd")
            check_case(verb, argv, case, inputs_before, inputs, capsys)
        finally:
            os.chdir(home)
            shutil.rmtree(case.dir, ignore_errors=True)

    one()
