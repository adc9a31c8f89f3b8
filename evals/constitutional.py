"""Constitutional AI (Bai et al. 2022): critique–revision and AI-feedback labels with bias controls.

Two stages, both through :func:`interp.generation.engine.generate` and the model's chat template:

* **Supervised stage.** For each prompt the model answers; then, for ``rounds`` rounds, it
  critiques its current answer against a principle sampled from the constitution, and
  rewrites it. Each round is one short conversation ``user: prompt / assistant: answer /
  user: critique request / assistant: critique / user: revision request / assistant:
  revision``, so the context stays bounded however many rounds run.
* **AI feedback.** The model judges pairs of answers against a (sampled) principle:
  initial vs final revision, and its own initial answer vs the dataset's reference answer
  where there is one. Each pair is shown in both orders; the preference is read from the
  next-token log-probabilities of the letters (see :mod:`evals.judge`), and the two orders
  are averaged. The degenerate-letter check (:func:`evals.letters.check_letters`) decides
  whether the labels are ``valid``.

Bias measurements, each a rate with a 95% CI and its n: position flip rate (the chosen
answer changes when the order is swapped), length preference (Pearson correlation of the
word-count difference with the preference, Fisher CI), self-preference (own answer over the
reference), and the win rate of revised over initial answers (overall and per principle).

The bookkeeping (pairs, order swapping, averaging, chosen/rejected, CIs) is pure functions,
tested on hand-made numbers; :func:`run_constitutional` strings them together.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from interp.errors import InterpError
from interp.stats.intervals import Z95, wilson

__all__ = [
    "Chain",
    "Constitution",
    "ConstitutionalRun",
    "Judgement",
    "Pair",
    "Principle",
    "PromptItem",
    "build_pairs",
    "combine_orders",
    "conversation",
    "critique_revise",
    "default_constitution_path",
    "default_prompts_path",
    "fisher_ci",
    "judge_pairs",
    "load_constitution",
    "load_prompts",
    "pearson",
    "results_dict",
    "run_constitutional",
    "sample_principle",
    "wilson_ci",
]

#: A principle's required text fields.
PRINCIPLE_FIELDS = ("critique_request", "revision_request")
#: Shown to the judge when a principle gives no ``comparison`` question.
DEFAULT_COMPARISON = "Which response better follows this principle: {revision_request}"
#: |p - 0.5| below this counts as a tie.
TIE_EPS = 1e-9


# ============================================================================ data
@dataclass(frozen=True)
class Principle:
    """One constitutional principle: how to critique, how to revise, how to compare."""

    name: str
    critique_request: str
    revision_request: str
    comparison: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Constitution:
    principles: tuple[Principle, ...]
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.principles:
            raise InterpError("constitution has no principles")

    def by_name(self, name: str) -> Principle:
        for p in self.principles:
            if p.name == name:
                return p
        raise InterpError(f"constitution has no principle {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source,
                "principles": [p.to_dict() for p in self.principles]}


@dataclass(frozen=True)
class PromptItem:
    """One prompt; ``reference`` is a good answer written by the dataset, when it has one."""

    id: str
    prompt: str
    reference: str | None = None
    category: str | None = None


def _datasets_file(relative: str) -> Path:
    from interp.runs.paths import shipped_dataset

    return shipped_dataset(relative)


def default_constitution_path() -> Path:
    """The shipped default constitution (``datasets/constitutional/constitution.json``)."""
    return _datasets_file("constitutional/constitution.json")


def default_prompts_path() -> Path:
    """The shipped prompts (``datasets/constitutional/prompts.jsonl``)."""
    return _datasets_file("constitutional/prompts.jsonl")


def _read_text(path: Path) -> str:
    from interp.data.readers import open_text

    text = open_text(path)
    if not text.strip():
        raise InterpError(f"{path}: empty file")
    return text


def _parse_structured(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{path}: line {exc.lineno} is not valid JSON ({exc.msg})") from None
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - PyYAML comes with datasets/transformers
            raise InterpError(f"cannot read {path}: PyYAML is not installed; use JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark is not None else "somewhere"
            problem = getattr(exc, "problem", None) or "syntax error"
            raise InterpError(f"{path}: {where} is not valid YAML ({problem})") from None
    raise InterpError(f"cannot read {path}: unknown constitution type {suffix or '(none)'}; "
                      "use .json, .yaml or .yml")


def _principle_lines(path: Path, text: str) -> list[int | None]:
    """Best-effort line number where each principle starts (for error messages)."""
    lines: list[int | None] = []
    suffix = path.suffix.lower()
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if suffix == ".json" and s.startswith("{") and n > 1:
            lines.append(n)
        elif suffix in (".yaml", ".yml") and s.startswith("- "):
            lines.append(n)
    return lines


def load_constitution(path: str | os.PathLike[str] | None = None) -> Constitution:
    """Read a constitution from JSON or YAML (``None``: the shipped default).

    The file holds a list of principles, or an object ``{"name": ..., "principles": [...]}``.
    Each principle is an object with ``critique_request`` and ``revision_request`` (strings),
    and optionally ``name`` and ``comparison`` (the question the judge answers). Problems
    raise :class:`InterpError` naming the file, the principle and, where known, the line.
    """
    p = Path(path).expanduser() if path is not None else default_constitution_path()
    if p.is_dir():
        raise InterpError(f"cannot read {p}: it is a folder, not a file")
    text = _read_text(p)
    data = _parse_structured(p, text)
    name = ""
    if isinstance(data, dict):
        if "principles" not in data:
            raise InterpError(f"{p}: no 'principles' list (keys: {', '.join(map(str, data))})")
        name = str(data.get("name") or "")
        data = data["principles"]
    if not isinstance(data, list):
        raise InterpError(f"{p}: expected a list of principles")
    if not data:
        raise InterpError(f"{p}: the constitution has no principles")
    starts = _principle_lines(p, text)
    principles: list[Principle] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        line = starts[i] if i < len(starts) and len(starts) == len(data) else None
        where = f"{p}: principle {i + 1}" + (f" (line {line})" if line else "")
        if not isinstance(raw, dict):
            raise InterpError(f"{where} is not an object")
        for key in PRINCIPLE_FIELDS:
            if key not in raw:
                raise InterpError(f"{where} has no {key!r}")
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise InterpError(f"{where} has an empty {key!r}")
        pname = str(raw.get("name") or f"principle_{i + 1}").strip()
        if pname in seen:
            raise InterpError(f"{where}: duplicate principle name {pname!r}")
        seen.add(pname)
        comparison = raw.get("comparison")
        if comparison is not None and (not isinstance(comparison, str) or not comparison.strip()):
            raise InterpError(f"{where} has an empty 'comparison'")
        principles.append(Principle(
            name=pname, critique_request=raw["critique_request"].strip(),
            revision_request=raw["revision_request"].strip(),
            comparison=(comparison or DEFAULT_COMPARISON.format(**raw)).strip(),
        ))
    return Constitution(tuple(principles), name=name, source=str(p))


def _record_lines(path: Path, n_records: int) -> list[int] | None:
    """Line number of each JSONL / CSV record (read_records skips blank JSONL lines)."""
    if path.suffix.lower() in (".csv", ".tsv"):
        return list(range(2, n_records + 2))  # after the header; no multi-line fields
    if path.suffix.lower() != ".jsonl":
        return None
    text = path.read_text(encoding="utf-8")
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return lines if len(lines) == n_records else None


def load_prompts(path: str | os.PathLike[str] | None = None) -> list[PromptItem]:
    """Read prompts from JSONL / JSON / CSV / TSV / TXT (``None``: the shipped set).

    Each record needs a non-empty ``prompt`` (``text`` is accepted too); ``id``,
    ``reference`` (a good answer, for the self-preference measurement) and ``category`` are
    optional. Errors name the file and line.
    """
    from interp.data.readers import read_records

    p = Path(path).expanduser() if path is not None else default_prompts_path()
    if p.is_file() and not p.read_text(encoding="utf-8", errors="replace").strip():
        raise InterpError(f"{p}: empty file")
    records = read_records(p)
    lines = _record_lines(p, len(records))
    items: list[PromptItem] = []
    ids: set[str] = set()
    for i, rec in enumerate(records):
        where = f"{p}: line {lines[i]}" if lines else f"{p}: record {i + 1}"
        key = "prompt" if "prompt" in rec else "text" if "text" in rec else None
        if key is None:
            cols = ", ".join(sorted(map(str, rec))) or "none"
            raise InterpError(f"{where} has no 'prompt' field (fields: {cols})")
        text = rec[key]
        if not isinstance(text, str) or not text.strip():
            raise InterpError(f"{where} has an empty {key!r}")
        ref = rec.get("reference")
        if ref is not None and not isinstance(ref, str):
            raise InterpError(f"{where}: 'reference' must be a string")
        ref = ref if ref and ref.strip() else None
        item_id = str(rec.get("id") if rec.get("id") not in (None, "") else i + 1)
        if item_id in ids:
            raise InterpError(f"{where}: duplicate id {item_id!r}")
        ids.add(item_id)
        cat = rec.get("category")
        items.append(PromptItem(id=item_id, prompt=text, reference=ref,
                                category=str(cat) if cat not in (None, "") else None))
    return items


# ===================================================================== sampling
def sample_principle(constitution: Constitution, seed: int, *key: object) -> Principle:
    """A principle drawn by a generator keyed by ``seed`` and ``key`` (stable across runs)."""
    rng = random.Random("\0".join(map(str, (seed, *key))))
    return rng.choice(constitution.principles)


# ====================================================================== chains
@dataclass
class Chain:
    """One prompt's supervised-stage record: the answer and each critique → revision round."""

    id: str
    prompt: str
    initial: str
    principles: list[str] = field(default_factory=list)
    critiques: list[str] = field(default_factory=list)
    revisions: list[str] = field(default_factory=list)
    reference: str | None = None
    category: str | None = None

    @property
    def final(self) -> str:
        return self.revisions[-1] if self.revisions else self.initial

    def sft_record(self) -> dict[str, Any]:
        """The ``sft.jsonl`` row, with a ``messages`` field for chat SFT trainers."""
        return {
            "id": self.id, "prompt": self.prompt, "initial": self.initial,
            "principles": list(self.principles), "critiques": list(self.critiques),
            "revisions": list(self.revisions), "final": self.final,
            "messages": [{"role": "user", "content": self.prompt},
                         {"role": "assistant", "content": self.final}],
        }


