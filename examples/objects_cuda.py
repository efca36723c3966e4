"""The object layer on the cuda platform (see objects_gpu.py): `python examples/objects_cuda.py [IMAGE]`."""

from __future__ import annotations

import sys

from objects_gpu import run

if __name__ == "__main__":
    sys.exit(run("cuda", sys.argv[1] if len(sys.argv) > 1 else None))
