"""Every piece of text generation goes through here.

``generate(model, prompts, max_new_tokens=32)`` decodes many prompts at once:

* left-padded batches with position ids derived from the attention mask, and a KV
  cache (``use_cache=False`` recomputes every step, for testing);
* greedy, or sampling with temperature and top-p. Sampling draws one uniform number
  per (request, step) from a generator keyed by the seed and the prompt text, so a
  request's randomness does not depend on which other prompts share its batch;
* the model's chat template on request, stopping on EOS and on user stop strings;
* TransformerLens hooks active on the prompt and on every generated token, the same
  for every row (``hooks``) or per row (``row_hooks``: the hook also receives the
  indices of the requests in the current batch, so a steering sweep can give each
  row its own coefficient). Hooks are always removed afterwards.

**Batch invariance.** Float addition is not associative, and kernels pick their
reduction order by shape, so a prompt's logits in a batch of 1 and of 32 differ in
the last bits; near-ties then flip the argmax. ``deterministic=True`` implements
decode–verify–rollback (after LLM-42): the batched KV-cached fast path proposes up to
``verify_every`` (W) tokens per request; a verifier with its *own* KV cache checks
them in *fixed-shape* forward passes and the output is the verifier's, whatever the
batch size or the other prompts:

* every verifier pass has ``verify_batch`` rows (missing rows copy the first one), a
  fixed query length, and a past of ``span`` key/value slots, where ``span`` depends
  only on the request (its prompt length, ``max_new_tokens`` and W, rounded up by
  :func:`verifier_span`): requests are only stacked with requests of the same span.
  A request's cache is left-aligned (slot = position), the unfilled slots are masked;
  masked keys get exactly zero weight, so a pass's result for a row depends only on
  that row's tokens;
* the token sequence (prompt + output) is cut into blocks at fixed positions: the
  prompt's full blocks are filled in chunks of :data:`_PREFILL_CHUNK` tokens, then
  each W-token block ``[cW, (c+1)W)`` is fed in one pass whose logits verify the
  tokens at ``cW+1 … (c+1)W``. Because the cut depends only on the request, every
  verified token is computed at the same place of the same shape, whatever happened
  to the request before (a rollback never shifts a window);
* windows of several requests are verified together. Candidates are accepted up to
  the first mismatch and the verifier's token replaces it; the fast path's cache
  slots for rejected tokens are masked out. A block's keys/values enter the
  verifier's cache only once all its tokens are verified (the cache is thus always
  the "last verified" state a rollback resumes from); until then the next round
  proposes the rest of the same block and the block is fed again;
* ``verify_every=1``: no proposals, the verifier decodes alone, one fixed-shape pass
  (``verify_batch`` rows × 1 token) per step.

Cost: each token is fed to the verifier about once (plus re-feeds after rollbacks),
instead of the whole sequence every W tokens. The default W = 16 (with 16 verifier
rows) came out cheapest of W = 1, 4, 8, 16, 32 on this CPU at 16 and 64 new tokens
(bench/README.md); the best W depends on the hardware: re-measure with
``bench/generate.py --cost-only --sweep-w 1,4,8,32``.

``inject_batch_noise=EPS`` adds to the logits a tiny perturbation that is a fixed
function of the forward pass's shape, as a GPU kernel's reduction order is. It is a
testing aid: it makes plain batching diverge on a CPU, where it rarely does by
itself, while the verifier (one fixed shape per request) stays consistent.
"""

from __future__ import annotations

import contextvars
import hashlib
import numbers
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import torch
from torch import Tensor
from transformers.cache_utils import DynamicCache, DynamicLayer

from interp.errors import InterpError
from interp.models.forward import runner_for
from interp.models.loading import Model
from interp.profiling import session as profiling
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import (
    Check,
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    in_range,
    json_field,
    non_negative,
    seed_range,
    setting,
)
from interp.schema.convert import fields_data

#: During each forward pass of :func:`generate`: the request index (into ``prompts``)
#: of every row of the batch, as a LongTensor. Hooks registered outside ``generate``
#: (e.g. :func:`interp.steering.vectors.steer` with per-row coefficients) read it; it is
#: ``None`` outside generation.
current_rows: contextvars.ContextVar[Tensor | None] = contextvars.ContextVar(
    "interp_current_rows", default=None
)

#: During each forward pass of :func:`generate`: a bool tensor ``[batch, seq]`` over the
#: pass's input positions, True where the token was generated (False for the prompt).
#: ``None`` outside generation. Used by ``steer(..., positions=...)``.
current_generated: contextvars.ContextVar[Tensor | None] = contextvars.ContextVar(
    "interp_current_generated", default=None
)

Hook = tuple[str, Callable[..., Any]]
#: ``(hook_name, fn(tensor, hook, rows))``: ``rows`` holds the request index of each row.
RowHook = tuple[str, Callable[..., Any]]


