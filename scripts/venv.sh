#!/usr/bin/env bash
# Usage: scripts/venv.sh DIR PIP-ARGS...  Creates (or reuses) a virtual environment in DIR and
# installs PIP-ARGS into it. Prints nothing but errors. Needs only python3 (>= 3.11) and pip.
set -euo pipefail
dir=$1; shift
python=${PYTHON:-python3}
if [ ! -x "$dir/bin/python" ]; then
  "$python" -m venv "$dir"
fi
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location "$@" 2>&1 \
  | grep -v -E '^(WARNING: Location|  Location|Looking in|DEPRECATION)' >&2 || true
"$dir/bin/python" -c 'import offload' >/dev/null
