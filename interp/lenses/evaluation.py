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
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd
import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from interp.lenses.logit import Lens, LogitLens
from interp.lenses.training import TrainConfig
from interp.lenses.tuned import TunedLens
from interp.models.loading import Model
from interp.runs.progress import make_progress

METRICS = ("kl", "ce", "entropy", "top1_agreement")


@dataclass
class EvalConfig:
    """Settings of one lens evaluation (recorded in ``results.json``)."""

    tokens: int = 4096
    seq_len: int = 128
    batch_size: int = 4
    seed: int = 0
    summary_last: int = 20
    bootstrap: int = 1000

    def __post_init__(self) -> None:
        if self.seq_len < 3:
            raise InterpError(f"sequence length must be ≥ 3, got {self.seq_len}")
        if self.tokens < self.seq_len:
            raise InterpError(f"--tokens must be ≥ the sequence length ({self.seq_len})")
        if self.batch_size < 1:
            raise InterpError(f"batch size must be ≥ 1, got {self.batch_size}")

    @property
    def n_windows(self) -> int:
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
    #: The saved values as they were (``to_dict`` gives them back unchanged).
    saved: dict[str, Any] = field(default_factory=dict, repr=False)

    KEYS = ("train", "data", "steps", "losses", "elapsed_s", "tokens_per_s")

    @classmethod
    def from_lens_config(cls, cfg: Mapping[str, Any]) -> TrainingSummary:
        """From a :class:`~interp.lenses.tuned.TunedLens`'s saved ``config``."""
        return cls(train=dict(cfg.get("train") or {}), data=cfg.get("data"),
                   steps=cfg.get("steps"), losses=[float(x) for x in cfg.get("losses") or []],
                   elapsed_s=cfg.get("elapsed_s"), tokens_per_s=cfg.get("tokens_per_s"),
                   saved={k: cfg.get(k) for k in cls.KEYS})

    @property
    def config(self) -> TrainConfig | None:
        """The training settings as a :class:`TrainConfig` (``None`` if they do not parse)."""
        known = {f.name for f in fields(TrainConfig)}
        try:
            return TrainConfig(**{k: v for k, v in self.train.items() if k in known})
        except (InterpError, TypeError):
            return None

    @property
    def data_source(self) -> str | None:
        """Where the training text came from."""
        return None if self.data is None else self.data.get("source")

    def to_dict(self) -> dict[str, Any]:
        if self.saved:
            return dict(self.saved)
        return {"train": self.train, "data": self.data, "steps": self.steps,
                "losses": self.losses, "elapsed_s": self.elapsed_s,
                "tokens_per_s": self.tokens_per_s}


@dataclass
class LensEval:
    """Per-window, per-layer metrics of each lens: ``values[lens][metric]`` is ``[windows, L]``.

    ``lens_path``, ``data`` and ``training`` describe the evaluated tuned lens and the
    held-out text when :func:`evaluate_tuned_lens` made the result.
    """

    model_id: str
    layers: list[int]
    lenses: list[str]
    values: dict[str, dict[str, torch.Tensor]] = field(repr=False)
    model_ce: torch.Tensor = field(repr=False)  # [windows]
    config: EvalConfig
    n_positions: int
    lens_path: str | None = None
    data: dict[str, Any] | None = None
    training: TrainingSummary | None = None

    def mean_ci(self, lens: str, metric: str) -> tuple[list[float], list[list[float]]]:
        """Mean over windows per layer, and its 95% normal CI."""
        from interp.stats import mean_ci  # scipy: imported when needed

        v = self.values[lens][metric].double().numpy()
        stats = [mean_ci(v[:, i]) for i in range(v.shape[1])]
        return [m for m, _, _ in stats], [[lo, hi] for _, lo, hi in stats]

    def summary_layers(self) -> list[int]:
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

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` schema: ``{metric}_{lens}_lens`` lists per layer (+ ``_ci95``)."""
        out: dict[str, Any] = {
            "model": self.model_id,
            "layers": self.layers,
            "lenses": self.lenses,
            "n_windows": int(self.model_ce.shape[0]),
            "n_positions": self.n_positions,
            "config": asdict(self.config),
        }
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
        if {"logit", "tuned"} <= set(self.lenses):
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
        if self.lens_path is not None:
            out["lens_path"] = self.lens_path
        if self.data is not None:
            out["data"] = self.data
        if self.training is not None:
            out["training"] = self.training.to_dict()
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

    def headline(self) -> list[tuple[str, object]]:
        """The facts a reader looks at first (the notebook view)."""
        ce, lo, hi = self.model_ce_ci()
        rows: list[tuple[str, object]] = [
            ("model", self.model_id),
            ("held-out positions", self.n_positions),
            ("model's own cross-entropy", f"{ce:.3f} [{lo:.3f}, {hi:.3f}]"),
        ]
        if {"logit", "tuned"} <= set(self.lenses):
            ratio, (rlo, rhi) = self.kl_ratio()
            rows.append(("KL ratio logit / tuned", f"{ratio:.2f}× (95% CI {rlo:.2f}–{rhi:.2f})"))
        return rows

    def _repr_html_(self) -> str:
        from interp.display import result_html
        from interp.lenses.figures import eval_kl_figure

        return result_html("lens evaluation", self.headline(), eval_kl_figure(self))


@torch.no_grad()
def evaluate_lenses(
    model: Model,
    lenses: Mapping[str, Lens],
    docs: Sequence[str],
    cfg: EvalConfig | None = None,
    *,
    progress: bool | None = None,
) -> LensEval:
    """Evaluate each lens on every layer over held-out ``docs`` (see the module doc)."""
    cfg = cfg or EvalConfig()
    if not lenses:
        raise InterpError("no lens to evaluate")
    layers = list(range(model.n_layers))
    names = [model.resid_hook(layer) for layer in layers]
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
    cfg: EvalConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> LensEval:
    """``interp tuned-lens eval``: the logit lens and ``tuned`` side by side on held-out ``docs``.

    The result also records where the lens came from, its training history and ``data``
    (where the held-out text came from, e.g. :func:`interp.data.corpus.text_source`'s).
    """
    ev = evaluate_lenses(model, {"logit": LogitLens(model), "tuned": tuned}, docs, cfg,
                         progress=progress)
    ev.lens_path = str(tuned.path)
    ev.data = data
    ev.training = TrainingSummary.from_lens_config(tuned.config)
    return ev
