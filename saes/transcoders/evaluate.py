"""Transcoder metrics on held-out text, each with its baseline and a 95% interval.

Held-out documents are packed into windows (:func:`interp.data.windows.pack_windows`);
position 0 of every window is left out of everything, and the MLP output there is never
replaced (as in :mod:`saes.splice`: the transcoders never saw the attention sink).

Per layer, from the clean pass:

* ``nmse`` = Σ‖y − ŷ‖² / Σ‖y − ȳ‖² of the MLP output ``y`` (``ŷ`` the transcoder's
  prediction from the real MLP input; ȳ the mean over the eval tokens), and
  ``explained_variance`` = 1 − nmse;
* ``l0`` (active latents per token) and ``dead_fraction`` (latents that never fired on the
  eval tokens).

Spliced into the model (next-token cross-entropy in nats over positions 1…seq−2):

* **every layer at once**: every trained layer's MLP output replaced by its transcoder's
  prediction from the *live* MLP input (errors compound through the layers);
  ``ce_loss_score_all = (CE_zero − CE_tc)/(CE_zero − CE_clean)`` against every one of those
  MLPs zero-ablated;
* **one layer at a time** (``one_at_a_time``): the same with only that layer replaced or
  zero-ablated; the blocks before it run once (:func:`interp.models.forward.logits_from_layer`).

Intervals: percentile bootstrap over windows, recomputing each ratio from resampled sums.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.models.forward import logits_from_layer
from interp.models.loading import Model
from interp.runs.manifest import model_manifest, sha256_texts
from interp.runs.progress import make_progress
from interp.schema import Cli, Config, Headline, Result, at_least, seed_range, setting
from interp.stats.intervals import bootstrap_ci
from saes.transcoders.mlp_replacement import MLPReplacement

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class TranscoderEvalConfig(Config):
    """How much held-out text :func:`evaluate_transcoders` uses."""

    tokens: int = setting(16_384, check=at_least(1),
                          help="Held-out tokens (positions 1… of each window).",
                          cli=Cli(range=True))
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.",
                           cli=Cli(range=True))
    one_at_a_time: bool = setting(True,
                                  help="Also score each layer replaced alone (two suffix "
                                  "passes per layer).", cli=Cli(flag="--one-at-a-time/--all-only"))
    batch_size: int = setting(8, cli=False, check=at_least(1),
                              help="Text windows per forward pass.")
    n_bootstrap: int = setting(1000, cli=False, check=at_least(1),
                               help="Bootstrap resamples of each 95% interval.")
    seed: int = setting(0, check=seed_range, cli=False, help="Seeds the windows and the "
                                                             "bootstrap.")

    @property
    def n_windows(self) -> int:
        """Windows of ``seq_len − 1`` scored tokens covering ``tokens``."""
        return max(1, math.ceil(self.tokens / (self.seq_len - 1)))


@dataclass
class LayerMetrics:
    """One layer's transcoder on held-out text."""

    layer: int
    nmse: float
    explained_variance: float
    l0: float
    dead_fraction: float
    ce_loss_score: float | None = None        # this layer alone replaced
    ce_loss_score_ci95: list[float] | None = None
    delta_ce: float | None = None             # CE with it replaced − clean


@dataclass
class TranscoderEvalResult(Result):
    """Transcoder metrics per layer and with every layer replaced at once."""

    layers: list[LayerMetrics]
    tokens: int
    ce_clean: float
    ce_all: float                  # every trained layer replaced
    ce_zero_all: float             # every trained layer's MLP zero-ablated
    ce_loss_score_all: float
    ce_loss_score_all_ci95: list[float]
    config: TranscoderEvalConfig | None = None
    transcoders: dict[str, Any] = field(default_factory=dict)

    json_order: ClassVar[tuple[Any, ...]] = ("ce_loss_score_all", "ce_loss_score_all_ci95",
                                             ...)

    def to_frame(self) -> pd.DataFrame:
        """One row per layer."""
        return pd.DataFrame([vars(m) for m in self.layers])

    def headline(self) -> Headline:
        """Every layer at once, then the per-layer table."""
        lo, hi = self.ce_loss_score_all_ci95
        rows: list[tuple[str, Any]] = [
            ("layers", len(self.layers)), ("tokens", self.tokens),
            ("CE clean / all replaced / all zero-ablated",
             f"{self.ce_clean:.3f} / {self.ce_all:.3f} / {self.ce_zero_all:.3f}"),
            ("CE-loss score, all layers at once", f"{self.ce_loss_score_all:.3f} "
                                                   f"[{lo:.3f}, {hi:.3f}]")]
        table = [[m.layer, m.nmse, m.explained_variance, m.l0, m.dead_fraction,
                  m.ce_loss_score if m.ce_loss_score is not None else float("nan"),
                  m.delta_ce if m.delta_ce is not None else float("nan")]
                 for m in self.layers]
        return Headline("Transcoders — held-out metrics", rows=rows,
                        columns=["layer", "NMSE", "EV", "L0", "dead", "CE score (alone)",
                                 "ΔCE (alone)"], table=table)

    def figure(self) -> Figure | None:
        """NMSE and the one-layer CE-loss score by layer."""
        from saes.transcoders.figures import eval_figure

        return eval_figure(self)


