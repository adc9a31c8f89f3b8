#!/usr/bin/env bash
# Build a separate virtualenv holding SAELens, for bench/saelens_compat.py.
#
#   bash bench/saelens_venv.sh [VENV_DIR]        # default $SAELENS_VENV or /tmp/saelens-venv
#
# torch is installed first, pinned to the local CPU build (2.13.0+cpu) that the configured
# registry serves: an unpinned torch would pull multi-GB CUDA wheels. It is then held in
# place (a constraints file) while sae-lens, pinned to the version verified with
# bench/saelens_compat.py, resolves its dependencies (about 2 minutes here, ~100 packages:
# transformer-lens, transformers, datasets, wandb, ...). Installs run under `nice`: the
# machine is shared with training jobs.
#
# Environment: SAE_LENS_VERSION (default 6.54.12), TORCH_VERSION (default 2.13.0),
# PYTHON (default python3), EXTRA_PINS (more requirements, space-separated). SAELens
# 5.11.0 also installs, with EXTRA_PINS="pyarrow<19" (it pins numpy<2, and the newest
# pyarrow needs numpy 2).
set -euo pipefail

VENV="${1:-${SAELENS_VENV:-/tmp/saelens-venv}}"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
SAE_LENS_VERSION="${SAE_LENS_VERSION:-6.54.12}"
read -r -a EXTRA <<<"${EXTRA_PINS:-}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
PIP=(nice -n 15 "$VENV/bin/python" -m pip install --disable-pip-version-check)

"${PIP[@]}" "torch==${TORCH_VERSION}"
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
"$VENV/bin/python" -c "import torch; print('torch==' + torch.__version__)" >"$CONSTRAINTS"
"${PIP[@]}" -c "$CONSTRAINTS" "sae-lens==${SAE_LENS_VERSION}" "${EXTRA[@]}"

WANDB_MODE=disabled HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'PY'
import importlib.metadata as md

import torch
from sae_lens import SAE  # noqa: F401  (import check)

print("ok:", "torch", torch.__version__, "| sae-lens", md.version("sae-lens"))
PY
echo "SAELens python: $VENV/bin/python"
