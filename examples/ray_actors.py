"""A saxpy spread over Ray actors: one actor (its own process) per device, offload inside each.

The driver starts a small local Ray (``ray.init(num_cpus=2)``), makes one actor per device of the
preferred platform, and each actor takes ``offload.default_device()``: on a GPU platform the actor
asks Ray for a GPU (``num_gpus=1``) and offload takes the one Ray assigned (Ray restricts
``CUDA_VISIBLE_DEVICES`` to it); on the host platform each actor gets ``LOCAL_RANK`` = its index
(as Ray Train sets it) and runs on the host device of its own process, two actors by default.
Each actor computes its share of ``y = a*x + 1`` and returns it; the driver checks every element
and the sum against the closed form and prints one JSON line.

Traced (``OFFLOAD_TRACE=perfetto:t-{pid}.json``), each actor writes its own timeline file with
``offload.flush_trace()`` before it returns its results: Ray ends its workers without running exit
handlers, so a file left to interpreter exit would never be written. ``offload trace merge
t-*.json -o job.json`` then joins the driver's and the actors' files into one job timeline.

    python examples/ray_actors.py [--actors N] [--n FLOATS_PER_ACTOR] [--image SAXPY_IMAGE]
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np
import ray

import offload

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"  # as in examples/kernels/saxpy.cu
A = np.float32(2.5)
BLOCK = 256


class SaxpyWorker:
    """One process, one device: the device offload picks for this actor."""

    def __init__(self, image: bytes | None) -> None:
        self.device = offload.default_device()
        if image is None:
            if not self.device.is_host:
                raise RuntimeError(f"{self.device.id}: give --image a saxpy image built for it from examples/kernels/")
            import offload_host

            image = offload_host.build_test_kernel("saxpy")
        self.program = self.device.load_program(image)
        self.saxpy = self.program.kernel("saxpy", SAXPY_SIGNATURE)

    def run(self, start: int, n: int) -> dict[str, Any]:
        x = offload.to_device(np.arange(start, start + n, dtype=np.float32), self.device)
        y = offload.to_device(np.ones(n, dtype=np.float32), self.device)
        with self.device.queue() as queue:
            queue.launch(self.saxpy, (n + BLOCK - 1) // BLOCK, BLOCK, A, x, y, n)
        result = {"device": self.device.id, "pid": os.getpid(), "y": y.to_numpy()}
        offload.flush_trace()  # Ray ends this process without exit handlers: write the timeline now
        return result


RemoteSaxpyWorker: Any = ray.remote(SaxpyWorker)  # an actor class (Any: Ray's typing of .options varies by version)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, help="default: one per device of the preferred platform (2 on the host)")
    parser.add_argument("--n", type=int, default=1 << 16, help="floats per actor (default 2**16)")
    parser.add_argument("--image", help="a saxpy program image for a GPU device")
    args = parser.parse_args()

    preferred = offload.default_device().platform
    gpu = not preferred.devices[0].is_host
    count = args.actors or (len(preferred.devices) if gpu else 2)
    image = open(args.image, "rb").read() if args.image else None

    ray.init(num_cpus=2, num_gpus=len(preferred.devices) if gpu else 0, include_dashboard=False, configure_logging=False)
    try:
        if gpu:
            workers = [RemoteSaxpyWorker.options(num_gpus=1, num_cpus=0).remote(image) for _ in range(count)]
        else:
            workers = [
                RemoteSaxpyWorker.options(num_cpus=0, runtime_env={"env_vars": {"LOCAL_RANK": str(i), "LOCAL_WORLD_SIZE": str(count)}}).remote(image)
                for i in range(count)
            ]
        results = ray.get([w.run.remote(i * args.n, args.n) for i, w in enumerate(workers)], timeout=600)
    finally:
        ray.shutdown()

    total = count * args.n
    y = np.concatenate([r["y"] for r in results])
    expected = A * np.arange(total, dtype=np.float32) + np.float32(1)
    if not np.array_equal(y, expected):
        bad = int(np.flatnonzero(y != expected)[0])
        raise SystemExit(f"y[{bad}] = {y[bad]}, expected {expected[bad]}")
    summed = float(sum(r["y"].astype(np.float64).sum() for r in results))
    if summed != float(A) * total * (total - 1) / 2 + total:
        raise SystemExit(f"sum {summed}, expected {float(A) * total * (total - 1) / 2 + total}")
    print(json.dumps({"actors": count, "floats": total, "sum": summed, "devices": [r["device"] for r in results], "pids": [r["pid"] for r in results], "driver_pid": os.getpid()}))


if __name__ == "__main__":
    main()
