#!/usr/bin/env bash
# The main job: install offload (core + host backend) into .venv and run a real offload job on
# every device (allocate, copy in, launch a saxpy kernel, copy out, verify, time). Extra
# arguments go to `offload selfcheck` (e.g. --size 4194304, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh .venv ./core ./backends/host .
exec .venv/bin/offload selfcheck "$@"
