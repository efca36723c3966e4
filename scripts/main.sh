#!/usr/bin/env bash
# The main job: install offload (core + host backend) into .venv and run a real offload job on
# every device (allocate, copy in, launch a saxpy kernel, copy out, verify, time). Extra
# arguments go to `offload selfcheck` (e.g. --size 4194304, --json). The install is skipped
# when no source changed since the last run (scripts/venv.sh keeps a stamp). Every installed backend
# takes part: with offload-opencl in .venv (scripts/test.sh installs it with PoCL) the job runs on
# the OpenCL devices too, with the saxpy its conformance capabilities provide.
# OFFLOAD_TRACE=perfetto:FILE writes the job's timeline (`.venv/bin/offload trace FILE` sums it up);
# a relative FILE (and the bare `perfetto` default file) lands in the directory main.sh was run
# from: only the install runs inside the checkout, the job runs where the user is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "main.sh: [1/2] preparing .venv (offload-core + offload-host from this checkout)" >&2
(cd "$root" && scripts/venv.sh .venv ./core ./backends/host .)
echo "main.sh: [2/2] offload selfcheck $*: saxpy on every device" >&2
exec "$root/.venv/bin/offload" selfcheck "$@"
