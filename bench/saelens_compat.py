"""Check saes.saelens against SAELens itself, and time SAELens's training step.

Run from the repository root (build the SAELens venv once with bench/saelens_venv.sh)::

    bash bench/saelens_venv.sh                  # once: /tmp/saelens-venv (sae-lens 6.54.12)
    nice -n 15 .venv/bin/python bench/saelens_compat.py

Options: ``--saelens-python PATH`` (default ``$SAELENS_PYTHON`` or
``/tmp/saelens-venv/bin/python``), ``--threads N`` (torch threads on both sides, default
1), ``--rounds R`` and ``--steps S`` (timing: R interleaved rounds of S steps per
contender), ``--keep DIR`` (keep the exchanged files there), ``--json FILE`` (write the
numbers).

The script runs in two interpreters that exchange safetensors files in a work folder:
``--side interp`` steps run in interp's venv, and the driver starts
``--side saelens`` in SAELens's venv, where only torch, safetensors and sae_lens are
imported (never interp).

1. **interp → SAELens**, per architecture. interp makes a random SAE of each of its four
   architectures (d_in 576, d_sae 4608, biases set so that ~5% of features have a positive
   pre-activation; TopK/BatchTopK with k 32, JumpReLU with a threshold per latent,
   BatchTopK with its one inference threshold), saves it as an artifact and exports it
   with :func:`saes.saelens.export_saelens`; SAELens loads each with
   ``SAE.load_from_disk`` (ReLU as ``StandardSAE``, TopK as ``TopKSAE``, JumpReLU and
   BatchTopK as ``JumpReLUSAE``) and its ``encode``/``decode``/``forward`` on the same
   inputs must equal ours (max |Δ| / max |ours| ≤ 1e-5).
2. **SAELens → interp**, per architecture. SAELens makes SAEs with random weights
   (``StandardSAE``: one plain, one with ``apply_b_dec_to_input=False``, one with
   ``normalize_activations="expected_average_only_in"`` and its ``activation_scaler.json``
   written by SAELens's ``ActivationScaler``; a ``TopKSAE`` with k 32; a ``JumpReLUSAE``
   with a threshold per latent), saves them with ``save_model`` and records its outputs;
   interp imports each with :func:`saes.saelens.import_saelens`, loads the artifact and
   must reproduce them.
3. **Training speed.** On one fixed batch of 4096 realistic synthetic activations
   (anisotropic, a mean offset, a few massive dimensions, log-normal token norms),
   SAELens's own training step — ``SAETrainer.step`` on a ``StandardTrainingSAE``: its
   forward, loss, backward, grad clipping, Adam step and schedulers — is timed against a
   plain PyTorch loop of the same math (same initial weights, same Adam), interleaved
   round by round in the same process and thread count; the first-step losses must agree.
   interp's ``SparseAutoencoder.loss`` step is timed afterwards in interp's process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

D_IN, D_SAE = 576, 4608
N_COMPAT = 2048
N_TRAIN = 4096
L1 = 5.0
LR = 4e-4
HOOK = "blocks.6.hook_resid_post"
TOL = 1e-5
FIRE_RATE = 0.05
NATIVE = ("plain", "no_b_dec_in", "scaled", "topk", "jumprelu")
#: interp architecture -> the SAELens class its export must load as
FAMILY = {"relu": "StandardSAE", "topk": "TopKSAE", "batchtopk": "JumpReLUSAE",
          "jumprelu": "JumpReLUSAE"}
K = 32


# --------------------------------------------------------------------------- shared (torch only)


def realistic_activations(n: int, d: int, seed: int) -> torch.Tensor:
    """Synthetic residual-stream-like activations, deterministic in ``seed``."""
    g = torch.Generator().manual_seed(seed)
    basis, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    spectrum = torch.arange(1, d + 1, dtype=torch.float64) ** -0.8  # power-law variances
    x = (torch.randn(n, d, generator=g, dtype=torch.float64) * spectrum.sqrt()) @ basis.T
    x = x / x.norm(dim=1).mean() * 30.0
    x = x * torch.exp(0.3 * torch.randn(n, 1, generator=g, dtype=torch.float64))
    mean = torch.randn(d, generator=g, dtype=torch.float64)
    x = x + mean / mean.norm() * 12.0
    x[:, :3] += torch.tensor([40.0, -25.0, 15.0], dtype=torch.float64)  # massive dims
    return x.to(torch.float32)


@torch.no_grad()
def random_sae_tensors(x: torch.Tensor, seed: int, apply_b_dec: bool = True,
                       scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Random SAE weights with b_enc set so each feature fires on ~FIRE_RATE of ``x``."""
    g = torch.Generator().manual_seed(seed)
    d, m = x.shape[1], D_SAE
    w_dec = torch.randn(m, d, generator=g)
    w_dec = w_dec / w_dec.norm(dim=1, keepdim=True) * 0.1
    w_enc = w_dec.T.clone() + 0.02 * torch.randn(d, m, generator=g)
    xs = x * scale
    b_dec = xs.mean(0) + 0.1 * torch.randn(d, generator=g)
    pre = (xs - b_dec * apply_b_dec) @ w_enc
    b_enc = -torch.quantile(pre[:1024], 1 - FIRE_RATE, dim=0)
    return {"W_enc": w_enc.contiguous(), "b_enc": b_enc.contiguous(),
            "W_dec": w_dec.contiguous(), "b_dec": b_dec.contiguous()}


