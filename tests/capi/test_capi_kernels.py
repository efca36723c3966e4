"""Programs, symbols and kernel launches through the C ABI on the host device
(programs/kernels.c): saxpy from a packed argument struct, a global variable read back, the
symbols' info and the errors of wrong kinds, missing symbols and destroyed programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Capi, run


def test_kernels_on_the_host_device(capi: Capi, build_program, tmp_path: Path) -> None:
    offload_host = pytest.importorskip("offload_host")
    images = []
    for name in ("saxpy", "global"):
        image = tmp_path / f"{name}.bin"
        image.write_bytes(offload_host.build_test_kernel(name))
        images.append(str(image))
    program = build_program("kernels.c")
    proc = run([str(program), *images], capi.env(OFFLOAD_BACKENDS="host"))
    assert proc.returncode == 0 and "OK kernels" in proc.stdout, proc.stdout + proc.stderr[-3000:]
