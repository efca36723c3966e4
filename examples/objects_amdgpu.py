"""The object layer on the amdgpu platform (see objects_gpu.py): `python examples/objects_amdgpu.py [IMAGE]`."""

from __future__ import annotations

import sys

from objects_gpu import run

if __name__ == "__main__":
    sys.exit(run("amdgpu", sys.argv[1] if len(sys.argv) > 1 else None))
