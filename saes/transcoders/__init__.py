"""Transcoders: sparse replacements of the MLPs (input → output), trained, evaluated, read
from other tools' files; the attribution graphs of :mod:`saes.graphs` are built on them.

::

    from saes.transcoders import TranscoderTrainConfig, train_transcoders, load_transcoders
    runs = train_transcoders(model, docs, "runs/tc", layers=range(30),
                             cfg=TranscoderTrainConfig(d_sae=4608, tokens=200_000))
    tcs = load_transcoders("runs/tc", model)        # TranscoderSet: layer -> transcoder
"""

from saes.transcoders.files import TranscoderSet, load_transcoder, load_transcoders
from saes.transcoders.model import TranscoderConfig, is_transcoder, transcoder_class
from saes.transcoders.train import TranscoderTrainConfig, train_transcoders

__all__ = ["TranscoderConfig", "TranscoderSet", "TranscoderTrainConfig", "is_transcoder",
           "load_transcoder", "load_transcoders", "train_transcoders", "transcoder_class"]
