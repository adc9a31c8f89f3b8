"""Contexts per feature: what the explainer sees and what the scorers are tested on.

One pass of the model over held-out text (packed windows of :mod:`interp.data.windows`,
as the feature browser reads them, stopping after the SAE's hook point) keeps the
residual stream at the hook, so any number of feature sets are read from it without a
second pass: the SAE's latents, a random-weight SAE's (a null control) and planted
features, which need only the token ids: **token-level** ones (indicators of a token set,
:func:`plant_token_sets`) and **concept-level** ones (indicators of the words of a concept
such as "colours", :func:`plant_concepts`, whose explain and score halves hold different
member words: see :func:`concept_activations`).

Each window is cut into **examples** of ``ctx_len`` tokens (positions ``1 …``: position 0,
the attention sink, is never an example), as delphi cuts its windows; an example's
activation is its largest. The windows are split at random (seeded) into an **explain
half** and a **score half**, so no text the scorer is tested on was shown to the
explainer. Per feature:

- ``explain``: the ``n_explain`` top-activating examples of the explain half (delphi's
  "top" training examples), and ``explain_negatives``: as many random non-activating
  examples of the explain half (the programmatic explainer needs them for precision);
- ``positives``: ``n_score`` activating examples of the score half, drawn evenly across
  ``n_quantiles`` bins of their activation (delphi's quantile sampling), so a scorer is
  tested on weak activations as well as strong ones;
- ``negatives``: ``n_score`` random non-activating examples of the score half;
- ``hard``: up to ``n_hard`` non-activating examples of the score half that contain one
  of the feature's top tokens (the tokens it fires on most in the explain half): the
  examples a token-matching explanation gets wrong.

An ``exclude`` mask (per token and feature) drops every example holding an excluded token
from all of these: a concept feature's explain half never shows its held-out words, and
its score half never holds the words shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.models.loading import Model
from interp.runs.progress import make_progress
from saes.results import FeatureContext
from saes.sae import SparseAutoencoder

#: Top tokens whose non-activating occurrences make the hard negatives.
HARD_TOKENS = 3


@dataclass
class Scan:
    """Token ids ``[windows, seq_len]`` and the residual stream at ``hook``
    ``[windows, seq_len, d_model]`` (float32, CPU)."""

    ids: Int[Tensor, "w seq"]
    resid: Float[Tensor, "w seq d"]
    hook: str

    @property
    def n_tokens(self) -> int:
        """Tokens that can be examples (position 0 of every window is not)."""
        return int(self.ids.shape[0] * (self.ids.shape[1] - 1))


@dataclass
class FeatureExamples:
    """One feature's contexts (see the module doc); ``n_active``: examples of the whole
    scan on which it fires."""

    feature: int
    explain: list[FeatureContext] = field(default_factory=list)
    explain_negatives: list[FeatureContext] = field(default_factory=list)
    positives: list[FeatureContext] = field(default_factory=list)
    negatives: list[FeatureContext] = field(default_factory=list)
    hard: list[FeatureContext] = field(default_factory=list)
    n_active: int = 0
    #: the token ids the feature fires on most in the explain half
    top_tokens: list[int] = field(default_factory=list)

    @property
    def scoring(self) -> list[FeatureContext]:
        """The held-out examples a scorer reads: positives, negatives, hard negatives."""
        return [*self.positives, *self.negatives, *self.hard]

    @property
    def labels(self) -> list[int]:
        """1 for a positive, 0 for a negative, in :attr:`scoring`'s order."""
        return [1] * len(self.positives) + [0] * (len(self.negatives) + len(self.hard))