def conversation(model: Any, messages: Sequence[dict[str, str]]) -> str:
    """The chat-template text of ``messages`` ending in an open assistant turn."""
    if not getattr(model.tokenizer, "chat_template", None):
        raise InterpError(f"model {model.model_id} has no chat template; constitutional AI "
                          "needs a chat model")
    return model.tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=True)


GenerateFn = Callable[[list[str]], list[str]]


def critique_revise(
    items: Sequence[PromptItem],
    constitution: Constitution,
    generate_texts: GenerateFn,
    render: Callable[[Sequence[dict[str, str]]], str],
    *,
    rounds: int = 1,
    seed: int = 0,
) -> list[Chain]:
    """Initial answers, then ``rounds`` of critique → revision for every item.

    ``render(messages)`` turns a conversation into the model's text (the chat template);
    ``generate_texts(texts)`` continues each text (one batched call per step).
    """
    if rounds < 0:
        raise InterpError(f"rounds must be ≥ 0, got {rounds}")
    initial = generate_texts([render([{"role": "user", "content": it.prompt}]) for it in items])
    chains = [Chain(id=it.id, prompt=it.prompt, initial=a.strip(), reference=it.reference,
                    category=it.category) for it, a in zip(items, initial, strict=True)]
    for r in range(rounds):
        principles = [sample_principle(constitution, seed, c.id, "round", r) for c in chains]
        base = [[{"role": "user", "content": c.prompt},
                 {"role": "assistant", "content": c.final}] for c in chains]
        crit_msgs = [[*b, {"role": "user", "content": p.critique_request}]
                     for b, p in zip(base, principles, strict=True)]
        critiques = [t.strip() for t in generate_texts([render(m) for m in crit_msgs])]
        rev_msgs = [[*m, {"role": "assistant", "content": c},
                     {"role": "user", "content": p.revision_request}]
                    for m, c, p in zip(crit_msgs, critiques, principles, strict=True)]
        revisions = [t.strip() for t in generate_texts([render(m) for m in rev_msgs])]
        for c, p, crit, rev in zip(chains, principles, critiques, revisions, strict=True):
            c.principles.append(p.name)
            c.critiques.append(crit)
            c.revisions.append(rev)
    return chains