def _ce(logits: Tensor, ids: Tensor) -> Tensor:
    """Summed next-token CE per window over positions 1…seq−2 (predicting 2…seq−1)."""
    lp = torch.log_softmax(logits[:, 1:-1].float(), -1)
    return -lp.gather(-1, ids[:, 2:, None].to(lp.device))[..., 0].sum(-1).cpu()


def _ratio_ci(num: np.ndarray, den: np.ndarray, cfg: TranscoderEvalConfig) -> list[float]:
    def stat(i: np.ndarray) -> float:
        d = den[i].sum()
        return float(num[i].sum() / d) if d != 0 else float("nan")

    return bootstrap_ci(stat, len(num), n_resamples=cfg.n_bootstrap, seed=cfg.seed)


@torch.no_grad()
def evaluate_transcoders(
    model: Model, transcoders: Any, docs: list[str], cfg: TranscoderEvalConfig | None = None,
    *, data: dict[str, Any] | None = None, progress: bool | None = None,
) -> TranscoderEvalResult:
    """Reconstruction, sparsity and the CE-loss scores of per-layer transcoders or a
    cross-layer transcoder (an :class:`~saes.transcoders.mlp_replacement.MLPReplacement`, as
    :func:`~saes.transcoders.files.load_transcoders` gives them) on held-out ``docs``
    (module doc)."""
    from saes.transcoders.files import as_replacement

    cfg = cfg or TranscoderEvalConfig()
    rep = as_replacement(transcoders)
    rep.check_model(model)
    layers = rep.out_layers
    sources = rep.layers
    parallel = model.anatomy.family.parallel
    reads = {i: rep.input_hook(i, parallel) for i in sorted(set(layers) | set(sources))}
    windows = pack_windows(model, docs, seq_len=cfg.seq_len, n_windows=cfg.n_windows,
                           seed=cfg.seed)
    n_w = windows.shape[0]
    sse = {i: 0.0 for i in layers}
    y_sum = {i: torch.zeros(model.d_model, dtype=torch.float64) for i in layers}
    y_sq = dict.fromkeys(layers, 0.0)
    l0 = dict.fromkeys(sources, 0.0)
    fired = {i: torch.zeros(rep.d_sae(i), dtype=torch.bool) for i in sources}
    ce: dict[str, list[Tensor]] = {k: [] for k in ("clean", "all", "zero_all")}
    one: dict[int, dict[str, list[Tensor]]] = {i: {"tc": [], "zero": []} for i in layers}
    names = [*reads.values(), *(f"blocks.{i}.hook_mlp_out" for i in layers)]
    # what each layer's MLP output is added to: the mid-block residual, or (attention and
    # the MLP in parallel: GPT-NeoX) the block's output less the MLP's
    names += [model.resid_hook(i) for i in layers]
    names += [] if parallel else [f"blocks.{i}.hook_resid_mid" for i in layers]
    names = list(dict.fromkeys(names))
    bar = make_progress(enabled=progress)
    n_tok = 0
    with bar:
        task = bar.add_task("transcoder eval", total=n_w, info="")
        for s in range(0, n_w, cfg.batch_size):
            ids = windows[s:s + cfg.batch_size].to(model.device)
            acts, logits = forward_with_hooks(model, ids, None, names, with_logits=True)
            assert logits is not None
            ce["clean"].append(_ce(logits, ids))
            n_tok += ids.shape[0] * (ids.shape[1] - 1)
            feats = {i: rep.encode(i, acts[reads[i]][:, 1:].float()) for i in sources}
            for i in sources:
                active = feats[i] > 0
                l0[i] += float(active.sum())
                fired[i] |= active.reshape(-1, active.shape[-1]).any(0).cpu()
            for i in layers:
                x = acts[reads[i]][:, 1:].float()
                y = acts[f"blocks.{i}.hook_mlp_out"][:, 1:].float()
                pred = rep.output(i, feats, x)
                sse[i] += float((pred - y).pow(2).sum())
                flat = y.reshape(-1, y.shape[-1]).double()
                y_sum[i] += flat.sum(0).cpu()
                y_sq[i] += float(flat.pow(2).sum())
                if cfg.one_at_a_time:
                    real = acts[f"blocks.{i}.hook_mlp_out"]
                    mid = (acts[model.resid_hook(i)] - real if parallel
                           else acts[f"blocks.{i}.hook_resid_mid"])
                    for key, new in (("tc", pred), ("zero", torch.zeros_like(pred))):
                        out = real.clone()
                        out[:, 1:] = new.to(out.dtype)
                        one[i][key].append(_ce(logits_from_layer(model, mid + out, i), ids))
            for key, hooks in (("all", _splice_hooks(rep, reads, _replace_with(rep))),
                               ("zero_all", _splice_hooks(rep, reads, _zero()))):
                with model.bridge.hooks(fwd_hooks=hooks):
                    ce[key].append(_ce(model.logits(ids, torch.ones_like(ids)), ids))
            bar.advance(task, ids.shape[0])
    per = {k: torch.cat(v).double().numpy() for k, v in ce.items()}
    tok_per_window = cfg.seq_len - 2
    clean, full, zero = (float(per[k].sum() / (n_w * tok_per_window))
                         for k in ("clean", "all", "zero_all"))
    score_all = (zero - full) / (zero - clean) if zero != clean else float("nan")
    metrics = []
    for i in layers:
        n = n_tok
        var = y_sq[i] - float(y_sum[i].pow(2).sum()) / n
        nmse = sse[i] / var if var > 0 else float("nan")
        m = LayerMetrics(layer=i, nmse=nmse, explained_variance=1 - nmse,
                         l0=l0[i] / n if i in l0 else float("nan"),
                         dead_fraction=float((~fired[i]).float().mean()) if i in fired
                         else float("nan"))
        if cfg.one_at_a_time:
            tc_ce = torch.cat(one[i]["tc"]).double().numpy()
            z_ce = torch.cat(one[i]["zero"]).double().numpy()
            den = z_ce - per["clean"]
            m.ce_loss_score = float((z_ce - tc_ce).sum() / den.sum()) if den.sum() else None
            m.ce_loss_score_ci95 = _ratio_ci(z_ce - tc_ce, den, cfg)
            m.delta_ce = float((tc_ce - per["clean"]).sum() / (n_w * tok_per_window))
        metrics.append(m)
    result = TranscoderEvalResult(
        layers=metrics, tokens=n_tok, ce_clean=clean, ce_all=full, ce_zero_all=zero,
        ce_loss_score_all=score_all,
        ce_loss_score_all_ci95=_ratio_ci(per["zero_all"] - per["all"],
                                         per["zero_all"] - per["clean"], cfg),
        config=cfg, transcoders=rep.to_dict())
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(),
                                     dataset_hash=(data or {}).get("sha256")
                                     or sha256_texts(docs))
    return result