def _saying(check: Check, what: str) -> Check:
    """``check`` whose message also names the setting in words (``"top-p"``), so that the
    library's field name and the CLI's flag both read clearly in the one error line."""
    return replace(check, problem=f"{check.problem} ({what})")


_NON_EMPTY_STRINGS = Check(lambda xs: all(isinstance(s, str) and s for s in xs),
                           "strings must not be empty")


@dataclass(frozen=True)
class GenerationConfig(Config):
    """Settings of one :func:`generate` call (serialised with every result).

    ``interp generate`` derives its options from these fields; ``seed`` and
    ``batch_size`` come from the model options, and ``verify_batch``, ``use_cache`` and
    ``return_logprobs`` are Python-only.
    """

    max_new_tokens: int = setting(64, check=_saying(at_least(1), "max new tokens per prompt"),
                                  help="At most this many new tokens per prompt.",
                                  cli=Cli(range=False))
    temperature: float = setting(0.0, check=non_negative,
                                 help="0 = greedy; otherwise sampling with top-p.")
    top_p: float = setting(1.0, check=_saying(in_range(0, 1, open_low=True),
                                              "the top-p probability mass kept"),
                           help="Top-p (nucleus) sampling: keep the most likely tokens up to "
                                "this probability mass.")
    seed: int = setting(0, check=seed_range, cli=False, help="Keys the per-request random streams.")
    stop: tuple[str, ...] = setting((), check=_NON_EMPTY_STRINGS,
                                    help="Stop string (repeatable); the text is cut before "
                                         "the first one.")
    chat: bool = setting(False, help="Wrap prompts in the model's chat template.")
    batch_size: int = setting(16, cli=False,
                              check=_saying(at_least(1), "the batch size, in requests"),
                              help="Requests decoded together on the fast path.")
    deterministic: bool = setting(False, help="Decode-verify-rollback: outputs independent "
                                              "of batch size.")
    #: W, from a sweep of W = 1, 4, 8, 16, 32 on a CPU (bench/README.md).
    verify_every: int = setting(16, check=at_least(1),
                                help="With --deterministic: tokens proposed per request "
                                "between verifications (1: the fixed-shape verifier "
                                "decodes alone).", cli=Cli(range=False))
    verify_batch: int = setting(16, cli=False, check=at_least(1),
                                help="Rows in every verifier pass (a fixed shape, whatever "
                                     "the batch size: missing rows are computed and "
                                     "discarded).")
    use_cache: bool = setting(True, cli=False,
                              help="KV cache on (off recomputes every step; same output, "
                                   "slower).")
    return_logprobs: bool = setting(False, cli=False,
                                    help="Also return each generated token's log-probability "
                                         "(natural log, under the temperature-1 "
                                         "distribution).")
    inject_batch_noise: float = setting(
        0.0, check=_saying(non_negative, "the inject-batch-noise testing aid"),
        help="Testing aid: perturb logits by a fixed function of the batch shape.")

    def __post_init__(self) -> None:
        # the keyword form takes what Python callers pass: a list of stop strings, an int
        # temperature, numpy integers
        for name in ("temperature", "top_p", "inject_batch_noise"):
            value = getattr(self, name)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))
        for name in ("max_new_tokens", "seed", "batch_size", "verify_every", "verify_batch"):
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))
        if isinstance(self.stop, list):
            object.__setattr__(self, "stop", tuple(self.stop))
        super().__post_init__()


@dataclass
class Generation:
    """One prompt's continuation. ``text`` excludes the prompt and any stop string."""

    index: int
    prompt: str
    text: str
    token_ids: list[int]
    stop_reason: str  # "eos" | "stop" | "length"
    logprobs: list[float] | None = None


@dataclass
class GenerationStats:
    """What the engine did: tokens, forward passes and the verifier's bookkeeping."""

    prompts: int = 0
    new_tokens: int = 0
    seconds: float = 0.0
    forward_passes: int = 0
    tokens_verified: int = 0
    rollbacks: int = 0
    regenerated_tokens: int = 0
    verifier_passes: int = 0

    @property
    def tokens_per_second(self) -> float:
        """New tokens per second of wall time (0 when no time was measured)."""
        return self.new_tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass
class GenerationResult(Result):
    """Generations in prompt order, with stats, the config that made them and the run's
    manifest (``results.json`` of ``interp generate``)."""

    generations: list[Generation]
    stats: GenerationStats
    config: GenerationConfig
    model_id: str = json_field("", key="model")

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = ("model", "config", "stats", "generations")

    @property
    def texts(self) -> list[str]:
        """The generated texts, in prompt order."""
        return [g.text for g in self.generations]

    def extra_data(self) -> dict[str, Any]:
        """The stats with their derived rate (``stats.tokens_per_second``)."""
        return {"stats": {**fields_data(self.stats),
                          "tokens_per_second": self.stats.tokens_per_second}}

    def headline(self) -> Headline:
        """One row per prompt: index, prompt, text, stop reason, number of tokens."""
        st = self.stats
        return Headline(
            title="generations",
            rows=[("model", self.model_id), ("prompts", st.prompts),
                  ("new tokens", st.new_tokens), ("tokens / s", round(st.tokens_per_second, 1))],
            columns=["index", "prompt", "text", "stop_reason", "n_tokens"],
            table=[[g.index, g.prompt, g.text, g.stop_reason, len(g.token_ids)]
                   for g in self.generations])


