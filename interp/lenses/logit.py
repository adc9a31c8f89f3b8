"""Lenses: read the residual stream at each layer as a next-token distribution.

The logit lens (nostalgebraist 2020) decodes layer ``L``'s residual stream with the
model's own final RMSNorm (including its learned γ) and unembedding:

    logits_L = W_U · RMSNorm_final(h_L)

``h_L`` is ``blocks.L.hook_resid_post``. At the last layer this is exactly the
model's output, which the tests check. For each layer and position we report the
top-k tokens, the entropy of the lens distribution and KL(final ‖ layer), the
information lost by stopping at layer L (tuned-lens convention).

:class:`Lens` is the shared interface: :class:`LogitLens` here, and a tuned lens
(per-layer learned translators) plugs in by overriding :meth:`Lens.transform`. One lens's
reading of one prompt is a :class:`LensResult`; :func:`interp.lenses.readout.run_lens` makes
them (the logit lens, and a tuned lens beside it when asked for).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pandas as pd
import torch
from jaxtyping import Float, Int
from torch import Tensor
from typing_extensions import override

from interp.display import visible_token
from interp.errors import InterpError
from interp.models.loading import Model
from interp.schema import Headline, Result, json_field, json_meta

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class Lens:
    """Decode residual-stream activations into log-probabilities over the vocabulary.

    Subclasses change :meth:`transform` (identity for the logit lens); every lens
    shares the model's unembedding (final norm + ``W_U``).
    """

    name = "lens"

    def __init__(self, model: Model) -> None:
        self.model = model

    def transform(self, resid: Float[Tensor, "... d_model"], layer: int) -> Tensor:
        """Map layer ``layer``'s residual into the final layer's basis."""
        raise NotImplementedError

    def logits(
        self, resid: Float[Tensor, "... d_model"], layer: int
    ) -> Float[Tensor, "... d_vocab"]:
        """Unnormalised next-token scores read from ``resid`` at ``layer``."""
        return self.model.unembed(self.transform(resid, layer))

    def logprobs(
        self, resid: Float[Tensor, "... d_model"], layer: int
    ) -> Float[Tensor, "... d_vocab"]:
        """Log-probabilities (float32) read from ``resid`` at ``layer``."""
        return torch.log_softmax(self.logits(resid, layer).float(), dim=-1)


class LogitLens(Lens):
    """The logit lens: no translation, just the model's final norm and ``W_U``."""

    name = "logit"

    @override
    def transform(self, resid: Tensor, layer: int) -> Tensor:  # noqa: ARG002
        return resid


def kl_divergence(
    p_log: Float[Tensor, "... vocab"], q_log: Float[Tensor, "... vocab"]
) -> Float[Tensor, ...]:
    """KL(p ‖ q) in nats from log-probabilities."""
    return (p_log.exp() * (p_log - q_log)).sum(-1).clamp(min=0.0)


def entropy(logp: Float[Tensor, "... vocab"]) -> Float[Tensor, ...]:
    """Shannon entropy in nats from log-probabilities."""
    return -(logp.exp() * logp).sum(-1)


