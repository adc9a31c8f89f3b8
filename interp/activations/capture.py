"""Every read of activations goes through here.

``capture(model, prompts, layers=[6])`` runs prompts through the model in
left-padded batches and returns the activations at the requested TransformerLens
hook points, reduced to the requested positions. It:

* keeps only the requested hook points (no full cache);
* stops the forward pass as soon as every requested hook has fired, so capturing
  layer 6 of a 30-layer model costs about 7/30 of a forward;
* masks padding correctly (left padding with position ids derived from the mask),
  so results do not depend on the batch size beyond float noise;
* sorts prompts by length before batching to waste less compute on padding, and
  returns rows in the caller's order;
* shows a progress bar on stderr for runs of more than one batch.

``iter_capture`` is the streaming form (one batch at a time) for runs that do not
fit in memory, such as SAE activation stores.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.display import ci_text
from interp.errors import InterpError
from interp.models.forward import forward
from interp.models.loading import Model
from interp.profiling.session import phase, step
from interp.runs.progress import make_progress
from interp.schema import (
    Check,
    Cli,
    Config,
    Headline,
    Result,
    at_least,
    json_field,
    positive,
    seed_range,
    setting,
)
from interp.schema.settings import Dtype

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Position = Literal["last", "all", "mean"] | int

_BLOCK = re.compile(r"^blocks\.(\d+)\.")


class _StopForward(Exception):
    """Raised inside a hook once every requested activation has been stored."""


@dataclass
class Activations:
    """Activations at one or more hook points for a list of prompts.

    ``acts[hook]`` is ``[n, d]`` for ``positions`` "last", "mean" or an int, and
    ``[n, pos, d]`` for "all". With "all", rows are left-aligned: ``acts[h][i, j]``
    is token ``j`` of prompt ``i`` and ``mask[i, j]`` says whether it is a real
    token (False for padding). ``input_ids`` follows the same layout.
    """

    acts: dict[str, Tensor]
    positions: Position
    prompts: list[str]
    lengths: Int[Tensor, " n"]
    input_ids: Int[Tensor, "n pos"]
    mask: Bool[Tensor, "n pos"]
    model_id: str
    logits: Tensor | None = None
    hook_points: list[str] = field(default_factory=list)

    def __getitem__(self, key: int | str) -> Tensor:
        """``acts[6]`` is layer 6's resid_post; ``acts["blocks.6.attn.hook_z"]`` any hook."""
        name = Model.resid_hook(key) if isinstance(key, int) else key
        try:
            return self.acts[name]
        except KeyError:
            raise InterpError(
                f"{name} was not captured; captured: {', '.join(self.acts)}"
            ) from None

    def __len__(self) -> int:
        return len(self.prompts)

    def flat(self, key: int | str) -> Float[Tensor, "tokens d"]:
        """For ``positions="all"``: the real tokens only, stacked ``[n_tokens, d]``."""
        if self.positions != "all":
            raise InterpError("flat() needs positions='all'")
        return self[key][self.mask]


def _hook_layer(name: str) -> int | None:
    m = _BLOCK.match(name)
    return int(m.group(1)) if m else None


def resolve_hooks(
    model: Model, hooks: Sequence[str] | str | None, layers: Sequence[int] | str | int | None
) -> list[str]:
    """Hook names from explicit ``hooks`` and/or ``layers`` (resid_post of each)."""
    names: list[str] = []
    if isinstance(hooks, str):
        hooks = [hooks]
    if layers is not None:
        names += [model.resid_hook(layer) for layer in model.parse_layers(layers)]
    for h in hooks or []:
        if h not in model.bridge.hook_dict:
            raise InterpError(
                f"unknown hook point {h!r} (e.g. blocks.0.hook_resid_post); "
                "see model.bridge.hook_dict"
            )
        layer = _hook_layer(h)
        if layer is not None:
            model.check_layer(layer)
        names.append(h)
    if not names:
        raise InterpError("nothing to capture: give hooks or layers")
    return list(dict.fromkeys(names))


