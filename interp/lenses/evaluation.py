"""Held-out evaluation of lenses, layer by layer (logit lens vs tuned lens side by side).

Packed windows of held-out text (:mod:`interp.data.windows`, never seen in training) run
through the model once per batch, capturing every layer's ``hook_resid_post`` and the
model's logits. Each lens reads every layer at positions ``1 … seq_len − 2`` (position 0
is an attention-sink outlier, the last position has no next token), giving per layer:

* ``kl``: KL(final ‖ lens) in nats, against the model's real output distribution;
* ``ce``: cross-entropy of the lens distribution against the actual next token (nats);
* ``entropy``: of the lens distribution (nats);
* ``top1_agreement``: share of positions where the lens's argmax equals the model's.

Every metric is first averaged within each window; the mean over windows carries a 95%
normal CI from the spread of window means (positions inside a window are correlated, so
windows are the independent unit). The headline ratio, mean KL of the logit lens over
mean KL of the tuned lens on layers ``0 … summary_last``, gets a paired bootstrap CI
over windows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows, require_text
from interp.display import format_number, with_ci
from interp.errors import InterpError
from interp.lenses.logit import Lens, LogitLens
from interp.lenses.training import SEQ_LEN, TunedLensTrainConfig
from interp.lenses.tuned import TunedLens
from interp.models.loading import Model
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from interp.schema import (
    Config,
    Headline,
    Result,
    at_least,
    json_field,
    json_meta,
    seed_range,
    setting,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

METRICS = ("kl", "ce", "entropy", "top1_agreement")


@dataclass(frozen=True)
class LensEvalConfig(Config):
    """Settings of one lens evaluation (recorded in ``results.json``)."""

    tokens: int = setting(4096, check=at_least(3), help="Held-out tokens to evaluate.")
    seq_len: int = setting(128, check=SEQ_LEN, help="Tokens per packed held-out window.")
    batch_size: int = setting(4, cli=False, check=at_least(1),
                              help="Text windows per forward pass.")
    seed: int = setting(0, check=seed_range, cli=False,
                        help="Picks the held-out windows (and the bootstrap).")
    summary_last: int = setting(20, check=at_least(0),
                                help="The headline ratio averages KL over layers 0…this.")
    bootstrap: int = setting(1000, cli=False, check=at_least(1),
                             help="Bootstrap resamples of the KL ratio's interval.")

    def check(self) -> None:
        """``tokens`` must cover at least one window of ``seq_len``."""
        if self.tokens < self.seq_len:
            raise self.error("tokens", f"must be ≥ the sequence length ({self.seq_len})",
                             self.tokens)

    @property
    def n_windows(self) -> int:
        """Held-out windows of ``seq_len`` tokens: ``ceil(tokens / seq_len)``, at least 2."""
        return max(2, math.ceil(self.tokens / self.seq_len))


@dataclass
class TrainingSummary:
    """How a saved tuned lens was trained (from its config), as shown beside its evaluation."""

    train: dict[str, Any]
    data: dict[str, Any] | None
    steps: int | None
    losses: list[float]
    elapsed_s: float | None
    tokens_per_s: float | None

    @classmethod
    def from_lens_config(cls, cfg: Mapping[str, Any]) -> TrainingSummary:
        """From a :class:`~interp.lenses.tuned.TunedLens`'s saved ``config``."""
        return cls(train=dict(cfg.get("train") or {}), data=cfg.get("data"),
                   steps=cfg.get("steps"), losses=[float(x) for x in cfg.get("losses") or []],
                   elapsed_s=cfg.get("elapsed_s"), tokens_per_s=cfg.get("tokens_per_s"))

    @property
    def config(self) -> TunedLensTrainConfig | None:
        """The training settings as a :class:`TunedLensTrainConfig` (``None`` if they do not
        parse)."""
        known = {f.name for f in fields(TunedLensTrainConfig)}
        try:
            return TunedLensTrainConfig(**{k: v for k, v in self.train.items() if k in known})
        except (InterpError, TypeError):
            return None

    @property
    def data_source(self) -> str | None:
        """Where the training text came from."""
        return None if self.data is None else self.data.get("source")


