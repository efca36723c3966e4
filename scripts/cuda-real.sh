#!/usr/bin/env bash
# Runs the CUDA backend's tests and benchmarks against a REAL CUDA driver (a GPU machine):
# OFFLOAD_CUDA_REAL=1 makes tests/cuda use the machine's libcuda instead of the project's
# simulated driver (tests that need the simulator's knobs skip), and bench_cuda.py report real
# launch and copy ratios. Needs nvcc 13.0 (on PATH, or installed from PyPI by the tests).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh .venv ./core ./backends/host ./backends/cuda . -r tests/requirements.txt
if ! .venv/bin/python -c 'from cuda.bindings import driver as d; import sys; sys.exit(0 if d.cuInit(0)[0] == 0 else 1)' 2>/dev/null; then
  echo "cuda-real: no usable CUDA driver on this machine (cuInit failed); nothing to run" >&2
  exit 1
fi
export OFFLOAD_CUDA_REAL=1
.venv/bin/python -m pytest -q tests/cuda "$@"
.venv/bin/python benchmarks/bench_cuda.py
