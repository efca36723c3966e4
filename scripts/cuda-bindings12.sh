#!/usr/bin/env bash
# Usage: scripts/cuda-bindings12.sh [PYTEST-ARGS...]
# The CUDA backend under cuda.bindings 12.x (scripts/test.sh runs this after its .venv steps; .venv
# runs the same tests under 13.x). Makes .venv-cu12: offload-core, offload-host and offload from this
# checkout, offload-cuda[cu12] with cuda-bindings pinned to $OFFLOAD_CU12_BINDINGS (default 12.9.3,
# the oldest 12.x offload-cuda accepts), tests/requirements.txt and cuda-core 1.2.2 (optional); then
# runs tests/cuda there: the CUDA conformance kit and the backend's tests, on the simulated driver.
# That driver reports CUDA 13.0 unless a test sets GPUSIM_CUDA_VERSION: bindings 12 on a 13.0 driver
# is the combination NVIDIA supports (a newer driver runs older bindings), and the kit's kernels are
# nvcc 13.0 cubins, which a 12.x driver cannot load. The 12.x drivers (R550-R575) are tested by
# tests/cuda/test_cuda_driver_versions.py and test_cuda_simulator_versions.py with the simulator set
# to them. Where the packages cannot be installed this prints why and exits 0 (a skip, not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
bindings=${OFFLOAD_CU12_BINDINGS:-12.9.3}
say() { echo "cuda-bindings12.sh: $*" >&2; }
if ! [ -f backends/cuda/pyproject.toml ]; then
  say "SKIPPED: no backends/cuda in this checkout"; exit 0
fi
log=$(mktemp); trap 'rm -f "$log"' EXIT
if ! { scripts/venv.sh .venv-cu12 ./core ./backends/host . \
       && scripts/venv.sh .venv-cu12 "./backends/cuda[cu12]" ./testing "cuda-bindings==$bindings" -r tests/requirements.txt; } >"$log" 2>&1 \
   || ! have=$(.venv-cu12/bin/python -c 'import cuda.bindings, offload_cuda; print(cuda.bindings.__version__)' 2>>"$log") \
   || [ "$have" != "$bindings" ]; then
  cat "$log" >&2
  say "SKIPPED the CUDA tests under cuda-bindings 12: cuda-bindings==$bindings with offload-cuda[cu12] could not be installed into .venv-cu12 (found: ${have:-none}; $( (grep '^ERROR' "$log" || grep -v WARNING "$log") | tail -1))"
  rm -f ".venv-cu12/.offload-stamp-$(printf '%s\0' "./backends/cuda[cu12]" ./testing "cuda-bindings==$bindings" -r tests/requirements.txt | cksum | cut -d' ' -f1)"
  exit 0
fi
cat "$log" >&2
# cuda.core beside offload (tests/cuda/test_cuda_coexistence.py): optional, as in .venv.
if why=$(.venv-cu12/bin/python -m pip install --quiet --disable-pip-version-check "cuda-core==1.2.2" 2>&1 >/dev/null); then
  rm -f .venv-cu12/cuda-core-unavailable.txt
else
  echo "cuda-core==1.2.2 could not be installed from PyPI ($(grep -v WARNING <<<"$why" | tail -1))" | tee .venv-cu12/cuda-core-unavailable.txt >&2
fi
say "tests/cuda under cuda-bindings $have: .venv-cu12/bin/python -m pytest -q -rs tests/cuda $*"
.venv-cu12/bin/python -m pytest -q -rs tests/cuda "$@"
