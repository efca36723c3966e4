#!/usr/bin/env bash
# Prepares what the real-GPU run needs on an air-gapped node (scripts/gpu_bundle.py does the work):
# offload-core, offload-host, offload-cuda and offload-testing as wheels built with the node's CPython (3.12 unless
# --python says otherwise; their C extensions compiled in) and the third-party wheels the node
# lacks (structlog; more with --with NAME), into one git-ignored folder, .gpu-bundle by default, with
# BUNDLE.md listing it. Needs PyPI here; the node needs nothing but this checkout and that folder.
# Usage: scripts/gpu-bundle.sh [--dest DIR] [--python PY] [--with NAME]...
# Then, on the node:  bash scripts/cuda-real.sh --offline .gpu-bundle --report REPORT.md
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/gpu_bundle.py prepare "$@"
