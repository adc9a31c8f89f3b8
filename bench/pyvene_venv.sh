#!/usr/bin/env bash
# Build a separate virtualenv holding pyvene, for bench/pyvene_compat.py.
#
#   bash bench/pyvene_venv.sh [VENV_DIR]        # default $PYVENE_VENV or /tmp/pyvene-venv
#
# torch is pinned to the local CPU build (an unpinned torch pulls CUDA wheels) and
# transformers to interp's own version, so both sides load the same GGUF through the same
# code. pyvene 0.1.8 goes in with --no-deps: its declared dependencies (accelerate,
# datasets, plotnine, ipywidgets, ...) are mostly for its tutorials; it needs only
# matplotlib and sentencepiece besides torch and transformers (accelerate: the GGUF loader).
set -euo pipefail

VENV="${1:-${PYVENE_VENV:-/tmp/pyvene-venv}}"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
TRANSFORMERS_VERSION="${TRANSFORMERS_VERSION:-5.23.0}"
PYVENE_VERSION="${PYVENE_VERSION:-0.1.8}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
PIP=(nice -n 15 "$VENV/bin/python" -m pip install --disable-pip-version-check -q)
"${PIP[@]}" "torch==${TORCH_VERSION}" "transformers==${TRANSFORMERS_VERSION}" gguf numpy \
    safetensors matplotlib sentencepiece accelerate
"${PIP[@]}" --no-deps "pyvene==${PYVENE_VERSION}"
"$VENV/bin/python" -c "import importlib.metadata as md, pyvene, torch; \
print('ok: torch', torch.__version__, '| pyvene', md.version('pyvene'))"
echo "pyvene python: $VENV/bin/python"
