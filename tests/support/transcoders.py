"""Random transcoders for the tiny models' tests (graphs, the graph report)."""

from __future__ import annotations

import torch

from saes.transcoders import TranscoderConfig
from saes.transcoders.files import TranscoderSet


def random_transcoders(model, layers, arch: str = "topk", skip: bool = False,  # noqa: ANN001
                       seed: int = 0) -> TranscoderSet:
    """Transcoders of width 96 (TopK k 8 by default) with random weights at ``layers``."""
    torch.manual_seed(seed)
    d = model.d_model
    out = {}
    for layer in layers:
        cfg = TranscoderConfig(d_in=d, d_sae=96, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               architecture=arch, k=8 if arch == "topk" else None, skip=skip)
        tc = cfg.model_class()(cfg)
        with torch.no_grad():
            tc.W_enc.copy_(torch.randn(d, 96) / d ** 0.5)
            tc.W_dec.copy_(torch.randn(96, d) * 0.05)
            tc.b_dec.copy_(torch.randn(d) * 0.01)
            tc.b_enc.copy_(torch.randn(96) * 0.1)
            if skip:
                tc.W_skip.copy_(torch.randn(d, d) * 0.02)
        out[layer] = tc
    return TranscoderSet(out)


def random_clt(model, layers, arch: str = "topk", skip: bool = False,  # noqa: ANN001
               reads: str = "mlp_in", seed: int = 0, width: int = 48,
               reach: int | None = None):
    """A cross-layer transcoder (TopK k 6 by default) with random weights over ``layers``,
    as the graph reads it (:class:`~saes.transcoders.mlp_replacement.CLTReplacement`)."""
    from saes.transcoders.crosslayer import CLTConfig, CrossLayerTranscoder
    from saes.transcoders.mlp_replacement import CLTReplacement

    g = torch.Generator().manual_seed(seed)
    d = model.d_model
    cfg = CLTConfig(d_in=d, d_sae=width, layers=tuple(layers), architecture=arch,
                    k=6 if arch == "topk" else None, skip=skip, reads=reads,
                    model_id=model.model_id, reach=reach)
    clt = CrossLayerTranscoder(cfg)
    with torch.no_grad():
        clt.W_enc.copy_(torch.randn(clt.W_enc.shape, generator=g) / d ** 0.5)
        clt.b_enc.copy_(torch.randn(clt.b_enc.shape, generator=g) * 0.1)
        clt.b_dec.copy_(torch.randn(clt.b_dec.shape, generator=g) * 0.01)
        for w in clt.W_dec:
            w.copy_(torch.randn(w.shape, generator=g) * 0.05)
        if clt.W_skip is not None:
            clt.W_skip.copy_(torch.randn(clt.W_skip.shape, generator=g) * 0.02)
        if clt.log_threshold is not None:
            clt.log_threshold.fill_(-2.0)
    return CLTReplacement(clt)
