#!/usr/bin/env bash
# Usage: scripts/venv.sh DIR PIP-ARGS...  Creates (or reuses) a virtual environment in DIR and
# installs PIP-ARGS into it, saying what it does on stderr. The install is skipped when nothing it
# depends on changed since the last install with the same PIP-ARGS: DIR/.offload-stamp-<args>
# holds a hash of the arguments, the Python version and every source file of core/, backends/, testing/,
# the root packaging files and tests/requirements.txt (as git lists them). Needs only python3
# (>= 3.11) and pip.
set -euo pipefail
dir=$1; shift
python=${PYTHON:-python3}
say() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }

stamp=$("$python" - "$@" <<'PY'
import hashlib, pathlib, subprocess, sys
digest = hashlib.sha256("\0".join(sys.argv[1:]).encode() + sys.version.encode())
roots = ["core", "backends", "testing", "pyproject.toml", "setup.py", "_offload_setup.py", "VERSION", "MANIFEST.in", "tests/requirements.txt"]
try:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *roots],
                            capture_output=True, check=True).stdout.decode().split("\0")
except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file under the roots
    listed = [str(p) for r in roots for p in ([pathlib.Path(r)] if pathlib.Path(r).is_file() else pathlib.Path(r).rglob("*"))]
for name in sorted(filter(None, listed)):
    path = pathlib.Path(name)
    if path.is_file():
        digest.update(name.encode() + b"\0" + path.read_bytes())
print(digest.hexdigest())
PY
)
stampfile="$dir/.offload-stamp-$(printf '%s\0' "$@" | cksum | cut -d' ' -f1)"
if [ -x "$dir/bin/python" ] && [ "$(cat "$stampfile" 2>/dev/null)" = "$stamp" ]; then
  say "$dir is up to date (nothing changed since its last install): skipping pip"
  exit 0
fi
if [ ! -x "$dir/bin/python" ]; then
  say "creating the virtual environment $dir"
  "$python" -m venv "$dir"
fi
note=""
for arg in "$@"; do
  case $arg in .|./*) note=" (builds our distributions from this checkout; about 10-20 s with the host backend's C extension)";; esac
done
say "installing into $dir: $*$note"
rm -f "$stampfile"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location "$@" 2>&1 \
  | grep -v -E '^(WARNING: Location|  Location|Looking in|DEPRECATION)' >&2 || true
"$dir/bin/python" -c 'import offload' >/dev/null
printf '%s\n' "$stamp" >"$stampfile"
say "$dir is ready"
