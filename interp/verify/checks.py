"""The checks behind ``interp models --verify NAME`` and the README's verified-models table.

Each check compares two computations that must agree when ``interp`` reads a model
correctly; a failure names a real problem (a wrong norm, a lost BOS, padding that
leaks between prompts), not a tool bug alone:

* ``lens_logits``: the last layer's residual read through the final norm and
  unembedding (both interp's direct RMSNorm path and the bridge modules) equals the
  model's own output logits, at every real token;
* ``hf_logits``: the hooked model's logits equal the plain Hugging Face model's
  (loaded a second time from the same checkpoint), one prompt at a time;
* ``capture_batch``: every layer's residual stream at the last token is the same
  captured alone (batch 1) and in one left-padded batch (relative to its size:
  residual norms grow to the thousands in later layers);
* ``bos``: the token ids every path feeds the model equal ``tokenizer(text)``'s, BOS
  included or not as the tokenizer says;
* ``generate_batch``: batched greedy generation (deterministic mode) produces the same
  tokens as one prompt at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from interp.activations.capture import capture
from interp.errors import InterpError
from interp.generation.engine import generate
from interp.models.loading import Model
from interp.models.unembedding import Unembed
from interp.runs.progress import make_progress
from interp.verify.results import Check, VerifyConfig, VerifyResult


def _lens_logits(model: Model, cfg: VerifyConfig) -> Check:
    last = model.n_layers - 1
    acts = capture(model, list(cfg.prompts), layers=[last], positions="all",
                   with_logits=True, progress=False)
    assert acts.logits is not None
    resid = acts[model.resid_hook(last)]
    mask = acts.mask
    want = acts.logits[mask].float()
    unembed = Unembed(model)
    worst = 0.0
    with torch.no_grad():
        for got in (unembed(resid[mask]), model.unembed(resid[mask]).float()):
            worst = max(worst, float((got.cpu() - want).abs().max()))
    path = "interp's direct RMSNorm path and the bridge" if unembed.fast else (
        "the bridge modules (no direct path: the final norm is not an RMSNorm)")
    return Check("lens_logits", worst <= cfg.logit_tolerance, worst, cfg.logit_tolerance,
                 f"max |lens − logits| over {int(mask.sum())} tokens, through {path}")


def _hf_logits(model: Model, cfg: VerifyConfig) -> Check:
    from transformers import AutoModelForCausalLM

    try:
        hf: Any = AutoModelForCausalLM.from_pretrained(model.path, dtype=model.dtype)
    except (OSError, ValueError, KeyError) as exc:
        return Check("hf_logits", None, None, cfg.logit_tolerance,
                     f"the plain model could not be loaded: {str(exc).splitlines()[0]}")
    hf.to(model.device).eval()
    worst = 0.0
    with torch.no_grad():
        for prompt in cfg.prompts:
            ids = torch.tensor([model.encode(prompt)], device=model.device)
            ours = model.logits(ids).float()
            theirs = hf(ids).logits.float()
            worst = max(worst, float((ours - theirs).abs().max()))
    del hf
    return Check("hf_logits", worst <= cfg.logit_tolerance, worst, cfg.logit_tolerance,
                 f"max |hooked − plain transformers| logits over {len(cfg.prompts)} prompts")


def _capture_batch(model: Model, cfg: VerifyConfig) -> Check:
    prompts = list(cfg.prompts)
    together = capture(model, prompts, layers="all", batch_size=len(prompts), progress=False)
    alone = capture(model, prompts, layers="all", batch_size=1, progress=False)
    worst = 0.0
    for layer in range(model.n_layers):
        a, b = together[layer], alone[layer]
        worst = max(worst, float((a - b).abs().max() / b.abs().max().clamp_min(1e-12)))
    return Check("capture_batch", worst <= cfg.capture_tolerance, worst, cfg.capture_tolerance,
                 f"max |batch − alone| / max |alone| at the last token, over "
                 f"{model.n_layers} layers and {len(prompts)} prompts")


def _bos(model: Model, cfg: VerifyConfig) -> Check:
    prefix = [model.decode_token(i) for i in model.special_prefix]
    said = f"adds {' '.join(repr(p) for p in prefix)}" if prefix else "adds no BOS"
    acts = capture(model, list(cfg.prompts), layers=[0], positions="all", progress=False)
    bad = []
    for i, prompt in enumerate(cfg.prompts):
        plain = list(model.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        full = [int(t) for t in model.tokenizer(prompt)["input_ids"]]
        want = full[: len(full) - _suffix_len(full, plain)]  # an appended EOS is not wanted
        seen = [int(t) for t in acts.input_ids[i][acts.mask[i]]]
        if model.encode(prompt) != want or seen != want:
            bad.append(i)
    detail = said if not bad else f"{said}; {len(bad)} prompts fed other ids than tokenizer(text)"
    return Check("bos", not bad, None, None, detail)


def _suffix_len(full: list[int], plain: list[int]) -> int:
    """How many special tokens the tokenizer appends after the text (an EOS), or 0."""
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return len(full) - start - len(plain)
    return 0


def _generate_batch(model: Model, cfg: VerifyConfig) -> Check:
    prompts = list(cfg.prompts)
    kw = {"max_new_tokens": cfg.max_new_tokens, "deterministic": True, "progress": False}
    batched = generate(model, prompts, batch_size=len(prompts), **kw)
    differ = 0
    for prompt, g in zip(prompts, batched.generations, strict=True):
        alone = generate(model, [prompt], batch_size=1, **kw).generations[0]
        differ += g.token_ids != alone.token_ids
    return Check("generate_batch", differ == 0, float(differ), 0.0,
                 f"prompts whose {cfg.max_new_tokens} greedy tokens differ batched and alone: "
                 f"{differ} of {len(prompts)}")


CHECKS: tuple[tuple[str, Callable[[Model, VerifyConfig], Check]], ...] = (
    ("lens_logits", _lens_logits),
    ("hf_logits", _hf_logits),
    ("capture_batch", _capture_batch),
    ("bos", _bos),
    ("generate_batch", _generate_batch),
)


def verify_model(model: Model, config: VerifyConfig | None = None, **settings: Any
                 ) -> VerifyResult:
    """Run every check of the verified-models table on ``model``; settings come from
    ``config`` or from keywords named as its fields. The result carries its manifest."""
    from interp.runs.manifest import model_manifest

    cfg = VerifyConfig.resolve(config, settings)
    start = time.perf_counter()
    checks = []
    with make_progress() as bar:
        task = bar.add_task("verifying", total=len(CHECKS), info="")
        for name, fn in CHECKS:
            bar.update(task, info=name)
            if name == "hf_logits" and not cfg.compare_hf:
                checks.append(Check(name, None, None, cfg.logit_tolerance, "skipped"))
            else:
                try:
                    checks.append(fn(model, cfg))
                except InterpError as exc:
                    checks.append(Check(name, False, None, None, f"error: {exc}"))
            bar.advance(task)
    hf_cfg = getattr(model.bridge.cfg, "original_architecture", None)
    arch = str(hf_cfg or getattr(model.bridge.cfg, "architecture", "") or "unknown")
    return VerifyResult(
        config=cfg, model_id=model.model_id, architecture=arch, n_layers=model.n_layers,
        d_model=model.d_model, d_vocab=model.d_vocab,
        special_prefix=[model.decode_token(i) for i in model.special_prefix],
        checks=checks, seconds=time.perf_counter() - start,
        # seed 0: the checks draw nothing at random (greedy generation, no sampling)
        manifest=model_manifest(model, seed=0, config=cfg.to_dict(), texts=cfg.prompts),
    )
