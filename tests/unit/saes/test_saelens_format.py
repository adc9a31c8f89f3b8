"""SAELens interop (saes.saelens): export/import round trip, the cfg.json we write, errors.

Fast and model-free. The check against SAELens itself lives in bench/saelens_compat.py
(it needs a separate venv, bench/saelens_venv.sh).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import safetensors.torch
import torch

from interp.errors import InterpError
from saes import saelens
from saes.loading import load_sae
from saes.sae import SAEConfig, SparseAutoencoder
from saes.saelens import export_saelens, import_saelens, load_saelens
from tests.support.bad_inputs import Case, Ctx, _tiny_sae, _truncated_sae

D_IN, D_SAE = 12, 40
HOOK = "blocks.3.hook_resid_post"
NAMES = ("W_enc", "b_enc", "W_dec", "b_dec")


def _sae(seed: int = 0, input_scale: float = 1.0) -> SparseAutoencoder:
    cfg = SAEConfig(d_in=D_IN, d_sae=D_SAE, hook_point=HOOK, layer=3,
                    model_id="smollm2-135m-instruct", input_scale=input_scale)
    sae = SparseAutoencoder(cfg)
    g = torch.Generator().manual_seed(seed)
    sae.init_weights(g, dec_norm=0.5)
    with torch.no_grad():
        sae.W_enc.add_(0.1 * torch.randn(D_IN, D_SAE, generator=g))  # untie
        sae.b_enc.copy_(0.1 * torch.randn(D_SAE, generator=g))
        sae.b_dec.copy_(torch.randn(D_IN, generator=g))
    return sae


def _x(n: int = 64, seed: int = 1) -> torch.Tensor:
    return 2 * torch.randn(n, D_IN, generator=torch.Generator().manual_seed(seed))


def _saelens_folder(path: Path, *, cfg: dict | None = None, tensors: dict | None = None,
                    seed: int = 2) -> Path:
    """A folder as SAELens 6's ``StandardSAE.save_model`` writes it."""
    g = torch.Generator().manual_seed(seed)
    if tensors is None:
        tensors = {
            "b_dec": torch.randn(D_IN, generator=g),
            "W_dec": 0.3 * torch.randn(D_SAE, D_IN, generator=g),
            "W_enc": 0.3 * torch.randn(D_IN, D_SAE, generator=g),
            "b_enc": 0.1 * torch.randn(D_SAE, generator=g),
        }
    base = {
        "d_in": D_IN, "d_sae": D_SAE, "dtype": "float32", "device": "cpu",
        "apply_b_dec_to_input": True, "normalize_activations": "none",
        "reshape_activations": "none",
        "metadata": {"sae_lens_version": "6.54.12", "sae_lens_training_version": "6.54.12",
                     "model_name": "gpt2", "hook_name": "blocks.5.hook_resid_post",
                     "hook_head_index": None, "context_size": 128, "prepend_bos": True,
                     "dataset_path": "monology/pile-uncopyrighted", "seqpos_slice": [None],
                     "model_from_pretrained_kwargs": {"center_writing_weights": False}},
        "architecture": "standard",
    }
    path.mkdir(parents=True)
    (path / "cfg.json").write_text(json.dumps({**base, **(cfg or {})}))
    safetensors.torch.save_file(tensors, str(path / "sae_weights.safetensors"))
    return path


