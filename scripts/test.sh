#!/usr/bin/env bash
# Every test: the whole suite against core + host backend (.venv), then the core-alone tests in a
# venv holding offload-core only (.venv-core). Extra arguments go to the first pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh .venv ./core ./backends/host ./backends/cuda ./backends/amdgpu . -r tests/requirements.txt
.venv/bin/python -m pytest -q "$@"
scripts/venv.sh .venv-core ./core "pytest>=8"
OFFLOAD_CORE_ONLY=1 .venv-core/bin/python -m pytest -q tests/core_only
