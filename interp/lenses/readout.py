"""One prompt read at every layer: the logit lens and, when given, a tuned lens beside it.

:func:`run_lens` is the one entry point (``interp lens PROMPT [--tuned PATH]``)::

    from interp.lenses import run_lens
    readout = run_lens(model, "The capital of France is")        # the logit lens
    readout.logit.top1()[-1]           # its top-1 at every layer, last position
    readout = run_lens(model, "The capital of France is", tuned="default", top_k=3)
    readout.tuned.kl                   # the tuned lens on the same forward pass
    readout.to_dict()                  # results.json (the tuned lens under "tuned")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pandas as pd
import torch

from interp.activations.capture import Activations, capture
from interp.errors import InterpError
from interp.lenses.logit import Lens, LensResult, LogitLens, entropy, kl_divergence
from interp.lenses.tuned import TunedLens, load_tuned_lens
from interp.models.loading import Model
from interp.runs.manifest import model_manifest
from interp.schema import (
    Check,
    Cli,
    Config,
    Headline,
    Result,
    json_field,
    json_meta,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: ``top_k`` counts tokens kept per cell (the message keeps the word users search for).
_TOP_K = Check(lambda k: k >= 1, "must be ≥ 1 (top-k tokens kept per cell)", low=1)


@dataclass(frozen=True)
class LensConfig(Config):
    """Settings of :func:`run_lens` (recorded in the run manifest).

    ``tuned``: a loaded :class:`~interp.lenses.tuned.TunedLens`, the path of a lens or
    training-run folder, ``"default"`` for ``$INTERP_CACHE/lenses/<model>/latest``, or
    ``None`` for the logit lens alone.
    """

    top_k: int = setting(5, check=_TOP_K, help="Tokens kept per cell.")
    layers: Sequence[int] | str | int | None = setting(
        "all", help="Layers to read: comma-separated (0-based, resid_post) or 'all'.")
    chat: bool = setting(False, help="Wrap the prompt in the model's chat template.")
    tuned: TunedLens | str | os.PathLike[str] | None = setting(
        None,
        help="Also read every layer through this tuned lens ('default' for "
        "$INTERP_CACHE/lenses/<model>/latest); the report shows both lenses side by side.",
        cli=Cli(metavar="PATH"))
    keep_logprobs: bool = setting(
        False, cli=False,
        help="Also keep every lens's full [layers, positions, vocab] log-probabilities "
             "(memory heavy).")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Recorded in the manifest (a lens draws nothing at random).")

    def check(self) -> None:
        """``tuned``, when a path, must not be blank."""
        if isinstance(self.tuned, str) and not self.tuned.strip():
            raise self.error("tuned", "must not be empty", self.tuned)

    def load_tuned(self, model: Model) -> TunedLens | None:
        """The tuned lens to read with, loaded for ``model`` (``None``: none configured)."""
        if self.tuned is None or isinstance(self.tuned, TunedLens):
            return self.tuned
        return load_tuned_lens(None if self.tuned == "default" else self.tuned, model)


@dataclass
class LensReadout(Result):
    """The logit lens on one prompt, and the tuned lens on the same prompt when asked for.

    ``results.json`` is the logit lens's own record
    (:meth:`~interp.lenses.logit.LensResult.to_dict`) with the tuned lens's nested under
    ``"tuned"``, then the manifest.
    """

    logit: LensResult = field(metadata=json_meta(skip=True))
    tuned: LensResult | None = json_field(None, omit_none=True)
    #: Where the tuned lens was loaded from.
    tuned_path: Path | None = json_field(None, skip=True)

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (..., "tuned")

    def extra_data(self) -> dict[str, Any]:
        """The logit lens's ``results.json`` keys (the tuned lens's readout nests under
        ``tuned``)."""
        return self.logit.to_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A readout back from its ``results.json`` dict (schema checked, see
        :meth:`~interp.lenses.logit.LensResult.from_dict`). Written out: the logit lens's keys sit
        at the top level of the file, beside ``"tuned"``."""
        if not isinstance(data, Mapping):
            raise InterpError(f"lens result must be a dict, not {type(data).__name__}")
        tuned = data.get("tuned")
        return cls(LensResult.from_dict(data),
                   LensResult.from_dict(tuned) if isinstance(tuned, Mapping) else None,
                   manifest=data.get("manifest") if isinstance(data.get("manifest"), dict)
                   else None)

    def to_frame(self) -> pd.DataFrame:
        """One row per (lens, layer, position): top-1 token, its probability, KL, entropy."""
        frames = [r.to_frame().assign(lens=r.lens) for r in (self.logit, self.tuned)
                  if r is not None]
        frame = pd.concat(frames, ignore_index=True)
        return frame.reindex(columns=["lens", *[c for c in frame.columns if c != "lens"]])

    def results(self) -> list[LensResult]:
        """The lens readings in order: the logit lens, then the tuned lens if any."""
        return [r for r in (self.logit, self.tuned) if r is not None]

    def headline(self, columns: int = 6) -> Headline:
        """The logit lens's headline; with a tuned lens, the title says so and a row says
        from which layer it agrees with the model. (The CLI prints each lens's table.)"""
        head = self.logit.headline(columns)
        if self.tuned is not None:
            agrees = self.tuned.agreement_layer()
            head.title = "logit lens and tuned lens"
            head.rows.append(("tuned lens agrees from layer",
                              agrees if agrees is not None else "never"))
        return head

    def figure(self) -> Figure | None:
        """The logit lens's curves, or both lenses compared when a tuned lens was read too."""
        from interp.lenses.figures import lens_compare_figure, lens_curves_figure

        if self.tuned is None:
            return lens_curves_figure(self.logit)
        return lens_compare_figure(self.logit, self.tuned)


