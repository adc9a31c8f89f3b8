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
decode–verify–rollback (after LLM-42): the batched KV-cached fast path proposes
``verify_every`` tokens per request; a verifier recomputes them in a *fixed-shape*
forward pass (``verify_batch`` rows, right-padded to a length that depends only on
the request), whose result for a row depends only on that row's tokens. Candidates
are accepted up to the first mismatch, the verifier's token replaces the mismatch,
and the fast path's cache slots for the rejected tokens are masked out. The output
is then the verifier's, whatever the batch size or the other prompts.

``inject_batch_noise=EPS`` adds to the logits a tiny perturbation that is a fixed
function of the forward pass's shape, as a GPU kernel's reduction order is. It is a
testing aid: it makes plain batching diverge on a CPU, where it rarely does by
itself, while the verifier (one fixed shape per request) stays consistent.
"""

from __future__ import annotations

import contextvars
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.progress import make_progress

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


@dataclass
class GenerationConfig:
    """Settings of one :func:`generate` call (serialised with every result)."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()
    chat: bool = False
    batch_size: int = 16
    deterministic: bool = False
    verify_every: int = 8
    verify_batch: int = 8
    use_cache: bool = True
    return_logprobs: bool = False
    inject_batch_noise: float = 0.0

    def check(self) -> None:
        """Raise :class:`InterpError` with one line for an impossible setting."""
        import math

        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise InterpError(f"max new tokens must be ≥ 1, got {self.max_new_tokens}")
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise InterpError(f"temperature must be ≥ 0 and finite, got {self.temperature}")
        if not math.isfinite(self.top_p) or not 0 < self.top_p <= 1:
            raise InterpError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.batch_size < 1:
            raise InterpError(f"batch size must be ≥ 1, got {self.batch_size}")
        if self.verify_every < 1 or self.verify_batch < 1:
            raise InterpError("verify-every and verify-batch must be ≥ 1")
        if not math.isfinite(self.inject_batch_noise) or self.inject_batch_noise < 0:
            raise InterpError(
                f"inject-batch-noise must be ≥ 0 and finite, got {self.inject_batch_noise}"
            )
        if any(not s for s in self.stop):
            raise InterpError("stop strings must not be empty")


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
        return self.new_tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass
class GenerationResult:
    """Generations in prompt order, with stats and the config that made them."""

    generations: list[Generation]
    stats: GenerationStats
    config: GenerationConfig
    model_id: str = ""

    @property
    def texts(self) -> list[str]:
        return [g.text for g in self.generations]

    def to_frame(self) -> pd.DataFrame:
        """One row per prompt: index, prompt, text, stop reason, number of tokens."""
        return pd.DataFrame(
            [
                {"index": g.index, "prompt": g.prompt, "text": g.text,
                 "stop_reason": g.stop_reason, "n_tokens": len(g.token_ids)}
                for g in self.generations
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "config": asdict(self.config),
            "stats": {**asdict(self.stats), "tokens_per_second": self.stats.tokens_per_second},
            "generations": [asdict(g) for g in self.generations],
        }

    def _repr_html_(self) -> str:
        from interp.display import result_html

        st = self.stats
        rows: list[tuple[str, object]] = [
            ("model", self.model_id), ("prompts", st.prompts), ("new tokens", st.new_tokens),
            ("tokens / s", round(st.tokens_per_second, 1)),
        ]
        table = [[g.index, g.prompt, g.text, g.stop_reason, len(g.token_ids)]
                 for g in self.generations]
        return result_html("generations", rows, None,
                           columns=["#", "prompt", "continuation", "stop", "tokens"],
                           table=table)


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

    # -- one forward pass with hooks bound to the rows of this batch
    def _forward(
        self, ids: Tensor, mask: Tensor, rows: Tensor, generated: Tensor, cache: Any = None,
        *, use_cache: bool = True,
    ) -> tuple[Tensor, Any]:
        """Logits (float32) and, with ``use_cache``, the extended KV cache.

        ``rows`` (request indices) and ``generated`` (which input positions were
        generated) are published through :data:`current_rows` / :data:`current_generated`
        for hooks registered outside :func:`generate`.
        """
        fwd = list(self.hooks)
        for name, fn in self.row_hooks:
            fwd.append((name, lambda t, hook, _fn=fn: _fn(t, hook, rows)))
        token, gtoken = current_rows.set(rows), current_generated.set(generated)
        try:
            with torch.no_grad(), self.model.bridge.hooks(fwd_hooks=fwd):
                if not use_cache:
                    logits = self.model.bridge(ids, attention_mask=mask, return_type="logits")
                    return logits.float(), None
                logits, cache = self.model.bridge(
                    ids, attention_mask=mask, past_key_values=cache,
                    return_type="logits_and_cache", use_cache=True,
                )
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
        window = cfg.verify_every if cfg.deterministic else cfg.max_new_tokens
        while active:
            # propose up to `window` candidates per active row
            cands: dict[int, list[int]] = {i: [] for i in active}
            lps: dict[int, list[float]] = {i: [] for i in active}
            fed_this_round: list[Tensor] = []
            budget = {i: cfg.max_new_tokens - len(rows[i].tokens) for i in active}
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
            # a row whose candidates stopped early fed pads: mask those slots out
            for k in range(len(fed_this_round)):
                col = mask.shape[1] - len(fed_this_round) + k
                for j, i in enumerate(active):
                    if k >= len(cands[i]):
                        mask[j, col] = 0
            if cfg.deterministic:
                accepted = self.verify(rows, active, cands)
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

    # -- the verifier: fixed-shape, right-padded forward passes
    def _bucket(self, row: _Row) -> int:
        n = len(row.prompt_ids) + self.cfg.max_new_tokens
        return -(-n // 16) * 16

    def verify(
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
                    a = 0
                    new_tokens, new_lps = [], []
                    for k, c in enumerate(cands[i]):
                        t, lp = self._choose(r, logits[j, base + k], len(r.tokens) + k)
                        self.stats.tokens_verified += 1
                        new_tokens.append(t)
                        new_lps.append(lp)
                        if t != c:
                            self.stats.rollbacks += 1
                            self.stats.regenerated_tokens += len(cands[i]) - k
                            break
                        a += 1
                    r.tokens += new_tokens
                    r.logprobs += new_lps
                    accepted[i] = a
        return accepted


def generate(
    model: Model,
    prompts: Sequence[str] | str,
    *,
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    stop: Sequence[str] = (),
    chat: bool = False,
    batch_size: int = 16,
    deterministic: bool = False,
    verify_every: int = 8,
    verify_batch: int = 8,
    use_cache: bool = True,
    return_logprobs: bool = False,
    inject_batch_noise: float = 0.0,
    hooks: Sequence[Hook] = (),
    row_hooks: Sequence[RowHook] = (),
    progress: bool | None = None,
) -> GenerationResult:
    """Generate continuations for ``prompts`` (see the module docstring).

    Args:
        max_new_tokens: at most this many tokens per prompt.
        temperature: 0 for greedy; otherwise sampling with ``top_p``.
        seed: keys the per-request random streams.
        stop: stop strings; the text is cut before the first one.
        chat: wrap each prompt in the model's chat template.
        batch_size: requests decoded together on the fast path.
        deterministic: decode–verify–rollback; outputs then do not depend on
            ``batch_size`` or on the other prompts.
        verify_every: candidates proposed per request between verifications.
        verify_batch: rows in every verifier pass (a fixed shape).
        use_cache: KV cache on (off recomputes every step; same output, slower).
        return_logprobs: also return each generated token's log-probability
            (natural log, under the temperature-1 distribution).
        inject_batch_noise: testing aid, see the module docstring.
        hooks: ``(hook_name, fn(tensor, hook))`` active for every row.
        row_hooks: ``(hook_name, fn(tensor, hook, rows))`` where ``rows`` is a
            LongTensor of request indices (into ``prompts``) of the batch's rows.
        progress: force the progress bar on/off.

    Returns:
        :class:`GenerationResult` with generations in prompt order.
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise InterpError("no prompts to generate from")
    cfg = GenerationConfig(
        max_new_tokens=max_new_tokens, temperature=float(temperature), top_p=float(top_p),
        seed=int(seed), stop=tuple(stop), chat=chat, batch_size=int(batch_size),
        deterministic=deterministic, verify_every=int(verify_every),
        verify_batch=int(verify_batch), use_cache=use_cache, return_logprobs=return_logprobs,
        inject_batch_noise=float(inject_batch_noise),
    )
    cfg.check()
    for name, _ in [*hooks, *row_hooks]:
        if name not in model.bridge.hook_dict:
            raise InterpError(f"unknown hook point {name!r}")
    tok = model.tokenizer
    rows: list[_Row] = []
    seen: dict[str, int] = {}
    for i, p in enumerate(prompts):
        if not isinstance(p, str) or not p.strip():
            raise InterpError("empty prompt: give at least one non-blank character")
        text = model.format_prompt(p, chat)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        occurrence = seen.get(p, 0)
        seen[p] = occurrence + 1
        rows.append(_Row(index=i, prompt_ids=list(ids), key=_request_key(cfg.seed, text,
                                                                       occurrence)))
    stats = GenerationStats(prompts=len(rows))
    engine = _Engine(model, cfg, hooks, row_hooks, stats)
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].prompt_ids))
    batches = [order[s : s + cfg.batch_size] for s in range(0, len(order), cfg.batch_size)]
    start = time.perf_counter()
    bar = make_progress(enabled=progress if progress is not None else len(batches) > 1)
    with bar:
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
    return GenerationResult(out, stats, cfg, model.model_id)
