"""Element types a backend reports (``KernelParam.element`` / ``const``: the host header's
``OFFLOAD_POINTER_TO`` / ``OFFLOAD_CONST_POINTER_TO``, AMDGPU metadata's ``.type_name``) are
checked as a declared signature's are, without the caller declaring anything: an Array of
another dtype is refused, read-only memory goes only to a pointer to const, and a declared
signature that contradicts the backend is refused. Each refusal is an OffloadError naming the
kernel and the parameter, and nothing runs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import offload
import offload_host
from offload import ErrorCode, OffloadError
from offload_host._backend import HostBackend

TYPED = r"""
#include <offload_host.h>
struct typed_args { const double *src; int32_t *dst; uint64_t n; };
OFFLOAD_KERNEL_PARAMS(typed, struct typed_args,
                      OFFLOAD_CONST_POINTER_TO(src, float64),
                      OFFLOAD_POINTER_TO(dst, int32),
                      OFFLOAD_UINT(n));
OFFLOAD_KERNEL(typed) {
  const struct typed_args *a = OFFLOAD_ARGS(struct typed_args);
  for (uint64_t i = 0; i < a->n; ++i) a->dst[i] = (int32_t)(a->src[i] * 2);
}
"""


@pytest.fixture
def typed(host: offload.objects.Device) -> Iterator[offload.Kernel]:
    with host.load_program(offload_host.build_program(TYPED, name="typed")) as program:
        yield program.kernel("typed")


def test_the_backend_reports_element_types() -> None:
    program = offload_host.build_program(TYPED, name="typed")
    backend = HostBackend()  # the hook itself, as the core calls it
    device = backend.init()[0]
    try:
        image = backend.load_binary(device, program)
        reported = backend.kernel_params(device, backend.get_kernel(device, image, "typed"))
        assert [(p.name, p.element, p.const) for p in reported] == [
            ("src", "float64", True), ("dst", "int32", False), ("n", None, False)
        ]
        backend.unload_binary(device, image)
    finally:
        backend.deinit_device(device)


def test_matching_arrays_launch(host: offload.objects.Device, typed: offload.Kernel) -> None:
    src = offload.to_device(np.arange(8, dtype=np.float64), host)
    dst = offload.to_device(np.zeros(8, np.int32), host)
    typed.launch(1, 1, src, dst, 8)
    np.testing.assert_array_equal(dst.to_numpy(), 2 * np.arange(8))


@pytest.mark.parametrize(("which", "dtype"), [("src", np.float32), ("src", np.int64), ("dst", np.uint32), ("dst", np.float32)])
def test_an_array_of_another_dtype_is_refused(host: offload.objects.Device, typed: offload.Kernel, which: str, dtype: type) -> None:
    src = offload.to_device(np.arange(8, dtype=dtype if which == "src" else np.float64), host)
    dst = offload.to_device(np.zeros(8, dtype if which == "dst" else np.int32), host)
    with pytest.raises(OffloadError) as info:
        typed.launch(1, 1, src, dst, 8)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert f"kernel 'typed' parameter '{which}'" in info.value.details
    assert np.dtype(dtype).name in info.value.details
    np.testing.assert_array_equal(dst.to_numpy(), 0)  # nothing ran


def test_read_only_memory_only_through_the_const_pointer(host: offload.objects.Device, typed: offload.Kernel) -> None:
    frozen = np.frombuffer(np.arange(8, dtype=np.float64).tobytes(), np.float64)
    src = offload.from_dlpack(frozen)
    assert src.buffer.readonly
    dst = offload.to_device(np.zeros(8, np.int32), host)
    typed.launch(1, 1, src, dst, 8)
    np.testing.assert_array_equal(dst.to_numpy(), 2 * np.arange(8))
    frozen_out = offload.from_dlpack(np.frombuffer(np.zeros(8, np.int32).tobytes(), np.int32))
    with pytest.raises(OffloadError, match=r"kernel 'typed' parameter 'dst'.*read-only"):
        typed.launch(1, 1, src, frozen_out, 8)


def test_a_declared_signature_contradicting_the_backend_is_refused(host: offload.objects.Device) -> None:
    with host.load_program(offload_host.build_program(TYPED, name="typed")) as program:
        with pytest.raises(OffloadError) as info:
            program.kernel("typed", "const float *src, int32_t *dst, uint64_t n")
        assert info.value.code is ErrorCode.INVALID_ARGUMENT
        details = info.value.details
        assert "parameter 'src'" in details and "float32" in details and "float64" in details
        program.kernel("typed", "const double *src, int *dst, uint64_t n")  # agreeing: accepted


def test_an_unknown_element_code_is_invalid_binary(host: offload.objects.Device) -> None:
    source = TYPED.replace("OFFLOAD_POINTER_TO(dst, int32)", "(POINTER_, dst, 77)")
    with pytest.raises(OffloadError) as info, host.load_program(offload_host.build_program(source, name="badtyped")) as program:
        program.kernel("typed")
    assert info.value.code is ErrorCode.INVALID_BINARY
    assert "parameter 'dst'" in info.value.details and "element type code 0x4d" in info.value.details