def run_lens(
    model: Model,
    prompt: str,
    config: LensConfig | None = None,
    **settings: Any,
) -> LensReadout:
    """Read ``prompt`` at every layer with the logit lens and, if configured, a tuned lens.

    Settings come from ``config`` or, equally, from keyword arguments named as the fields
    of :class:`LensConfig` (``run_lens(model, prompt, layers=[6], top_k=3)``), not both.
    The tuned lens is loaded first, so a missing or foreign lens fails before any work.
    One forward pass captures the requested layers' ``hook_resid_post`` and the model's
    own logits; every lens reads from it. The final distribution used for KL is the model's
    real output, not the lens at the last layer, so KL there measures the lens's error (0
    up to float noise for the logit lens). The readout carries its manifest.
    """
    config = LensConfig.resolve(config, settings)
    if not isinstance(prompt, str) or not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    if config.top_k > model.d_vocab:
        raise InterpError(f"top-k must be between 1 and {model.d_vocab}, got {config.top_k}")
    tuned = config.load_tuned(model)
    layer_list = model.parse_layers(config.layers)
    _check_memory(model, prompt, config, len(layer_list) * (2 if tuned is not None else 1))
    acts = capture(model, [prompt], layers=layer_list, positions="all", chat=config.chat,
                   with_logits=True, progress=False)
    logit = _read(model, prompt, acts, LogitLens(model), layer_list, config)
    read = _read(model, prompt, acts, tuned, layer_list, config) if tuned is not None else None
    readout = LensReadout(logit, read, tuned.path if tuned is not None else None)
    recorded: dict[str, Any] = {"top_k": config.top_k, "layers": config.layers,
                                "chat": config.chat}
    if tuned is not None:
        recorded["tuned_lens"] = None if tuned.path is None else str(tuned.path)
    readout.manifest = model_manifest(model, seed=config.seed, config=recorded, texts=[prompt])
    return readout


def _check_memory(model: Model, prompt: str, config: LensConfig, readouts: int) -> None:
    """Refuse (one line, before the forward pass) a prompt whose read-outs would not fit.

    Each position holds float32 log-probabilities over the vocabulary about four times
    at once (the model's logits and log-softmax, one layer's read-out and its KL terms),
    plus every layer's read-out with ``keep_logprobs``.
    """
    from interp.runs.memory import logits_bytes, require

    n = len(model.encode(model.format_prompt(prompt, config.chat)))
    copies = 4 + (readouts if config.keep_logprobs else 0)
    require(logits_bytes(1, n, model.d_vocab, copies),
            f"reading {n} positions over a {model.d_vocab:,}-token vocabulary",
            "shorten the prompt" + (" or turn keep_logprobs off" if config.keep_logprobs
                                    else ""), device=model.device)


def _read(model: Model, prompt: str, acts: Activations, lens: Lens, layers: list[int],
          config: LensConfig) -> LensResult:
    """``lens`` applied to every captured layer at every position of the one prompt."""
    n = int(acts.lengths[0])
    ids = acts.input_ids[0, :n].tolist()
    assert acts.logits is not None
    final_lp = torch.log_softmax(acts.logits[0, :n].float(), dim=-1)
    tk_ids, tk_probs, kls, ents, lps = [], [], [], [], []
    with torch.inference_mode():
        for layer in layers:
            lp = lens.logprobs(acts[layer][0, :n], layer)
            probs, idx = lp.topk(config.top_k, dim=-1)
            tk_ids.append(idx)
            tk_probs.append(probs.exp())
            kls.append(kl_divergence(final_lp, lp))
            ents.append(entropy(lp))
            if config.keep_logprobs:
                lps.append(lp)
        f_probs, f_idx = final_lp.topk(config.top_k, dim=-1)
    return LensResult(
        model_id=model.model_id,
        prompt=prompt,
        chat=config.chat,
        lens=lens.name,
        tokens=model.token_strs(ids),
        token_ids=ids,
        layers=layers,
        topk_ids=torch.stack(tk_ids),
        topk_probs=torch.stack(tk_probs),
        kl=torch.stack(kls),
        entropy=torch.stack(ents),
        final_topk_ids=f_idx,
        final_topk_probs=f_probs.exp(),
        final_entropy=entropy(final_lp),
        decode=model.decode_token,
        logprobs=torch.stack(lps) if config.keep_logprobs else None,
    )


__all__ = ["LensConfig", "LensReadout", "run_lens"]
