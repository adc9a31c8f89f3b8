"""One prompt read at every layer: the logit lens and, when given, a tuned lens beside it.

This is what ``interp lens PROMPT [--tuned PATH]`` computes::

    from interp.lenses import LensConfig, run_lenses
    readout = run_lenses(model, "The capital of France is", LensConfig(tuned="default"))
    readout.logit.top1()[-1]           # the logit lens's top-1 at every layer, last position
    readout.to_dict()                  # results.json (the tuned lens under "tuned")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from interp.errors import InterpError
from interp.lenses.logit import LensResult, logit_lens, run_lens
from interp.lenses.tuned import TunedLens, load_tuned_lens
from interp.models.loading import Model


@dataclass
class LensConfig:
    """Settings of :func:`run_lenses` (recorded in the run manifest).

    ``tuned``: a loaded :class:`~interp.lenses.tuned.TunedLens`, the path of a lens or
    training-run folder, ``"default"`` for ``$INTERP_CACHE/lenses/<model>/latest``, or
    ``None`` for the logit lens alone.
    """

    top_k: int = 5
    layers: Sequence[int] | str | None = "all"
    chat: bool = False
    tuned: TunedLens | str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.tuned, str) and not self.tuned.strip():
            raise InterpError("empty --tuned path")

    def load_tuned(self, model: Model) -> TunedLens | None:
        """The tuned lens to read with, loaded for ``model`` (``None``: none configured)."""
        if self.tuned is None or isinstance(self.tuned, TunedLens):
            return self.tuned
        return load_tuned_lens(None if self.tuned == "default" else self.tuned, model)


@dataclass
class LensReadout:
    """The logit lens on one prompt, and the tuned lens on the same prompt when asked for."""

    logit: LensResult
    tuned: LensResult | None = None
    #: Where the tuned lens was loaded from.
    tuned_path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """``results.json``: the logit lens's schema, with the tuned lens's under ``"tuned"``."""
        data = self.logit.to_dict()
        if self.tuned is not None:
            data["tuned"] = self.tuned.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LensReadout:
        """A readout back from its ``results.json`` dict (schema checked, see
        :meth:`LensResult.from_dict`)."""
        if not isinstance(data, Mapping):
            raise InterpError(f"lens result must be a dict, not {type(data).__name__}")
        tuned = data.get("tuned")
        return cls(LensResult.from_dict(data),
                   LensResult.from_dict(tuned) if isinstance(tuned, Mapping) else None)

    def to_frame(self) -> pd.DataFrame:
        """One row per (lens, layer, position): top-1 token, its probability, KL, entropy."""
        frames = [r.to_frame().assign(lens=r.lens) for r in (self.logit, self.tuned)
                  if r is not None]
        frame = pd.concat(frames, ignore_index=True)
        return frame.reindex(columns=["lens", *[c for c in frame.columns if c != "lens"]])

    def _repr_html_(self) -> str:
        from interp.display import result_html
        from interp.lenses.figures import lens_compare_figure, lens_curves_figure

        rows = self.logit.headline()
        if self.tuned is None:
            return result_html("logit lens", rows, lens_curves_figure(self.logit))
        agrees = self.tuned.agreement_layer()
        rows.append(("tuned lens agrees from layer", agrees if agrees is not None else "never"))
        return result_html("logit lens and tuned lens", rows,
                           lens_compare_figure(self.logit, self.tuned))


def run_lenses(model: Model, prompt: str, config: LensConfig | None = None) -> LensReadout:
    """Read ``prompt`` at every layer with the logit lens and, if configured, a tuned lens.

    The tuned lens is loaded first, so a missing or foreign lens fails before any work.
    """
    config = config or LensConfig()
    tuned = config.load_tuned(model)
    logit = logit_lens(model, prompt, layers=config.layers, top_k=config.top_k,
                       chat=config.chat)
    if tuned is None:
        return LensReadout(logit)
    read = run_lens(model, prompt, lens=tuned, layers=config.layers, top_k=config.top_k,
                    chat=config.chat)
    return LensReadout(logit, read, tuned.path)
