#!/usr/bin/env bash
# τ²-bench in its own virtualenv, for tests/e2e/test_tau2_real.py. τ² pins its own litellm, so it never
# shares toolscale's environment. Its source is the vendored archive (../shared/vendor/tau2-bench; τ² is not
# on the registries reachable here), unpacked into VENV/tau2-src and used through PYTHONPATH=VENV/tau2-src/src
# (its pyproject asks for Python 3.12; the src runs on 3.11 too). The dependencies are the vendor README's,
# plus RestrictedPython, which exported packages need. Idempotent; prints the venv's python.
#   export TOOLSCALE_TAU2_PYTHON=$(bash tests/tau2_install.sh [VENV_DIR])
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
archive="$root/../shared/vendor/tau2-bench/tau2-bench-a2c0247-src.tar.gz"
venv="${1:-${TOOLSCALE_TAU2_VENV:-$HOME/.cache/toolscale/tau2}}"
src="$venv/tau2-src"
deps=(pydantic loguru docstring-parser deepdiff addict pyyaml toml python-dotenv typer rich tabulate requests numpy
      httpx pandas tenacity psutil fastapi uvicorn 'litellm>=1.80.15,<1.82.7' RestrictedPython)
[ -f "$archive" ] || { echo "tau2_install.sh: no τ²-bench archive at $archive" >&2; exit 1; }
stamp="$venv/.toolscale-tau2-$(sha256sum "$archive" | cut -c1-16)"  # a new archive means a new install
installed() {
    [ -f "$stamp" ] && [ -f "$src/src/tau2/registry.py" ] &&
        "$venv/bin/python" -c "import importlib.metadata as m, RestrictedPython; m.version('litellm')" 2>/dev/null
}
if ! installed; then
    python -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet "${deps[@]}" >&2
    rm -rf "$src.partial" && mkdir -p "$src.partial"
    tar -xzf "$archive" -C "$src.partial"
    rm -rf "$src" && mv "$src.partial" "$src"
    mkdir -p "$src/data"  # the archive has no data files; τ² wants its data folder to exist
    LITELLM_LOCAL_MODEL_COST_MAP=True LOGURU_LEVEL=WARNING PYTHONPATH="$src/src" TAU2_DATA_DIR="$src/data" \
        "$venv/bin/python" -c "import tau2.registry, RestrictedPython" >&2  # τ² imports with these
    touch "$stamp"
fi
echo "$venv/bin/python"
