"""MFU: FLOP counts against torch's own counter, the peak cache, the trainers' figures."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from interp.errors import InterpError
from interp.mfu import ModelShape, Work, device_peak, forward_flops, mfu, sae_step_flops
from interp.mfu.peak import known_gpu, measure_peak
from tests.support.bad_inputs import Case


def _counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_shape_reads_the_blocks(tiny_model):
    shape = ModelShape.of(tiny_model)
    # q, o: 64×64; k, v: 32×64 (2 KV heads of 16); gate, up, down: 64×128
    per_layer = 2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 128
    assert shape.layer_params == (per_layer,) * 3
    assert (shape.n_heads, shape.d_head, shape.d_vocab) == (4, 16, tiny_model.d_vocab)


@pytest.mark.parametrize("batch,seq", [(1, 7), (3, 20)])
def test_forward_flops_equal_torchs_counter(tiny_model, batch, seq):
    ids = torch.randint(0, tiny_model.d_vocab, (batch, seq))
    counted = _counted(lambda: tiny_model.bridge(ids))
    assert forward_flops(ModelShape.of(tiny_model), batch * seq, seq) == counted


def test_forward_flops_stop_at_a_layer(tiny_model):
    shape = ModelShape.of(tiny_model)
    full = forward_flops(shape, 10, 10)
    two = forward_flops(shape, 10, 10, layers=2)
    assert two < full and two == pytest.approx(2 / 3 * (full - 2 * 64 * shape.d_vocab * 10))


def test_sae_step_flops_equal_torchs_counter():
    from saes.sae import SAEConfig, SparseAutoencoder

    sae = SparseAutoencoder(SAEConfig(d_in=32, d_sae=96, hook_point="h", layer=0,
                                      model_id="m"))
    x = torch.randn(50, 32)

    def step() -> None:
        loss, _ = sae.loss(x, 1.0)
        loss.backward()

    assert sae_step_flops(32, 96, 50) == _counted(step)


def test_transcoder_step_flops_equal_torchs_counter():
    # uncentred encoder: five matmuls of d_sae; the skip path's forward and weight gradient
    from saes.transcoders import TranscoderConfig

    cfg = TranscoderConfig(d_in=32, d_sae=96, hook_point="blocks.0.mlp.hook_in", layer=0,
                           model_id="m", output_hook="blocks.0.hook_mlp_out", skip=True)
    tc = cfg.model_class()(cfg)
    x = torch.randn(50, 64)  # [input | target] rows

    def step() -> None:
        loss, _ = tc.loss(x, 1.0)
        loss.backward()

    assert tc.step_flops(50) == sae_step_flops(32, 96, 50, centred=False, skip=True)
    assert tc.step_flops(50) == _counted(step) == 2 * 32 * 50 * (5 * 96 + 2 * 32)


@pytest.mark.parametrize("arch", ["topk", "batchtopk"])
def test_topk_step_flops_count_the_active_latents(arch):
    from saes.sae import SAEConfig

    d_in, d_sae, k, n = 32, 96, 4, 50
    cfg = SAEConfig(d_in=d_in, d_sae=d_sae, hook_point="h", layer=0, model_id="m",
                    architecture=arch, k=k)
    sae = cfg.model_class()(cfg)
    sae.init_weights(torch.Generator().manual_seed(0))
    x = torch.randn(n, d_in)

    def step() -> None:
        loss, _ = sae.loss(x, 1.0)
        loss.backward()

    # the one dense matmul per token is the encoder's forward (torch counts it; the sparse
    # decoder and encoder gradient are embedding_bag and sparse.mm, outside its table);
    # the rest of what it counts is the per-batch offset b_enc − b_dec·W_enc and its grads
    per_batch = 3 * 2 * d_in * d_sae
    assert _counted(step) - per_batch == 2 * d_in * d_sae * n
    assert sae.step_flops(n) == 2 * d_in * n * (d_sae + 4 * k)
    # AuxK adds its dead latents (d_in / 2 = 16 by default) only while some are dead
    assert sae.step_flops(n, n_dead=96) == 2 * d_in * n * (d_sae + 4 * (k + 16))
    assert sae.step_flops(n, n_dead=3) == 2 * d_in * n * (d_sae + 4 * (k + 3))
    # k = d_sae is the dense, uncentred count: the formula has no TopK discount left
    assert sae_step_flops(d_in, d_sae, n, k=d_sae) == sae_step_flops(d_in, d_sae, n,
                                                                     centred=False)


def test_mfu_and_mixed_dtypes():
    assert mfu(1e9, 2.0, 1e9) == 0.5
    assert mfu(1e9, 2.0, None) is None
    w = Work()
    w.add("float32", 1e9)
    w.add("bfloat16", 4e9)
    peaks = {"float32": 1e9, "bfloat16": 8e9}
    # ideal time 1 s + 0.5 s; done in 3 s → MFU 0.5 whatever the split
    s = w.summary(3.0, peaks, tokens=300)
    assert s["mfu"] == pytest.approx(0.5) and s["tokens_per_s"] == 100
    assert s["peak_flops"] == pytest.approx(5e9 / 1.5)
    assert w.summary(3.0, {"float32": 1e9}, tokens=1)["mfu"] is None  # no bf16 peak


def test_peak_is_measured_once_and_cached(session_cache):
    first = device_peak("cpu", "float32")
    assert first.source == "measured" and first.flops > 1e8 and first.threads
    cached = json.loads((session_cache / "peak.json").read_text())
    from interp.mfu.peak import cpu_features

    tail = f"|float32|{cpu_features()}|threads={torch.get_num_threads()}"
    assert any(k.endswith(tail) for k in cached)
    again = device_peak("cpu", "float32")
    assert again.flops == first.flops  # read back, not measured again


def test_cpu_features_key_parts(monkeypatch):
    """Two CPUs of one model name, one without native bfloat16, or a oneDNN ISA cap: the
    cache keys differ, so neither reads the other's figures."""
    from interp.mfu import peak

    base = peak.cpu_features()
    assert "|" not in base
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert peak.cpu_features() == base + "|ONEDNN_MAX_CPU_ISA=AVX2"
    assert peak._cache_key(torch.device("cpu"), "bfloat16") != peak._cache_key(
        torch.device("cpu"), "bfloat16").replace("|ONEDNN_MAX_CPU_ISA=AVX2", "")


