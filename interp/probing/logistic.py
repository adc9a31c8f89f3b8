"""Many L2-regularised logistic regressions fitted at once in torch (batched Newton-CG).

A probe sweep fits hundreds of small problems that share their inputs: every seed's
task, shuffled-label and control-task probe at a layer reads the same activations, only
the training rows, the labels and the standardisation differ. :func:`fit_logistic`
solves them together, each to scikit-learn's own optimum::

    StandardScaler().fit(x[train]);  LogisticRegression(C=C, solver="newton-cholesky")

that is, on features standardised by the problem's training rows (population std;
near-constant features get scale 1, as in scikit-learn), minimise
``mean(log-loss) + ||w||² / (2 C n_train)`` with an unpenalised intercept and no class
weights, to scikit-learn's stopping rule (``max |gradient| ≤ tol`` and half the Newton
decrement ≤ ``tol``, on that mean-scaled objective).

How: the features of a group are standardised once over all its rows. A problem's own
standardisation is then an exact change of variables (its per-feature scale ratio
becomes a diagonal L2 penalty, its mean shift is absorbed by the intercept), so all
problems of a group share one design matrix and every pass over it is one matrix
product for all of them. Newton steps are solved by conjugate gradients,
preconditioned by one Cholesky factor per group (the Hessian at the start, shared by
its problems), with Armijo backtracking as in scikit-learn. Gradients and the
objective are float64; the Hessian products inside conjugate gradients, which only
steer the step, are float32. On 2 CPU threads this replaced one Hessian (n·d² flops)
and one Cholesky per problem and Newton step (5–6 each, ~0.1 s per problem with
scikit-learn) by one per group: see bench/probe.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.errors import InterpError

__all__ = ["LogisticFit", "fit_logistic", "standardize"]

_F64 = torch.float64
_EPS = torch.finfo(torch.float64).eps


@dataclass
class LogisticFit:
    """Problems ``[g, p]``: coefficients on each problem's standardised features (as
    scikit-learn's ``coef_``/``intercept_`` on ``StandardScaler`` output), that scaler,
    and the decision function on every row of the group (train and held-out)."""

    coef: Float[Tensor, "g p d"]
    intercept: Float[Tensor, "g p"]
    mean: Float[Tensor, "g p d"]
    scale: Float[Tensor, "g p d"]
    decision: Float[Tensor, "g p n"]
    n_iter: Int[Tensor, "g p"]
    converged: Bool[Tensor, "g p"]

    def raw_coef(self) -> tuple[Float[Tensor, "g p d"], Float[Tensor, "g p"]]:
        """Direction and bias on the raw features: ``logit = x · w + b``."""
        w = self.coef / self.scale
        return w, self.intercept - (w * self.mean).sum(-1)


def standardize(
    x: Float[Tensor, "g n d"], rows: Float[Tensor, "g p n"]
) -> tuple[Float[Tensor, "g p d"], Float[Tensor, "g p d"]]:
    """``StandardScaler`` fitted on each problem's rows (weights 0/1): mean and scale,
    float64, near-constant features (scikit-learn's test) at scale 1."""
    n = rows.sum(-1, keepdim=True)  # [g, p, 1]
    # moments about the group's mean: no cancellation where a feature's mean is large
    # next to its spread (scikit-learn accumulates in float64 the same way)
    ref = x.mean(1, keepdim=True)
    xc = x - ref
    m1 = torch.bmm(rows, xc) / n
    var = (torch.bmm(rows, xc * xc) / n - m1 * m1).clamp_min(0)
    mean = m1 + ref
    constant = var <= n * _EPS * var + (n * mean * _EPS) ** 2
    scale = torch.where(constant, torch.ones_like(var), var.sqrt())
    return mean, scale


def fit_logistic(
    x: Float[Tensor, "g n d"],
    y: Float[Tensor, "g p n"],
    train: Bool[Tensor, "g p n"],
    *,
    C: float = 0.1,
    tol: float = 1e-8,
    max_iter: int = 100,
) -> LogisticFit:
    """Fit ``g × p`` binary logistic regressions: problem ``(i, j)`` trains on rows
    ``train[i, j]`` of ``x[i]`` with labels ``y[i, j]`` (0/1; ignored off the train
    rows). Same optimum as scikit-learn's standardised ``newton-cholesky`` fit (see
    the module docstring); ``decision`` covers every row, so held-out rows are scored
    too. Raises :class:`InterpError` for a problem with fewer than two training rows
    or a single class, labels other than 0/1, non-finite features or a bad ``C``.
    """
    if not (C > 0 and math.isfinite(C)):
        raise InterpError(f"C must be a positive number, got {C}")
    if x.ndim != 3 or y.shape != train.shape or y.shape[0] != x.shape[0] \
            or y.shape[2] != x.shape[1]:
        raise InterpError(f"shapes do not fit: x {tuple(x.shape)}, y {tuple(y.shape)}, "
                          f"train {tuple(train.shape)}")
    m = train.to(_F64)
    n_rows = m.sum(-1)  # [g, p]
    yf = y.to(_F64) * m
    if bool(((yf != 0) & (yf != 1)).any()):
        raise InterpError("labels must be 0 or 1")
    pos = yf.sum(-1)
    if bool((n_rows < 2).any()) or bool(((pos == 0) | (pos == n_rows)).any()):
        raise InterpError("every problem needs training rows of both classes")
    xd = x.to(_F64)
    if not bool(torch.isfinite(xd).all()):
        raise InterpError("features contain NaN or infinity")
    g, n, d = xd.shape
    p = y.shape[1]
    # one standardisation per group, over all its rows
    every = torch.ones(g, 1, n, dtype=_F64)
    gmean, gscale = standardize(xd, every)
    xs = (xd - gmean) / gscale  # [g, n, d], float64
    xs32 = xs.float()
    # each problem's own scaler, as a change of variables on the shared features:
    # (x - mu_p) / s_p · w = xs · (r ⊙ w) + const, r = s_g / s_p
    mean, scale = standardize(xd, m)
    r = gscale / scale  # [g, p, d]
    lam = (1.0 / C) / (r * r)  # penalty on u = r ⊙ w, sum-scaled objective
    mt = m.mT  # [g, n, p]
    yt = yf.mT

    # the preconditioner: the Hessian at the start (all weights 1/4), with each group's
    # mean train fraction, factored once per group
    frac = (n_rows.sum(-1) / (p * n)).to(torch.float32)  # [g]
    gram = torch.bmm(xs32.mT, xs32) * (0.25 * frac)[:, None, None]
    gram.diagonal(dim1=1, dim2=2).add_(1.0 / C)
    # positive definite (the penalty is ≥ 1/C); its inverse is applied as a matrix
    # product. LAPACK on one thread: on 2 busy cores, 2-thread potrf/potri took 0.1–3 s
    # per 577² matrix against 15–18 ms on one
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        factor, info = torch.linalg.cholesky_ex(gram)
        if bool((info > 0).any()):
            # a huge C leaves 1/C below float32's resolution of a rank-deficient gram (fewer
            # rows than features): a floor keeps it a preconditioner (the optimum is set by
            # the objective's own penalty, not by this)
            floor = 1e-4 * gram.diagonal(dim1=1, dim2=2).mean(-1).clamp_min(1.0)
            gram.diagonal(dim1=1, dim2=2).add_(floor[:, None])
            factor = torch.linalg.cholesky(gram)
        precond = torch.cholesky_inverse(factor)
    finally:
        torch.set_num_threads(threads)

    u = torch.zeros(g, d, p, dtype=_F64)
    b = torch.zeros(g, p, dtype=_F64)
    z = torch.zeros(g, n, p, dtype=_F64)

    def objective(z_: Tensor, u_: Tensor) -> Tensor:
        data = (mt * (F.softplus(z_) - yt * z_)).sum(1)
        return data + 0.5 * (lam.mT * u_ * u_).sum(1)  # [g, p]

    def gradient(z_: Tensor, u_: Tensor) -> tuple[Tensor, Tensor]:
        res = mt * (torch.sigmoid(z_) - yt)  # [g, n, p]
        return torch.bmm(xs.mT, res) + lam.mT * u_, res.sum(1)

    loss = objective(z, u)
    gu, gb = gradient(z, u)
    n_iter = torch.zeros(g, p, dtype=torch.long)
    active = torch.ones(g, p, dtype=torch.bool)
    lam32 = lam.mT.float()
    # scikit-learn's stopping rule is on the mean-scaled gradient in the problem's own
    # standardised coordinates: d/dw = r ⊙ d/du + d/db · (mu_g - mu_p) / s_p
    shift = ((gmean - mean) / scale).mT  # [g, d, p]
    for _ in range(max_iter):
        if not bool(active.any()):
            break
        act = active.to(_F64)[:, None]
        sig = torch.sigmoid(z)
        wt = (mt * sig * (1 - sig)).float()  # [g, n, p]
        hb = wt.sum(1).clamp_min(1e-12)  # intercept's Hessian diagonal
        # inexact Newton: conjugate gradients to a relative residual eta
        # (forcing term sqrt(|g|) on the mean-scaled gradient: superlinear steps; not
        # below 1e-5, about what float32 Hessian products can resolve)
        gn = torch.sqrt((gu * gu).sum(1) + gb * gb) / n_rows  # [g, p]
        eta = gn.sqrt().clamp(1e-5, 0.5)
        su, sb = _pcg(xs32, wt, lam32, precond, hb, -gu.float(), -gb.float(), eta.float(),
                      active)
        su, sb = su.to(_F64) * act, sb.to(_F64) * act[:, 0]
        dz = torch.bmm(xs, su) + sb[:, None]  # [g, n, p]
        slope = (gu * su).sum(1) + gb * sb  # [g, p], < 0 where active
        # Armijo backtracking on the step length (scikit-learn's sigma and beta)
        t = torch.ones(g, p, dtype=_F64)
        done = ~active
        for _ in range(21):
            z_new = z + t[:, None] * dz
            u_new = u + t[:, None] * su
            l_new = objective(z_new, u_new)
            ok = (l_new - loss <= 2.0**-11 * t * slope) | \
                 ((l_new - loss).abs() <= 1e-15 * loss.abs())  # fmt: skip
            take = ok & ~done
            tk = take.to(_F64)
            z = z + tk[:, None] * (z_new - z)
            u = u + tk[:, None] * (u_new - u)
            b = b + tk * t * sb
            loss = torch.where(take, l_new, loss)
            done = done | ok
            if bool(done.all()):
                break
            t = torch.where(done, t, 0.5 * t)
        n_iter += active.long()
        gu, gb = gradient(z, u)
        n_p = n_rows
        gw = (r.mT * gu + gb[:, None] * shift) / n_p[:, None]
        gmax = torch.maximum(gw.abs().amax(1), (gb / n_p).abs())
        decrement = -0.5 * slope / n_p
        active = active & ~((gmax <= tol) & (decrement <= tol))
    coef = (u.mT / r)  # [g, p, d], in the problem's standardised coordinates
    intercept = b - (coef * ((gmean - mean) / scale)).sum(-1)
    # sklearn's intercept: (x-mu_p)/s_p·w + c = xs·u + b  =>  c = b - sum(w (mu_g - mu_p)/s_p)
    decision = z.mT.contiguous()
    return LogisticFit(coef, intercept, mean, scale, decision, n_iter, ~active)


def _pcg(
    xs: Float[Tensor, "g n d"], wt: Float[Tensor, "g n p"], lam: Float[Tensor, "g d p"],
    precond: Float[Tensor, "g d d"], hb: Float[Tensor, "g p"],
    rhs_u: Float[Tensor, "g d p"], rhs_b: Float[Tensor, "g p"], eta: Float[Tensor, "g p"],
    active: Bool[Tensor, "g p"], max_iter: int = 200,
) -> tuple[Float[Tensor, "g d p"], Float[Tensor, "g p"]]:
    """Solve ``H s = rhs`` for every problem (``H = Xᵀ W X + diag(lam)``, intercept
    last) by preconditioned conjugate gradients, to ``|residual| ≤ eta |rhs|``."""
    su = torch.zeros_like(rhs_u)
    sb = torch.zeros_like(rhs_b)
    ru, rb = rhs_u.clone(), rhs_b.clone()
    target = eta * torch.sqrt((ru * ru).sum(1) + rb * rb)
    qu, qb = torch.bmm(precond, ru), rb / hb
    pu, pb = qu.clone(), qb.clone()
    rz = (ru * qu).sum(1) + rb * qb
    live = active.clone()
    for _ in range(max_iter):
        live = live & (torch.sqrt((ru * ru).sum(1) + rb * rb) > target)
        if not bool(live.any()):
            break
        zv = torch.bmm(xs, pu) + pb[:, None]
        tv = wt * zv
        hu = torch.bmm(xs.mT, tv) + lam * pu
        hbv = tv.sum(1)
        curv = (pu * hu).sum(1) + pb * hbv
        alpha = torch.where(live, rz / curv.clamp_min(1e-30), torch.zeros_like(rz))
        su = su + alpha[:, None] * pu
        sb = sb + alpha * pb
        ru = ru - alpha[:, None] * hu
        rb = rb - alpha * hbv
        qu, qb = torch.bmm(precond, ru), rb / hb
        rz_new = (ru * qu).sum(1) + rb * qb
        beta = torch.where(live, rz_new / rz.clamp_min(1e-30), torch.zeros_like(rz))
        rz = rz_new
        pu = qu + beta[:, None] * pu
        pb = qb + beta * pb
    return su, sb