# --------------------------------------------------------------------- sampling
def _request_key(seed: int, prompt: str, occurrence: int) -> int:
    h = hashlib.sha256(f"{seed}\0{occurrence}\0{prompt}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def _uniform(key: int, step: int) -> float:
    """A uniform number in [0, 1) fixed by (request key, step)."""
    h = hashlib.sha256(f"{key}:{step}".encode()).digest()
    return int.from_bytes(h[:7], "little") / float(1 << 56)


def select_token(logits: Tensor, temperature: float, top_p: float, u: float) -> int:
    """Greedy argmax (temperature 0) or top-p sampling by inverse CDF at ``u``.

    ``logits``: float [vocab]. Deterministic given ``u``.
    """
    if temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    cum = torch.cumsum(sorted_p, 0)
    keep = (cum - sorted_p) < top_p
    keep[0] = True
    kept = sorted_p * keep
    cdf = torch.cumsum(kept / kept.sum(), 0)
    idx = int(torch.searchsorted(cdf, torch.tensor([u], dtype=cdf.dtype)).clamp(max=len(cdf) - 1))
    return int(order[idx])


def batch_noise(shape_key: tuple[int, int], vocab: int, eps: float, device: Any) -> Tensor:
    """The injected fault: a fixed function of a forward pass's (batch, length) shape."""
    g = torch.Generator().manual_seed(1_000_003 * shape_key[0] + shape_key[1])
    return (eps * torch.randn(vocab, generator=g)).to(device)


# ------------------------------------------------------------------------ engine
@dataclass
class _Row:
    """Generation state of one request."""

    index: int
    prompt_ids: list[int]
    key: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    done: bool = False
    stop_reason: str = "length"
    text: str | None = None


#: A request's verifier past (``span``) is rounded up to a multiple of this, so that
#: requests of similar lengths share a shape and are verified together (longer pasts to a
#: coarser step: :func:`verifier_span`). Attention over the padded slots is cheap next to
#: the MLPs at these lengths.
_SPAN_GRANULE = 32


def verifier_span(past: int) -> int:
    """The verifier past of a request whose passes need ``past`` slots: ``past`` rounded up
    to a multiple of 32, or, once it is longer than 255, of a quarter of the largest power
    of two under it (64 from 256, 128 from 512, …): at most a quarter of the slots padding.

    Every verifier pass has ``verify_batch`` rows, real or not, and only requests of one
    span share a pass. With a fixed step of 32, prompts of a few hundred tokens of spread
    lengths (an explainer's contexts) each had a span of their own, and each of their
    prefill passes computed ``verify_batch − 1`` rows for nothing. The padded slots cost
    attention only: about ``span / 3,000`` of a layer's multiply-adds per query token on the
    embedded models, so a quarter more of that at most. It depends on the request alone,
    as batch invariance needs."""
    step = max(_SPAN_GRANULE, (1 << (max(past, 1).bit_length() - 1)) // 4)
    return -(-past // step) * step


#: Query length of the verifier's prompt-prefill passes.
_PREFILL_CHUNK = 32
#: ``"kv"``: the KV-cached verifier. ``"full"``: the previous verifier, which re-reads
#: prompt + output in one right-padded pass per window (kept for bench/generate.py's
#: before/after comparison only).
_VERIFIER = "kv"


@dataclass
class _VState:
    """The verifier's own KV cache of one request (filled by fixed-shape passes only)."""

    span: int  # past slots every verifier pass of this request sees
    prefill_end: int  # prompt positions [0, prefill_end) are filled by prefill chunks
    kv: Tensor  # [n_layers, 2 (keys, values), kv_heads, span, d_head]
    filled: int = 0  # positions [0, filled) hold verified keys/values


class _PassLayer(DynamicLayer):
    """One layer's KV cache for one verifier pass: a preallocated ``[rows, kv_heads,
    span + width, d_head]`` buffer whose first ``span`` slots hold the past; the pass
    writes its new keys/values after them in place (no concatenation, no copy of the
    past). Saves two copies of the past per pass next to a ``DynamicCache`` (measured:
    a W=1 pass at span 96 spent ~1/3 of its time copying)."""

    def __init__(self, keys: Tensor, values: Tensor, span: int) -> None:
        super().__init__()
        self.buf_k, self.buf_v, self.span, self.written = keys, values, span, 0
        self.keys, self.values = keys, values
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True

    def update(
        self, key_states: Tensor, value_states: Tensor, *args: Any, **kwargs: Any,
    ) -> tuple[Tensor, Tensor]:
        n = key_states.shape[-2]
        self.buf_k[..., self.span : self.span + n, :] = key_states
        self.buf_v[..., self.span : self.span + n, :] = value_states
        self.written = n
        return self.buf_k, self.buf_v

    def get_seq_length(self) -> int:
        return self.span

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.span + query_length, 0


class _Engine:
    def __init__(
        self, model: Model, cfg: GenerationConfig, hooks: Sequence[Hook],
        row_hooks: Sequence[RowHook], stats: GenerationStats,
    ) -> None:
        self.model = model
        self.cfg = cfg
        self.hooks = list(hooks)
        self.row_hooks = list(row_hooks)
        self.stats = stats
        tok = model.tokenizer
        self.pad_id = int(tok.pad_token_id)
        eos = {tok.eos_token_id}
        for special in ("<|endoftext|>", "<|im_end|>", "<|eot_id|>"):
            tid = tok.convert_tokens_to_ids(special)
            if isinstance(tid, int) and tid != tok.unk_token_id:
                eos.add(tid)
        self.eos = {int(t) for t in eos if t is not None}
        self.full_verifier = _VERIFIER == "full"
        self.vstates: dict[int, _VState] = {}

    # -- one forward pass with hooks bound to the rows of this batch
    def _forward(
        self, ids: Tensor, mask: Tensor, rows: Tensor, generated: Tensor, cache: Any = None,
        *, use_cache: bool = True,
    ) -> tuple[Tensor, Any]:
        with profiling.phase("forward"):
            return self._forward_pass(ids, mask, rows, generated, cache, use_cache=use_cache)

    def _forward_pass(
        self, ids: Tensor, mask: Tensor, rows: Tensor, generated: Tensor, cache: Any = None,
        *, use_cache: bool = True,
    ) -> tuple[Tensor, Any]:
        """Logits (float32) and, with ``use_cache``, the extended KV cache.

        ``rows`` (request indices) and ``generated`` (which input positions were
        generated) are published through :data:`current_rows` / :data:`current_generated`
        for hooks registered outside :func:`generate`.
        """
        token, gtoken = current_rows.set(rows), current_generated.set(generated)
        profiling.step()  # one decoding (or prefill) pass: a profiler step
        try:
            # the plain HF model where that is exact, hooks routed (interp/models/forward.py)
            runner = runner_for(self.model.bridge)
            fwd = list(self.hooks)
            for name, fn in self.row_hooks:
                fwd.append((name, lambda t, hook, _fn=fn: _fn(t, hook, rows)))
            hooked = self.model.bridge.hooks(fwd_hooks=fwd) if fwd else nullcontext()
            with torch.no_grad(), hooked:
                logits, cache = runner.forward(ids, mask, cache, use_cache=use_cache)
            return logits.float(), cache
        finally:
            current_rows.reset(token)
            current_generated.reset(gtoken)

    def _noisy(self, logits: Tensor, shape_key: tuple[int, int]) -> Tensor:
        if self.cfg.inject_batch_noise > 0:
            logits = logits + batch_noise(
                shape_key, logits.shape[-1], self.cfg.inject_batch_noise, logits.device
            )
        return logits

    def _choose(self, row: _Row, logits: Tensor, step: int) -> tuple[int, float]:
        u = _uniform(row.key, step) if self.cfg.temperature > 0 else 0.0
        t = select_token(logits, self.cfg.temperature, self.cfg.top_p, u)
        lp = float(torch.log_softmax(logits, -1)[t]) if self.cfg.return_logprobs else 0.0
        return t, lp

    # -- stopping
    def _finish_if_done(self, row: _Row) -> None:
        cfg = self.cfg
        for i, t in enumerate(row.tokens):
            if t in self.eos:
                row.tokens, row.logprobs = row.tokens[: i + 1], row.logprobs[: i + 1]
                row.done, row.stop_reason = True, "eos"
                break
        if cfg.stop and not row.done:
            text = self.model.tokenizer.decode(row.tokens, skip_special_tokens=False)
            hits = [text.find(s) for s in cfg.stop if s in text]
            if hits:
                cut = min(hits)
                # keep the tokens up to the one that completed the stop string
                for n in range(1, len(row.tokens) + 1):
                    part = self.model.tokenizer.decode(row.tokens[:n], skip_special_tokens=False)
                    if any(s in part for s in cfg.stop):
                        row.tokens, row.logprobs = row.tokens[:n], row.logprobs[:n]
                        break
                row.done, row.stop_reason, row.text = True, "stop", text[:cut]
        if not row.done and len(row.tokens) >= cfg.max_new_tokens:
            row.tokens = row.tokens[: cfg.max_new_tokens]
            row.logprobs = row.logprobs[: cfg.max_new_tokens]
            row.done, row.stop_reason = True, "length"

    # -- the fast path: propose up to `steps` tokens for each row of a batch
    def run_batch(self, rows: list[_Row]) -> None:
        cfg = self.cfg
        if cfg.deterministic and cfg.verify_every == 1 and not self.full_verifier:
            self.decode_verifier(rows)
            return
        dev = self.model.device
        width = max(len(r.prompt_ids) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids)
            mask[i, width - len(r.prompt_ids):] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        full_ids = ids  # every token fed so far (for use_cache=False)
        active = list(range(len(rows)))  # positions in the cache of still-active rows
        cache = None
        pending = ids  # tokens to feed next
        kv_verifier = cfg.deterministic and not self.full_verifier
        window = cfg.verify_every if cfg.deterministic else cfg.max_new_tokens
        if kv_verifier:
            self.prefill_verifier(rows)
        while active:
            # propose up to `window` candidates per active row
            cands: dict[int, list[int]] = {i: [] for i in active}
            lps: dict[int, list[float]] = {i: [] for i in active}
            fed_this_round: list[Tensor] = []
            budget = {i: cfg.max_new_tokens - len(rows[i].tokens) for i in active}
            if kv_verifier:  # up to the end of the verifier's current block
                budget = {i: min(b, self._block_room(rows[i])) for i, b in budget.items()}
            n_steps = min(window, max(budget.values()))
            for step in range(n_steps):
                sub_rows = torch.tensor([rows[i].index for i in active])
                self.stats.forward_passes += 1
                if cfg.use_cache:
                    # the first pass feeds the prompts; every later one generated tokens
                    gen = torch.full(pending.shape, cache is not None, dtype=torch.bool,
                                     device=dev)
                    logits, cache = self._forward(pending, mask, sub_rows, gen, cache)
                else:
                    gen = (torch.arange(full_ids.shape[1], device=dev) >= width).expand(
                        full_ids.shape[0], -1)
                    logits, _ = self._forward(full_ids, mask, sub_rows, gen, use_cache=False)
                last = self._noisy(logits[:, -1], (len(active), mask.shape[1]))
                nxt = []
                for j, i in enumerate(active):
                    r = rows[i]
                    if len(cands[i]) < budget[i] and not (cands[i] and cands[i][-1] in self.eos):
                        t, lp = self._choose(r, last[j], len(r.tokens) + len(cands[i]))
                        cands[i].append(t)
                        lps[i].append(lp)
                    else:
                        t = self.pad_id
                    nxt.append(t)
                if step == n_steps - 1:
                    break
                pending = torch.tensor(nxt, device=dev).unsqueeze(1)
                fed_this_round.append(pending)
                full_ids = torch.cat([full_ids, pending], 1)
                mask = torch.cat([mask, torch.ones_like(pending)], 1)
            # A row whose candidates stopped early fed its last candidate, then pads: mask
            # those slots out (the last candidate is fed as the next round's first input).
            for k in range(len(fed_this_round)):
                col = mask.shape[1] - len(fed_this_round) + k
                for j, i in enumerate(active):
                    if k >= len(cands[i]) - 1:
                        mask[j, col] = 0
            if cfg.deterministic:
                verify = self.verify_full if self.full_verifier else self.verify
                accepted = verify(rows, active, cands)
                # mask out the fed slots of rejected candidates (rollback)
                for j, i in enumerate(active):
                    n_fed = len(fed_this_round)
                    for k in range(accepted[i], n_fed):
                        mask[j, mask.shape[1] - n_fed + k] = 0
            else:
                for i in active:
                    rows[i].tokens += cands[i]
                    rows[i].logprobs += lps[i]
            for i in active:
                self._finish_if_done(rows[i])
                if rows[i].done:
                    self.vstates.pop(rows[i].index, None)
            keep = [j for j, i in enumerate(active) if not rows[i].done]
            if not keep:
                break
            # Next input: each row's last verified token. It was never fed: it is either
            # the final candidate of the round or the verifier's replacement token.
            last_tok = torch.tensor([[rows[active[j]].tokens[-1]] for j in keep], device=dev)
            if cfg.deterministic or len(keep) < len(active):
                sel = torch.tensor(keep, device=dev)
                mask, full_ids = mask[sel], full_ids[sel]
                if cache is not None:
                    cache.batch_select_indices(sel)
                active = [active[j] for j in keep]
            pending = last_tok
            full_ids = torch.cat([full_ids, pending], 1)
            mask = torch.cat([mask, torch.ones_like(pending)], 1)

    # -- the verifier (see the module docstring)
    def _vstate(self, row: _Row) -> _VState:
        """The request's verifier state, created on first use."""
        st = self.vstates.get(row.index)
        if st is None:
            w = self.cfg.verify_every
            n_prompt = len(row.prompt_ids)
            # the last position ever fed: it predicts the last of max_new_tokens tokens
            last_start = (n_prompt + self.cfg.max_new_tokens - 2) // w * w
            # > last_start: a pass's past always ends on masked slots, so its mask is never
            # all ones (HF would then drop the mask and run another kernel)
            span = verifier_span(last_start + 1)
            n_layers, two, kv_heads, d_head = self._kv_layout()
            st = _VState(span=span, prefill_end=(n_prompt - 1) // w * w,
                         kv=torch.zeros((n_layers, two, kv_heads, span, d_head),
                                        dtype=self.model.dtype, device=self.model.device))
            self.vstates[row.index] = st
        return st

    def _kv_layout(self) -> tuple[int, int, int, int]:
        """(layers, 2, kv heads, head dim) of the model's KV cache."""
        c = self.model.bridge.cfg
        kv_heads = getattr(c, "n_key_value_heads", None) or c.n_heads
        return int(self.model.n_layers), 2, int(kv_heads), int(c.d_head)

    def _block_room(self, row: _Row) -> int:
        """Tokens the verifier's current block can still check for ``row`` (1 … W)."""
        st = self._vstate(row)
        verified = len(row.prompt_ids) + len(row.tokens)
        return st.filled + self.cfg.verify_every - verified + 1

    def _verifier_pass(
        self, span: int, width: int, items: list[tuple[_Row, int, list[int]]],
    ) -> tuple[Tensor, Tensor]:
        """One fixed-shape pass: ``verify_batch`` rows × ``width`` new tokens over a
        ``span``-slot past. ``items``: (row, first position, its tokens ≤ width).

        Returns the (noisy) logits ``[verify_batch, width, vocab]`` and the pass's new
        keys/values ``[layers, 2, verify_batch, kv_heads, width, d_head]``.
        """
        vb = self.cfg.verify_batch
        dev = self.model.device
        ids = torch.full((vb, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((vb, span + width), dtype=torch.long)
        mask[:, span:] = 1  # the new tokens (right padding is after every real one)
        gen = torch.zeros((vb, width), dtype=torch.bool)
        n_layers, _, kv_heads, d_head = self._kv_layout()
        # one buffer for the pass: each row's past, then room for the new keys/values
        buf = torch.empty((n_layers, 2, vb, kv_heads, span + width, d_head),
                          dtype=self.model.dtype, device=dev)
        req = []
        for j in range(vb):
            row, start, toks = items[j] if j < len(items) else items[0]  # dummies copy row 0
            ids[j, : len(toks)] = torch.tensor(toks, dtype=torch.long)
            mask[j, :start] = 1
            gen[j] = torch.arange(start, start + width) >= len(row.prompt_ids)
            req.append(row.index)
            buf[:, :, j, :, :span] = self.vstates[row.index].kv
        cache = DynamicCache()
        cache.layers.extend(_PassLayer(buf[i, 0], buf[i, 1], span) for i in range(n_layers))
        logits, cache = self._forward(ids.to(dev), mask.to(dev), torch.tensor(req),
                                      gen.to(dev), cache)
        self.stats.verifier_passes += 1
        if any(layer.written != width for layer in cache.layers):
            raise InterpError("deterministic generation: the model did not fill the "
                              "verifier's KV cache as expected")
        return self._noisy(logits, (vb, span + width)), buf[..., span:, :]

    @staticmethod
    def _commit(st: _VState, new: Tensor, j: int, start: int, n: int) -> None:
        """Store row ``j``'s first ``n`` new keys/values at positions ``start …``."""
        st.kv[:, :, :, start : start + n] = new[:, :, j, :, :n]
        st.filled = start + n

    def _span_chunks(
        self, rows: list[_Row], order: Callable[[_Row], int] | None = None,
    ) -> Iterator[tuple[int, list[_Row]]]:
        """``(span, up to verify_batch rows)`` for one verifier pass each: requests are
        stacked only with requests of the same span (smallest span first), in ``rows``'
        order or sorted by ``order`` within a span."""
        by_span: dict[int, list[_Row]] = {}
        for r in rows:
            by_span.setdefault(self._vstate(r).span, []).append(r)
        vb = self.cfg.verify_batch
        for span, members in sorted(by_span.items()):
            if order is not None:
                members.sort(key=order)
            for s in range(0, len(members), vb):
                yield span, members[s : s + vb]

    def prefill_verifier(self, rows: list[_Row]) -> None:
        """Fill each request's verifier cache with its prompt's full W-blocks, in
        fixed-size chunks (a request's chunk boundaries depend only on its prompt)."""
        todo = [r for r in rows if self._vstate(r).filled < self.vstates[r.index].prefill_end]
        while todo:
            # the longest prompts first: they need the most passes
            def left(r: _Row) -> int:
                return self.vstates[r.index].filled - self.vstates[r.index].prefill_end

            for span, chunk in self._span_chunks(todo, left):
                items = []
                for r in chunk:
                    st = self.vstates[r.index]
                    end = min(st.filled + _PREFILL_CHUNK, st.prefill_end)
                    items.append((r, st.filled, r.prompt_ids[st.filled : end]))
                _, new = self._verifier_pass(span, _PREFILL_CHUNK, items)
                for j, (r, start, toks) in enumerate(items):
                    self._commit(self.vstates[r.index], new, j, start, len(toks))
            todo = [r for r in todo
                    if self.vstates[r.index].filled < self.vstates[r.index].prefill_end]

    def verify(
        self, rows: list[_Row], active: list[int], cands: dict[int, list[int]],
    ) -> dict[int, int]:
        """Check candidates against the KV-cached verifier; extend ``rows[i].tokens``.

        Each request's candidates lie in its current block (see :meth:`_block_room`):
        one pass per ``verify_batch`` requests of the same span. Returns, per row, how
        many candidates were accepted.
        """
        w = self.cfg.verify_every
        accepted: dict[int, int] = {}
        slot = {rows[i].index: i for i in active}
        for span, chunk in self._span_chunks([rows[i] for i in active]):
            items = []
            for r in chunk:
                st = self.vstates[r.index]
                seq = r.prompt_ids + r.tokens + cands[slot[r.index]][:-1]
                items.append((r, st.filled, seq[st.filled : st.filled + w]))
            logits, new = self._verifier_pass(span, w, items)
            for j, r in enumerate(chunk):
                i, st = slot[r.index], self.vstates[r.index]
                base = len(r.prompt_ids) + len(r.tokens) - 1 - st.filled
                accepted[i] = self._accept(r, cands[i], logits[j, base:])
                # all W inputs verified: the block enters the cache, the next starts
                verified = len(r.prompt_ids) + len(r.tokens)
                if verified > st.filled + w and st.filled + w <= st.span:
                    self._commit(st, new, j, st.filled, w)
        return accepted

    def decode_verifier(self, rows: list[_Row]) -> None:
        """``verify_every=1``: no proposals, the verifier decodes alone, one fixed-shape
        pass (``verify_batch`` rows × 1 token) per step and span group.

        Each pass feeds a request's last verified token; its logits give the next one,
        which is final. On a CPU, where decode is compute-bound, this costs about what
        plain batched decoding does, while proposing and then verifying computes every
        token twice (bench/README.md).
        """
        self.prefill_verifier(rows)  # with W = 1 the prefill stops before the last prompt token
        active = list(rows)
        while active:
            for span, chunk in self._span_chunks(active):
                items = []
                for r in chunk:
                    st = self.vstates[r.index]
                    items.append((r, st.filled, [(r.prompt_ids + r.tokens)[st.filled]]))
                logits, new = self._verifier_pass(span, 1, items)
                self.stats.forward_passes += 1
                for j, r in enumerate(chunk):
                    st = self.vstates[r.index]
                    t, lp = self._choose(r, logits[j, 0], len(r.tokens))
                    self.stats.tokens_verified += 1
                    r.tokens.append(t)
                    r.logprobs.append(lp)
                    if st.filled + 1 <= st.span:
                        self._commit(st, new, j, st.filled, 1)
                    self._finish_if_done(r)
            for r in active:
                if r.done:
                    self.vstates.pop(r.index, None)
            active = [r for r in active if not r.done]

    def _accept(self, r: _Row, cands: list[int], logits: Tensor) -> int:
        """Compare ``cands`` with the verifier's choices from ``logits`` (one row per
        candidate); append the verified tokens (the replacement included) to ``r``."""
        a = 0
        new_tokens, new_lps = [], []
        for k, c in enumerate(cands):
            t, lp = self._choose(r, logits[k], len(r.tokens) + k)
            self.stats.tokens_verified += 1
            new_tokens.append(t)
            new_lps.append(lp)
            if t != c:
                self.stats.rollbacks += 1
                self.stats.regenerated_tokens += len(cands) - k
                break
            a += 1
        r.tokens += new_tokens
        r.logprobs += new_lps
        return a

    # -- the previous verifier (``_VERIFIER = "full"``): the whole sequence, every window
    def _bucket(self, row: _Row) -> int:
        n = len(row.prompt_ids) + self.cfg.max_new_tokens
        return -(-n // 16) * 16

    def verify_full(
        self, rows: list[_Row], active: list[int], cands: dict[int, list[int]],
    ) -> dict[int, int]:
        """Check candidates against the fixed-shape verifier; extend ``rows[i].tokens``.

        Returns, per row, how many candidates were accepted.
        """
        cfg = self.cfg
        dev = self.model.device
        accepted: dict[int, int] = {}
        by_bucket: dict[int, list[int]] = {}
        for i in active:
            by_bucket.setdefault(self._bucket(rows[i]), []).append(i)
        for bucket, members in sorted(by_bucket.items()):
            for s in range(0, len(members), cfg.verify_batch):
                chunk = members[s : s + cfg.verify_batch]
                ids = torch.full((cfg.verify_batch, bucket), self.pad_id, dtype=torch.long)
                mask = torch.zeros((cfg.verify_batch, bucket), dtype=torch.long)
                gen = torch.zeros((cfg.verify_batch, bucket), dtype=torch.bool)
                req = []
                for j in range(cfg.verify_batch):
                    i = chunk[j] if j < len(chunk) else chunk[0]  # dummy rows copy row 0
                    r = rows[i]
                    seq = r.prompt_ids + r.tokens + cands[i][:-1]
                    ids[j, : len(seq)] = torch.tensor(seq)
                    mask[j, : len(seq)] = 1
                    gen[j, len(r.prompt_ids):] = True
                    req.append(r.index)
                logits, _ = self._forward(ids.to(dev), mask.to(dev), torch.tensor(req),
                                          gen.to(dev), use_cache=False)
                logits = self._noisy(logits, (cfg.verify_batch, bucket))
                self.stats.verifier_passes += 1
                for j, i in enumerate(chunk):
                    r = rows[i]
                    base = len(r.prompt_ids) + len(r.tokens) - 1
                    accepted[i] = self._accept(r, cands[i], logits[j, base:])
        return accepted


def _check_memory(model: Model, cfg: GenerationConfig, rows: Sequence[_Row]) -> None:
    """Refuse (one line, before the first pass) a request whose logits would not fit.

    A pass holds float32 logits over the vocabulary for each row and position fed: the
    longest prompt at prefill, every position without the KV cache or in the verifier's
    passes (``verify_batch`` rows); the cache itself is ``2 · n_layers`` tensors of
    ``d_model`` per position and row.
    """
    from interp.runs.memory import FLOAT32, logits_bytes, require

    batch = min(cfg.batch_size, len(rows))
    total = max(len(r.prompt_ids) for r in rows) + cfg.max_new_tokens
    positions = total if (cfg.deterministic or not cfg.use_cache) else total - cfg.max_new_tokens
    fed = max(batch, cfg.verify_batch if cfg.deterministic else 0)
    need = (logits_bytes(fed, positions, model.d_vocab)
            + 2 * model.n_layers * fed * total * model.d_model * FLOAT32)
    require(need, f"generating in batches of {batch} rows of up to {total} tokens over a "
            f"{model.d_vocab:,}-token vocabulary", "lower batch_size or max_new_tokens",
            device=model.device)


def generate(
    model: Model,
    prompts: Sequence[str] | str,
    config: GenerationConfig | None = None,
    *,
    hooks: Sequence[Hook] = (),
    row_hooks: Sequence[RowHook] = (),
    progress: bool | None = None,
    **settings: Any,
) -> GenerationResult:
    """Generate continuations for ``prompts`` (see the module docstring).

    Settings come from ``config`` or, equally, from keyword arguments named as the fields
    of :class:`GenerationConfig` (``generate(model, prompts, max_new_tokens=16,
    temperature=0.7)``, as with Hugging Face's ``generate``), not both; each field's help
    says what it does.

    Args:
        hooks: ``(hook_name, fn(tensor, hook))`` active for every row.
        row_hooks: ``(hook_name, fn(tensor, hook, rows))`` where ``rows`` is a
            LongTensor of request indices (into ``prompts``) of the batch's rows.
        progress: force the progress bar on/off.

    Returns:
        :class:`GenerationResult` with generations in prompt order and its manifest.
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise InterpError("no prompts to generate from")
    cfg = GenerationConfig.resolve(config, settings)
    for name, _ in [*hooks, *row_hooks]:
        if name not in model.bridge.hook_dict:
            raise InterpError(f"unknown hook point {name!r}")
    tok = model.tokenizer
    rows: list[_Row] = []
    seen: dict[str, int] = {}
    for i, p in enumerate(prompts):
        if not isinstance(p, str) or not p.strip():
            raise InterpError("empty prompt: give at least one non-blank character")
        with profiling.phase("tokenise"):
            text = model.format_prompt(p, cfg.chat)
            ids = model.encode(text)
        occurrence = seen.get(p, 0)
        seen[p] = occurrence + 1
        rows.append(_Row(index=i, prompt_ids=list(ids), key=_request_key(cfg.seed, text,
                                                                       occurrence)))
    _check_memory(model, cfg, rows)
    stats = GenerationStats(prompts=len(rows))
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].prompt_ids))
    batches = [order[s : s + cfg.batch_size] for s in range(0, len(order), cfg.batch_size)]
    start = time.perf_counter()
    bar = make_progress(enabled=progress, auto=len(batches) > 1)
    # the decoding loop: forward passes (a nested phase) and the sampling, stop checks
    # and bookkeeping between them
    with bar, profiling.phase("generate"):
        engine = _Engine(model, cfg, hooks, row_hooks, stats)
        task = bar.add_task("generating", total=len(rows), info="")
        for b in batches:
            engine.run_batch([rows[i] for i in b])
            bar.update(task, advance=len(b))
    stats.seconds = time.perf_counter() - start
    out = []
    for r in rows:
        text = r.text
        if text is None:
            text = tok.decode(
                [t for t in r.tokens if t not in engine.eos], skip_special_tokens=False
            )
        stats.new_tokens += len(r.tokens)
        out.append(
            Generation(
                index=r.index, prompt=prompts[r.index], text=text, token_ids=list(r.tokens),
                stop_reason=r.stop_reason,
                logprobs=list(r.logprobs) if cfg.return_logprobs else None,
            )
        )
    result = GenerationResult(out, stats, cfg, model.model_id)
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(),
                                     texts=list(prompts))
    return result
