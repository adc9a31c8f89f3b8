"""SAE latents as tools: steering vectors from features and sparse probing (tiny model)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from interp.activations.capture import capture, forward_with_hooks
from interp.data.windows import pack_windows
from interp.errors import InterpError
from interp.probing.probes import ProbeDataset
from saes.features.probing import SparseProbeConfig, sparse_probe
from saes.features.steering import FeatureVectorConfig, feature_vector, typical_max
from saes.sae import SAEConfig, SparseAutoencoder
from tests.support.bad_inputs import Case, M, _probe_rows, _tiny_sae
from tests.support.cli_runner import run
from tests.support.text_fixtures import paragraphs


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return paragraphs(80, seed=3)


def _sae(model, m: int = 48, seed: int = 0) -> SparseAutoencoder:  # noqa: ANN001
    sae = SparseAutoencoder(SAEConfig(d_in=model.d_model, d_sae=m,
                                      hook_point=model.resid_hook(1), layer=1,
                                      model_id=model.model_id))
    sae.init_weights(torch.Generator().manual_seed(seed), dec_norm=0.5)
    with torch.no_grad():
        sae.b_enc.normal_(0, 0.1, generator=torch.Generator().manual_seed(seed + 1))
        sae.b_enc[:6] += 1.0  # features 0…5 fire on much of the text, by varying amounts
    return sae


# ------------------------------------------------------------------ steering from a feature


def test_feature_vector_is_the_decoder_row_at_its_typical_peak(tiny_model, docs):
    sae = _sae(tiny_model)
    cfg = FeatureVectorConfig(feature=5, tokens=15 * 10, seq_len=16, batch_size=3)
    vec = feature_vector(tiny_model, sae, docs, cfg)
    # by hand: each window's largest activation of feature 5 (position 0 left out)
    ids = pack_windows(tiny_model, docs, seq_len=16, n_windows=10)
    hook = sae.cfg.hook_point
    x = forward_with_hooks(tiny_model, ids, None, [hook])[0][hook][:, 1:]
    maxima = sae.encode(x)[..., 5].amax(1)
    fired = maxima[maxima > 0]
    assert fired.numel() > 0
    scale = float(fired.median())
    assert vec.extra["typical_max_activation"] == pytest.approx(scale, rel=1e-5)
    assert torch.allclose(vec.vector, sae.W_dec[5].detach() * scale, atol=1e-6)
    assert vec.layer == 1 and vec.method == "sae_feature"
    assert vec.extra["windows_fired"] == fired.numel()
    assert typical_max(torch.zeros(4)) != typical_max(torch.zeros(4))  # NaN: never fired


def test_feature_vector_takes_a_loaded_sae(tiny_model, docs, tmp_path):
    """What load_sae returns works as evaluate_sae and the browser take it: the same
    vector, with the SAE's folder as its source."""
    from saes.loading import load_sae

    sae = _sae(tiny_model)
    folder = sae.save(tmp_path / "sae", manifest={})
    cfg = FeatureVectorConfig(feature=5, tokens=15 * 10, seq_len=16, batch_size=3)
    loaded = load_sae(folder, tiny_model)
    vec = feature_vector(tiny_model, loaded, docs, cfg)
    assert torch.allclose(vec.vector, feature_vector(tiny_model, sae, docs, cfg).vector)
    assert vec.source == str(loaded.path)
    # with the SAE's explanations.jsonl naming feature 5, the vector says what it is
    lines = [{"kind": "header", "d_sae": sae.cfg.d_sae},
             {"kind": "feature", "feature": 5, "label": "the token ' river'", "explained": True,
              "scores": [{"difference": 0.4}]}]
    (folder / "explanations.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    vec = feature_vector(tiny_model, load_sae(folder, tiny_model), docs, cfg)
    assert vec.extra["explanation"] == "the token ' river'"
    assert vec.source == f"{loaded.path} · feature 5: the token ' river' (+0.40 explained)"


def test_feature_vector_refuses_bad_features(tiny_model, docs):
    sae = _sae(tiny_model)
    with torch.no_grad():
        sae.b_enc[7] = -1e6  # never fires
    cfg = FeatureVectorConfig(feature=7, tokens=150, seq_len=16)
    with pytest.raises(InterpError, match="feature 7 never fires"):
        feature_vector(tiny_model, sae, docs, cfg)
    with pytest.raises(InterpError, match="out of range: the SAE has 48 features"):
        feature_vector(tiny_model, sae, docs, FeatureVectorConfig(feature=48, tokens=150))


def test_cli_steer_train_from_feature(tiny_model, tiny_model_dir, docs, tmp_path, capsys):
    sae = _sae(tiny_model)
    with torch.no_grad():
        sae.b_enc[7] = -1e6
    sae.save(tmp_path / "sae")
    text = tmp_path / "text.txt"
    # enough held-out paragraphs (the sha256 rule keeps ~5%) for 600 tokens' windows
    text.write_text("\n\n".join(docs + paragraphs(320, seed=4)))
    m = ["--model", str(tiny_model_dir)]
    base = ["steer", "train", "--sae", str(tmp_path / "sae"), "--text", str(text),
            "--tokens", "600", *m]
    code, out, err = run([*base, "--feature", "3", "--out", str(tmp_path / "vec")], capsys)
    assert code == 0, err
    info = json.loads(out)
    assert info["feature"] == 3 and info["method"] == "sae_feature" and info["layer"] == 1
    code, out, err = run(["steer", "generate", "hello there", "--vector", str(tmp_path / "vec"),
                          "--alpha", "2", "--max-new-tokens", "3", "--json", *m], capsys)
    assert code == 0, err
    assert json.loads(out)[0]["alpha"] == 2.0
    for bad, message in ((["--feature", "99"], "out of range"),
                         (["--feature", "7"], "never fires"),
                         (["--feature", "1", "--pairs", str(text)], "not both")):
        target = tmp_path / f"bad-{bad[1]}"
        code, out, err = run([*base, *bad, "--out", str(target)], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
        assert not target.exists()


def test_browser_shows_the_steering_command(tiny_model, docs, tmp_path):
    from reports.sae_browser import sae_browser_report, steer_command
    from saes import BrowserConfig, collect_browser_data

    sae = _sae(tiny_model)
    data = collect_browser_data(tiny_model, sae, docs, BrowserConfig(
        tokens=150, seq_len=16, features="0,1", top_k=2))
    data.sae_path = str(tmp_path / "my sae")
    html = sae_browser_report(data, {}).html
    cmd = steer_command(data.sae_path, 1)
    assert "--feature 1" in cmd and "'" in cmd  # the path with a space is quoted
    assert "interp steer train --sae" in html and "--feature 0 --out feature-0-vector" in html


# ------------------------------------------------------------------ sparse probing


@pytest.fixture(scope="module")
def probe_set(tiny_model) -> ProbeDataset:
    """Texts whose label is their last word; no groups (stratified splits)."""
    rnd = random.Random(0)
    words = " ".join(paragraphs(20, seed=5)).split()
    texts, labels = [], []
    for i in range(64):
        prefix = " ".join(rnd.choice(words) for _ in range(rnd.randint(3, 8)))
        texts.append(f"{prefix} {'river' if i % 2 else 'stone'}")
        labels.append(i % 2)
    return ProbeDataset(texts, np.array(labels), None, None, "planted", ["0", "1"])


def _planted_sae(model, ds: ProbeDataset, planted: int) -> SparseAutoencoder:  # noqa: ANN001
    """Random latents, plus latent ``planted`` firing on class 1 along the class-mean gap."""
    sae = _sae(model, m=32, seed=1)
    x = capture(model, ds.texts, hooks=[sae.cfg.hook_point])[sae.cfg.hook_point].float()
    y = torch.as_tensor(ds.labels)
    u = x[y == 1].mean(0) - x[y == 0].mean(0)
    mid = float(((x[y == 1].mean(0) + x[y == 0].mean(0)) / 2) @ u)
    with torch.no_grad():
        sae.b_dec.zero_()
        sae.W_enc[:, planted] = u / u.norm()
        sae.b_enc[planted] = -mid / u.norm()
    return sae


def test_sparse_probe_finds_the_planted_latent(tiny_model, probe_set):
    sae = _planted_sae(tiny_model, probe_set, planted=11)
    res = sparse_probe(tiny_model, sae, probe_set,
                       SparseProbeConfig(ks=(1, 4), seeds=5, random_draws=3))
    assert all(top[0] == 11 for top in res.top_latents)  # chosen on training rows each time
    k1 = np.mean(res.sparse_accuracy[0])
    assert k1 >= 0.9
    assert np.mean(res.dense_accuracy) >= 0.9
    assert k1 > np.mean(res.random_accuracy[0]) + 0.1
    assert res.difference(0)["within_noise"] is False, (res.sparse_accuracy, res.random_accuracy)
    assert np.mean(res.majority_accuracy) == pytest.approx(0.5, abs=0.1)
    out = res.to_dict()
    json.dumps(out)
    assert {r["method"] for r in out["table"]} == {"sparse", "random", "dense", "majority"}
    assert all("accuracy_ci95" in r and "accuracy_n" in r for r in out["table"])
    frame = res.to_frame()
    assert len(frame) == 2 * 2 + 2


def test_sparse_probe_refuses_k_above_width(tiny_model, probe_set):
    sae = _sae(tiny_model, m=8)
    with pytest.raises(InterpError, match="k 20 > d_sae 8"):
        sparse_probe(tiny_model, sae, probe_set, SparseProbeConfig(ks=(1, 20)))
    # the library names the field (the CLI's "bad --ks": sae-probe-bad-ks in BAD_INPUTS below)
    with pytest.raises(InterpError, match=r"SparseProbeConfig: ks must be positive integers"):
        SparseProbeConfig(ks=(0, 2))


def test_cli_sae_probe_writes_report(tiny_model, tiny_model_dir, probe_set, tmp_path, capsys):
    from tests.support.browser import assert_clean, visit

    sae = _planted_sae(tiny_model, probe_set, planted=4)
    sae.save(tmp_path / "sae")
    ds = tmp_path / "set.jsonl"
    ds.write_text("".join(json.dumps({"text": t, "label": int(y)}) + "\n"
                          for t, y in zip(probe_set.texts, probe_set.labels, strict=True)))
    m = ["--model", str(tiny_model_dir)]
    code, out, err = run(["sae", "probe", str(tmp_path / "sae"), "--dataset", str(ds),
                          "--ks", "1,2", "--seeds", "2", "--random-draws", "2", *m,
                          "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["ks"] == [1, 2] and res["top_latents"][0][0] == 4
    assert res["manifest"]["model_id"] == tiny_model.model_id
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Sparse probing" in html and "k-sparse probe" in html
    assert any(p.suffix == ".svg" for p in (tmp_path / "out").rglob("*"))
    assert_clean(visit(tmp_path / "out" / "report.html", "sae_probe_report.png"))
    code, out, err = run(["sae", "probe", str(tmp_path / "sae"), "--dataset", str(ds),
                          "--ks", "1,40", *m, "--out", str(tmp_path / "bad")], capsys)
    assert code == 2 and "k 40 > d_sae 32" in err and not (tmp_path / "bad").exists()


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("sae-probe-k-above-d-sae", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--ks", "1,40", *M(c), "--out", c.out], "k 40 > d_sae 16"),
    Case("sae-probe-bad-ks", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--ks", "0,2", *M(c), "--out", c.out], "bad --ks"),
    Case("sae-probe-seeds-too-many", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([0, 1] * 20)),
        "--seeds", "2147483648", *M(c), "--out", c.out], "--seeds"),
    Case("sae-probe-one-class", lambda c: [
        "sae", "probe", _tiny_sae(c), "--dataset", c.file("d.jsonl", _probe_rows([1] * 40)),
        *M(c), "--out", c.out], "single class"),
]
