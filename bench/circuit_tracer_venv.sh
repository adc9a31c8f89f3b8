#!/usr/bin/env bash
# Build a separate virtualenv holding circuit-tracer, for bench/circuit_tracer_compat.py.
#
#   bash bench/circuit_tracer_venv.sh [VENV_DIR]   # default $CIRCUIT_TRACER_VENV or /tmp/circuit-tracer-venv
#
# circuit-tracer 0.5.0 pins transformers<=4.57.3 (ours is 5.x), so it cannot share our venv.
# torch is installed first, pinned to the local CPU build (2.13.0+cpu) that the configured
# registry serves: an unpinned torch would pull multi-GB CUDA wheels. It is then held in
# place (a constraints file) while circuit-tracer, pinned to the version verified with
# bench/circuit_tracer_compat.py, resolves its dependencies (~100 packages: transformers
# 4.57.3, transformer-lens 3.x, nnsight, datasets, wandb, ...; about 1 minute here).
# nnsight is pinned too: circuit-tracer 0.5.0 asks for nnsight>=0.6.0, but its nnsight
# backend imports nnsight.intervention.tracing.tracer.Barrier, which nnsight 0.7/0.8 no
# longer have (0.6.3 works). If $CIRCUIT_TRACER_WHEEL names a local wheel file (e.g.
# /tmp/ct/circuit_tracer-0.5.0-py3-none-any.whl) it is installed instead of the registry's.
# Installs run under `nice`: the machine is shared with training jobs.
#
# Environment: CIRCUIT_TRACER_VERSION (default 0.5.0), NNSIGHT_VERSION (default 0.6.3),
# TORCH_VERSION (default 2.13.0), PYTHON (default python3), EXTRA_PINS (more requirements,
# space-separated).
set -euo pipefail

VENV="${1:-${CIRCUIT_TRACER_VENV:-/tmp/circuit-tracer-venv}}"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
CT_VERSION="${CIRCUIT_TRACER_VERSION:-0.5.0}"
NNSIGHT_VERSION="${NNSIGHT_VERSION:-0.6.3}"
CT_REQ="circuit-tracer==${CT_VERSION}"
if [ -n "${CIRCUIT_TRACER_WHEEL:-}" ]; then
    CT_REQ="$CIRCUIT_TRACER_WHEEL"
fi
read -r -a EXTRA <<<"${EXTRA_PINS:-}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
PIP=(nice -n 15 "$VENV/bin/python" -m pip install --disable-pip-version-check)

"${PIP[@]}" "torch==${TORCH_VERSION}"
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
"$VENV/bin/python" -c "import torch; print('torch==' + torch.__version__)" >"$CONSTRAINTS"
"${PIP[@]}" -c "$CONSTRAINTS" "$CT_REQ" "nnsight==${NNSIGHT_VERSION}" "${EXTRA[@]}"

WANDB_MODE=disabled HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'PY'
import importlib.metadata as md

import torch
from circuit_tracer import ReplacementModel, attribute  # noqa: F401  (import check)
from circuit_tracer.replacement_model.replacement_model_nnsight import (  # noqa: F401
    NNSightReplacementModel,
)
from circuit_tracer.replacement_model.replacement_model_transformerlens import (  # noqa: F401
    TransformerLensReplacementModel,
)

print("ok:", "torch", torch.__version__, "| circuit-tracer", md.version("circuit-tracer"),
      "| transformers", md.version("transformers"),
      "| transformer-lens", md.version("transformer-lens"), "| nnsight", md.version("nnsight"))
PY
echo "circuit-tracer python: $VENV/bin/python"
