"""Benchmark: SAE training throughput on cached activations, and peak memory vs tokens.

    .venv/bin/python bench/sae.py throughput [--arch topk --k 32] [--steps 12] [--repeats 3]
    .venv/bin/python bench/sae.py layers [--layers 2,6,12] [--steps 8] [--repeats 1]
    .venv/bin/python bench/sae.py layers --transcoders [--layers 5,11,17,23,29] [--arch topk]
    .venv/bin/python bench/sae.py memory [--chunk-windows 256] [--chunks 2]

``throughput``: d_in 576 → d_sae 4608, batch 4096, on activations of the embedded model's
layer 6 cached on disk by :class:`saes.store.ActivationStore` (built once, not timed).
Two cases, interleaved and timed in the same run (median of repeats), because the machine
is shared:

* ``interp train_sae``: the real trainer reading the disk cache (shard reads, shuffling,
  LR and λ schedules, clipping, Adam, dead-feature tracking, history, progress file);
* ``plain PyTorch``: the same maths (weighted-L1 ReLU SAE, Adam, clip) as a bare loop over
  batches already in memory: the reference the issue asks for. With ``--arch topk`` the
  trainer trains a TopK SAE and the reference stays this ReLU loop (the issue's ratio).

``layers``: ``train_saes`` on several layers from one pass against one ``train_sae`` run
per layer, both streaming from the model (no cache), same tokens and settings. With
``--transcoders``, the same for transcoders (``train_transcoders`` on all the layers at once
against one call per layer; MLP input and output read from each pass).

SAELens's own trainer step is timed against the same plain loop by
``bench/saelens_compat.py`` (it needs its own venv); bench/README.md puts both together.

``memory``: ``interp sae train`` streaming from the model (no cache) for N and 4N chunks of
tokens, each in a fresh process; peak RSS from ``getrusage(RUSAGE_CHILDREN)``. The store
holds one chunk at a time, so peak RSS must not grow with the number of tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("INTERP_NO_PROGRESS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

import torch  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def plain_loop(batches: list[torch.Tensor], d_sae: int, l1: float, seed: int) -> None:
    """The reference: the same maths with nothing else."""
    d = batches[0].shape[1]
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d_sae, d, generator=g)
    w = w / w.norm(dim=1, keepdim=True) * 0.1
    W_dec = w.clone().requires_grad_()
    W_enc = w.T.clone().requires_grad_()
    b_enc = torch.zeros(d_sae, requires_grad=True)
    b_dec = torch.zeros(d, requires_grad=True)
    params = [W_enc, b_enc, W_dec, b_dec]
    opt = torch.optim.Adam(params, lr=4e-4)
    for x in batches:
        f = torch.relu((x - b_dec) @ W_enc + b_enc)
        x_hat = f @ W_dec + b_dec
        loss = (x_hat - x).pow(2).sum(-1).mean() + l1 * (f * W_dec.norm(dim=1)).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()


def throughput(args: argparse.Namespace) -> dict:
    import interp
    from interp.data.corpus import corpus_hash, load_texts
    from saes.store import ActivationStore
    from saes.train import SAETrainConfig, train_sae

    model = interp.load(args.model)
    docs = load_texts("train")
    data = {"source": "corpus", "sha256": corpus_hash()}
    cache = Path(args.cache or tempfile.mkdtemp(prefix="sae-bench-cache-"))
    from saes.architectures import arch_config

    tokens = args.steps * 4096
    cfg = SAETrainConfig(layer=6, d_sae=4608, tokens=tokens, windows_per_chunk=256,
                         checkpoint_every=10**6, arch=arch_config(args.arch, k=args.k))
    store = ActivationStore(model, docs, cfg.store_config(), batch_size=cfg.batch_size,
                            cache_dir=cache, data_hash=data["sha256"])
    t0 = time.perf_counter()
    batches = [store.batch(s) for s in range(cfg.steps)]  # fills the cache (not timed)
    fill_s = time.perf_counter() - t0
    scale = float((576 / batches[0].pow(2).sum(-1).mean()) ** 0.5)  # E‖x‖² = d_in
    batches = [b * scale for b in batches]
    times: dict[str, list[float]] = {"interp": [], "plain": []}
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            train_sae(model, docs, tmp, cfg, data=data, cache_dir=cache, progress=False)
            times["interp"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain_loop(batches, cfg.d_sae, 5.0, r)  # the ReLU + L1 reference, whatever --arch
        times["plain"].append(time.perf_counter() - t0)
        print(f"repeat {r}: interp {times['interp'][-1]:.2f} s, plain {times['plain'][-1]:.2f} s",
              flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    res = {
        "arch": args.arch, "k": args.k if args.arch in ("topk", "batchtopk") else None,
        "avx512_bf16": "avx512_bf16" in Path("/proc/cpuinfo").read_text()
        if Path("/proc/cpuinfo").exists() else None,
        "steps": cfg.steps, "batch": cfg.batch_size, "d_in": 576, "d_sae": cfg.d_sae,
        "threads": torch.get_num_threads(), "cache_fill_s": fill_s,
        "capture_tokens_per_s": tokens / fill_s,
        "median_s": med,
        "tokens_per_s": {k: tokens / v for k, v in med.items()},
        "interp_vs_plain": med["plain"] / med["interp"],
        "times": times,
    }
    print(json.dumps(res, indent=1))
    return res


def layers(args: argparse.Namespace) -> dict:
    """Several layers from one pass (``train_saes``) vs one run per layer (``train_sae``),
    both streaming from the model (no activation cache), same settings, interleaved."""
    import interp
    from interp.data.corpus import corpus_hash, load_texts
    from saes.architectures import architecture
    from saes.train import SAETrainConfig, train_sae, train_saes
    from saes.transcoders import TranscoderTrainConfig, train_transcoders

    model = interp.load(args.model)
    docs = load_texts("train")
    data = {"source": "corpus", "sha256": corpus_hash()}
    layer_list = [int(x) for x in args.layers.split(",")]
    spec = architecture(args.arch)
    arch = spec(k=args.k) if spec.uses_k else spec()  # type: ignore[call-arg]
    kind = TranscoderTrainConfig if args.transcoders else SAETrainConfig
    cfg = kind(d_sae=4608, arch=arch, tokens=args.steps * 4096, windows_per_chunk=128,
               checkpoint_every=10**6)

    def together(out: str) -> None:
        if args.transcoders:
            train_transcoders(model, docs, out, layer_list, cfg, data=data, progress=False)
        else:
            train_saes(model, docs, out, layer_list, cfg, data=data, progress=False)

    def alone(out: str, layer: int) -> None:
        if args.transcoders:
            train_transcoders(model, docs, out, [layer], cfg, data=data, progress=False)
        else:
            train_sae(model, docs, out, cfg.replace(layer=layer), data=data, progress=False)

    times: dict[str, list[float]] = {"one_pass": [], "per_layer": []}
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            together(tmp)
            times["one_pass"].append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            for layer in layer_list:
                alone(str(Path(tmp) / str(layer)), layer)
            times["per_layer"].append(time.perf_counter() - t0)
        print(f"repeat {r}: one pass {times['one_pass'][-1]:.1f} s, one run per layer "
              f"{times['per_layer'][-1]:.1f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    res = {"kind": "transcoders" if args.transcoders else "saes", "arch": args.arch,
           "layers": layer_list, "steps": cfg.steps, "batch": cfg.batch_size,
           "d_sae": cfg.d_sae, "threads": torch.get_num_threads(), "median_s": med,
           "per_layer_over_one_pass": med["per_layer"] / med["one_pass"], "times": times}
    print(json.dumps(res, indent=1))
    return res


def memory(args: argparse.Namespace) -> dict:
    per_chunk = args.chunk_windows * 127
    rows = []
    for mult in (1, 4):
        tokens = per_chunk * args.chunks * mult
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [str(Path(sys.executable).parent / "interp"), "sae", "train", "--layer", "6",
                   "--d-sae", "4608", "--tokens", str(tokens), "--windows-per-chunk",
                   str(args.chunk_windows), "--checkpoint-every", "1000000", "--out", tmp]
            code = (
                "import resource, subprocess, sys, time, json;"
                "t = time.time(); subprocess.run(sys.argv[1:], check=True,"
                " stdout=subprocess.DEVNULL);"
                "print(json.dumps({'rss_kb': resource.getrusage(resource.RUSAGE_CHILDREN)"
                ".ru_maxrss, 's': time.time() - t}))"
            )
            out = subprocess.run([sys.executable, "-c", code, *cmd], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rows.append({"tokens": tokens, "peak_rss_mb": r["rss_kb"] / 1024, "wall_s": r["s"]})
            print(rows[-1], flush=True)
    res = {"chunk_tokens": per_chunk, "runs": rows,
           "rss_ratio_4x_over_1x": rows[1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]}
    print(json.dumps(res, indent=1))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("what", choices=["throughput", "memory", "layers"])
    ap.add_argument("--arch", default="relu", choices=["relu", "topk", "batchtopk", "jumprelu"],
                    help="throughput: the architecture interp trains (the reference stays "
                         "the plain ReLU loop)")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--layers", default="2,6,12", help="layers: the layers trained")
    ap.add_argument("--model", default=None)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cache", default=None, help="Activation cache folder (default: temp).")
    ap.add_argument("--chunk-windows", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("--transcoders", action="store_true",
                    help="layers: train transcoders (MLP input → output) instead of SAEs")
    args = ap.parse_args()
    res = {"throughput": throughput, "memory": memory, "layers": layers}[args.what](args)
    RESULTS.mkdir(exist_ok=True)
    name = (f"{args.what}_{args.arch}" if args.what == "throughput" else
            "transcoder_layers" if args.what == "layers" and args.transcoders else args.what)
    (RESULTS / f"sae_{name}.json").write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