@pytest.mark.parametrize("probe_rate, budget, size", [
    (1.2e9, 2.0, 512),  # bfloat16 emulated in software: six 512² matmuls in ~1.3 s
    (40e9, 2.0, 1792),  # a CPU's float32
    (1e12, 2.0, 2048),  # fast: capped at the CPU's largest size
    (1e6, 2.0, 256),  # hopeless: never below the probe's size
])
def test_peak_matmul_is_sized_to_its_budget(monkeypatch, probe_rate, budget, size):
    from interp.mfu import peak

    seconds = 2.0 * peak.PROBE_SIZE**3 / probe_rate
    monkeypatch.setattr(peak, "_timed", lambda *_: seconds)
    assert peak.peak_size(torch.device("cpu"), torch.float32, 5, budget) == size
    # the sized matmuls fit the budget at the probe's rate
    assert 6 * 2.0 * size**3 / probe_rate <= budget or size == peak.PROBE_SIZE


def test_measured_peak_reports_its_size():
    res = measure_peak(torch.device("cpu"), "float32", size=256, repeats=1)
    assert res.matmul_size == 256 and res.flops > 0 and res.source == "measured"


def test_peak_rejects_what_it_cannot_measure():
    with pytest.raises(InterpError, match="unknown dtype"):
        device_peak("cpu", "int8")
    with pytest.raises(InterpError, match="no peak for device"):
        device_peak("meta", "float32")


def test_known_gpus_match_whole_names():
    assert known_gpu("NVIDIA H100 PCIe")["bfloat16"] == 756e12  # the PCIe entry, not SXM
    assert known_gpu("NVIDIA H100 80GB HBM3")["bfloat16"] == 989.4e12
    assert known_gpu("NVIDIA L40S")["float32"] == 91.6e12  # not the L4 entry
    assert known_gpu("NVIDIA GeForce GTX 1080") is None


def test_tuned_lens_step_flops_equal_torchs_counter(tiny_model):
    from interp.lenses.training import TunedLensTrainConfig, lens_loss_step, sample_positions
    from interp.lenses.tuned import Translators
    from interp.mfu import tuned_lens_step_flops
    from interp.models.unembedding import Unembed

    cfg = TunedLensTrainConfig(seq_len=12, positions_per_window=4)
    translators = Translators(tiny_model.n_layers - 1, tiny_model.d_model)
    ids = torch.randint(0, tiny_model.d_vocab, (2, 12))
    pos = sample_positions(cfg, 0, 2)
    shape = ModelShape.of(tiny_model)
    unembed_fn = Unembed(tiny_model)  # its construction check runs outside the count
    counted = _counted(lambda: lens_loss_step(tiny_model, translators, ids, pos, unembed_fn,
                                              torch.float32))
    lens, unembed = tuned_lens_step_flops(shape, tiny_model.n_layers - 1, 2 * 4)
    assert forward_flops(shape, 24, 12) + lens + unembed == counted


def test_cli_peak_prints_and_caches(capsys):
    from tests.support.cli_runner import run

    code, out, _ = run(["peak", "--dtype", "float32", "--json"], capsys)
    assert code == 0
    (res,) = json.loads(out)
    assert res["dtype"] == "float32" and res["source"] == "measured" and res["flops"] > 1e8
    code, out, _ = run(["peak", "--dtype", "float32"], capsys)
    assert code == 0 and "GFLOP/s" in out and f"{res['flops'] / 1e9:,.0f}" in out  # cached


def test_closing_line_flags_an_mfu_above_one():
    from interp.cli.common import throughput_text

    assert "remeasure" not in throughput_text(1000.0, 0.5, 2e11)
    line = throughput_text(1000.0, 1.6, 6.4e10)
    assert "MFU 160.00% of 64 GFLOP/s" in line and "interp peak --remeasure" in line


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("peak-unknown-device", lambda c: ["peak", "--device", "tpu"], "no peak for device"),
    Case("peak-unknown-dtype", lambda c: ["peak", "--dtype", "int8"], "Invalid value"),
]
