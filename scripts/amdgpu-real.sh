#!/usr/bin/env bash
# The AMDGPU backend on a REAL ROCm GPU, written up in one report file (scripts/real_gpu.py does
# the work): checks the HIP driver's version against what the test kernels need (clang-19 code
# objects v5: ROCm 6.0 or newer) and says so; builds the test kernels for the device's own gfx
# target; runs the conformance kit on the machine's HIP runtime, tests/amdgpu and
# benchmarks/bench_amdgpu.py (both on the simulated runtime: they have no real-runtime mode).
# compute-sanitizer is NVIDIA's: there is no sanitizer step.
# Usage: scripts/amdgpu-real.sh [--report PATH] [PYTEST-ARGS...]  (default report:
# tests/.build/amdgpu-real-report.md). Without an AMD GPU it refuses in one line and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/real_gpu.py amdgpu "$@"
