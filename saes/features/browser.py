"""The data behind the SAE feature browser: densities, top contexts and logit effects.

:func:`collect_browser_data` scans ``cfg.tokens`` held-out tokens (packed windows of
:mod:`interp.data.windows`), encodes the activations at the SAE's hook point and keeps, per
feature, the number of tokens it fires on and a running top-k of its largest activations.
Position 0 of every window (an attention sink with a huge residual norm) is never an
example and never counted. Memory stays bounded: each batch's ``f [batch, pos, d_sae]`` is
merged into the running top-k with ``torch.topk`` and dropped; next to each of the
``top_k × d_sae`` kept activations the scan keeps the feature's activations on the
surrounding ``context + 5`` tokens, so the contexts need no second forward pass.

For each selected feature (``cfg.features``) the result has its density, its largest
activation, its top contexts (token strings with the feature's activation on each) and
the tokens its decoder direction promotes and suppresses through the unembedding,
``W_dec[i] · (γ_final ⊙ W_U)`` (the direct logit effect, ignoring the final norm's scale).

Activations are the SAE's raw ``f`` (see :mod:`saes.sae`: decoder rows are not unit norm);
each card also carries ``dec_norm = ‖W_dec[i]‖``, and ``f · dec_norm`` is the size of the
feature's contribution to the reconstruction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows, require_text
from interp.errors import InterpError
from interp.models import weights
from interp.models.loading import Model
from interp.models.unembedding import NormFacts, final_norm
from interp.runs.manifest import model_manifest, sha256_texts
from interp.runs.progress import make_progress
from saes.loading import LoadedSAE, check_sae, unpack_sae
from saes.results import (
    DENSITY_BINS,
    BrowserConfig,
    BrowserData,
    FeatureCard,
    FeatureContext,
    parse_feature_spec,
    select_features,
)
from saes.sae import SparseAutoencoder

__all__ = [
    "DENSITY_BINS",
    "RIGHT_CONTEXT",
    "BrowserConfig",
    "BrowserData",
    "FeatureCard",
    "FeatureContext",
    "collect_browser_data",
    "logit_effects",
    "parse_feature_spec",
]

#: Tokens shown right of the activating token.
RIGHT_CONTEXT = 4


# ------------------------------------------------------------------------- selection


# ----------------------------------------------------------------------- logit effects


def _final_readout(
    model: Model,
) -> tuple[NormFacts, Float[Tensor, "d_model d_vocab"]]:
    """The final norm (gain, and centring for a LayerNorm) and the unembedding
    ``W_U [d_model, d_vocab]``, float32, read through the model's anatomy."""
    norm = final_norm(model)
    if norm is None:
        raise InterpError(f"cannot read the final norm of model {model.model_id}: it is "
                          "neither an RMSNorm nor a LayerNorm")
    return norm, weights.unembedding(model).T


def _named(model: Model, ids: Tensor, values: Tensor) -> list[tuple[str, float]]:
    return [(model.decode_token(int(i)), float(v)) for i, v in zip(ids, values, strict=True)]


@torch.no_grad()
def logit_effects(
    model: Model, W_dec: Float[Tensor, "n d_model"], n: int, chunk: int = 64
) -> list[tuple[list[tuple[str, float]], list[tuple[str, float]]]]:
    """Per row of ``W_dec``: the ``n`` most promoted and most suppressed tokens.

    The effect of row ``v`` on token ``t`` is ``ṽ · (γ ⊙ W_U[:, t])`` (``ṽ``: ``v``, less its
    mean where the final norm is a LayerNorm); promoted tokens come
    largest first, suppressed ones most negative first. Rows are done ``chunk`` at a time
    so the ``[chunk, d_vocab]`` product stays small.
    """
    norm, W_U = _final_readout(model)
    k = min(n, W_U.shape[1])
    out: list[tuple[list[tuple[str, float]], list[tuple[str, float]]]] = []
    for start in range(0, W_dec.shape[0], chunk):
        rows = norm.centred(W_dec[start : start + chunk].to(W_U.device, torch.float32))
        eff = (rows * norm.gain) @ W_U  # [chunk, d_vocab]
        top_v, top_i = eff.topk(k, dim=1)
        bot_v, bot_i = eff.topk(k, dim=1, largest=False)
        for r in range(rows.shape[0]):
            out.append((_named(model, top_i[r], top_v[r]), _named(model, bot_i[r], bot_v[r])))
    return out


# ---------------------------------------------------------------------------- the scan


@dataclass
class _TopK:
    """Running per-feature top-k: values, flat token ids and activation slices.

    ``vals [k, d_sae]`` (descending per column), ``gid [k, d_sae]`` = window·seq_len + pos,
    ``sl [k, d_sae, context + 1 + RIGHT_CONTEXT]``: the feature's activations from
    ``pos - context`` to ``pos + RIGHT_CONTEXT`` (NaN outside the window or at position 0).
    """

    vals: Tensor
    gid: Tensor
    sl: Tensor

    def merge(self, other: _TopK, k: int) -> _TopK:
        vals = torch.cat([self.vals, other.vals])
        keep_v, idx = vals.topk(min(k, vals.shape[0]), dim=0)
        gid = torch.cat([self.gid, other.gid]).gather(0, idx)
        sl_all = torch.cat([self.sl, other.sl])
        sl = sl_all.gather(0, idx.unsqueeze(-1).expand(-1, -1, sl_all.shape[-1]))
        return _TopK(keep_v, gid, sl)