# ======================================================================= pairs
@dataclass(frozen=True)
class Pair:
    """Two answers to one prompt, judged against one principle.

    ``x`` is the candidate (the revision, or the model's own answer), ``y`` the baseline
    (the initial answer, or the dataset's reference); ``kind`` is ``"revision"`` or
    ``"reference"``.
    """

    id: str
    prompt: str
    x: str
    y: str
    principle: str
    kind: str
    x_label: str
    y_label: str

    @property
    def identical(self) -> bool:
        return self.x.strip() == self.y.strip()


def build_pairs(chains: Sequence[Chain], constitution: Constitution, *, seed: int = 0,
                references: bool = True) -> list[Pair]:
    """Revised-vs-initial pairs for every chain with a revision, then own-vs-reference pairs.

    Each pair's judging principle is sampled independently of the critique principles.
    """
    pairs: list[Pair] = []
    for c in chains:
        if c.revisions:
            p = sample_principle(constitution, seed, c.id, "judge", "revision")
            pairs.append(Pair(c.id, c.prompt, c.final, c.initial, p.name, "revision",
                              "revised", "initial"))
    if references:
        for c in chains:
            if c.reference:
                p = sample_principle(constitution, seed, c.id, "judge", "reference")
                pairs.append(Pair(c.id, c.prompt, c.initial, c.reference, p.name, "reference",
                                  "model", "reference"))
    return pairs


