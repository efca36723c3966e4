#!/usr/bin/env bash
# Usage: scripts/opencl-envs.sh   (called by scripts/test.sh after .venv is prepared)
# The OpenCL test environments, each one PoCL as a user installs it; nothing inside an install is
# renamed or edited:
#   wheel   pyopencl[pocl] from PyPI: PyOpenCL's bundled ICD loader and the wheel's PoCL 3.0 (LLVM 14),
#           alone: OCL_ICD_VENDORS names an empty folder, so the system's ICDs stay out.
#   system  pyopencl without the pocl extra, and Debian's pocl-opencl-icd (PoCL 3.1, LLVM 15; apt, as
#           root) that its loader finds in /etc/OpenCL/vendors.
# The whole suite (.venv) runs on the wheel where the wheel's PoCL compiles OpenCL C for this CPU,
# else on the system PoCL where it could be installed (else without OpenCL: the tests skip, saying
# why). The other environment, where it can be had, runs tests/opencl here, in its own venv
# (.venv-pocl-system or .venv-pocl-wheel); on the wheel's PoCL that cannot compile, discovery,
# device info and the kit's cases without a program run, and the compiling cases skip naming the
# CPU and the PoCL. Prints the OCL_ICD_VENDORS the whole suite needs (nothing: leave it unset).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "test.sh: $*" >&2; }
pipq() { local venv=$1; shift; "$venv/bin/python" -m pip "$@" --quiet --disable-pip-version-check 2>&1 >/dev/null | { grep -v WARNING || true; } | tail -1; }
novendors=$PWD/tests/.build/opencl-no-vendors; mkdir -p "$novendors"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2- | xargs)"
# why the venv's OpenCL platforms cannot compile OpenCL C (nothing where every one can)
cannot_compile() { local venv=$1; shift; env "$@" "$venv/bin/python" - <<'PY' 2>&1 || true
import pyopencl as cl
for platform in cl.get_platforms():
    try:
        cl.Program(cl.Context(platform.get_devices()), "__kernel void f(__global int *a) { a[0] = 1; }").build()
    except Exception as exc:
        lines = [l.strip() for l in str(exc).splitlines() if "error" in l.lower()] or str(exc).strip().splitlines()[:1]
        print(f"{platform.version.strip()}: {lines[-1][:200]}")
        break
PY
}
opencl_tests() {  # VENV LABEL ENV...: tests/opencl in another environment
  local venv=$1 label=$2; shift 2
  say "OpenCL on $label: $venv/bin/python -m pytest -q -rs tests/opencl"
  env "$@" "$venv/bin/python" -m pytest -q -rs tests/opencl >&2
}
unavailable() {
  say "$1; the OpenCL backend tests of the whole suite and the PoCL peer benchmarks skip"
  .venv/bin/python -m pip uninstall --quiet -y offload-opencl pyopencl pocl-binary-distribution >/dev/null 2>&1 || true
  rm -f ".venv/.offload-stamp-$(printf '%s\0' ./backends/opencl | cksum | cut -d' ' -f1)"  # venv.sh installs it again next time
  echo "$1" > .venv/opencl-unavailable.txt
}

if ! why=$(pipq .venv install "pyopencl[pocl]"); then
  unavailable "pyopencl[pocl] could not be installed from PyPI ($why)"; exit 0
fi
site=$(.venv/bin/python -c 'import os, pyopencl; print(os.path.dirname(pyopencl.__file__))')
# an earlier scripts/test.sh renamed the wheel's pocl.icd here: put it back
[ -f "$site/.libs/pocl.icd.cannot-compile-for-this-cpu" ] && mv "$site/.libs/pocl.icd.cannot-compile-for-this-cpu" "$site/.libs/pocl.icd"
wheel_why=$(cannot_compile .venv OCL_ICD_VENDORS="$novendors")

# Debian's PoCL (the other dpkg users may hold the lock: wait for it rather than fail)
apt_pocl() { apt-get install -y -qq -o DPkg::Lock::Timeout=600 pocl-opencl-icd >/dev/null 2>&1; }
dpkg-query -W -f='${Status}' pocl-opencl-icd 2>/dev/null | grep -q 'ok installed' || { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
  && { apt_pocl || { apt-get update -qq -o DPkg::Lock::Timeout=600 >/dev/null 2>&1 && apt_pocl; }; }; } || true
system=""
[ -f /etc/OpenCL/vendors/pocl.icd ] || system="Debian's pocl-opencl-icd could not be installed (apt-get as root)"
system_env() {  # .venv-pocl-system: the checkout's offload, pyopencl without its PoCL
  scripts/venv.sh .venv-pocl-system ./core ./backends/host ./testing . -r tests/requirements.txt "pyopencl" ./backends/opencl >&2 || return 1
  .venv-pocl-system/bin/python -m pip uninstall --quiet -y pocl-binary-distribution >/dev/null 2>&1 || true
}

if [ -z "$wheel_why" ]; then
  scripts/venv.sh .venv ./backends/opencl >&2
  rm -f .venv/opencl-unavailable.txt
  say "the whole suite's OpenCL runs on pyopencl's wheel PoCL (.venv, OCL_ICD_VENDORS=$novendors: no system ICD)"
  if [ -z "$system" ] && system_env; then
    opencl_tests .venv-pocl-system "Debian's PoCL (.venv-pocl-system: pyopencl without its pocl extra, /etc/OpenCL/vendors)"
  else
    say "SKIPPED tests/opencl on Debian's PoCL: ${system:-its venv could not be prepared}"
  fi
  echo "$novendors"
  exit 0
fi

say "pyopencl's wheel PoCL cannot compile OpenCL C for this CPU ($cpu): $wheel_why"
if [ -z "$system" ] && .venv/bin/python -m pip uninstall --quiet -y pocl-binary-distribution >/dev/null 2>&1 \
    && [ -z "$(cannot_compile .venv)" ]; then
  scripts/venv.sh .venv ./backends/opencl >&2
  rm -f .venv/opencl-unavailable.txt
  say "the whole suite's OpenCL runs on Debian's PoCL (.venv: pyopencl without its pocl extra, /etc/OpenCL/vendors)"
else
  other=${system:-"Debian's PoCL cannot compile either"}
  unavailable "PoCL cannot compile OpenCL C for this CPU ($cpu) and no other PoCL could be installed ($other)"
fi
# the wheel's PoCL as pip installs it still runs what needs no compiler, in its own venv
if scripts/venv.sh .venv-pocl-wheel ./core ./backends/host ./testing . -r tests/requirements.txt "pyopencl[pocl]" ./backends/opencl >&2; then
  opencl_tests .venv-pocl-wheel "pyopencl's wheel PoCL (.venv-pocl-wheel; the compiling cases skip)" OCL_ICD_VENDORS="$novendors"
else
  say "SKIPPED tests/opencl on pyopencl's wheel PoCL: .venv-pocl-wheel could not be prepared (above)"
fi