Splice = Callable[[int, Mapping[int, Tensor], Tensor, Tensor], Tensor]


def _replace_with(rep: MLPReplacement) -> Splice:
    def fn(layer: int, feats: Mapping[int, Tensor], x: Tensor, out: Tensor) -> Tensor:
        return rep.output(layer, feats, x).to(out.dtype)
    return fn


def _zero() -> Splice:
    return lambda layer, feats, x, out: torch.zeros_like(out[:, 1:])  # noqa: ARG005


def _splice_hooks(rep: MLPReplacement, reads: Mapping[int, str], new: Splice
                  ) -> list[tuple[str, Callable[..., Tensor]]]:
    """Hooks replacing each output layer's MLP output (positions 1…) by ``new(layer,
    features, its live input, output)``: every source layer's features are encoded from
    its live input as the forward reaches it, so a layer's replacement reads the features
    of the (replaced) layers before it."""
    live: dict[int, Tensor] = {}
    feats: dict[int, Tensor] = {}
    hooks: list[tuple[str, Callable[..., Tensor]]] = []
    outs = set(rep.out_layers)
    for i in sorted(reads):
        def keep(t: Tensor, hook: Any, i: int = i) -> Tensor:  # noqa: ARG001
            x = t[:, 1:].float()
            live[i] = x
            if i in rep.layers:
                feats[i] = rep.encode(i, x)
            return t

        hooks.append((reads[i], keep))
        if i in outs:
            def put(t: Tensor, hook: Any, i: int = i) -> Tensor:  # noqa: ARG001
                out = t.clone()
                out[:, 1:] = new(i, feats, live[i], t)
                if i == max(outs):
                    live.clear()
                    feats.clear()
                return out

            hooks.append((f"blocks.{i}.hook_mlp_out", put))
    return hooks


__all__ = ["LayerMetrics", "TranscoderEvalConfig", "TranscoderEvalResult",
           "evaluate_transcoders"]