def _batch_topk(
    f: Float[Tensor, "b L d_sae"], first_window: int, seq_len: int, k: int, context: int
) -> _TopK:
    """The top-k of one batch; ``f`` covers positions ``1 … seq_len - 1`` of each window."""
    b, L, m = f.shape
    vals, rows = f.reshape(b * L, m).topk(min(k, b * L), dim=0)  # [k, m]
    w_local, p = rows // L, rows % L  # position p + 1 in the window
    gid = (first_window + w_local) * seq_len + p + 1
    width = context + 1 + RIGHT_CONTEXT
    # padded index j ↔ window position j - context + 1, so the slice for position
    # p + 1 starts at padded index p; padding (and position 0) reads as NaN
    padded = F.pad(f, (0, 0, context, RIGHT_CONTEXT), value=math.nan)
    offs = torch.arange(width, device=f.device)
    feat = torch.arange(m, device=f.device)
    sl = padded[w_local.unsqueeze(-1), p.unsqueeze(-1) + offs, feat[None, :, None]]
    return _TopK(vals, gid, sl)


@torch.no_grad()
def collect_browser_data(
    model: Model,
    sae: SparseAutoencoder | LoadedSAE,
    docs: Sequence[str],
    cfg: BrowserConfig | None = None,
    progress: bool | None = None,
    *,
    data: dict[str, Any] | None = None,
    **settings: Any,
) -> BrowserData:
    """Scan held-out ``docs`` and build the browser's data (see module doc).

    Windows: ``pack_windows(model, docs, seq_len, n_windows=ceil(tokens/seq_len), seed)``,
    ``cfg.batch_size`` per forward pass, stopping after the SAE's hook point. Densities
    count positions ``1 … seq_len - 1`` of every window (``n_tokens`` in all). Settings
    come from ``cfg`` or keyword arguments named as its fields; a
    :class:`~saes.loading.LoadedSAE` adds its path, ``data`` the text's source
    (``{"source": …, "sha256": …}``), and the result carries its manifest.
    """
    cfg = BrowserConfig.resolve(cfg, settings)
    sae, loaded = unpack_sae(sae)
    sae_path = str(loaded.path) if loaded is not None else None
    check_sae(model, sae)
    hook = sae.cfg.hook_point
    require_text(model, docs, need=cfg.n_windows * cfg.seq_len, what="the feature browser",
                 asked=f"tokens={cfg.tokens:,}",
                 reads=f"{cfg.n_windows:,} windows of seq_len={cfg.seq_len}",
                 fix="lower tokens or give more held-out text")
    ids: Int[Tensor, "n seq"] = pack_windows(
        model, docs, seq_len=cfg.seq_len, n_windows=cfg.n_windows, seed=cfg.seed
    ).cpu()
    n_windows, seq_len = ids.shape
    dev = sae.W_enc.device
    m = sae.cfg.d_sae
    fires = torch.zeros(m, dtype=torch.long, device=dev)
    top: _TopK | None = None
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("feature browser", total=n_windows, info="")
        for start in range(0, n_windows, cfg.batch_size):
            batch = ids[start : start + cfg.batch_size].to(model.device)
            acts = forward_with_hooks(model, batch, None, [hook])[0][hook]
            f = sae.encode(acts[:, 1:].to(dev, torch.float32))  # [b, seq_len - 1, d_sae]
            fires += (f > 0).sum(dim=(0, 1))
            part = _batch_topk(f, start, seq_len, cfg.top_k, cfg.context)
            top = part if top is None else top.merge(part, cfg.top_k)
            del acts, f
            bar.update(task, advance=batch.shape[0],
                       info=f"{int((fires > 0).sum())}/{m} alive")
    assert top is not None
    n_tokens = n_windows * (seq_len - 1)
    fires_list = [int(x) for x in fires.cpu()]
    selected = select_features(cfg.features, fires_list, cfg.seed)
    vals, gid, sl = top.vals.cpu(), top.gid.cpu(), top.sl.cpu()
    W_dec = sae.W_dec.detach()
    effects = logit_effects(model, W_dec[selected], cfg.n_logits) if selected else []
    dec_norms = W_dec.norm(dim=1).cpu()
    cards = []
    for index, (promoted, suppressed) in zip(selected, effects, strict=True):
        contexts = []
        for t in range(vals.shape[0]):
            if not vals[t, index] > 0:
                break
            g = int(gid[t, index])
            w, pos = divmod(g, seq_len)
            lo, hi = max(1, pos - cfg.context), min(seq_len, pos + RIGHT_CONTEXT + 1)
            first = pos - cfg.context  # window position of sl[..., 0]
            contexts.append(FeatureContext(
                tokens=model.token_strs(ids[w, lo:hi]),
                acts=[float(a) for a in sl[t, index, lo - first : hi - first]],
                max_at=pos - lo, window=w, position=pos,
            ))
        cards.append(FeatureCard(
            index=index, density=fires_list[index] / n_tokens, n_fires=fires_list[index],
            max_act=float(vals[0, index]) if fires_list[index] else 0.0,
            dec_norm=float(dec_norms[index]), contexts=contexts,
            promoted=promoted, suppressed=suppressed,
        ))
    config: dict[str, Any] = {**cfg.to_dict(), **({"sae": sae_path} if sae_path else {})}
    return BrowserData(
        model_id=model.model_id, hook_point=hook, layer=sae.cfg.layer, d_sae=m,
        n_windows=n_windows, seq_len=seq_len, n_tokens=n_tokens, fires=fires_list,
        features=cards, config=cfg, selected=selected, sae_path=sae_path,
        data=dict(data) if data is not None else None,
        manifest=model_manifest(model, seed=cfg.seed, config=config,
                                dataset_hash=(data or {}).get("sha256") or sha256_texts(docs)),
    )
