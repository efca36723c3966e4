#!/usr/bin/env bash
# Rehearses the air-gapped real-GPU run here: the node's Python (CPython 3.12 from PATH or pyenv)
# with the node's preinstalled packages (.venv-node: cuda-bindings 13, cuda-core, numpy, pytest,
# pluggy, hypothesis, setuptools, nvidia-cuda-nvrtc 13.0), the bundle prepared by scripts/gpu-bundle.sh,
# then scripts/cuda-real.sh --offline with no package index reachable (PIP_NO_INDEX, proxies pointed
# at a closed port) and the project's simulated driver standing in for the GPU
# (OFFLOAD_REAL_GPU_REHEARSAL=1), within the node's 10 minutes. The report: tests/.build/cuda-real-rehearsal.md.
# Where something it needs cannot be had (Python 3.12, PyPI for the preparation, nvcc) it says why and exits 0.
# Usage: scripts/cuda-real-rehearsal.sh [PYTEST-ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "cuda-real-rehearsal: $*" >&2; }
skip() { say "SKIPPED: $*"; exit 0; }
report=tests/.build/cuda-real-rehearsal.md
py312=$(python3 -c 'import sys; sys.path.insert(0, "scripts"); import gpu_bundle
try: print(gpu_bundle.find_python())
except gpu_bundle.BundleError as e: print(e, file=sys.stderr)') || true
[ -n "$py312" ] || skip "no CPython 3.12 here (the node's Python): not on PATH, not in pyenv"
command -v nvcc >/dev/null || skip "no nvcc on PATH: the run builds its test kernels with the node's nvcc"
say "[1/3] the node's image: $py312 with the packages the node has (.venv-node; fetched here, as the node's image was)"
node=("cuda-bindings==13.*" "cuda-core==1.2.2" numpy pytest pluggy hypothesis setuptools wheel "nvidia-cuda-nvrtc==13.0.*")
if [ "$(cat .venv-node/.node-image 2>/dev/null)" != "$py312 ${node[*]}" ]; then
  rm -rf .venv-node && "$py312" -m venv .venv-node \
    && .venv-node/bin/python -m pip install --quiet --disable-pip-version-check "${node[@]}" \
    || skip "the node's packages could not be installed from PyPI"
  echo "$py312 ${node[*]}" > .venv-node/.node-image
fi
say "[2/3] the bundle (scripts/gpu-bundle.sh with the node's Python)"
PYTHON=.venv-node/bin/python scripts/gpu-bundle.sh --python .venv-node/bin/python >/dev/null \
  || skip "the bundle could not be prepared (PyPI needed here; output above)"
driver=$(.venv-node/bin/python -c 'import sys; sys.path.insert(0, "tests/simulators"); import build; print(build.cuda_driver())')
say "[3/3] offline: scripts/cuda-real.sh --offline .gpu-bundle (no index, the simulated driver in $driver)"
start=$SECONDS
set +e
env -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_FIND_LINKS PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null \
  http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
  ALL_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= OFFLOAD_REAL_GPU_REHEARSAL=1 LD_LIBRARY_PATH="$driver" \
  PYTHON=.venv-node/bin/python timeout 600 scripts/cuda-real.sh --offline .gpu-bundle --report "$report" "$@"
rc=$?
set -e
sed -n '/^| step/,/^$/p' "$report" >&2 || true
say "exit $rc after $((SECONDS - start)) s (the node allows 600); report: $report"
exit $rc