def orders(pairs: Sequence[Pair]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(A, B) answers of every pair in the forward order ``(x, y)`` and the reverse ``(y, x)``."""
    return [(p.x, p.y) for p in pairs], [(p.y, p.x) for p in pairs]


def _two_way(lp: Sequence[float]) -> tuple[float, float]:
    """Softmax over the two letters' log-probs → (P(A), P(B)) given one of them is said."""
    a, b = float(lp[0]), float(lp[1])
    m = max(a, b)
    ea, eb = math.exp(a - m), math.exp(b - m)
    return ea / (ea + eb), eb / (ea + eb)


@dataclass(frozen=True)
class Judgement:
    """The judge's view of one pair, from both orders."""

    p_x_fwd: float  # P(x is better) when x is shown as (A)
    p_x_rev: float  # P(x is better) when x is shown as (B)

    @property
    def p_x(self) -> float:
        """The two orders averaged: the position-debiased preference for x."""
        return 0.5 * (self.p_x_fwd + self.p_x_rev)

    @property
    def tie(self) -> bool:
        return abs(self.p_x - 0.5) < TIE_EPS

    @property
    def win(self) -> float:
        """1 if x is preferred, 0 if y is, 0.5 for a tie."""
        return 0.5 if self.tie else float(self.p_x > 0.5)

    @property
    def flip(self) -> bool:
        """The chosen answer changes when the order is swapped."""
        return (self.p_x_fwd > 0.5) != (self.p_x_rev > 0.5)


def combine_orders(lp_fwd: Sequence[Sequence[float]], lp_rev: Sequence[Sequence[float]]
                   ) -> list[Judgement]:
    """Judgements from letter log-probs ``[n, 2]`` (columns: A, B) in both orders.

    Forward shows ``(A)=x, (B)=y``, so P(x) is P(A); reverse shows ``(A)=y, (B)=x``, so
    P(x) is P(B). Each order's two letters are renormalised to sum to one.
    """
    if len(lp_fwd) != len(lp_rev):
        raise InterpError(f"{len(lp_fwd)} forward but {len(lp_rev)} reverse judgements")
    out = []
    for f, r in zip(lp_fwd, lp_rev, strict=True):
        out.append(Judgement(p_x_fwd=_two_way(f)[0], p_x_rev=_two_way(r)[1]))
    return out


def preference_record(pair: Pair, j: Judgement, valid: bool) -> dict[str, Any]:
    """The ``preferences.jsonl`` row: chosen/rejected as reward-model and DPO trainers expect."""
    x_wins = j.p_x >= 0.5  # a tie keeps the candidate as chosen, with p_chosen 0.5
    return {
        "id": pair.id, "prompt": pair.prompt,
        "chosen": pair.x if x_wins else pair.y,
        "rejected": pair.y if x_wins else pair.x,
        "p_chosen": j.p_x if x_wins else 1.0 - j.p_x,
        "principle": pair.principle, "pair": pair.kind,
        "chosen_is": pair.x_label if x_wins else pair.y_label,
        "p_x_fwd": j.p_x_fwd, "p_x_rev": j.p_x_rev,
        "position_flip": None if pair.identical else j.flip, "identical": pair.identical,
        "tie": j.tie, "valid": bool(valid),
    }


# ====================================================================== stats
def wilson_ci(k: float, n: int, z: float = Z95) -> list[float | None]:
    """Wilson 95% interval of a rate ``k/n`` as a JSON pair (``None`` for ``n = 0``)."""
    if n <= 0:
        return [None, None]
    return list(wilson(k, n, z))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation; None with fewer than 3 points or no spread."""
    n = len(xs)
    if n != len(ys):
        raise InterpError(f"pearson: {n} x values but {len(ys)} y values")
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def fisher_ci(r: float | None, n: int, z: float = Z95) -> list[float | None]:
    """Fisher z-transform 95% interval of a correlation (needs n ≥ 4)."""
    if r is None or n < 4:
        return [None, None]
    r = max(-1 + 1e-12, min(1 - 1e-12, r))
    zr = math.atanh(r)
    half = z / math.sqrt(n - 3)
    return [math.tanh(zr - half), math.tanh(zr + half)]


def _rate(results: dict[str, Any], key: str, values: Sequence[float]) -> None:
    n = len(values)
    k = float(sum(values))
    results[key] = k / n if n else None
    results[f"{key}_ci95"] = wilson_ci(k, n)
    results[f"{key}_n"] = n


def words(text: str) -> int:
    return len(text.split())


def results_dict(pairs: Sequence[Pair], judgements: Sequence[Judgement], *,
                 valid: bool, principles: Sequence[str]) -> dict[str, Any]:
    """Every rate with ``_ci95`` and ``_n`` siblings (see the module docstring)."""
    if len(pairs) != len(judgements):
        raise InterpError(f"{len(pairs)} pairs but {len(judgements)} judgements")
    both = list(zip(pairs, judgements, strict=True))
    rev = [(p, j) for p, j in both if p.kind == "revision"]
    ref = [(p, j) for p, j in both if p.kind == "reference"]
    distinct = [(p, j) for p, j in both if not p.identical]
    out: dict[str, Any] = {"valid": bool(valid)}
    _rate(out, "win_rate_revised", [j.win for _, j in rev])
    out["mean_p_revised"] = (sum(j.p_x for _, j in rev) / len(rev)) if rev else None
    out["revisions_identical"] = sum(p.identical for p, _ in rev)
    _rate(out, "position_flip_rate", [float(j.flip) for _, j in distinct])
    _rate(out, "first_position_rate",  # verdicts for whatever was shown as (A), both orders
          [v for _, j in distinct for v in (float(j.p_x_fwd > 0.5), float(j.p_x_rev < 0.5))])
    dx = [float(words(p.x) - words(p.y)) for p, _ in distinct]
    py = [j.p_x for _, j in distinct]
    r = pearson(dx, py)
    out["length_preference_corr"] = r
    out["length_preference_corr_ci95"] = fisher_ci(r, len(dx))
    out["length_preference_corr_n"] = len(dx)
    _rate(out, "longer_preferred_rate",
          [float((d > 0) == (j.p_x > 0.5)) for d, (_, j) in zip(dx, distinct, strict=True)
           if d != 0 and not j.tie])
    _rate(out, "self_preference_rate", [j.win for _, j in ref])
    per: dict[str, dict[str, Any]] = {}
    for name in principles:
        sub: dict[str, Any] = {}
        _rate(sub, "win_rate_revised", [j.win for p, j in rev if p.principle == name])
        per[name] = sub
    out["per_principle"] = per
    return out


# ===================================================================== running
@dataclass
class ConstitutionalRun:
    """Everything one run produced: chains, pairs, judgements, the letter check, results."""

    chains: list[Chain]
    pairs: list[Pair]
    judgements: list[Judgement]
    letter_check: dict[str, Any]
    results: dict[str, Any]

    @property
    def valid(self) -> bool:
        return bool(self.results["valid"])

    def sft_records(self) -> list[dict[str, Any]]:
        return [c.sft_record() for c in self.chains]

    def preference_records(self) -> list[dict[str, Any]]:
        return [preference_record(p, j, self.valid)
                for p, j in zip(self.pairs, self.judgements, strict=True)]


def examples(chains: Sequence[Chain], pairs: Sequence[Pair], judgements: Sequence[Judgement],
             k: int = 6) -> list[dict[str, Any]]:
    """The first ``k`` chains with their revised-vs-initial judgement, for the report."""
    by_id = {p.id: (p, j) for p, j in zip(pairs, judgements, strict=True)
             if p.kind == "revision"}
    out = []
    for c in chains[:k]:
        rec = c.sft_record()
        rec.pop("messages")
        pj = by_id.get(c.id)
        if pj is not None:
            rec.update(judge_principle=pj[0].principle, p_revised=pj[1].p_x,
                       p_revised_fwd=pj[1].p_x_fwd, p_revised_rev=pj[1].p_x_rev)
        out.append(rec)
    return out


def run_constitutional(
    model: Any,
    items: Sequence[PromptItem],
    constitution: Constitution,
    *,
    rounds: int = 1,
    max_new_tokens: int = 96,
    temperature: float = 0.0,
    seed: int = 0,
    batch_size: int = 16,
    deterministic: bool = False,
    n_examples: int = 6,
    progress: bool | None = None,
) -> ConstitutionalRun:
    """The whole pipeline on ``items`` (see the module docstring)."""
    from evals.judge import judge_pairs_logprobs, letter_check
    from interp.generation.engine import generate
    from interp.runs.progress import make_progress

    if not items:
        raise InterpError("no prompts")
    if rounds < 1:
        raise InterpError(f"rounds must be ≥ 1, got {rounds}")
    n_refs = sum(1 for it in items if it.reference)
    total = len(items) * (1 + 2 * rounds) + 2 * (len(items) + n_refs)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("constitutional", total=total, info="answering")

        def generate_texts(texts: list[str]) -> list[str]:
            out: list[str] = []
            for s in range(0, len(texts), batch_size):
                chunk = texts[s:s + batch_size]
                res = generate(model, chunk, max_new_tokens=max_new_tokens,
                               temperature=temperature, seed=seed, chat=False,
                               batch_size=batch_size, deterministic=deterministic,
                               progress=False)
                out += res.texts
                bar.update(task, advance=len(chunk))
            return out

        chains = critique_revise(items, constitution, generate_texts,
                                 lambda m: conversation(model, m), rounds=rounds, seed=seed)
        pairs = build_pairs(chains, constitution, seed=seed)
        bar.update(task, info="judging")
        lp_fwd, lp_rev = judge_pairs_logprobs(
            model, pairs, constitution, batch_size=batch_size, deterministic=deterministic,
            on_batch=lambda k: bar.update(task, advance=k))
    # Identical answers carry no content to choose between: keep them out of the check.
    keep = [i for i, p in enumerate(pairs) if not p.identical]
    check = letter_check(lp_fwd[keep], lp_rev[keep])
    judgements = combine_orders(lp_fwd.tolist(), lp_rev.tolist())
    results = results_dict(pairs, judgements, valid=check["valid"],
                           principles=[p.name for p in constitution.principles])
    results.update(
        model=model.model_id, n_prompts=len(items), rounds=rounds, n_pairs=len(pairs),
        letter_check=check, constitution=constitution.to_dict(),
        examples=examples(chains, pairs, judgements, n_examples),
        config={"rounds": rounds, "max_new_tokens": max_new_tokens, "temperature": temperature,
                "seed": seed, "batch_size": batch_size, "deterministic": deterministic,
                "n_prompts": len(items), "constitution": constitution.source},
    )
    return ConstitutionalRun(chains, pairs, judgements, check, results)


def judge_pairs(model: Any, pairs: Sequence[Pair], constitution: Constitution, *,
                batch_size: int = 16) -> tuple[list[Judgement], dict[str, Any]]:
    """Judge ``pairs`` in both orders: judgements and the letter check's dict."""
    from evals.judge import judge_pairs_logprobs, letter_check

    lp_fwd, lp_rev = judge_pairs_logprobs(model, pairs, constitution, batch_size=batch_size)
    keep = [i for i, p in enumerate(pairs) if not p.identical]
    return (combine_orders(lp_fwd.tolist(), lp_rev.tolist()),
            letter_check(lp_fwd[keep], lp_rev[keep]))
