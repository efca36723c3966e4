"""offload.build's images cached across processes (issue 32, part 4): a second process building
the same CUDA source finds it in the disk cache, and NVRTC is not called again (the backend's
build_source calls are counted); other options build anew; the cached image loads and runs.
A folder another user could write is not used (the host backend's rule, now shared:
tests/host/test_cache_trust.py)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

_BUILD = r"""
import json, os, pathlib, sys, warnings
import numpy as np
sys.path.insert(0, %(simulators)r)
import offload, build_listener
import offload_cuda._build as cuda_build
registry = pathlib.Path(os.environ["GPUSIM_KERNELS"])
build_listener.install(registry, registry.parent / "work")
calls = []
compile_for_real = cuda_build.build_source
def counting(*args):
    calls.append(1)
    return compile_for_real(*args)
cuda_build.build_source = counting
origins = []
offload.add_build_listener(lambda built: origins.append(built.origin))
(gpu,) = offload.devices("cuda")
source = open(%(source)r).read() + "\n/* %(tag)s */\n"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    image = offload.build(source, gpu, %(options)r)
    again = offload.build(source, gpu, %(options)r)
n = 256
x = offload.to_device(np.arange(n, dtype=np.float32), gpu)
y = offload.to_device(np.ones(n, dtype=np.float32), gpu)
with gpu.load_program(image) as program:
    kernel = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
    with gpu.queue() as q:
        q.launch(kernel, 1, n, 2.0, x, y, n)
print(json.dumps({"compiler_calls": len(calls), "origins": origins, "same": image == again,
                  "ok": bool((y.to_numpy() == 2 * np.arange(n) + 1).all()),
                  "warnings": [str(w.message) for w in caught]}))
"""


def _build(run_child: Any, env: dict[str, str], tag: str, options: tuple[str, ...] = ()) -> Any:
    code = _BUILD % {
        "simulators": str(ROOT / "tests" / "simulators"),
        "source": str(ROOT / "examples" / "kernels" / "saxpy_portable.c"),
        "tag": tag,
        "options": list(options),
    }
    return run_child(code, env).result


def test_a_second_process_finds_the_cuda_build_in_the_cache(
    run_child: Any, child_env: Any, simulator: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if simulator is None:
        pytest.skip("counts NVRTC calls on the simulated driver")
    cache = tmp_path / "builds"
    env = child_env(OFFLOAD_BUILD_CACHE=str(cache), GPUSIM_KERNELS=str(tmp_path / "registry"))
    tag = request.node.name + str(tmp_path)  # a source nothing else cached
    first = _build(run_child, env, tag)
    assert first["compiler_calls"] == 1 and first["origins"] == ["compiled", "memory"]
    assert first["ok"] and first["same"] and first["warnings"] == []
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    (entry,) = cache.glob("*.img")
    assert stat.S_IMODE(entry.stat().st_mode) & 0o077 == 0
    second = _build(run_child, env, tag)  # a new process: NVRTC is not called
    assert second["compiler_calls"] == 0 and second["origins"] == ["disk", "memory"] and second["ok"]
    third = _build(run_child, env, tag, ("-DUNUSED=1",))  # other options: another entry
    assert third["compiler_calls"] == 1 and third["origins"][0] == "compiled" and len(list(cache.glob("*.img"))) == 2
    cache.chmod(0o777)  # a folder others could write is not trusted: built again, with one warning
    fourth = _build(run_child, env, tag)
    cache.chmod(0o700)
    assert fourth["compiler_calls"] == 1 and fourth["ok"]
    assert len(fourth["warnings"]) == 1 and "writable by group or others" in fourth["warnings"][0]
    off = _build(run_child, {**env, "OFFLOAD_BUILD_CACHE": "off"}, tag)
    assert off["compiler_calls"] == 1 and off["origins"][0] == "compiled"