@torch.no_grad()
def random_threshold(x: torch.Tensor, t: dict[str, torch.Tensor]) -> torch.Tensor:
    """Per-latent thresholds at each latent's 97th-percentile pre-activation on ``x``
    (so ~3% of tokens pass a threshold, of the ~5% with a positive pre-activation)."""
    pre = (x[:1024] - t["b_dec"]) @ t["W_enc"] + t["b_enc"]
    return torch.quantile(pre, 0.97, dim=0).clamp_min(1e-3).contiguous()


def compare(ours: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    diff = (ours.double() - ref.double()).abs().max().item()
    scale = ref.double().abs().max().item()
    return {"max_abs_diff": diff, "rel": diff / scale if scale else diff,
            "ref_max_abs": scale}


def _save(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    import safetensors.torch

    safetensors.torch.save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))


def _load(path: Path) -> dict[str, torch.Tensor]:
    import safetensors.torch

    return safetensors.torch.load_file(str(path))


def _fmt(c: dict[str, float]) -> str:
    ok = "ok" if c["rel"] <= TOL else "FAIL"
    return f"max|Δ| {c['max_abs_diff']:.3g}  rel {c['rel']:.3g}  [{ok}]"


# --------------------------------------------------------------------------- interp side


def interp_prepare(work: Path) -> dict[str, Any]:
    """A random interp SAE per architecture -> artifact -> SAELens export; inputs and our
    outputs saved (``exported_{arch}``, ``interp_{arch}_out.safetensors``)."""
    from saes.loading import load_sae, sae_from_tensors
    from saes.sae import SAEConfig
    from saes.saelens import export_saelens

    x = realistic_activations(N_COMPAT, D_IN, seed=1)
    fire: dict[str, float] = {}
    for i, arch in enumerate(FAMILY):
        cfg = SAEConfig(d_in=D_IN, d_sae=D_SAE, hook_point=HOOK, layer=6,
                        model_id="smollm2-135m-instruct", architecture=arch,
                        k=K if arch in ("topk", "batchtopk") else None)
        tensors = random_sae_tensors(x, seed=2 + i)
        if arch == "jumprelu":
            tensors["threshold"] = random_threshold(x, tensors)
        elif arch == "batchtopk":
            t = random_threshold(x, tensors)  # one value, stored per latent (as SAELens)
            tensors["threshold"] = torch.full_like(t, float(t.median()))
        sae = sae_from_tensors(cfg, tensors)
        sae.save(work / f"interp_{arch}")
        export_saelens(work / f"interp_{arch}", work / f"exported_{arch}")
        loaded = load_sae(work / f"interp_{arch}").sae
        with torch.no_grad():
            f = loaded.encode(x)
            _save(work / f"interp_{arch}_out.safetensors",
                  {"x": x, "f": f, "decode": loaded.decode(f), "forward": loaded(x)})
        fire[arch] = (f > 0).float().mean().item()
    return {"fire_rate": fire}


