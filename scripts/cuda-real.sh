#!/usr/bin/env bash
# The CUDA backend on a REAL GPU, written up in one report file (scripts/real_gpu.py does the work):
# checks the driver's version against what the test kernels need (nvcc 13.0: a 13.0 driver) and
# says so; builds the test kernels for the device's own architecture (cubin) plus PTX; runs the
# conformance kit, tests/cuda (OFFLOAD_CUDA_REAL=1: the machine's libcuda instead of the simulator;
# tests that need the simulator's knobs skip), benchmarks/bench_cuda.py (held batches under the
# push buffer) and, where compute-sanitizer installs from PyPI, the kit under memcheck.
# Usage: scripts/cuda-real.sh [--report PATH] [--offline BUNDLE] [--budget SECONDS] [PYTEST-ARGS...]
# (default report: tests/.build/cuda-real-report.md). Without a GPU it refuses in one line and exits 1.
# --offline BUNDLE: an air-gapped node; installs from the folder scripts/gpu-bundle.sh prepared, fetches
# nothing, uses the node's own compute-sanitizer and cuda.core, and stays within 540 s by default.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/real_gpu.py cuda "$@"
