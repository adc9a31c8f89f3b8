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
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from interp.lenses.logit import Lens
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
class LensEval:
    """Per-window, per-layer metrics of each lens: ``values[lens][metric]`` is ``[windows, L]``."""

    model_id: str
    layers: list[int]
    lenses: list[str]
    values: dict[str, dict[str, torch.Tensor]] = field(repr=False)
    model_ce: torch.Tensor = field(repr=False)  # [windows]
    config: EvalConfig
    n_positions: int

    def mean_ci(self, lens: str, metric: str) -> tuple[list[float], list[list[float]]]:
        """Mean over windows per layer, and its 95% normal CI."""
        v = self.values[lens][metric].double()
        n = v.shape[0]
        mean = v.mean(0)
        half = 1.96 * v.std(0, unbiased=True) / math.sqrt(n)
        return mean.tolist(), torch.stack([mean - half, mean + half], 1).tolist()

    def summary_layers(self) -> list[int]:
        last = min(self.config.summary_last, self.layers[-1] - 1)
        return [i for i, layer in enumerate(self.layers) if layer <= last]

    def kl_ratio(self, num: str = "logit", den: str = "tuned") -> tuple[float, list[float]]:
        """Mean KL of ``num`` over mean KL of ``den`` on the summary layers, bootstrap CI."""
        idx = self.summary_layers()
        a = self.values[num]["kl"][:, idx].double().mean(1)
        b = self.values[den]["kl"][:, idx].double().mean(1)
        ratio = float(a.mean() / b.mean())
        g = torch.Generator().manual_seed(self.config.seed)
        n = a.shape[0]
        draws = torch.randint(0, n, (self.config.bootstrap, n), generator=g)
        boot = a[draws].mean(1) / b[draws].mean(1)
        lo, hi = torch.quantile(boot, torch.tensor([0.025, 0.975], dtype=boot.dtype)).tolist()
        return ratio, [lo, hi]

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
        ce = self.model_ce.double()
        half = 1.96 * float(ce.std()) / math.sqrt(ce.shape[0])
        out["model_ce"] = float(ce.mean())
        out["model_ce_ci95"] = [float(ce.mean()) - half, float(ce.mean()) + half]
        if {"logit", "tuned"} <= set(self.lenses):
            idx = self.summary_layers()
            ratio, ci = self.kl_ratio()
            out["summary_layers"] = [self.layers[i] for i in idx]
            out["mean_kl_logit_lens"] = float(self.values["logit"]["kl"][:, idx].mean())
            out["mean_kl_tuned_lens"] = float(self.values["tuned"]["kl"][:, idx].mean())
            out["kl_ratio"] = ratio
            out["kl_ratio_ci95"] = ci
            tuned, logit = out["kl_tuned_lens"], out["kl_logit_lens"]
            out["tuned_lower_kl_layers"] = [
                layer for layer, t, lg in zip(self.layers, tuned, logit, strict=True) if t < lg
            ]
        return out


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