@torch.no_grad()
def scan(model: Model, docs: Sequence[str], hook: str, *, tokens: int, seq_len: int,
         batch_size: int, seed: int, progress: bool | None = None) -> Scan:
    """Pack ``ceil(tokens / seq_len)`` windows of ``docs`` and keep the residual stream at
    ``hook`` (one forward pass per batch, stopping after the hook)."""
    n_windows = -(-tokens // seq_len)
    ids = pack_windows(model, docs, seq_len=seq_len, n_windows=n_windows, seed=seed).cpu()
    parts = []
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("contexts: model pass", total=ids.shape[0], info="")
        for s in range(0, ids.shape[0], batch_size):
            batch = ids[s:s + batch_size].to(model.device)
            parts.append(forward_with_hooks(model, batch, None, [hook])[0][hook].float().cpu())
            bar.update(task, advance=batch.shape[0])
    return Scan(ids, torch.cat(parts), hook)


@torch.no_grad()
def sae_activations(sae: SparseAutoencoder, resid: Float[Tensor, "w seq d"],
                    features: Sequence[int] | None = None, chunk: int = 16,
                    ) -> tuple[Float[Tensor, "w seq f"] | None, Int[Tensor, " d_sae"]]:
    """The SAE's activations of ``features`` on every token (position 0 set to 0) and
    every latent's count of firing tokens (positions ``1 …``); ``None`` for the first
    when ``features`` is None (a count-only pass)."""
    dev = sae.W_enc.device
    fires = torch.zeros(sae.cfg.d_sae, dtype=torch.long)
    out = []
    idx = torch.tensor(list(features), dtype=torch.long) if features is not None else None
    for s in range(0, resid.shape[0], chunk):
        f = sae.encode(resid[s:s + chunk].to(dev, torch.float32)).cpu()
        f[:, 0] = 0.0
        fires += (f[:, 1:] > 0).sum(dim=(0, 1))
        if idx is not None:
            out.append(f[..., idx])
    return (torch.cat(out) if idx is not None else None), fires


def planted_activations(ids: Int[Tensor, "w seq"], token_sets: Sequence[Sequence[int]],
                        ) -> Float[Tensor, "w seq f"]:
    """Planted features: feature ``j`` is 1 on every token in ``token_sets[j]`` (0 at
    position 0 and elsewhere)."""
    acts = torch.stack([torch.isin(ids, torch.tensor(list(s), dtype=ids.dtype)).float()
                        for s in token_sets], dim=-1)
    acts[:, 0] = 0.0
    return acts


#: Concepts a concept-level planted feature stands for: the name its reference explanation
#: gives (never the words) and its member words (``"year/years"``: one word's forms), each
#: matched after a space, as written and capitalised. Closed sets, so that a held-out
#: context without a member word holds no other word of the concept either: an open class
#: such as past-tense verbs would make the negatives wrong (nearly every context holds
#: one). Words with a second common sense in technical text are left out (" cat", " fish",
#: " second" among units of time). Which of them occur is measured on the scan.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "numbers written as words": ("one", "two", "three", "four", "five", "six", "seven",
                                 "eight", "nine", "ten", "eleven", "twelve", "twenty",
                                 "hundred", "thousand", "million"),
    "units of time": ("minute/minutes", "hour/hours", "day/days", "week/weeks",
                      "month/months", "year/years", "seconds", "decade/decades"),
    "units of data size": ("bit/bits", "byte/bytes", "kilobyte/kilobytes",
                           "megabyte/megabytes", "gigabyte/gigabytes", "terabyte/terabytes",
                           "KB", "kB", "MB", "GB", "TB"),
    "ordinal numbers": ("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
                        "eighth", "ninth", "tenth"),
    "operating systems": ("Linux", "Windows", "Unix", "FreeBSD", "NetBSD", "OpenBSD",
                          "Solaris", "macOS", "Hurd", "Android"),
    "names of human languages": ("English", "German", "French", "Spanish", "Italian",
                                 "Japanese", "Chinese", "Russian", "Korean", "Portuguese",
                                 "Dutch"),
    "colours": ("red", "green", "blue", "yellow", "black", "white", "orange", "purple",
                "brown", "gray/grey", "pink"),
    "months of the year": ("January", "February", "March", "April", "June", "July",
                           "August", "September", "October", "November", "December"),
    "days of the week": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                         "Sunday"),
    "family members": ("mother", "father", "brother", "sister", "son", "daughter", "wife",
                       "husband", "uncle", "aunt"),
    "animals": ("dog", "horse", "cow", "pig", "sheep", "bird", "lion", "tiger", "wolf", "fox",
                "rabbit", "duck", "elephant"),
}