@dataclass
class LensResult(Result):
    """Per-layer, per-position readout of one prompt by one lens.

    Shapes: L = len(layers), P = len(tokens), K = top_k. ``topk_tokens`` and
    ``final_topk_tokens`` hold the decoded top-k tokens (filled from ``decode`` when
    not given). ``results.json`` holds the fields that are plain data and, from
    :meth:`extra_data`, the grids rounded to 6 decimals and the top-k as token/id/prob.
    """

    model_id: str = field(metadata=json_meta(key="model"))
    prompt: str
    chat: bool
    lens: str
    tokens: list[str]
    token_ids: list[int]
    layers: list[int]
    topk_ids: Int[Tensor, "L P K"] = field(metadata=json_meta(skip=True))
    topk_probs: Float[Tensor, "L P K"] = field(metadata=json_meta(skip=True))
    kl: Float[Tensor, "L P"] = field(metadata=json_meta(skip=True))
    entropy: Float[Tensor, "L P"] = field(metadata=json_meta(skip=True))
    final_topk_ids: Int[Tensor, "P K"] = field(metadata=json_meta(skip=True))
    final_topk_probs: Float[Tensor, "P K"] = field(metadata=json_meta(skip=True))
    final_entropy: Float[Tensor, " P"] = field(metadata=json_meta(skip=True))
    decode: Any = json_field(None, skip=True, repr=False)
    logprobs: Float[Tensor, "L P vocab"] | None = json_field(None, skip=True, repr=False)
    topk_tokens: list[list[list[str]]] = json_field(skip=True, repr=False,
                                                    default_factory=list)
    final_topk_tokens: list[list[str]] = json_field(skip=True, repr=False, default_factory=list)

    #: The file never had a ``warnings`` key (nor has the tuned lens's, nested in it).
    warnings_always: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.topk_tokens and self.decode is not None:
            self.topk_tokens = [[[self.decode(int(i)) for i in cell] for cell in row]
                                for row in self.topk_ids]
        if not self.final_topk_tokens and self.decode is not None:
            self.final_topk_tokens = [[self.decode(int(i)) for i in cell]
                                      for cell in self.final_topk_ids]

    def top1(self) -> list[list[str]]:
        """Decoded top-1 token at each (layer, position)."""
        return [[cell[0] for cell in row] for row in self.topk_tokens]

    def final_top1(self) -> list[str]:
        """The model's own top-1 next token at each position."""
        return [cell[0] for cell in self.final_topk_tokens]

    def agreement_layer(self, position: int = -1) -> int | None:
        """The earliest layer from which the lens's top-1 at ``position`` equals the model's
        at every later layer (``None``: not even at the last layer)."""
        final = self.final_top1()[position]
        first = None
        for li in range(len(self.layers) - 1, -1, -1):
            if self.topk_tokens[li][position][0] != final:
                break
            first = self.layers[li]
        return first

    def extra_data(self) -> dict[str, Any]:
        """The grids of ``results.json`` (see the README), after the plain fields."""
        def topk(tokens: list[str], ids: Tensor, probs: Tensor) -> list[dict[str, Any]]:
            return [
                {"token": t, "id": int(i), "prob": round(float(p), 6)}
                for t, i, p in zip(tokens, ids, probs, strict=True)
            ]

        return {
            "top1": self.top1(),
            "top1_prob": [[round(float(p), 6) for p in row[:, 0]] for row in self.topk_probs],
            "topk": [
                [topk(*cell) for cell in zip(li_tok, li_ids, li_probs, strict=True)]
                for li_tok, li_ids, li_probs in zip(
                    self.topk_tokens, self.topk_ids, self.topk_probs, strict=True)
            ],
            "kl": [[round(float(x), 6) for x in row] for row in self.kl],
            "entropy": [[round(float(x), 6) for x in row] for row in self.entropy],
            "final_top1": self.final_top1(),
            "final_top1_prob": [round(float(p), 6) for p in self.final_topk_probs[:, 0]],
            "final_entropy": [round(float(x), 6) for x in self.final_entropy],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A result back from its ``results.json`` dict, checking its schema and shapes.

        Raises :class:`InterpError` naming the first problem (missing key, wrong shape,
        non-numeric value). ``final_top1_prob`` and ``final_entropy`` may be missing (NaN).
        Written out rather than generic: the file holds the grids as top-k records and
        rounded lists (:meth:`extra_data`), which this checks and turns back into tensors.
        """
        return cls(**_from_dict(data))

    def to_frame(self) -> pd.DataFrame:
        """One row per (layer, position): top-1 token, its probability, KL, entropy.

        Not the headline's table, which shows the last positions only: every cell."""
        rows = []
        top1 = self.top1()
        for li, layer in enumerate(self.layers):
            for p, tok in enumerate(self.tokens):
                rows.append(
                    {
                        "layer": layer,
                        "position": p,
                        "input_token": tok,
                        "top1": top1[li][p],
                        "top1_prob": float(self.topk_probs[li, p, 0]),
                        "kl": float(self.kl[li, p]),
                        "entropy": float(self.entropy[li, p]),
                    }
                )
        return pd.DataFrame(rows)

    def headline(self, columns: int = 6) -> Headline:
        """The facts a reader looks at first, and the top-1 table of the last ``columns``
        positions (every layer, then the model's own prediction): the CLI's table, the
        notebook view and the report's lead."""
        agrees = self.agreement_layer()
        rows: list[tuple[str, Any]] = [
            ("model", self.model_id),
            ("prompt", self.prompt),
            ("lens", self.lens),
            ("chat template", "yes" if self.chat else "no"),
            ("layers × positions", f"{len(self.layers)} × {len(self.tokens)}"),
            (NEXT_TOKEN, self.final_top1()[-1]),
            ("lens agrees from layer", agrees if agrees is not None else "never"),
        ]
        first = max(0, len(self.tokens) - columns)
        shown = range(first, len(self.tokens))
        top1 = self.top1()
        table: list[list[Any]] = [
            [str(layer), *[visible_token(top1[li][p]) for p in shown],
             float(self.topk_probs[li, -1, 0]), float(self.kl[li, -1]),
             float(self.entropy[li, -1])]
            for li, layer in enumerate(self.layers)]
        table.append(["model", *[visible_token(t) for t in self.final_top1()[first:]],
                      float(self.final_topk_probs[-1, 0]), 0, float(self.final_entropy[-1])])
        return Headline(
            title=f"{self.lens} lens", rows=rows,
            columns=["layer", *[f"{p}:{visible_token(self.tokens[p])}" for p in shown],
                     "p (last)", "KL (last)", "H (last)"],
            table=table, emphasis=len(table) - 1,
            table_title=f"{self.lens} lens · {self.model_id} · top-1 next token per layer")

    def figure(self) -> Figure | None:
        """:func:`~interp.lenses.figures.lens_curves_figure`: KL to the final logits and entropy by
        layer."""
        from interp.lenses.figures import lens_curves_figure

        return lens_curves_figure(self)


#: The headline row with the model's own next token (reports show it as a token).
NEXT_TOKEN = "model's next token"


def _num(value: Any, where: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise InterpError(f"lens result {where} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InterpError(f"lens result {where} must be a number, got {value!r}") from None


def _grid(data: Mapping[str, Any], key: str, n_layers: int, n_pos: int) -> list[list[Any]]:
    grid = data[key]
    if not isinstance(grid, list) or len(grid) != n_layers:
        raise InterpError(f"lens result {key!r} must have one row per layer ({n_layers})")
    for li, row in enumerate(grid):
        if not isinstance(row, list) or len(row) != n_pos:
            raise InterpError(
                f"lens result {key!r} row {li} must have one entry per position ({n_pos})"
            )
    return grid


def _from_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise InterpError(f"lens result must be a dict, not {type(data).__name__}")
    required = ("model", "prompt", "tokens", "layers", "top1", "top1_prob", "topk", "kl",
                "entropy", "final_top1")
    missing = [k for k in required if k not in data]
    if missing:
        raise InterpError(f"lens result is missing {', '.join(repr(k) for k in missing)}")
    tokens = data["tokens"]
    if not isinstance(tokens, list) or not tokens:
        raise InterpError("lens result 'tokens' must be a non-empty list of strings")
    layers = data["layers"]
    if not isinstance(layers, list) or not layers:
        raise InterpError("lens result 'layers' must be a non-empty list of ints")
    try:
        layers = [int(x) for x in layers]
    except (TypeError, ValueError):
        raise InterpError("lens result 'layers' must be a list of ints") from None
    n_layers, n_pos = len(layers), len(tokens)
    _grid(data, "top1", n_layers, n_pos)

    def nums(key: str) -> Tensor:
        grid = _grid(data, key, n_layers, n_pos)
        return torch.tensor([[_num(v, f"{key}[{li}][{p}]") for p, v in enumerate(row)]
                             for li, row in enumerate(grid)], dtype=torch.float64)

    nums("top1_prob")
    kl, ent = nums("kl"), nums("entropy")
    topk = _grid(data, "topk", n_layers, n_pos)
    final_top1 = data["final_top1"]
    if not isinstance(final_top1, list) or len(final_top1) != n_pos:
        raise InterpError(f"lens result 'final_top1' must have one entry per position ({n_pos})")
    k = None
    tok_grid: list[list[list[str]]] = []
    ids: list[list[list[int]]] = []
    probs: list[list[list[float]]] = []
    for li, row in enumerate(topk):
        tok_grid.append([])
        ids.append([])
        probs.append([])
        for p, entries in enumerate(row):
            if not isinstance(entries, list) or not entries:
                raise InterpError(f"lens result topk[{li}][{p}] must be a non-empty list")
            if k is not None and len(entries) != k:
                raise InterpError(f"lens result topk[{li}][{p}] must have {k} entries")
            k = len(entries)
            for e in entries:
                if not isinstance(e, Mapping) or "token" not in e or "prob" not in e:
                    raise InterpError(
                        f"lens result topk[{li}][{p}] entries need 'token' and 'prob'"
                    )
            tok_grid[li].append([str(e["token"]) for e in entries])
            ids[li].append([int(e["id"]) if e.get("id") is not None else -1 for e in entries])
            probs[li].append([_num(e["prob"], f"topk[{li}][{p}] prob") for e in entries])

    def per_position(key: str) -> Tensor:
        values = data.get(key)
        if isinstance(values, list) and len(values) == n_pos:
            return torch.tensor([_num(v, key) for v in values], dtype=torch.float64)
        return torch.full((n_pos,), math.nan, dtype=torch.float64)

    return dict(
        model_id=str(data["model"]), prompt=str(data["prompt"]),
        chat=bool(data.get("chat", False)), lens=str(data.get("lens", "logit")),
        tokens=[str(t) for t in tokens], token_ids=[int(i) for i in data.get("token_ids", [])],
        layers=layers, topk_ids=torch.tensor(ids), topk_probs=torch.tensor(probs),
        kl=kl, entropy=ent, final_topk_ids=torch.full((n_pos, 1), -1),
        final_topk_probs=per_position("final_top1_prob").unsqueeze(1),
        final_entropy=per_position("final_entropy"),
        topk_tokens=tok_grid, final_topk_tokens=[[str(t)] for t in final_top1],
    )
