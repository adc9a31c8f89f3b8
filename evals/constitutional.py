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

The data types and loaders live in :mod:`evals.constitution`, the judge and the measures
in :mod:`evals.judge` (both re-exported here). The bookkeeping (pairs, order swapping,
averaging, chosen/rejected, CIs) is pure functions, tested on hand-made numbers;
:func:`run_constitutional` strings them together from a :class:`ConstitutionalConfig` into
a :class:`ConstitutionalResult` (``to_dict()`` is ``results.json``; it carries its manifest).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from evals.constitution import (
    Chain,
    Constitution,
    Pair,
    Principle,
    PromptItem,
    conversation,
    default_constitution_path,
    default_prompts_path,
    load_constitution,
    load_prompts,
    orders,
    sample_principle,
)
from evals.judge import (
    JudgeMeasures,
    Judgement,
    check_judge_letters,
    combine_orders,
    judge_pairs,
    judge_pairs_logprobs,
    measure_judge,
)
from evals.letters import LetterCheck
from interp.display import ci_text, format_number
from interp.errors import InterpError
from interp.schema import (
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_meta,
    non_negative,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: The most critique → revision rounds a run takes.
MAX_ROUNDS = 20

__all__ = [
    "Chain",
    "Constitution",
    "ConstitutionalConfig",
    "ConstitutionalResult",
    "ConstitutionalRun",
    "Example",
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
    "judge_pairs",
    "load_constitution",
    "load_prompts",
    "orders",
    "preference_record",
    "results_dict",
    "run_constitutional",
    "sample_principle",
]


# ====================================================================== chains
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


def results_dict(pairs: Sequence[Pair], judgements: Sequence[Judgement], *,
                 valid: bool, principles: Sequence[str]) -> dict[str, Any]:
    """Every rate with ``_ci95`` and ``_n`` siblings (:func:`evals.judge.measure_judge`)."""
    return measure_judge(pairs, judgements, valid=valid, principles=principles).to_dict()


# ===================================================================== running
@dataclass(frozen=True)
class Example:
    """One chain for the report, with the judge's view of its revised-vs-initial pair."""

    chain: Chain
    principle: str | None = None  # the judging principle
    judgement: Judgement | None = None

    def to_dict(self) -> dict[str, Any]:
        """The chain's ``sft.jsonl`` row (without ``messages``) and, when judged, the judging
        principle and ``p_revised`` with its forward and reverse parts."""
        rec = self.chain.sft_record()
        rec.pop("messages")
        j = self.judgement
        if j is not None:
            rec.update(judge_principle=self.principle, p_revised=j.p_x,
                       p_revised_fwd=j.p_x_fwd, p_revised_rev=j.p_x_rev)
        return rec


def _examples(chains: Sequence[Chain], pairs: Sequence[Pair], judgements: Sequence[Judgement],
              k: int) -> list[Example]:
    by_id = {p.id: (p, j) for p, j in zip(pairs, judgements, strict=True)
             if p.kind == "revision"}
    out = []
    for c in chains[:k]:
        pj = by_id.get(c.id)
        out.append(Example(c) if pj is None else Example(c, pj[0].principle, pj[1]))
    return out


def examples(chains: Sequence[Chain], pairs: Sequence[Pair], judgements: Sequence[Judgement],
             k: int = 6) -> list[dict[str, Any]]:
    """The first ``k`` chains with their revised-vs-initial judgement, for the report."""
    return [e.to_dict() for e in _examples(chains, pairs, judgements, k)]


@dataclass(frozen=True)
class ConstitutionalConfig(Config):
    """Settings of one run: critique → revision ``rounds``, generation length and
    temperature (0 = greedy), the seed (principle draws, sampling), batch size,
    batch-invariant ``deterministic`` generation and judging, how many example chains the
    report shows, and where the prompts came from (recorded in the manifest)."""

    rounds: int = setting(1, check=in_range(1, MAX_ROUNDS),
                          help="Critique → revision rounds per prompt.", cli=Cli(range=True))
    limit: int | None = setting(None, check=at_least(1), help="Use only the first N prompts.",
                                cli=Cli(range=True))
    max_new_tokens: int = setting(96, check=at_least(1),
                                  help="Tokens per answer, critique and revision.",
                                  cli=Cli(range=True))
    temperature: float = setting(0.0, check=non_negative, help="0 = greedy.", cli=Cli(range=True))
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Principle draws and sampling (recorded in the "
                        "manifest).")
    batch_size: int = setting(16, cli=False, check=at_least(1),
                              help="Prompts per generation and judging batch.")
    deterministic: bool = setting(False,
                                  help="Batch-invariant generation and judging (slower).")
    n_examples: int = setting(6, check=at_least(0), help="Example chains shown in the report.",
                              cli=Cli(range=True, flag="--examples"))
    prompts: str = setting("", cli=False,
                           help="The prompts' source, recorded in the manifest (the CLI "
                                "sets it).")


@dataclass
class ConstitutionalResult(Result):
    """Everything one run produced: chains, pairs, judgements, the letter check, measures.

    ``to_dict()`` is ``results.json`` (the measures at the top level, then the run);
    :meth:`sft_records` and :meth:`preference_records` are the rows of ``sft.jsonl`` and
    ``preferences.jsonl``; ``to_frame()`` one row per judged pair.
    """

    config: ConstitutionalConfig = field(metadata=json_meta(skip=True))
    model_id: str = field(metadata=json_meta(key="model"))
    constitution: Constitution
    n_prompts: int
    chains: list[Chain] = field(metadata=json_meta(skip=True))
    pairs: list[Pair] = field(metadata=json_meta(skip=True))
    judgements: list[Judgement] = field(metadata=json_meta(skip=True))
    letter_check: LetterCheck
    measures: JudgeMeasures = field(metadata=json_meta(skip=True))

    #: results.json has no "warnings" key (the run makes none).
    warnings_always: ClassVar[bool] = False
    #: results.json's order: the measures (the rest) first, then the run.
    json_order: ClassVar[tuple[Any, ...]] = (
        ..., "model", "n_prompts", "rounds", "n_pairs", "letter_check", "constitution",
        "examples", "config")

    @property
    def valid(self) -> bool:
        """The letter check's verdict: without it the judge's rates describe its behaviour, not a
        preference signal."""
        return bool(self.measures.valid)

    @property
    def results(self) -> dict[str, Any]:
        """Same as :meth:`~interp.schema.result.Result.to_dict` (the earlier name)."""
        return self.to_dict()

    def sft_records(self) -> list[dict[str, Any]]:
        """The ``sft.jsonl`` rows, one per chain (:meth:`Chain.sft_record
        <evals.constitution.Chain.sft_record>`)."""
        return [c.sft_record() for c in self.chains]

    def preference_records(self) -> list[dict[str, Any]]:
        """The ``preferences.jsonl`` rows, one per judged pair (:func:`preference_record`)."""
        return [preference_record(p, j, self.valid)
                for p, j in zip(self.pairs, self.judgements, strict=True)]

    def examples(self) -> list[Example]:
        """The first ``config.n_examples`` chains with their judgement."""
        return _examples(self.chains, self.pairs, self.judgements, self.config.n_examples)

    def extra_data(self) -> dict[str, Any]:
        """The measures (every rate with ``_ci95`` and ``_n``), the counts, the example
        chains and the run's settings as ``config``."""
        cfg = self.config
        return {
            **self.measures.to_dict(), "rounds": cfg.rounds, "n_pairs": len(self.pairs),
            "examples": [e.to_dict() for e in self.examples()],
            "config": {"rounds": cfg.rounds, "max_new_tokens": cfg.max_new_tokens,
                       "temperature": cfg.temperature, "seed": cfg.seed,
                       "batch_size": cfg.batch_size, "deterministic": cfg.deterministic,
                       "n_prompts": self.n_prompts, "constitution": self.constitution.source},
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per judged pair: which answers, the principle, both orders' P(x).

        The judgements as data, not the headline table (which :meth:`headline` gives)."""
        import pandas as pd

        rows = [{"id": p.id, "pair": p.kind, "principle": p.principle, "x": p.x_label,
                 "y": p.y_label, "p_x_fwd": j.p_x_fwd, "p_x_rev": j.p_x_rev, "p_x": j.p_x,
                 "win": j.win, "position_flip": None if p.identical else j.flip,
                 "identical": p.identical, "tie": j.tie}
                for p, j in zip(self.pairs, self.judgements, strict=True)]
        return pd.DataFrame(rows, columns=["id", "pair", "principle", "x", "y", "p_x_fwd",
                                           "p_x_rev", "p_x", "win", "position_flip",
                                           "identical", "tie"])

    def summary(self) -> str:
        """One sentence: the win rate of revised answers and the position flip rate, each
        with its 95% CI and n, and whether the win rate is within noise of 0.5."""
        win, flip = self.measures.win_rate_revised, self.measures.position_flip_rate
        return (f"{self.n_prompts} prompts, {self.config.rounds} critique → revision "
                f"round(s), {len(self.pairs)} judged pairs, each in both orders. Revised "
                f"answers win {format_number(win.value)} {ci_text(win.lo, win.hi)} of {win.n} "
                f"comparisons with the initial answers{win_noise_label(win.lo, win.hi)}; the "
                f"verdict flips with the order in {format_number(flip.value)} "
                f"{ci_text(flip.lo, flip.hi)} of {flip.n} pairs.")

    def headline(self) -> Headline:
        """The judge's bias rates, the length–preference correlation and the win rate per
        principle, each with its 95% CI and n; the verdict is :meth:`summary`."""
        from evals.figures import BIAS_ROWS, CORR_LABEL

        m = self.measures
        rates = m.rates()
        table: list[list[Any]] = [
            [label, rates[k].value, ci_text(rates[k].lo, rates[k].hi), rates[k].n]
            for k, label, _, _ in BIAS_ROWS]
        c = m.length_preference_corr
        table.append([CORR_LABEL, c.value, ci_text(c.lo, c.hi), c.n])
        table += [[f"  win rate · {name}", r.value, ci_text(r.lo, r.hi), r.n]
                  for name, r in m.per_principle.items()]
        flag = "" if self.valid else " · LABELS NOT VALID (degenerate letters)"
        return Headline(
            title=f"Constitutional AI · {self.model_id}",
            rows=[("model", self.model_id), ("prompts", self.n_prompts),
                  ("rounds", self.config.rounds), ("judged pairs", len(self.pairs)),
                  ("labels valid", "yes" if self.valid else "no: " + " ".join(
                      self.letter_check.reasons))],
            columns=["measure", "value", "95% CI", "n"], table=table,
            table_title=f"constitutional AI · {self.model_id} · {self.n_prompts} prompts, "
                        f"{self.config.rounds} round(s){flag}",
            verdict=self.summary())

    def figure(self) -> Figure:
        """:func:`~evals.figures.bias_figure`: the judge's bias rates against 0.5."""
        from evals.figures import bias_figure

        return bias_figure(self)


def win_noise_label(lo: float | None, hi: float | None) -> str:
    """The win rate against 0.5: a remark when its interval holds 0.5, or has no ends."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return " (no interval: no noise estimate)"
    if lo <= 0.5 <= hi:
        return " (within noise: not a result; the interval contains 0.5, no preference)"
    return ""


#: The earlier name of :class:`ConstitutionalResult`.
ConstitutionalRun = ConstitutionalResult


def run_constitutional(
    model: Any,
    items: Sequence[PromptItem],
    constitution: Constitution,
    config: ConstitutionalConfig | None = None,
    *,
    progress: bool | None = None,
    **settings: Any,
) -> ConstitutionalResult:
    """The whole pipeline on ``items`` (see the module docstring).

    ``settings`` are :class:`ConstitutionalConfig` fields overriding ``config``'s
    (``run_constitutional(model, items, con, rounds=2, max_new_tokens=48)``). The result
    carries its manifest.
    """
    from interp.generation.engine import generate
    from interp.runs.manifest import model_manifest
    from interp.runs.progress import make_progress

    cfg = ConstitutionalConfig.resolve(config, settings, override=True, noun="constitutional")
    items = list(items)[:cfg.limit]  # the first N, as the CLI's load keeps them
    if not items:
        raise InterpError("no prompts")
    batch_size = cfg.batch_size
    n_refs = sum(1 for it in items if it.reference)
    total = len(items) * (1 + 2 * cfg.rounds) + 2 * (len(items) + n_refs)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("constitutional", total=total, info="answering")

        def generate_texts(texts: list[str]) -> list[str]:
            out: list[str] = []
            for s in range(0, len(texts), batch_size):
                chunk = texts[s:s + batch_size]
                res = generate(model, chunk, max_new_tokens=cfg.max_new_tokens,
                               temperature=cfg.temperature, seed=cfg.seed, chat=False,
                               batch_size=batch_size, deterministic=cfg.deterministic,
                               progress=False)
                out += res.texts
                bar.update(task, advance=len(chunk))
            return out

        chains = critique_revise(items, constitution, generate_texts,
                                 lambda m: conversation(model, m), rounds=cfg.rounds,
                                 seed=cfg.seed)
        pairs = build_pairs(chains, constitution, seed=cfg.seed)
        bar.update(task, info="judging")
        lp_fwd, lp_rev = judge_pairs_logprobs(
            model, pairs, constitution, batch_size=batch_size, deterministic=cfg.deterministic,
            on_batch=lambda k: bar.update(task, advance=k))
    # Identical answers carry no content to choose between: keep them out of the check.
    keep = [i for i, p in enumerate(pairs) if not p.identical]
    check = check_judge_letters(lp_fwd[keep], lp_rev[keep])
    judgements = combine_orders(lp_fwd.tolist(), lp_rev.tolist())
    measures = measure_judge(pairs, judgements, valid=check.valid,
                             principles=[p.name for p in constitution.principles])
    result = ConstitutionalResult(cfg, model.model_id, constitution, len(items), chains, pairs,
                                  judgements, check, measures)
    config_record = {**result.extra_data()["config"], "prompts": cfg.prompts,
                     "constitution_sha256": constitution.sha256()}
    result.manifest = model_manifest(model, seed=cfg.seed, config=config_record,
                                     texts=[it.prompt for it in items])
    return result