@dataclass
class LensEval(Result):
    """Per-window, per-layer metrics of each lens: ``values[lens][metric]`` is ``[windows, L]``.

    ``lens_path``, ``data`` and ``training`` describe the evaluated tuned lens and the
    held-out text when :func:`evaluate_tuned_lens` made the result. ``results.json`` has
    ``{metric}_{lens}_lens`` lists per layer (+ ``_ci95``) from :meth:`extra_data`.
    """

    model_id: str = field(metadata=json_meta(key="model"))
    layers: list[int]
    lenses: list[str]
    values: dict[str, dict[str, torch.Tensor]] = field(repr=False,
                                                       metadata=json_meta(skip=True))
    model_ce: torch.Tensor = field(repr=False, metadata=json_meta(skip=True))  # [windows]
    config: LensEvalConfig
    n_positions: int
    lens_path: str | None = json_field(None, omit_none=True)
    data: dict[str, Any] | None = json_field(None, omit_none=True)
    training: TrainingSummary | None = json_field(None, omit_none=True)

    warnings_always: ClassVar[bool] = False
    json_order: ClassVar[tuple[Any, ...]] = (
        "model", "layers", "lenses", "n_windows", "n_positions", "config", ...,
        "lens_path", "data", "training")

    def mean_ci(self, lens: str, metric: str) -> tuple[list[float], list[list[float]]]:
        """Mean over windows per layer, and its 95% normal CI."""
        from interp.stats import mean_ci  # scipy: imported when needed

        v = self.values[lens][metric].double().numpy()
        stats = [mean_ci(v[:, i]) for i in range(v.shape[1])]
        return [m for m, _, _ in stats], [[lo, hi] for _, lo, hi in stats]

    def summary_layers(self) -> list[int]:
        """Indices into ``layers`` of the summary layers: those up to ``config.summary_last``, and
        never the last layer read (where the logit lens is exact)."""
        last = min(self.config.summary_last, self.layers[-1] - 1)
        return [i for i, layer in enumerate(self.layers) if layer <= last]

    def kl_ratio(self, num: str = "logit", den: str = "tuned") -> tuple[float, list[float]]:
        """Mean KL of ``num`` over mean KL of ``den`` on the summary layers, bootstrap CI."""
        from interp.stats import bootstrap_ci

        idx = self.summary_layers()
        a = self.values[num]["kl"][:, idx].double().mean(1).numpy()
        b = self.values[den]["kl"][:, idx].double().mean(1).numpy()
        ratio = float(a.mean() / b.mean())
        ci = bootstrap_ci(lambda rows: float(a[rows].mean() / b[rows].mean()), len(a),
                          n_resamples=self.config.bootstrap, seed=self.config.seed)
        return ratio, ci

    def mean_kl(self, lens: str) -> float:
        """Mean KL of ``lens`` over windows, positions and the summary layers."""
        return float(self.values[lens]["kl"][:, self.summary_layers()].mean())

    def lower_kl_layers(self, lens: str = "tuned", than: str = "logit") -> list[int]:
        """Layers where ``lens`` has a lower mean KL than ``than``."""
        a, b = self.mean_ci(lens, "kl")[0], self.mean_ci(than, "kl")[0]
        return [layer for layer, x, y in zip(self.layers, a, b, strict=True) if x < y]

    def kl_difference_ci(self, a: str = "logit", b: str = "tuned"
                         ) -> tuple[list[float], list[list[float]]]:
        """Per layer, the mean over windows of KL(``a``) − KL(``b``), paired by window,
        and its 95% normal CI: where the interval holds 0 the two lenses do not differ
        beyond the noise of the held-out text."""
        from interp.stats import mean_ci

        d = (self.values[a]["kl"] - self.values[b]["kl"]).double().numpy()
        stats = [mean_ci(d[:, i]) for i in range(d.shape[1])]
        return [m for m, _, _ in stats], [[lo, hi] for _, lo, hi in stats]

    def lower_kl_beyond_noise(self, lens: str = "tuned", than: str = "logit") -> list[int]:
        """Layers where ``lens`` has a lower KL than ``than`` and the paired 95% interval
        of the difference excludes 0."""
        _, ci = self.kl_difference_ci(than, lens)
        return [layer for layer, (lo, _) in zip(self.layers, ci, strict=True)
                if math.isfinite(lo) and lo > 0]

    def model_ce_ci(self) -> tuple[float, float, float]:
        """The model's own cross-entropy (mean over windows) and its 95% normal CI."""
        from interp.stats import mean_ci

        return mean_ci(self.model_ce.double().numpy())

    @property
    def data_source(self) -> str | None:
        """Where the held-out text came from."""
        return None if self.data is None else self.data.get("source")

    @property
    def paired(self) -> bool:
        """Whether both the logit and the tuned lens were evaluated (the comparison)."""
        return {"logit", "tuned"} <= set(self.lenses)

    def extra_data(self) -> dict[str, Any]:
        """``{metric}_{lens}_lens`` lists per layer with their ``_ci95`` (and ``_n`` for the
        top-1 share), the model's own cross-entropy and, with both lenses, the comparison."""
        out: dict[str, Any] = {"n_windows": int(self.model_ce.shape[0])}
        for lens in self.lenses:
            for metric in METRICS:
                mean, ci = self.mean_ci(lens, metric)
                key = f"{metric}_{lens}_lens"
                out[key] = mean
                out[f"{key}_ci95"] = ci
                if metric == "top1_agreement":
                    out[f"{key}_n"] = self.n_positions
        ce, lo, hi = self.model_ce_ci()
        out["model_ce"] = ce
        out["model_ce_ci95"] = [lo, hi]
        if self.paired:
            idx = self.summary_layers()
            ratio, ci = self.kl_ratio()
            out["summary_layers"] = [self.layers[i] for i in idx]
            out["mean_kl_logit_lens"] = self.mean_kl("logit")
            out["mean_kl_tuned_lens"] = self.mean_kl("tuned")
            out["kl_ratio"] = ratio
            out["kl_ratio_ci95"] = ci
            out["tuned_lower_kl_layers"] = self.lower_kl_layers()
            diff, diff_ci = self.kl_difference_ci()
            out["kl_logit_minus_tuned"] = diff
            out["kl_logit_minus_tuned_ci95"] = diff_ci
            out["tuned_lower_kl_layers_beyond_noise"] = self.lower_kl_beyond_noise()
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per (lens, layer): each metric's mean over windows and its 95% CI."""
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        for lens in self.lenses:
            for metric in METRICS:
                mean, ci = self.mean_ci(lens, metric)
                for i, layer in enumerate(self.layers):
                    row = rows.setdefault((lens, layer), {"lens": lens, "layer": layer})
                    row[metric] = mean[i]
                    row[f"{metric}_lo"], row[f"{metric}_hi"] = ci[i]
        return pd.DataFrame(list(rows.values()))

    def headline(self) -> Headline:
        """The comparison in a few facts (the notebook view and the report's lead), the
        per-layer table and the one-line verdict (the CLI's)."""
        ce, ce_lo, ce_hi = self.model_ce_ci()
        rows: list[tuple[str, Any]] = []
        verdict = None
        if self.paired:
            summary = [self.layers[i] for i in self.summary_layers()] or self.layers
            ratio, (lo, hi) = self.kl_ratio()
            logit_kl, tuned_kl = self.mean_kl("logit"), self.mean_kl("tuned")
            rows += [
                (f"mean KL, layers {summary[0]}–{summary[-1]}",
                 f"logit {format_number(logit_kl)} · tuned {format_number(tuned_kl)} nats"),
                ("KL ratio logit / tuned",
                 f"{format_number(ratio, 2)}× (95% CI {format_number(lo, 2)}–"
                 f"{format_number(hi, 2)})"),
                ("layers where the tuned lens has lower KL",
                 f"{len(self.lower_kl_layers())} of {len(self.layers)}; beyond noise (paired "
                 f"95% CI of the difference excludes 0) at {len(self.lower_kl_beyond_noise())}"),
            ]
            verdict = (f"mean KL layers {summary[0]}–{summary[-1]}: logit {logit_kl:.3f}, "
                       f"tuned {tuned_kl:.3f} nats; ratio {ratio:.2f}× (95% CI {lo:.2f}–"
                       f"{hi:.2f}); model CE {ce:.3f}")
        source = f" ({self.data_source})" if self.data_source is not None else ""
        rows += [
            ("held-out text", f"{self.n_positions} positions in {int(self.model_ce.shape[0])} "
                              f"windows of {self.config.seq_len} tokens{source}"),
            ("model's own cross-entropy", with_ci(ce, ce_lo, ce_hi)),
        ]
        if self.lens_path is not None:
            rows.append(("lens", self.lens_path))
        names = {"kl": "KL", "ce": "CE", "top1_agreement": "top-1"}
        means = {(lens, m): self.mean_ci(lens, m)[0] for lens in self.lenses for m in names}
        table = [[layer, *[means[lens, m][i] for m in names for lens in self.lenses]]
                 for i, layer in enumerate(self.layers)]
        title = " vs ".join(f"{lens} lens" for lens in reversed(self.lenses))
        return Headline(
            title=f"Lens evaluation · {self.model_id}", rows=rows, verdict=verdict,
            columns=["layer", *[f"{names[m]} {lens}" for m in names for lens in self.lenses]],
            table=table, table_title=f"{title} · {self.model_id} · held-out, "
                                     f"{self.n_positions} positions")

    def figure(self) -> Figure | None:
        """:func:`~interp.lenses.figures.eval_kl_figure`: held-out KL to the final logits by layer,
        per lens."""
        from interp.lenses.figures import eval_kl_figure

        return eval_kl_figure(self)