def _reference(t: dict[str, torch.Tensor], x: torch.Tensor, *, apply_b_dec: bool = True,
               scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """SAELens's StandardSAE encode/forward, written out in float64."""
    t = {k: v.double() for k, v in t.items()}
    xs = x.double() * scale
    f = torch.relu((xs - t["b_dec"] * apply_b_dec) @ t["W_enc"] + t["b_enc"])
    return f, (f @ t["W_dec"] + t["b_dec"]) / scale


def _debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


# ---------------------------------------------------------------------------- round trip


def test_round_trip_is_identical(tmp_path: Path) -> None:
    sae = _sae()
    sae.save(tmp_path / "art")
    out = export_saelens(tmp_path / "art", tmp_path / "sl")
    assert out == (tmp_path / "sl").resolve()
    back = import_saelens(out, tmp_path / "back")
    loaded = load_sae(back)
    for name in NAMES:
        assert torch.equal(getattr(loaded.sae, name), getattr(sae, name)), name
    cfg = loaded.sae.cfg
    assert (cfg.d_in, cfg.d_sae, cfg.hook_point, cfg.layer, cfg.model_id, cfg.input_scale) == \
        (D_IN, D_SAE, HOOK, 3, "smollm2-135m-instruct", 1.0)
    x = _x()
    with torch.no_grad():
        assert torch.equal(loaded.sae.encode(x), sae.encode(x))
        assert torch.equal(loaded.sae(x), sae(x))
    info = loaded.config["saelens"]
    assert info["exported_by_interp"] and info["weights_changed_since_export"] is False
    assert info["conversions"] == []
    assert list(tmp_path.iterdir()) and not _debris(tmp_path)


def test_export_accepts_loaded_and_in_memory_sae(tmp_path: Path) -> None:
    sae = _sae()
    sae.save(tmp_path / "art")
    export_saelens(load_sae(tmp_path / "art"), tmp_path / "a")
    export_saelens(sae, tmp_path / "b")
    wa = safetensors.torch.load_file(str(tmp_path / "a" / "sae_weights.safetensors"))
    wb = safetensors.torch.load_file(str(tmp_path / "b" / "sae_weights.safetensors"))
    assert all(torch.equal(wa[n], wb[n]) for n in NAMES)
    cfg_b = json.loads((tmp_path / "b" / "cfg.json").read_text())
    assert cfg_b["interp"]["source_weights_sha256"] is None


def test_exported_cfg_and_weights(tmp_path: Path) -> None:
    sae = _sae()
    sae.save(tmp_path / "art")
    out = export_saelens(tmp_path / "art", tmp_path / "sl")
    assert sorted(p.name for p in out.iterdir()) == ["cfg.json", "sae_weights.safetensors"]
    cfg = json.loads((out / "cfg.json").read_text())
    # SAELens 6 (SAEConfig.to_dict layout).
    assert cfg["architecture"] == "standard"
    assert (cfg["d_in"], cfg["d_sae"], cfg["dtype"], cfg["device"]) == (D_IN, D_SAE,
                                                                        "float32", "cpu")
    assert cfg["apply_b_dec_to_input"] is True
    assert cfg["normalize_activations"] == "none"
    assert cfg["reshape_activations"] == "none"
    meta = cfg["metadata"]
    assert meta["hook_name"] == HOOK
    assert meta["model_name"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert int(meta["sae_lens_version"].split(".")[0]) >= 6
    for key in ("context_size", "prepend_bos", "dataset_path", "hook_head_index",
                "seqpos_slice", "model_from_pretrained_kwargs"):
        assert key in meta, key
    # SAELens 3-5 flat fields.
    assert (cfg["hook_name"], cfg["hook_layer"], cfg["model_name"]) == \
        (HOOK, 3, meta["model_name"])
    assert cfg["activation_fn_str"] == "relu" and cfg["finetuning_scaling_factor"] is False
    for key in ("context_size", "prepend_bos", "dataset_path", "dataset_trust_remote_code",
                "hook_head_index", "sae_lens_training_version", "activation_fn_kwargs"):
        assert key in cfg, key
    # Our provenance, also inside metadata (SAELens 6 keeps it when it re-saves).
    from interp.runs.artifacts import read_config
    from interp.runs.manifest import sha256_file

    ours = cfg["interp"]
    assert ours == meta["interp"]
    assert (ours["model_id"], ours["hook_point"], ours["layer"]) == \
        ("smollm2-135m-instruct", HOOK, 3)
    assert ours["source_weights_sha256"] == read_config(tmp_path / "art")["weights_sha256"]
    assert ours["weights_sha256"] == sha256_file(out / "sae_weights.safetensors")
    w = safetensors.torch.load_file(str(out / "sae_weights.safetensors"))
    assert {n: list(t.shape) for n, t in w.items()} == {
        "W_enc": [D_IN, D_SAE], "b_enc": [D_SAE], "W_dec": [D_SAE, D_IN], "b_dec": [D_IN]}
    assert all(t.dtype == torch.float32 for t in w.values())


def test_export_folds_input_scale(tmp_path: Path) -> None:
    sae = _sae(input_scale=0.37)
    out = export_saelens(sae, tmp_path / "sl")
    cfg = json.loads((out / "cfg.json").read_text())
    assert cfg["normalize_activations"] == "none" and cfg["interp"]["input_scale_folded"] == 0.37
    w = safetensors.torch.load_file(str(out / "sae_weights.safetensors"))
    x = _x()
    f_ref, x_hat_ref = _reference(w, x)
    with torch.no_grad():
        torch.testing.assert_close(sae.encode(x).double(), f_ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(sae(x).double(), x_hat_ref, rtol=1e-5, atol=1e-5)
    assert sae.cfg.input_scale == 0.37  # the SAE in hand is left alone


def test_export_records_training_context(tmp_path: Path) -> None:
    sae = _sae()
    sae.save(tmp_path / "art", extra={"train": {"seq_len": 128, "layer": 3},
                                      "data": {"source": "hf:some/corpus", "sha256": "ab"}})
    cfg = json.loads((export_saelens(tmp_path / "art", tmp_path / "sl") / "cfg.json").read_text())
    assert cfg["metadata"]["context_size"] == cfg["context_size"] == 128
    assert cfg["metadata"]["dataset_path"] == "some/corpus"
    assert cfg["metadata"]["seqpos_slice"] == [1, None]  # position 0 is never trained on
    assert cfg["metadata"]["prepend_bos"] is False


# ---------------------------------------------------------------------------- import


def test_import_hand_written_saelens_folder(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    w = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    out = import_saelens(src, tmp_path / "art")
    loaded = load_sae(out)
    cfg = loaded.sae.cfg
    assert (cfg.hook_point, cfg.layer, cfg.model_id) == ("blocks.5.hook_resid_post", 5, "gpt2")
    for name in NAMES:
        assert torch.equal(getattr(loaded.sae, name), w[name]), name
    x = _x()
    f_ref, x_hat_ref = _reference(w, x)
    with torch.no_grad():
        torch.testing.assert_close(loaded.sae.encode(x).double(), f_ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(loaded.sae(x).double(), x_hat_ref, rtol=1e-5, atol=1e-5)
    info = loaded.config["saelens"]
    assert info["sae_lens_version"] == "6.54.12" and not info["exported_by_interp"]
    assert info["cfg"]["metadata"]["dataset_path"] == "monology/pile-uncopyrighted"
    assert loaded.manifest["model_id"] == "gpt2"


def test_import_model_id_override_and_other_hooks(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl", cfg={"metadata": {
        "sae_lens_version": "6.1.0", "model_name": "gpt2", "hook_name": "blocks.2.hook_mlp_out"}})
    sae, _ = load_saelens(src, model_id="my-model")
    assert (sae.cfg.model_id, sae.cfg.hook_point, sae.cfg.layer) == \
        ("my-model", "blocks.2.hook_mlp_out", None)


def test_import_pre_v6_flat_config(tmp_path: Path) -> None:
    """SAELens 3-5 wrote flat fields (hook_name, model_name, activation_fn_str ...)."""
    flat = {"architecture": "standard", "d_in": D_IN, "d_sae": D_SAE, "dtype": "float32",
            "device": "cpu", "model_name": "gpt2-small", "hook_name": "blocks.0.hook_resid_post",
            "hook_layer": 0, "hook_head_index": None, "activation_fn_str": "relu",
            "apply_b_dec_to_input": True, "finetuning_scaling_factor": False,
            "context_size": 128, "prepend_bos": True, "dataset_path": "x",
            "normalize_activations": "none", "sae_lens_training_version": "3.0.0"}
    src = tmp_path / "sl"
    _saelens_folder(src)
    (src / "cfg.json").write_text(json.dumps(flat))
    sae, _ = load_saelens(src)
    assert (sae.cfg.model_id, sae.cfg.hook_point, sae.cfg.layer) == \
        ("gpt2-small", "blocks.0.hook_resid_post", 0)


def test_import_folds_apply_b_dec_false(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl", cfg={"apply_b_dec_to_input": False})
    w = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    sae, info = load_saelens(src)
    assert any("apply_b_dec_to_input" in c for c in info["conversions"])
    x = _x()
    f_ref, x_hat_ref = _reference(w, x, apply_b_dec=False)
    with torch.no_grad():
        torch.testing.assert_close(sae.encode(x).double(), f_ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(sae(x).double(), x_hat_ref, rtol=1e-5, atol=1e-5)


def test_import_expected_average_only_in_with_scaler(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl",
                          cfg={"normalize_activations": "expected_average_only_in"})
    with pytest.raises(InterpError, match="scaling factor"):
        load_saelens(src)
    (src / "activation_scaler.json").write_text(json.dumps({"scaling_factor": 0.25,
                                                            "has_whitening": False}))
    w = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    sae, _ = load_saelens(src)
    assert sae.cfg.input_scale == 0.25
    x = _x()
    f_ref, x_hat_ref = _reference(w, x, scale=0.25)
    with torch.no_grad():
        torch.testing.assert_close(sae.encode(x).double(), f_ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(sae(x).double(), x_hat_ref, rtol=1e-5, atol=1e-5)


def test_import_folds_finetuning_scaling_factor(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(5)
    t = {"W_enc": torch.randn(D_IN, D_SAE, generator=g), "b_enc": torch.randn(D_SAE, generator=g),
         "W_dec": torch.randn(D_SAE, D_IN, generator=g), "b_dec": torch.randn(D_IN, generator=g),
         "scaling_factor": torch.rand(D_SAE, generator=g) + 0.5}
    src = _saelens_folder(tmp_path / "sl", tensors=t, cfg={"finetuning_scaling_factor": True})
    sae, _ = load_saelens(src)
    x = _x()
    f = torch.relu((x.double() - t["b_dec"].double()) @ t["W_enc"].double() + t["b_enc"].double())
    x_hat = (f * t["scaling_factor"].double()) @ t["W_dec"].double() + t["b_dec"].double()
    with torch.no_grad():
        torch.testing.assert_close(sae(x).double(), x_hat, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- errors


def _one_line(exc: pytest.ExceptionInfo[InterpError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg
    return msg


@pytest.mark.parametrize("name,shape", [("W_enc", (D_SAE, D_IN)), ("b_enc", (D_SAE + 1,)),
                                        ("W_dec", (D_SAE, D_IN + 2)), ("b_dec", (3,))])
def test_wrong_shape(tmp_path: Path, name: str, shape: tuple[int, ...]) -> None:
    src = _saelens_folder(tmp_path / "sl")
    t = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    t[name] = torch.zeros(shape)
    safetensors.torch.save_file(t, str(src / "sae_weights.safetensors"))
    with pytest.raises(InterpError) as exc:
        import_saelens(src, tmp_path / "art")
    msg = _one_line(exc)
    assert f"tensor {name} has shape {list(shape)}" in msg and "expected" in msg
    assert not (tmp_path / "art").exists()


def test_missing_tensor(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    t = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    del t["b_enc"]
    safetensors.torch.save_file(t, str(src / "sae_weights.safetensors"))
    with pytest.raises(InterpError, match="lacks tensor b_enc") as exc:
        import_saelens(src, tmp_path / "art")
    _one_line(exc)


@pytest.mark.parametrize("cfg,pattern", [
    ({"architecture": "jumprelu"}, "lacks tensor threshold"),
    ({"architecture": "gated"}, "architecture 'gated'"),
    ({"architecture": "matryoshka_batchtopk"}, "architecture 'matryoshka_batchtopk'"),
    ({"architecture": "topk", "k": 0}, "a topk SAE needs k from 1 to d_sae = 40, got 0"),
    ({"architecture": "topk", "k": 41}, "a topk SAE needs k from 1 to d_sae = 40, got 41"),
    ({"architecture": "topk"}, "a topk SAE needs k"),
    ({"activation_fn_str": "topk"}, "activation 'topk'"),
    ({"normalize_activations": "layer_norm"}, "normalize_activations 'layer_norm'"),
    ({"normalize_activations": "constant_norm_rescale"}, "cannot be folded"),
    ({"reshape_activations": "hook_z"}, "hook_z"),
    ({"d_in": "576"}, "d_in must be a positive integer"),
    ({"metadata": {"sae_lens_version": "6.0.0"}}, "no hook_name"),
])
def test_refused_configs(tmp_path: Path, cfg: dict, pattern: str) -> None:
    src = _saelens_folder(tmp_path / "sl", cfg=cfg)
    with pytest.raises(InterpError, match=pattern) as exc:
        import_saelens(src, tmp_path / "art")
    _one_line(exc)
    assert not (tmp_path / "art").exists()


def test_jumprelu_tensors_refused_even_if_labelled_standard(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    t = safetensors.torch.load_file(str(src / "sae_weights.safetensors"))
    t["threshold"] = torch.ones(D_SAE)
    safetensors.torch.save_file(t, str(src / "sae_weights.safetensors"))
    with pytest.raises(InterpError, match="threshold.*jumprelu") as exc:
        import_saelens(src, tmp_path / "art")
    _one_line(exc)


def test_truncated_weights(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    path = src / "sae_weights.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(InterpError, match="truncated or not safetensors") as exc:
        import_saelens(src, tmp_path / "art")
    _one_line(exc)
    path.write_bytes(b"\x00" * 5)
    with pytest.raises(InterpError, match="cannot read sae_weights.safetensors"):
        import_saelens(src, tmp_path / "art")


def test_pickle_weights_are_not_loaded(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    torch.save({"W_enc": torch.zeros(1)}, src / "sae_weights.safetensors")  # a pickle
    with pytest.raises(InterpError, match="not safetensors"):
        import_saelens(src, tmp_path / "art")


@pytest.mark.parametrize("text,pattern", [
    ('{"d_in": 12, "d_sae": ', "not valid JSON \\(line 1"),
    ("[1, 2]", "not a JSON object"),
])
def test_bad_cfg_json(tmp_path: Path, text: str, pattern: str) -> None:
    src = _saelens_folder(tmp_path / "sl")
    (src / "cfg.json").write_text(text)
    with pytest.raises(InterpError, match=pattern) as exc:
        import_saelens(src, tmp_path / "art")
    _one_line(exc)


def test_missing_folder_and_files(tmp_path: Path) -> None:
    with pytest.raises(InterpError, match="not found"):
        import_saelens(tmp_path / "nope", tmp_path / "art")
    src = _saelens_folder(tmp_path / "sl")
    (src / "sae_weights.safetensors").unlink()
    with pytest.raises(InterpError, match="has no sae_weights.safetensors"):
        import_saelens(src, tmp_path / "art")
    (src / "cfg.json").unlink()
    with pytest.raises(InterpError, match="has no cfg.json"):
        import_saelens(src, tmp_path / "art")


# ---------------------------------------------------------------------------- export targets


def test_export_refuses_non_saelens_folder(tmp_path: Path) -> None:
    sae = _sae()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(InterpError, match="not a SAELens SAE folder") as exc:
        export_saelens(sae, other)
    _one_line(exc)
    assert (other / "notes.txt").read_text() == "keep me"
    sae.save(tmp_path / "art")  # an interp artifact is not a SAELens folder either
    with pytest.raises(InterpError, match="not a SAELens SAE folder"):
        export_saelens(sae, tmp_path / "art")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InterpError, match="it is a file"):
        export_saelens(sae, tmp_path / "file")
    # A SAELens folder with something extra in it is not replaced either.
    sl = export_saelens(sae, tmp_path / "sl")
    (sl / "my_analysis.csv").write_text("1,2")
    with pytest.raises(InterpError, match="my_analysis.csv"):
        export_saelens(sae, sl)
    assert not _debris(tmp_path)


def test_export_replaces_saelens_folder(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl")
    (src / "sparsity.safetensors").write_bytes(b"")
    out = export_saelens(_sae(seed=3), src)
    assert sorted(p.name for p in out.iterdir()) == ["cfg.json", "sae_weights.safetensors"]
    assert json.loads((out / "cfg.json").read_text())["interp"]["model_id"] == \
        "smollm2-135m-instruct"
    assert not _debris(tmp_path)


def test_failed_export_leaves_no_debris_and_old_folder_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = export_saelens(_sae(seed=1), tmp_path / "sl")
    before = {p.name: p.read_bytes() for p in old.iterdir()}

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saelens, "write_text_synced", boom)
    with pytest.raises(InterpError, match="No space left on device") as exc:
        export_saelens(_sae(seed=2), old)
    _one_line(exc)
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before
    assert not _debris(tmp_path)
    with pytest.raises(InterpError):
        export_saelens(_sae(seed=2), tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists() and not _debris(tmp_path)


def test_failed_import_leaves_no_artifact(tmp_path: Path) -> None:
    src = _saelens_folder(tmp_path / "sl", cfg={"architecture": "jumprelu"})
    with pytest.raises(InterpError):
        import_saelens(src, tmp_path / "art")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sl"]


# ------------------------------------------------------------------ the SAE family


def _family_sae(name: str, seed: int = 0):
    from saes.architectures import ARCHITECTURES

    cfg = SAEConfig(d_in=D_IN, d_sae=D_SAE, hook_point="blocks.3.hook_resid_post", layer=3,
                    model_id="tiny/m", architecture=name,
                    k=5 if name in ("topk", "batchtopk") else None)
    sae = ARCHITECTURES[name].sae_class(cfg)
    sae.init_weights(torch.Generator().manual_seed(seed))
    with torch.no_grad():
        sae.b_enc.normal_(0, 0.3, generator=torch.Generator().manual_seed(seed + 1))
        if name == "jumprelu":
            sae.log_threshold.copy_(torch.linspace(-4, 0, D_SAE))
        if name == "batchtopk":
            sae.threshold.fill_(0.4)
    return sae


@pytest.mark.parametrize("name, saelens_arch", [
    ("relu", "standard"), ("topk", "topk"), ("batchtopk", "jumprelu"), ("jumprelu", "jumprelu")])
def test_every_architecture_round_trips(tmp_path: Path, name: str, saelens_arch: str) -> None:
    sae = _family_sae(name)
    out = export_saelens(sae, tmp_path / "sl")
    cfg = json.loads((out / "cfg.json").read_text())
    assert cfg["architecture"] == saelens_arch and cfg["interp"]["architecture"] == name
    weights = safetensors.torch.load_file(str(out / "sae_weights.safetensors"))
    assert ("threshold" in weights) == (saelens_arch == "jumprelu")
    if name == "topk":
        assert cfg["k"] == 5
    back, _ = load_saelens(out)
    assert type(back) is type(sae) and back.cfg.architecture == name and back.cfg.k == sae.cfg.k
    x = torch.randn(64, D_IN, generator=torch.Generator().manual_seed(9)) * 2
    f = sae.encode(x)
    assert (f > 0).any() and not (f > 0).all()
    assert torch.equal(back.encode(x), f) and torch.equal(back(x), sae(x))


def test_jumprelu_threshold_with_nan_is_refused_in_one_line(tmp_path: Path) -> None:
    out = export_saelens(_family_sae("jumprelu"), tmp_path / "sl")
    t = safetensors.torch.load_file(str(out / "sae_weights.safetensors"))
    t["threshold"][7] = float("nan")
    safetensors.torch.save_file(t, str(out / "sae_weights.safetensors"))
    with pytest.raises(InterpError, match="jumprelu SAE tensor threshold has 1 non-finite") \
            as exc:
        import_saelens(out, tmp_path / "art")
    _one_line(exc)
    assert not (tmp_path / "art").exists()


# ------------------------------------------------------------------ bad inputs


def _saelens_dir(ctx: Ctx, cfg_text: str) -> str:
    path = ctx.tmp / "saelens"
    path.mkdir(exist_ok=True)
    (path / "cfg.json").write_text(cfg_text)
    (path / "sae_weights.safetensors").write_bytes(b"")
    return str(path)


def _nan_threshold_saelens(ctx: Ctx) -> str:
    """A SAELens JumpReLU folder (our own export) whose threshold holds one NaN."""
    import safetensors.torch

    from saes.architectures import JumpReLUSAE
    from saes.sae import SAEConfig
    from saes.saelens import export_saelens

    sae = JumpReLUSAE(SAEConfig(d_in=8, d_sae=16, hook_point="blocks.1.hook_resid_post",
                                layer=1, model_id="tiny", architecture="jumprelu"))
    out = export_saelens(sae, ctx.tmp / "jumprelu-saelens")
    weights = out / "sae_weights.safetensors"
    t = safetensors.torch.load_file(str(weights))
    t["threshold"][3] = float("nan")
    safetensors.torch.save_file(t, str(weights))
    return str(out)


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("sae-import-nan-jumprelu-threshold", lambda c: [
        "sae", "import", _nan_threshold_saelens(c), "--out", c.out],
        "threshold has 1 non-finite", out_is_artifact=True),
    Case("sae-export-truncated-sae", lambda c: [
        "sae", "export", _truncated_sae(c), "--out", c.out], "checksum mismatch",
        out_is_artifact=True),
    Case("sae-export-missing-sae", lambda c: [
        "sae", "export", str(c.tmp / "none"), "--out", c.out], "no SAE at",
        out_is_artifact=True),
    Case("sae-import-malformed-cfg", lambda c: [
        "sae", "import", _saelens_dir(c, "{not json"), "--out", c.out], "cfg.json",
        out_is_artifact=True),
    Case("sae-import-missing-folder", lambda c: [
        "sae", "import", str(c.tmp / "none"), "--out", c.out], "none",
        out_is_artifact=True),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("sae-export-empty-out", lambda c: [
        "sae", "export", _tiny_sae(c), "--out", ""], "empty output folder name",
        out_is_artifact=True),
    Case("sae-export-out-is-the-sae", lambda c: [
        "sae", "export", _tiny_sae(c), "--out", _tiny_sae(c)], "is the input folder",
        out_is_artifact=True),
]