@dataclass(frozen=True)
class PlantedConcept:
    """A concept-level planted feature: the concept's name, the member words shown to the
    explainer and those held out for the scorers (each a list of spellings' token ids)."""

    name: str
    shown: list[str]
    held_out: list[str]
    shown_ids: list[list[int]]
    held_out_ids: list[list[int]]


def explain_half(n_windows: int, g: torch.Generator) -> Bool[Tensor, " w"]:
    """The windows of the explain half (True), drawn with ``g``: half of them at random."""
    perm = torch.randperm(n_windows, generator=g)
    half = torch.zeros(n_windows, dtype=torch.bool)
    half[perm[: n_windows // 2]] = True
    return half


def word_occurrences(ids: Int[Tensor, "w seq"], spellings: Sequence[Sequence[int]],
                     continues: Bool[Tensor, "w seq"]) -> Bool[Tensor, "w seq"]:
    """Where a word ends: the last token of every occurrence of one of its spellings' token
    sequences that the next token does not continue (``continues``: the token starts with
    a letter or digit), so " cat" in " cats" or " category" is no occurrence."""
    n_w, seq = ids.shape
    out = torch.zeros(n_w, seq, dtype=torch.bool)
    nxt = torch.zeros(n_w, seq, dtype=torch.bool)
    nxt[:, :-1] = continues[:, 1:]
    for sp in spellings:
        k = len(sp)
        if k == 0 or k > seq:
            continue
        hit = torch.ones(n_w, seq - k + 1, dtype=torch.bool)
        for j, t in enumerate(sp):
            hit &= ids[:, j:seq - k + 1 + j] == int(t)
        out[:, k - 1:] |= hit
    return out & ~nxt


def _continues(model: Model, ids: Int[Tensor, "w seq"]) -> Bool[Tensor, "w seq"]:
    starts = {t: (model.decode_token(t)[:1].isalnum()) for t in ids.unique().tolist()}
    table = torch.zeros(int(ids.max()) + 1, dtype=torch.bool)
    for t, c in starts.items():
        table[t] = c
    return table[ids]


def plant_concepts(model: Model, ids: Int[Tensor, "w seq"], n: int,
                   concepts: dict[str, Sequence[str]] | None = None, *, min_count: int = 2,
                   ) -> list[PlantedConcept]:
    """Up to ``n`` concepts to plant (of ``concepts``, :data:`CONCEPTS` by default): those
    with at least two member words occurring ``min_count`` times in the scan, the most
    frequent concepts first. Their words, by count, go alternately to the explainer (the
    most frequent first) and to the held-out set, so both halves have occurrences."""
    pool = dict(CONCEPTS if concepts is None else concepts)
    cont = _continues(model, ids)
    found: list[tuple[int, PlantedConcept]] = []
    for name, members in pool.items():
        words = []
        for w in members:
            forms = [f for f in w.split("/") if f]
            spellings = dict.fromkeys(v for f in forms
                                      for v in (f" {f}", f" {f[:1].upper()}{f[1:]}"))
            sps = [model.encode_continuation(v) for v in spellings]
            c = int(word_occurrences(ids, sps, cont)[:, 1:].sum())
            if c >= min_count:
                words.append((c, forms[0] if len(forms) == 1 else w, sps))
        if len(words) < 2:
            continue
        words.sort(key=lambda x: (-x[0], x[1]))
        shown, held = words[0::2], words[1::2]
        found.append((sum(c for c, _, _ in words), PlantedConcept(
            name=name, shown=[w for _, w, _ in shown], held_out=[w for _, w, _ in held],
            shown_ids=[t for _, _, sps in shown for t in sps],
            held_out_ids=[t for _, _, sps in held for t in sps])))
    found.sort(key=lambda x: (-x[0], x[1].name))
    return [c for _, c in found[:n]]


def concept_activations(model: Model, ids: Int[Tensor, "w seq"],
                        concepts: Sequence[PlantedConcept], half: Bool[Tensor, " w"],
                        ) -> tuple[Float[Tensor, "w seq f"], Bool[Tensor, "w seq f"]]:
    """Concept feature ``j`` fires (1) at the end of every member word of ``concepts[j]``;
    the exclusion mask drops, in the explain half (``half``), the examples holding a
    held-out word, and in the score half those holding a word shown to the explainer."""
    cont = _continues(model, ids)
    acts, excl = [], []
    for c in concepts:
        shown = word_occurrences(ids, c.shown_ids, cont)
        held = word_occurrences(ids, c.held_out_ids, cont)
        a = (shown | held).float()
        a[:, 0] = 0.0
        acts.append(a)
        excl.append((half[:, None] & held) | (~half[:, None] & shown))
    return torch.stack(acts, dim=-1), torch.stack(excl, dim=-1)


def plant_token_sets(model: Model, ids: Int[Tensor, "w seq"], n: int, seed: int,
                     *, min_density: float = 2e-3, max_density: float = 2e-2,
                     ) -> list[list[int]]:
    """``n`` token sets to plant: alternately one and two word tokens (a leading space,
    letters only, at least four characters), each token's density in the scan between
    ``min_density`` and ``max_density``, drawn with ``seed``; no token used twice."""
    body = ids[:, 1:].flatten()
    counts = Counter(body.tolist())
    total = body.numel()
    pool = sorted(t for t, c in counts.items() if min_density <= c / total <= max_density
                  and _is_word(model.decode_token(t)))
    g = torch.Generator().manual_seed(seed)
    order = [pool[int(i)] for i in torch.randperm(len(pool), generator=g)]
    out: list[list[int]] = []
    for j in range(n):
        size = 1 if j % 2 == 0 else 2
        if len(order) < size:
            break
        out.append(sorted(order[:size]))
        order = order[size:]
    return out


def _is_word(text: str) -> bool:
    return text.startswith(" ") and text[1:].isalpha() and len(text) >= 5


def _example(model: Model, ids: Tensor, acts: Tensor, w: int, s: int, e: int) -> FeatureContext:
    a = [float(x) for x in acts[w, s:e]]
    return FeatureContext(tokens=model.token_strs(ids[w, s:e]), acts=a,
                          max_at=max(range(len(a)), key=lambda j: a[j]), window=w, position=s)


def feature_examples(
    model: Model, ids: Int[Tensor, "w seq"], acts: Float[Tensor, "w seq f"],
    features: Sequence[int], *, ctx_len: int, n_explain: int, n_score: int, n_hard: int,
    n_quantiles: int, seed: int, exclude: Bool[Tensor, "w seq f"] | None = None,
) -> list[FeatureExamples]:
    """Each feature's contexts (see the module doc); ``acts[..., j]`` is ``features[j]``;
    an example holding a token ``exclude[..., j]`` marks is none of feature j's."""
    n_w, seq = ids.shape
    starts = list(range(1, seq, ctx_len))
    bounds = [(s, min(s + ctx_len, seq)) for s in starts]
    # example maxima [w, chunks, f]
    ex_max = torch.stack([acts[:, s:e].amax(dim=1) for s, e in bounds], dim=1)
    ex_out = (torch.stack([exclude[:, s:e].any(dim=1) for s, e in bounds], dim=1)
              if exclude is not None else None)
    g = torch.Generator().manual_seed(seed)
    half = explain_half(n_w, g)  # True: the explain half (the same seed: the same split)
    # every example's token ids, for the hard negatives
    chunk_ids = [[set(ids[w, s:e].tolist()) for s, e in bounds] for w in range(n_w)]
    out = []
    for j, feat in enumerate(features):
        fe = FeatureExamples(feature=int(feat))
        m = ex_max[..., j].clone()  # [w, chunks]
        fe.n_active = int((m > 0).sum())
        ex_side = half[:, None].expand_as(m)
        if ex_out is not None:  # excluded examples: neither active nor quiet
            m[ex_out[..., j]] = float("nan")

        def pick(mask: Tensor) -> list[tuple[int, int]]:
            return [(int(a), int(b)) for a, b in torch.nonzero(mask)]

        act_ex = pick((m > 0) & ex_side)
        act_ex.sort(key=lambda wc: (-float(m[wc]), wc))
        fe.explain = [_example(model, ids, acts[..., j], w, *bounds[c])
                      for w, c in act_ex[:n_explain]]
        # the top tokens: the token at each explain example's peak, most frequent first
        peaks = Counter(int(ids[w, bounds[c][0] + e.max_at])
                        for (w, c), e in zip(act_ex[:n_explain], fe.explain, strict=True))
        fe.top_tokens = [t for t, _ in sorted(peaks.items(), key=lambda kv: (-kv[1], kv[0]))
                         ][:HARD_TOKENS]
        quiet_ex = pick((m == 0) & ex_side)
        fe.explain_negatives = [_example(model, ids, acts[..., j], w, *bounds[c])
                                for w, c in _sample(quiet_ex, n_explain, g)]
        act_sc = pick((m > 0) & ~ex_side)
        act_sc.sort(key=lambda wc: (float(m[wc]), wc))
        fe.positives = [_example(model, ids, acts[..., j], w, *bounds[c])
                        for w, c in _quantile_sample(act_sc, n_score, n_quantiles, g)]
        quiet_sc = pick((m == 0) & ~ex_side)
        fe.negatives = [_example(model, ids, acts[..., j], w, *bounds[c])
                        for w, c in _sample(quiet_sc, n_score, g)]
        chosen = {(e.window, e.position) for e in fe.negatives}
        tops = set(fe.top_tokens)
        hard = [wc for wc in quiet_sc if chunk_ids[wc[0]][wc[1]] & tops
                and (wc[0], bounds[wc[1]][0]) not in chosen]
        fe.hard = [_example(model, ids, acts[..., j], w, *bounds[c])
                   for w, c in _sample(hard, n_hard, g)]
        out.append(fe)
    return out


def _sample(items: list[tuple[int, int]], n: int, g: torch.Generator) -> list[tuple[int, int]]:
    if len(items) <= n:
        return list(items)
    return [items[int(i)] for i in sorted(torch.randperm(len(items), generator=g)[:n].tolist())]


def _quantile_sample(items: list[tuple[int, int]], n: int, bins: int, g: torch.Generator,
                     ) -> list[tuple[int, int]]:
    """``n`` of ``items`` (sorted by activation) drawn evenly from ``bins`` equal-count
    bins; all of them when there are no more than ``n``."""
    if len(items) <= n:
        return list(items)
    bins = max(1, min(bins, n))
    edges = [round(b * len(items) / bins) for b in range(bins + 1)]
    per = [n // bins + (1 if b < n % bins else 0) for b in range(bins)]
    out = []
    for b in range(bins):
        out.extend(_sample(items[edges[b]:edges[b + 1]], per[b], g))
    return out


__all__ = ["CONCEPTS", "FeatureExamples", "PlantedConcept", "Scan", "concept_activations",
           "explain_half", "feature_examples", "plant_concepts", "plant_token_sets",
           "planted_activations", "sae_activations", "scan", "word_occurrences"]