def evaluate_lenses(
    model: Model,
    lenses: Mapping[str, Lens],
    docs: Sequence[str],
    config: LensEvalConfig | None = None,
    *,
    progress: bool | None = None,
    **settings: Any,
) -> LensEval:
    """Evaluate each lens on every layer over held-out ``docs`` (see the module doc).

    Settings come from ``config`` or, equally, from keyword arguments named as the fields
    of :class:`LensEvalConfig`, not both. The result carries its manifest.
    """
    cfg = LensEvalConfig.resolve(config, settings)
    ev = _evaluate(model, lenses, docs, cfg, progress)
    ev.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(), texts=docs)
    return ev


def _check_memory(model: Model, cfg: LensEvalConfig) -> None:
    """Refuse (one line, before any pass) batches whose read-outs would not fit: each holds
    float32 log-probabilities over the vocabulary for every position about six times at once
    (the logits, the model's log-softmax and probabilities, a lens's read-out, its exp and
    the KL terms)."""
    from interp.runs.memory import logits_bytes, require

    batch = min(cfg.batch_size, cfg.n_windows)
    require(logits_bytes(batch, cfg.seq_len, model.d_vocab, copies=6),
            f"evaluating lenses on batches of {batch} windows of {cfg.seq_len} tokens over a "
            f"{model.d_vocab:,}-token vocabulary", "lower batch_size or seq_len",
            device=model.device)


