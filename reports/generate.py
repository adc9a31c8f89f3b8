"""The ``interp generate`` report: prompts, continuations and what the engine did."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.html import Section, kv_table, render_report, table


def render_generate_report(result: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """HTML for a :meth:`interp.generation.engine.GenerationResult.to_dict` result."""
    cfg, stats = result["config"], result["stats"]
    rows = [
        [g["index"], g["prompt"], g["text"], g["stop_reason"], len(g["token_ids"])]
        for g in result["generations"]
    ]
    settings = {
        "model": result["model"],
        "decoding": "greedy" if cfg["temperature"] == 0
        else f"sampling (T={cfg['temperature']}, top-p={cfg['top_p']}, seed={cfg['seed']})",
        "max new tokens": cfg["max_new_tokens"],
        "chat template": "yes" if cfg["chat"] else "no",
        "batch size": cfg["batch_size"],
        "deterministic (decode-verify-rollback)": "yes" if cfg["deterministic"] else "no",
        "injected batch noise": cfg["inject_batch_noise"],
        "stop strings": ", ".join(repr(s) for s in cfg["stop"]) or "none",
    }
    engine = {
        "prompts": stats["prompts"],
        "new tokens": stats["new_tokens"],
        "seconds": round(stats["seconds"], 2),
        "tokens / s": round(stats["tokens_per_second"], 1),
        "fast-path forward passes": stats["forward_passes"],
    }
    if cfg["deterministic"]:
        engine.update({
            "tokens verified": stats["tokens_verified"],
            "rollbacks": stats["rollbacks"],
            "regenerated tokens": stats["regenerated_tokens"],
            "verifier passes": stats["verifier_passes"],
        })
    sections = [
        Section("Continuations", table(["#", "prompt", "continuation", "stop", "tokens"], rows),
                "The continuation excludes the prompt and any stop string."),
        Section("Settings", kv_table(settings)),
        Section(
            "Engine",
            kv_table(engine),
            "With decode-verify-rollback, every token was checked by a fixed-shape verifier "
            "pass, so the output does not depend on the batch size; rollbacks count the "
            "verification rounds in which the fast path's proposal was corrected.",
        ),
    ]
    return render_report(f"Generation — {result['model']}", sections, dict(manifest),
                         subtitle="Text generated with interp.generation.engine.")