def _reduce(
    x: Float[Tensor, "b pos *rest"],
    mask: Bool[Tensor, "b pos"],
    positions: Position,
    drop_first: bool,
) -> Tensor:
    """Reduce left-padded ``x`` to the requested positions (see :func:`capture`). ``x``
    may carry more dimensions after the position (``hook_z``: ``[b, pos, head, d_head]``)."""

    def per_position(t: Tensor) -> Tensor:  # [b, pos] → [b, pos, 1, …] to broadcast on x
        return t.reshape(*t.shape, *([1] * (x.dim() - 2)))

    lengths = mask.sum(1)
    b, p = mask.shape
    if drop_first:
        first = p - lengths  # index of the first real token under left padding
        mask = mask.clone()
        mask[torch.arange(b), first.clamp(max=p - 1)] = False
    if positions == "last":
        return x[:, -1]
    if positions == "mean":
        m = per_position(mask.to(x.dtype))
        return (x * m).sum(1) / m.sum(1).clamp(min=1)
    if positions == "all":
        # left-padded → left-aligned: roll each row so token 0 sits at index 0
        idx = (torch.arange(p, device=x.device).unsqueeze(0) + (p - lengths).unsqueeze(1)) % p
        out = torch.gather(x, 1, per_position(idx).expand(x.shape))
        keep = torch.arange(p, device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        if drop_first:
            keep[:, 0] = False
        return out * per_position(keep).to(out.dtype)
    if isinstance(positions, int):
        if positions >= 0:
            if bool((lengths <= positions).any()):
                raise InterpError(
                    f"position {positions} is past the end of a prompt of "
                    f"{int(lengths.min())} tokens"
                )
            idx = p - lengths + positions
        else:
            if bool((lengths < -positions).any()):
                raise InterpError(
                    f"position {positions} is before the start of a prompt of "
                    f"{int(lengths.min())} tokens"
                )
            idx = torch.full_like(lengths, p + positions)
        return x[torch.arange(b, device=x.device), idx]
    raise InterpError(f"unknown positions {positions!r}: use last, all, mean or an integer")


@dataclass
class CaptureBatch:
    """One batch from :func:`iter_capture`, rows in the order of ``indices``."""

    indices: list[int]
    acts: dict[str, Tensor]
    input_ids: Int[Tensor, "b pos"]  # left-padded, as run
    mask: Bool[Tensor, "b pos"]
    logits: Tensor | None = None


#: The largest position index taken (a prompt is never longer; past it, tensor indices
#: overflow).
MAX_POSITION = 2**31 - 1


def _check_positions(positions: Position) -> None:
    if isinstance(positions, int) and not isinstance(positions, bool) and (
            abs(positions) > MAX_POSITION):
        raise InterpError(f"position {positions} is out of range: no prompt is that long "
                          f"(|position| ≤ {MAX_POSITION:,})")
    if positions in ("last", "all", "mean") or (
        isinstance(positions, int) and not isinstance(positions, bool)
    ):
        return
    raise InterpError(f"unknown positions {positions!r}: use last, all, mean or an integer")


def iter_capture(
    model: Model,
    prompts: Sequence[str],
    *,
    hooks: Sequence[str] | str | None = None,
    layers: Sequence[int] | str | int | None = None,
    positions: Position = "last",
    batch_size: int = 16,
    dtype: torch.dtype = torch.float32,
    chat: bool = False,
    drop_first: bool = False,
    with_logits: bool = False,
    sort_by_length: bool = True,
    progress: bool | None = None,
    description: str = "capturing",
) -> Iterator[CaptureBatch]:
    """Stream activations batch by batch (see :func:`capture` for the arguments).

    Yields :class:`CaptureBatch` objects whose ``acts[hook]`` are already reduced to
    ``positions`` (for "all": left-aligned ``[b, pos, d]`` with padding zeroed).
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise InterpError("no prompts to capture")
    if batch_size < 1:
        raise InterpError(f"batch size must be ≥ 1, got {batch_size}")
    _check_positions(positions)
    names = resolve_hooks(model, hooks, layers)
    for p in prompts:
        if not isinstance(p, str) or not p.strip():
            raise InterpError("empty prompt: give at least one non-blank character")
    texts = [model.format_prompt(p, chat) for p in prompts]
    order = list(range(len(texts)))
    if sort_by_length:
        with phase("tokenise"):
            lens = [len(model.encode(t)) for t in texts]
        order.sort(key=lambda i: -lens[i])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    bar = make_progress(enabled=progress, auto=len(batches) > 1)
    # Hooks and no-grad mode are scoped to each forward pass, never held across a
    # ``yield``: a consumer may run the model (or train something) between batches.
    with bar:
        task = bar.add_task(description, total=len(prompts), info="")
        for idx in batches:
            with phase("tokenise"):
                ids, mask_long = model.encode_padded([texts[i] for i in idx])
            mask = mask_long.bool()
            with phase("forward"):
                raw, logits = forward_with_hooks(model, ids, mask, names,
                                                 with_logits=with_logits)
                acts = {
                    n: _reduce(raw[n], mask, positions, drop_first).to(dtype).clone()
                    for n in names
                }
                del raw
                if logits is not None:
                    logits = _reduce(logits, mask, positions, drop_first).clone()
            step()
            bar.update(task, advance=len(idx), info=f"{ids.shape[1]} tok")
            yield CaptureBatch(idx, acts, ids, mask, logits)


def forward_with_hooks(
    model: Model,
    input_ids: Int[Tensor, "b pos"],
    attention_mask: Bool[Tensor, "b pos"] | None,
    names: Sequence[str],
    *,
    with_logits: bool = False,
) -> tuple[dict[str, Float[Tensor, "b pos d"]], Float[Tensor, "b pos vocab"] | None]:
    """One no-grad forward pass over token ids, returning the hooked activations.

    The token-level entry point under :func:`iter_capture`, for callers that build
    their own batches of ids (packed text windows for the tuned lens and SAEs).
    ``names`` are hook points (see :func:`resolve_hooks`). The pass stops once every
    hook has fired unless ``with_logits``. Activations come back float32 and unreduced
    (``[b, pos, d]``, padding included); logits float32 or ``None``.
    """
    store: dict[str, Tensor] = {}

    def make_hook(name: str):
        def hook(tensor: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
            store[name] = tensor.detach()
            if not with_logits and len(store) == len(names):
                raise _StopForward
            return tensor

        return hook

    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
    fwd_hooks = [(n, make_hook(n)) for n in names]
    logits = None
    with torch.no_grad(), model.bridge.hooks(fwd_hooks=fwd_hooks):
        try:
            logits = forward(model, input_ids, attention_mask.long())[0]
        except _StopForward:
            pass
    missing = [n for n in names if n not in store]
    if missing:
        raise InterpError(f"hook point(s) never fired: {', '.join(missing)}")
    acts = {n: store[n].to(torch.float32) for n in names}
    return acts, (logits.float() if logits is not None else None)


def capture(
    model: Model,
    prompts: Sequence[str] | str,
    *,
    hooks: Sequence[str] | str | None = None,
    layers: Sequence[int] | str | int | None = None,
    positions: Position = "last",
    batch_size: int = 16,
    dtype: torch.dtype = torch.float32,
    chat: bool = False,
    drop_first: bool = False,
    with_logits: bool = False,
    progress: bool | None = None,
    max_memory_gb: float | None = None,
) -> Activations:
    """Run ``prompts`` through ``model`` and keep the activations at the given hooks.

    Args:
        model: from :func:`interp.models.loading.load`.
        prompts: one string or a list of strings.
        hooks: TransformerLens hook names (``"blocks.6.hook_resid_post"``, any hook).
        layers: shorthand for the resid_post of these layers: ``[6]``, ``"3,6"``, ``"all"``.
        positions: ``"last"`` → ``[n, d]`` at each prompt's last token;
            ``"mean"`` → ``[n, d]`` mean over real tokens;
            ``"all"`` → ``[n, pos, d]`` left-aligned with ``mask``;
            an int → ``[n, d]`` at that token index (0 = first, -1 = last).
        batch_size: prompts per forward pass.
        dtype: dtype of the returned activations (computation uses the model's dtype).
        chat: wrap each prompt in the model's chat template.
        drop_first: leave out each prompt's first real token (its residual norm is
            an outlier) from "mean" and "all".
        with_logits: also return the model's output logits at the same positions
            (runs the full forward instead of stopping early).
        progress: force the progress bar on/off (default: on for > 1 batch).
        max_memory_gb: refuse (before any forward pass) a capture whose results would
            need more memory than this; default ``$INTERP_MAX_MEMORY_GB`` or half the
            machine's RAM. Stream with :func:`iter_capture` instead for big runs.

    Returns:
        :class:`Activations` in the order of ``prompts``.
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    names = resolve_hooks(model, hooks, layers)
    n = len(prompts)
    check_memory(model, prompts, names, positions, dtype, chat, with_logits, max_memory_gb)
    parts: list[CaptureBatch] = list(
        iter_capture(
            model, prompts, hooks=names, positions=positions, batch_size=batch_size,
            dtype=dtype, chat=chat, drop_first=drop_first, with_logits=with_logits,
            progress=progress,
        )
    )
    max_len = max(b.input_ids.shape[1] for b in parts)
    lengths = torch.zeros(n, dtype=torch.long)
    input_ids = torch.full((n, max_len), int(model.tokenizer.pad_token_id), dtype=torch.long)
    out_mask = torch.zeros(n, max_len, dtype=torch.bool)
    acts: dict[str, Tensor] = {}
    logits: Tensor | None = None
    for b in parts:
        idx = torch.tensor(b.indices)
        blen = b.mask.sum(1).cpu()
        lengths[idx] = blen
        p = b.input_ids.shape[1]
        for row, i in enumerate(b.indices):
            k = int(blen[row])
            input_ids[i, :k] = b.input_ids[row, p - k :].cpu()
            out_mask[i, :k] = True
        for name, a in b.acts.items():
            a = a.cpu()
            if name not in acts:
                shape = (n, max_len, *a.shape[2:]) if positions == "all" else (n, *a.shape[1:])
                acts[name] = torch.zeros(shape, dtype=a.dtype)
            if positions == "all":
                acts[name][idx, : a.shape[1]] = a
            else:
                acts[name][idx] = a
        if b.logits is not None:
            lg = b.logits.cpu()
            if logits is None:
                shape = (n, max_len, lg.shape[-1]) if positions == "all" else (n, lg.shape[-1])
                logits = torch.zeros(shape, dtype=lg.dtype)
            if positions == "all":
                logits[idx, : lg.shape[1]] = lg
            else:
                logits[idx] = lg
    if drop_first:
        out_mask[:, 0] = False
    return Activations(
        acts=acts, positions=positions, prompts=list(prompts), lengths=lengths,
        input_ids=input_ids, mask=out_mask, model_id=model.model_id, logits=logits,
        hook_points=names,
    )


def memory_limit_gb(requested: float | None = None) -> float:
    """The capture memory limit: ``requested``, ``$INTERP_MAX_MEMORY_GB``, or half the RAM."""
    import math
    import os

    if requested is None and os.environ.get("INTERP_MAX_MEMORY_GB"):
        try:
            requested = float(os.environ["INTERP_MAX_MEMORY_GB"])
        except ValueError:
            raise InterpError(
                f"INTERP_MAX_MEMORY_GB must be a number of GB, got "
                f"{os.environ['INTERP_MAX_MEMORY_GB']!r}"
            ) from None
    if requested is not None:
        if not math.isfinite(requested) or requested <= 0:
            raise InterpError(f"memory limit must be a positive number of GB, got {requested}")
        return float(requested)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        total = 16 * 2**30
    return total / 2 / 2**30


def estimate_capture_bytes(
    model: Model, prompts: Sequence[str], names: Sequence[str], positions: Position,
    dtype: torch.dtype, chat: bool = False, with_logits: bool = False,
) -> int:
    """Bytes :func:`capture` will hold: its result, and as much again while assembling it.

    Widths: ``d_model`` for residual-stream hooks, ``max(d_model, d_mlp)`` for any other
    hook point (an upper bound); logits are float32 over the vocabulary.
    """
    cfg = model.bridge.cfg
    wide = max(model.d_model, int(getattr(cfg, "d_mlp", 0) or 0))
    width = sum(model.d_model if "resid" in name else wide for name in names)
    rows = len(prompts)
    if positions == "all":
        texts = [model.format_prompt(p, chat) for p in prompts]
        lengths = [len(model.encode(t)) for t in texts]
        rows = len(prompts) * max(lengths, default=0)
    item = torch.empty((), dtype=dtype).element_size()
    total = rows * width * item
    if with_logits:
        total += rows * model.d_vocab * 4
    return 2 * total


def check_memory(
    model: Model, prompts: Sequence[str], names: Sequence[str], positions: Position,
    dtype: torch.dtype, chat: bool, with_logits: bool, max_memory_gb: float | None,
) -> None:
    """Refuse, in one line, a capture that would not fit under :func:`memory_limit_gb`."""
    limit = memory_limit_gb(max_memory_gb)
    need = estimate_capture_bytes(model, prompts, names, positions, dtype, chat, with_logits)
    if need > limit * 2**30:
        raise InterpError(
            f"this capture would hold about {need / 2**30:.2f} GB in memory ({len(prompts)} "
            f"prompts, {len(names)} hook point(s), positions={positions}), over the "
            f"{limit:.2f} GB limit: capture fewer layers or positions, stream with "
            "interp.iter_capture, or raise the limit (--max-memory-gb, INTERP_MAX_MEMORY_GB)"
        )


@dataclass
class HookNorms:
    """The mean L2 norm of the rows captured at one hook point, with its 95% CI.

    Rows are prompts, or real tokens for ``positions="all"`` (padding excluded); there
    the first token, an outlier on most models, is also summarised apart.
    """

    hook: str
    layer: int | None
    shape: list[int]
    norm_mean: float
    norm_std: float
    norm_ci95: list[float]
    norm_n: int
    first_norm_mean: float | None
    rest_norm_mean: float | None


def hook_norms(acts: Activations) -> list[HookNorms]:
    """:class:`HookNorms` of every hook point (normal 95% CI of the mean; one row: zero width)."""
    from interp.stats import mean_ci  # scipy: imported when needed

    out: list[HookNorms] = []
    for name in acts.hook_points:
        x = acts.acts[name].float()
        norms = x.norm(dim=-1)
        first = rest = None
        if acts.positions == "all":
            first_mask = torch.zeros_like(acts.mask)
            first_mask[:, 0] = acts.mask[:, 0]
            first = norms[first_mask]
            rest = norms[acts.mask & ~first_mask]
            norms = norms[acts.mask]
        n = int(norms.numel())
        mean, lo, hi = mean_ci(norms.double().numpy())
        std = float(norms.std()) if n > 1 else 0.0
        out.append(HookNorms(
            hook=name, layer=_hook_layer(name), shape=list(x.shape), norm_mean=float(mean),
            norm_std=std, norm_ci95=[lo, hi] if n > 1 else [mean, mean], norm_n=n,
            first_norm_mean=float(first.mean()) if first is not None and first.numel() else None,
            rest_norm_mean=float(rest.mean()) if rest is not None and rest.numel() else None,
        ))
    return out


def summarize(acts: Activations) -> list[dict[str, object]]:
    """:func:`hook_norms` as dicts (``norm_mean``, ``norm_std``, ``norm_ci95``, ``norm_n``...)."""
    return [asdict(h) for h in hook_norms(acts)]


# ------------------------------------------------------------------ the capture verb


def parse_positions(text: str | int) -> Position:
    """``"last"``, ``"mean"``, ``"all"`` or an integer index from its text form."""
    if isinstance(text, int) or text in ("last", "mean", "all"):
        return text  # type: ignore[return-value]
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise InterpError(
            f"bad --positions {str(text)[:60]!r}: use last, mean, all or an integer") from None
    _check_positions(value)
    return value


#: A memory limit: a positive number of GB (the message says what it limits, whatever
#: the flag's name).
_memory_limit = Check(positive.test, "(the memory limit) must be a positive number of GB",
                      low=0)


@dataclass(frozen=True)
class CaptureConfig(Config):
    """Settings of :func:`run_capture` (``interp capture``), recorded in the manifest.

    ``dtype`` is the dtype the activations are kept (and saved) in; ``dataset`` and
    ``text_column`` only say where the prompts came from. ``layers`` is as given (a list,
    one layer, ``"3,6"`` or ``"all"``); ``max_memory_gb`` and ``seed`` are not settings of
    the capture itself and stay out of :meth:`~interp.schema.settings.Config.to_dict`.
    """

    positions: Position = setting("last",
                                  help="last, mean, all, or a token index (0 = first, -1 = last).",
                                  cli=Cli(parse=parse_positions))
    layers: Sequence[int] | str | int | None = setting(
        None, help="Layers (resid_post): comma-separated or 'all'.", cli=Cli(flag="--layers"))
    hooks: tuple[str, ...] = setting(
        (), help="Any TransformerLens hook point (repeatable), e.g. blocks.3.attn.hook_z.",
        cli=Cli(flag="--hook"))
    chat: bool = setting(False, help="Wrap prompts in the model's chat template.")
    drop_first: bool = setting(
        False, help="Leave each prompt's first token out of mean/all (its norm is an outlier).")
    batch_size: int = setting(16, cli=False, check=at_least(1), help="Prompts per forward pass.")
    dtype: Dtype = setting(
        "float32", help="dtype of the saved activations.", cli=Cli(flag="--save-dtype"))
    dataset: str = setting("(command line)", cli=False,
                           help="Where the prompts came from (a file, or the command line).")
    text_column: str = setting("text", help="Column holding the prompt text in --file.")
    max_memory_gb: float | None = setting(
        None, check=_memory_limit,
        help="Refuse captures needing more memory [default: $INTERP_MAX_MEMORY_GB or "
        "half the RAM].")
    seed: int | None = setting(0, check=seed_range, cli=False,
                               help="Recorded in the manifest (a capture draws nothing at "
                                    "random).")

    transient: ClassVar[tuple[str, ...]] = ("max_memory_gb", "seed")

    def __post_init__(self) -> None:
        if isinstance(self.hooks, str | list):  # one hook, or a list: kept as a tuple
            object.__setattr__(self, "hooks", (self.hooks,) if isinstance(self.hooks, str)
                               else tuple(self.hooks))
        super().__post_init__()


@dataclass
class CaptureResult(Result):
    """Captured activations and the norm of each hook point (``interp capture``)."""

    activations: Activations = json_field(skip=True, repr=False)
    #: The settings (in the manifest; ``results.json`` carries positions, dtype, dataset).
    config: CaptureConfig = json_field(skip=True)
    hooks: list[HookNorms] = field(default_factory=list)
    dataset_hash: str = ""
    #: The folder name of the saved artifact inside ``--out``.
    artifact: str = "activations"

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (
        "model", "n_prompts", "n_tokens", "positions", "dtype", "dataset", "dataset_hash",
        "artifact", "hooks")

    @property
    def model_id(self) -> str:
        """The id of the model the activations came from."""
        return self.activations.model_id

    @property
    def n_tokens(self) -> int:
        """Real tokens over all prompts (padding excluded)."""
        return int(self.activations.lengths.sum())

    def resid_norms(self) -> list[HookNorms]:
        """The residual-stream hook points (one per layer), in capture order."""
        return [h for h in self.hooks
                if h.layer is not None and h.hook.endswith("hook_resid_post")]

    def tensors(self) -> dict[str, Tensor]:
        """What the ``activations`` artifact holds: every hook point, lengths (and mask, ids)."""
        acts = self.activations
        out = {name: acts.acts[name] for name in acts.hook_points}
        out["lengths"] = acts.lengths
        if acts.positions == "all":
            out["mask"] = acts.mask
            out["input_ids"] = acts.input_ids
        return out

    def extra_data(self) -> dict[str, Any]:
        """Adds the model id, the prompt and real-token counts, positions, dtype and dataset."""
        return {"model": self.model_id, "n_prompts": len(self.activations),
                "n_tokens": self.n_tokens, "positions": self.config.positions,
                "dtype": self.config.dtype, "dataset": self.config.dataset}

    def headline(self) -> Headline:
        """One row per hook point: shape, mean norm with its 95% CI, rows."""
        return Headline(
            title="captured activations", table_title="captured activations",
            rows=[("model", self.model_id), ("prompts", len(self.activations)),
                  ("tokens (real, all prompts)", self.n_tokens),
                  ("positions", str(self.config.positions)), ("dtype", self.config.dtype),
                  ("dataset", self.config.dataset), ("artifact", self.artifact)],
            columns=["hook point", "shape", "mean ‖h‖", "95% CI", "n"],
            table=[[h.hook, " × ".join(map(str, h.shape)), h.norm_mean,
                    ci_text(h.norm_ci95[0], h.norm_ci95[1]), h.norm_n] for h in self.hooks])

    def figure(self) -> Figure | None:
        """:func:`~interp.activations.figures.norm_figure` when at least two layers' residual
        streams were captured, else None."""
        from interp.activations.figures import norm_figure

        return norm_figure(self) if len(self.resid_norms()) >= 2 else None


def run_capture(
    model: Model, prompts: Sequence[str], config: CaptureConfig | None = None, *,
    progress: bool | None = None, **settings: Any,
) -> CaptureResult:
    """``interp capture``: :func:`capture` with ``config`` (or keyword settings named as its
    fields), and the norm of each hook point; the result carries its manifest."""
    from interp.models.loading import parse_dtype
    from interp.runs.manifest import model_manifest, sha256_texts

    config = CaptureConfig.resolve(config, settings)
    texts = list(prompts)
    acts = capture(
        model, texts, hooks=list(config.hooks) or None, layers=config.layers,
        positions=config.positions, batch_size=config.batch_size,
        dtype=parse_dtype(config.dtype), chat=config.chat, drop_first=config.drop_first,
        progress=progress, max_memory_gb=config.max_memory_gb,
    )
    digest = sha256_texts(texts)
    result = CaptureResult(acts, config, hook_norms(acts), digest)
    result.manifest = model_manifest(model, seed=config.seed, config=config.to_dict(),
                                     dataset_hash=digest)
    return result