@torch.no_grad()
def _evaluate(model: Model, lenses: Mapping[str, Lens], docs: Sequence[str],
              cfg: LensEvalConfig, progress: bool | None) -> LensEval:
    if not lenses:
        raise InterpError("no lens to evaluate")
    layers = list(range(model.n_layers))
    names = [model.resid_hook(layer) for layer in layers]
    _check_memory(model, cfg)
    require_text(model, docs, need=cfg.n_windows * cfg.seq_len, what="lens evaluation",
                 asked=f"tokens={cfg.tokens:,}",
                 reads=f"{cfg.n_windows:,} windows of seq_len={cfg.seq_len}",
                 fix="lower tokens or give more held-out text")
    windows = pack_windows(model, docs, seq_len=cfg.seq_len, n_windows=cfg.n_windows,
                           seed=cfg.seed)
    vals = {name: {m: torch.zeros(cfg.n_windows, len(layers)) for m in METRICS}
            for name in lenses}
    model_ce = torch.zeros(cfg.n_windows)
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("evaluating lenses", total=cfg.n_windows, info="")
        for start in range(0, cfg.n_windows, cfg.batch_size):
            ids = windows[start : start + cfg.batch_size].to(model.device)
            rows = slice(start, start + ids.shape[0])
            acts, logits = forward_with_hooks(model, ids, None, names, with_logits=True)
            assert logits is not None
            final_lp = torch.log_softmax(logits[:, 1:-1], -1)
            del logits
            final_top1 = final_lp.argmax(-1)
            nxt = ids[:, 2:].unsqueeze(-1)
            model_ce[rows] = -final_lp.gather(-1, nxt).squeeze(-1).mean(1).cpu()
            p_final = final_lp.exp()
            ent_final = (p_final * final_lp).sum(-1)
            for li, layer in enumerate(layers):
                h = acts.pop(names[li])[:, 1:-1]
                for name, lens in lenses.items():
                    lp = lens.logprobs(h, layer)
                    v = vals[name]
                    v["kl"][rows, li] = (ent_final - (p_final * lp).sum(-1)).clamp(min=0) \
                        .mean(1).cpu()
                    v["ce"][rows, li] = -lp.gather(-1, nxt).squeeze(-1).mean(1).cpu()
                    v["entropy"][rows, li] = -(lp.exp() * lp).sum(-1).mean(1).cpu()
                    v["top1_agreement"][rows, li] = (lp.argmax(-1) == final_top1).float() \
                        .mean(1).cpu()
            bar.update(task, advance=ids.shape[0])
    return LensEval(
        model_id=model.model_id, layers=layers, lenses=list(lenses), values=vals,
        model_ce=model_ce, config=cfg, n_positions=cfg.n_windows * (cfg.seq_len - 2),
    )


def evaluate_tuned_lens(
    model: Model,
    tuned: TunedLens,
    docs: Sequence[str],
    config: LensEvalConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    progress: bool | None = None,
    **settings: Any,
) -> LensEval:
    """``interp tuned-lens eval``: the logit lens and ``tuned`` side by side on held-out ``docs``.

    The result also records where the lens came from, its training history and ``data``
    (where the held-out text came from, e.g. :func:`interp.data.corpus.text_source`'s), and
    carries its manifest (with the lens's own provenance under ``lens_manifest``).
    """
    cfg = LensEvalConfig.resolve(config, settings)
    ev = _evaluate(model, {"logit": LogitLens(model), "tuned": tuned}, docs, cfg, progress)
    ev.lens_path = str(tuned.path)
    ev.data = data
    ev.training = TrainingSummary.from_lens_config(tuned.config)
    sha = (data or {}).get("sha256")
    ev.manifest = model_manifest(
        model, seed=cfg.seed, config={**cfg.to_dict(), "lens": str(tuned.path)},
        dataset_hash=sha, texts=None if sha else docs,
        extra={"lens_manifest": {k: tuned.manifest.get(k) for k in
                                 ("git_commit", "timestamp", "dataset_hash", "seed", "config")}})
    return ev