def interp_verify(work: Path) -> dict[str, Any]:
    """Import each SAELens-made SAE and reproduce SAELens's outputs."""
    from saes.loading import load_sae
    from saes.saelens import import_saelens

    out: dict[str, Any] = {}
    for name in NATIVE:
        ref = _load(work / f"native_{name}_out.safetensors")
        art = import_saelens(work / f"native_{name}", work / f"imported_{name}")
        loaded = load_sae(art)
        with torch.no_grad():
            f = loaded.sae.encode(ref["x"])
            out[name] = {"architecture": loaded.sae.cfg.architecture,
                         "encode": compare(f, ref["f"]),
                         "forward": compare(loaded.sae(ref["x"]), ref["forward"]),
                         "conversions": loaded.config["saelens"]["conversions"]}
    return out


def interp_time(threads: int, rounds: int, steps: int) -> dict[str, Any]:
    """interp's own training step (SparseAutoencoder.loss + backward + clip + Adam)."""
    from saes.sae import SAEConfig, SparseAutoencoder

    torch.set_num_threads(threads)
    x = realistic_activations(N_TRAIN, D_IN, seed=3)
    sae = SparseAutoencoder(SAEConfig(d_in=D_IN, d_sae=D_SAE, hook_point=HOOK))
    sae.init_weights(torch.Generator().manual_seed(0))
    sae.init_b_dec(x)
    opt = torch.optim.Adam(sae.parameters(), lr=LR)

    def step() -> float:
        loss, _ = sae.loss(x, L1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    step()
    times = []
    for _ in range(rounds):
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"median_step_s": med, "tokens_per_s": N_TRAIN / med, "n_steps": len(times)}


# --------------------------------------------------------------------------- SAELens side


def saelens_side(work: Path, threads: int, rounds: int, steps: int) -> dict[str, Any]:
    import importlib.metadata

    import sae_lens
    from sae_lens import SAE, StandardSAE, StandardSAEConfig
    from sae_lens.saes.sae import SAEMetadata

    torch.set_num_threads(threads)
    res: dict[str, Any] = {"sae_lens_version": importlib.metadata.version("sae-lens"),
                           "torch_version": torch.__version__, "threads": threads}

    # 1. interp's exports, loaded and run by SAELens.
    res["export"] = {}
    for arch, cls in FAMILY.items():
        ours = _load(work / f"interp_{arch}_out.safetensors")
        sae = SAE.load_from_disk(work / f"exported_{arch}", device="cpu")
        assert type(sae).__name__ == cls, (arch, type(sae))
        assert sae.cfg.metadata.hook_name == HOOK, sae.cfg.metadata
        x = ours["x"]
        with torch.no_grad():
            f = sae.encode(x)
            res["export"][arch] = {
                "class": type(sae).__name__,
                "encode": compare(ours["f"], f),
                "decode": compare(ours["decode"], sae.decode(ours["f"])),
                "forward": compare(ours["forward"], sae(x)),
                "metadata": {k: sae.cfg.metadata.get(k) for k in
                             ("model_name", "hook_name", "sae_lens_version")}}
    x = _load(work / "interp_relu_out.safetensors")["x"]

    # 2. SAEs made and saved by SAELens.
    from sae_lens import JumpReLUSAE, JumpReLUSAEConfig, TopKSAE, TopKSAEConfig
    from sae_lens.training.activation_scaler import ActivationScaler

    for i, name in enumerate(NATIVE):
        apply_b_dec = name != "no_b_dec_in"
        scale = 0.37 if name == "scaled" else 1.0
        common: dict[str, Any] = dict(
            d_in=D_IN, d_sae=D_SAE, apply_b_dec_to_input=apply_b_dec,
            normalize_activations="expected_average_only_in" if scale != 1.0 else "none",
            metadata=SAEMetadata(model_name="HuggingFaceTB/SmolLM2-135M-Instruct",
                                 hook_name=HOOK, context_size=128, prepend_bos=False),
        )
        tensors = random_sae_tensors(x, seed=10 + i, apply_b_dec=apply_b_dec, scale=scale)
        native: Any
        if name == "topk":
            native = TopKSAE(TopKSAEConfig(k=K, **common))
        elif name == "jumprelu":
            native = JumpReLUSAE(JumpReLUSAEConfig(**common))
            tensors["threshold"] = random_threshold(x, tensors)
        else:
            native = StandardSAE(StandardSAEConfig(**common))
        with torch.no_grad():
            for k, v in tensors.items():
                getattr(native, k).copy_(v)
        folder = work / f"native_{name}"
        native.save_model(folder)
        scaler = ActivationScaler(scaling_factor=scale if scale != 1.0 else None)
        if scale != 1.0:
            scaler.save(str(folder / "activation_scaler.json"))
        with torch.no_grad():  # what SAELens computes on raw activations
            f = native.encode(scaler.scale(x))
            _save(work / f"native_{name}_out.safetensors",
                  {"x": x, "f": f, "forward": scaler.unscale(native.decode(f))})
    res["sae_lens_module"] = str(Path(sae_lens.__file__).parent)

    # 3. Training step timing.
    res["timing"] = saelens_time(threads, rounds, steps)
    return res


