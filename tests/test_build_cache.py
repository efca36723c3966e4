"""offload.build's disk cache on the host backend (issue 32, part 4; the CUDA case counts NVRTC
calls: tests/cuda/test_cuda_build_cache.py): a second process finds the image without calling the
compiler, and the key holds the options."""

from __future__ import annotations

import json
import pathlib
from typing import Any

CHILD = r"""
import json, sys
import offload as ol
import offload_host._backend as hb
calls = []
real = hb.build_program
hb.build_program = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
origins = []
ol.add_build_listener(lambda built: origins.append(built.origin))
host = ol.devices("host")[0]
source = "#include <offload_kernel.h>\nOFFLOAD_PORTABLE_KERNEL(put, (uint32_t *, out)) { out[0] = %(value)d; }\n"
image = ol.build(source, host, %(options)r)
program = host.load_program(image)
out = ol.objects.Buffer(4, host)
with host.queue() as q:
    q.launch(program.kernel("put", "uint32_t *out"), 1, 1, out)
print(json.dumps({"calls": len(calls), "origins": origins, "value": int.from_bytes(out.to_bytes(), "little")}))
"""


def _child(run_python: Any, cache: pathlib.Path, value: int, options: tuple[str, ...] = ()) -> Any:
    code = CHILD % {"value": value, "options": list(options)}
    proc = run_python(code, env={"OFFLOAD_BUILD_CACHE": str(cache)})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_finds_the_host_build(run_python: Any, tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "builds"
    value = hash(str(tmp_path)) & 0xFFFF  # a source nothing else cached
    first = _child(run_python, cache, value)
    assert first == {"calls": 1, "origins": ["compiled"], "value": value}
    second = _child(run_python, cache, value)
    assert second == {"calls": 0, "origins": ["disk"], "value": value}
    other = _child(run_python, cache, value, ("-DUNUSED",))
    assert other["calls"] == 1 and len(list(cache.glob("*.img"))) == 2
