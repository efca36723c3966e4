"""Host program images, declared kernel parameters (every shipped kernel, the C layout, malformed
declarations, C++) and launch limits (global ids fit 32 bits)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

import offload as ol
import offload_host
from offload_host import HostBackend

from image_support import code_of


# --- declared kernel parameters -----------------------------------------------------------------

P, I, U, F = "pointer", "int", "uint", "float"
_DECLARED = {
    ("foo", "foo"): [(0, 8, P, "out")],
    ("bar", "foo"): [(0, 8, P, "out")],
    ("byte", "byte"): [(0, 1, U, "c")],
    ("global", "write"): [],
    ("global", "read"): [(0, 8, P, "out")],
    ("global_ctor", "global_ctor"): [(0, 8, P, "out")],
    ("global_dtor", "global_dtor"): [],
    ("localmem", "localmem"): [(0, 8, P, "out")],
    ("localmem_reduction", "localmem_reduction"): [(0, 8, P, "out")],
    ("localmem_static", "localmem_static"): [(0, 8, P, "out")],
    ("multiargs", "multiargs"): [(0, 1, I, "A"), (8, 8, P, "B"), (16, 2, I, "C")],
    ("noargs", "noargs"): [],
    ("saxpy", "saxpy"): [(0, 4, F, "a"), (8, 8, P, "x", "float32", True), (16, 8, P, "y", "float32"), (24, 8, U, "n")],
    ("sequence", "sequence"): [(0, 4, U, "idx"), (8, 8, P, "inout")],
    ("single_counter", "single_counter"): [(0, 4, I, "init_loop"), (4, 4, I, "addend"), (8, 8, P, "init_val"), (16, 8, P, "out")],
}


class _Backend:
    """The host backend's hooks called directly, as the core calls them."""

    def __init__(self) -> None:
        self.backend = HostBackend()
        self.device = self.backend.init()[0]
        self.images: list[object] = []

    def kernel(self, data: bytes, name: str) -> int:
        image = self.backend.load_binary(self.device, data)
        self.images.append(image)
        return self.backend.get_kernel(self.device, image, name)

    def close(self) -> None:
        for image in self.images:
            self.backend.unload_binary(self.device, image)
        self.backend.deinit_device(self.device)


@pytest.fixture
def backend():
    b = _Backend()
    yield b
    b.close()


def test_every_shipped_kernel_declares_its_parameters(backend: _Backend) -> None:
    assert {program for program, _ in _DECLARED} == set(offload_host.TEST_KERNELS)
    for (program, kernel), expected in _DECLARED.items():
        params = backend.backend.kernel_params(backend.device, backend.kernel(offload_host.build_test_kernel(program), kernel))
        assert params is not None, f"{program}:{kernel} is undeclared"
        assert [tuple(p) for p in params] == [tuple(ol.KernelParam(*e)) for e in expected], f"{program}:{kernel}"
        assert all(isinstance(p, ol.KernelParam) for p in params)


def test_declared_layout_matches_the_c_struct(backend: _Backend) -> None:
    source = r"""
#include <offload_host.h>
struct mixed { int8_t a; double b; uint16_t c; float d[3]; void *e; int64_t f; };
OFFLOAD_KERNEL_PARAMS(mixed, struct mixed,
                      OFFLOAD_INT(a),
                      OFFLOAD_FLOAT(b),
                      OFFLOAD_UINT(c),
                      OFFLOAD_BYTES(d),
                      OFFLOAD_POINTER(e),
                      OFFLOAD_INT(f));
OFFLOAD_KERNEL(mixed) { (void)OFFLOAD_ARGS(struct mixed); (void)offload_group_; }
OFFLOAD_KERNEL(undeclared) { (void)offload_args_; (void)offload_group_; }
"""
    data = offload_host.build_program(source, name="mixed")

    class Mixed(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int8), ("b", ctypes.c_double), ("c", ctypes.c_uint16), ("d", ctypes.c_float * 3), ("e", ctypes.c_void_p), ("f", ctypes.c_int64)]

    expected = [
        (getattr(Mixed, name).offset, getattr(Mixed, name).size, kind, name)
        for name, kind in zip("abcdef", (I, F, U, "bytes", P, I))
    ]
    assert [tuple(p) for p in backend.backend.kernel_params(backend.device, backend.kernel(data, "mixed"))] == [
        tuple(ol.KernelParam(*e)) for e in expected  # no element types declared: None, not const
    ]
    # undeclared: launchable, unchecked (the documented rule)
    assert backend.backend.kernel_params(backend.device, backend.kernel(data, "undeclared")) is None


def test_malformed_declaration_is_invalid_binary(backend: _Backend) -> None:
    source = r"""
#include <offload_host.h>
OFFLOAD_EXPORT const offload_kernel_params_t offload_params_k = {0x12345678u, 1, 8, 1, {{0, 8, 1, 0, "x"}}};
OFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; }
OFFLOAD_EXPORT const offload_kernel_params_t offload_params_k2 = {OFFLOAD_PARAMS_MAGIC, 1, 4, 1, {{0, 8, 1, 0, "x"}}};
OFFLOAD_KERNEL(k2) { (void)offload_args_; (void)offload_group_; }
"""
    data = offload_host.build_program(source, name="malformed")
    for kernel, why in (("k", "magic"), ("k2", "does not fit")):
        with pytest.raises(ol.OffloadError) as info:
            backend.kernel(data, kernel)
        assert code_of(info) is ol.ErrorCode.INVALID_BINARY
        assert why in str(info.value)


def test_header_compiles_as_cpp(tmp_path) -> None:
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    source = tmp_path / "k.cpp"
    source.write_text(
        "#include <offload_host.h>\n"
        "struct args { float *x; int n; };\n"
        "OFFLOAD_KERNEL_PARAMS(k, struct args, OFFLOAD_POINTER(x), OFFLOAD_INT(n));\n"
        "OFFLOAD_KERNEL_NO_PARAMS(none);\n"
        "OFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; }\n"
    )
    out = tmp_path / "k.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-Wall", "-Werror", f"-I{offload_host.include_dir()}", "-o", str(out), str(source)], check=True)
    assert b"offload_params_k" in out.read_bytes()


# --- launch limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_global_ids_must_fit_32_bits(host: ol.DeviceHandle, axis: int) -> None:
    program = ol.olCreateProgram(host, offload_host.build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    groups, items = [1, 1, 1], [1, 1, 1]
    groups[axis], items[axis] = 2**31 + 1, 2
    launch = ol.KernelLaunchSizeArgs(3, tuple(groups), tuple(items))
    with pytest.raises(ol.OffloadError) as info:  # the core refuses first: MAX_WORK_SIZE_PER_DIMENSION
        ol.olLaunchKernel(None, host, kernel, None, launch)
    assert code_of(info) is ol.ErrorCode.INVALID_SIZE
    assert f"NumGroups.{'xyz'[axis]}" in str(info.value)
    with pytest.raises(ol.OffloadError) as info:  # and the backend on its own, for its uint32 ids
        offload_host.HostBackend().launch_kernel(host.native, None, kernel.native, None, launch)
    assert code_of(info) is ol.ErrorCode.INVALID_SIZE
    assert f"NumGroups.{'xyz'[axis]}" in str(info.value) and "32-bit" in str(info.value)
    ol.olDestroyProgram(program)