def saelens_time(threads: int, rounds: int, steps: int) -> dict[str, Any]:
    import itertools

    from sae_lens.config import SAETrainerConfig
    from sae_lens.saes.standard_sae import StandardTrainingSAE, StandardTrainingSAEConfig
    from sae_lens.training.sae_trainer import SAETrainer

    x = realistic_activations(N_TRAIN, D_IN, seed=3)
    torch.manual_seed(0)
    sl = StandardTrainingSAE(StandardTrainingSAEConfig(d_in=D_IN, d_sae=D_SAE,
                                                       l1_coefficient=L1))
    with torch.no_grad():
        sl.b_dec.copy_(x.mean(0))
    init = {k: getattr(sl, k).detach().clone() for k in ("W_enc", "b_enc", "W_dec", "b_dec")}
    trainer = SAETrainer(
        SAETrainerConfig(total_training_samples=N_TRAIN * 10_000,
                         train_batch_size_samples=N_TRAIN, lr=LR, lr_end=LR,
                         lr_scheduler_name="constant", device="cpu"),
        sl, data_provider=itertools.repeat(x),
    )

    def sl_step() -> float:
        out = trainer.step(x)
        trainer.n_training_steps += 1
        return out.loss.item()

    # The same math as plain PyTorch, from the same initial weights.
    p = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    opt = torch.optim.Adam(p.values(), lr=LR, betas=(0.9, 0.999))

    def ref_step() -> float:
        f = torch.relu((x - p["b_dec"]) @ p["W_enc"] + p["b_enc"])
        x_hat = f @ p["W_dec"] + p["b_dec"]
        mse = (x_hat - x).pow(2).sum(-1).mean()
        l1 = (f * p["W_dec"].norm(dim=1)).sum(-1).mean()
        loss = mse + L1 * l1
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.values(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    first = {"saelens_loss": sl_step(), "reference_loss": ref_step()}  # also the warm-up
    second = {"saelens_loss": sl_step(), "reference_loss": ref_step()}
    times: dict[str, list[float]] = {"saelens": [], "reference": []}
    for r in range(rounds):
        order = [("saelens", sl_step), ("reference", ref_step)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            for _ in range(steps):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {"batch": N_TRAIN, "d_in": D_IN, "d_sae": D_SAE,
                           "first_step": first, "second_step": second}
    for name, ts in times.items():
        med = statistics.median(ts)
        out[name] = {"median_step_s": med, "tokens_per_s": N_TRAIN / med, "n_steps": len(ts),
                     "min_step_s": min(ts), "max_step_s": max(ts)}
    out["saelens_over_reference"] = out["saelens"]["tokens_per_s"] / \
        out["reference"]["tokens_per_s"]
    return out


# --------------------------------------------------------------------------- driver


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--side", choices=("drive", "interp", "saelens"), default="drive")
    ap.add_argument("--work", type=Path, help="exchange folder (sides only)")
    ap.add_argument("--saelens-python", default=os.environ.get(
        "SAELENS_PYTHON", "/tmp/saelens-venv/bin/python"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the exchanged files in this folder")
    ap.add_argument("--json", type=Path, help="write all numbers to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("WANDB_MODE", "disabled")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    if args.side == "saelens":
        res = saelens_side(args.work, args.threads, args.rounds, args.steps)
        (args.work / "saelens_results.json").write_text(json.dumps(res, indent=2))
        return 0
    if args.side == "interp":  # the interp steps one by one (for debugging)
        print(json.dumps({"prepare": interp_prepare(args.work),
                          "verify": interp_verify(args.work)
                          if (args.work / "native_plain").exists() else None}, indent=2))
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    torch.set_num_threads(args.threads)
    work = args.keep or Path(tempfile.mkdtemp(prefix="saelens-compat-"))
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    try:
        t0 = time.perf_counter()
        report: dict[str, Any] = {"prepare": interp_prepare(work)}
        cmd = [args.saelens_python, str(Path(__file__).resolve()), "--side", "saelens",
               "--work", str(work), "--threads", str(args.threads),
               "--rounds", str(args.rounds), "--steps", str(args.steps)]
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        rc = subprocess.run(cmd, env=env).returncode
        if rc:
            print(f"the SAELens side failed (exit {rc}): {' '.join(cmd)}", file=sys.stderr)
            return 2
        report["saelens"] = json.loads((work / "saelens_results.json").read_text())
        report["import"] = interp_verify(work)
        report["interp_timing"] = interp_time(args.threads, args.rounds, args.steps)
        report["wall_s"] = time.perf_counter() - t0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    sl = report["saelens"]
    fires = ", ".join(f"{a} {v:.1%}" for a, v in report["prepare"]["fire_rate"].items())
    print(f"SAELens {sl['sae_lens_version']}, torch {sl['torch_version']}, "
          f"{args.threads} thread(s); d_in {D_IN}, d_sae {D_SAE}; "
          f"active latents on the compat inputs: {fires}")
    checks: list[tuple[str, dict[str, float]]] = []
    print("1. interp export -> SAE.load_from_disk")
    for arch, r in sl["export"].items():
        print(f"   {arch:10s} as {r['class']} (metadata {r['metadata']})")
        for k in ("encode", "decode", "forward"):
            print(f"   {arch:10s} {k:8s} {_fmt(r[k])}")
            checks.append((f"export {arch} {k}", r[k]))
    print("2. SAELens save_model -> import_saelens -> load_sae")
    for name, r in report["import"].items():
        conv = "; ".join(r["conversions"]) or "none"
        for k in ("encode", "forward"):
            print(f"   {name:12s} {k:8s} {_fmt(r[k])}")
            checks.append((f"import {name} {k}", r[k]))
        print(f"   {name:12s} imported as {r['architecture']}; conversions: {conv}")
    t = sl["timing"]
    print(f"3. training step, batch {t['batch']} (forward + loss + backward + clip + Adam)")
    print(f"   first-step loss: SAELens {t['first_step']['saelens_loss']:.6f}  "
          f"reference {t['first_step']['reference_loss']:.6f}; second step "
          f"{t['second_step']['saelens_loss']:.6f} vs {t['second_step']['reference_loss']:.6f}")
    for name in ("saelens", "reference"):
        r = t[name]
        print(f"   {name:10s} {r['tokens_per_s']:8.0f} tokens/s  (median {r['median_step_s']:.3f} "
              f"s/step over {r['n_steps']}, min {r['min_step_s']:.3f}, max {r['max_step_s']:.3f})")
    print(f"   SAELens / reference tokens/s: {t['saelens_over_reference']:.3f}")
    it = report["interp_timing"]
    print(f"   interp SparseAutoencoder.loss step (separate process, after): "
          f"{it['tokens_per_s']:.0f} tokens/s (median {it['median_step_s']:.3f} s)")
    loss_rel = abs(t["first_step"]["saelens_loss"] - t["first_step"]["reference_loss"]) / \
        abs(t["first_step"]["reference_loss"])
    failed = [name for name, c in checks if c["rel"] > TOL]
    if loss_rel > 1e-5:
        failed.append(f"first-step loss differs (rel {loss_rel:.3g})")
    print(f"total {report['wall_s']:.0f} s; " + ("FAILED: " + ", ".join(failed) if failed
                                                 else "all compat checks passed"))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
