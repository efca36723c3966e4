"""A host kernel that faults fails like a GPU kernel (issue 29): its launch's error names the kernel
and the address (and, in the checking mode, the allocation it read past), the device is faulted
(every later call on it fails with BACKEND_FAILURE, as a CUDA context after an illegal address)
until olShutDown, and a fresh olInit gives a fresh device that runs kernels again. Each fault
kind: a wild store, a division by zero, a read past an array, a stack overflow, a trap, a
cooperative group (tests/host/kernel_fault_cases.py runs them in children, on both paths)."""

from __future__ import annotations

import pytest

from helpers import ERROR_OF, HOST_CHILD_PRELUDE
from kernel_fault_cases import KERNELS, PATHS, assert_faulted, fault_case, run_child


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_storing_through_a_wild_pointer_fails_its_launch(compiled: str, queued: bool) -> None:
    """64 groups store through address 0x10 + 8 * id on the pool's workers and the caller."""
    result = fault_case("wild", compiled, queued)
    assert_faulted(result, queued, "wild", "SIGSEGV (address not mapped)", "address 0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_dividing_by_zero_fails_its_launch(compiled: str, queued: bool) -> None:
    result = fault_case("divide", compiled, queued)
    assert_faulted(result, queued, "divide", "SIGFPE (integer divide by zero)", "(divide+0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_reading_past_a_too_small_array_is_reported_with_the_allocation(compiled: str, queued: bool) -> None:
    """OFFLOAD_HOST_CHECK=1: a 10-float allocation ends at a guard page, so the kernel's read of
    x[10] faults at once and the error names the allocation, its size and the offset, as
    compute-sanitizer does for a GPU kernel."""
    result = fault_case("sum", compiled, queued, check=True, small=10, n=64)
    message = assert_faulted(result, queued, "sum", "SIGSEGV", "reading address 0x")
    assert "0 bytes past the end of the 40-byte allocation at 0x" in message and "(offset 40)" in message, message


@pytest.mark.parametrize("compiled", PATHS)
def test_without_the_checking_mode_a_read_far_past_a_small_array_still_fails_its_launch(compiled: str) -> None:
    """Without guard pages an allocation is whole pages of its own: a read that leaves them by far
    (a 16-float allocation, n = 2**28: 1 GiB read) reaches unmapped memory and is reported (the
    checking mode is what catches the first byte past the end)."""
    result = fault_case("sum", compiled, False, small=16, n=1 << 28)
    message = assert_faulted(result, False, "sum", "reading address 0x")
    # unmapped memory (SIGSEGV), or a file mapped beyond its end, such as a program image (SIGBUS)
    assert "faulted: SIGSEGV" in message or "faulted: SIGBUS" in message, message
    assert "allocation" not in message  # no checked allocation to name


@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_overflowing_its_stack_fails_its_launch(compiled: str) -> None:
    """Unbounded recursion on the launching thread: the handler runs on an alternate stack."""
    result = fault_case("recurse", compiled, False)
    assert_faulted(result, False, "recurse", "SIGSEGV")


@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_trapping_fails_its_launch(compiled: str) -> None:
    """OFFLOAD_GRID_BARRIER outside a cooperative launch is __builtin_trap(): SIGILL."""
    result = fault_case("trap", compiled, False)
    assert_faulted(result, False, "trap", "SIGILL (illegal instruction (a trap?)) at instruction 0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_cooperative_group_faulting_fails_its_launch_and_releases_the_barrier(compiled: str, queued: bool) -> None:
    """A cooperative launch's groups run on threads of their own, each under the fault guard: one
    group's fault breaks the grid barrier the others wait at, and the launch fails with it."""
    result = fault_case("cooperative", compiled, queued)
    assert_faulted(result, queued, "trap", "SIGSEGV (address not mapped)", "writing address 0x8")


def test_the_checking_mode_still_runs_correct_kernels_on_exact_allocations() -> None:
    """Allocations right-aligned against a guard page hold their data: a kernel that stays inside
    a 10-float allocation, and copies in and out of it, see exactly its bytes."""
    code = HOST_CHILD_PRELUDE + ERROR_OF + f"SOURCE = {KERNELS!r}\n" + r"""
import ctypes, struct, offload_host
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="faults"))
sum_k = ol.olGetSymbol(program, "sum", ol.SymbolKind.KERNEL)
x = ol.olMemAlloc(host, ol.AllocType.DEVICE, 40)
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4)
assert (x + 40) % 4096 == 0, hex(x)  # right-aligned: its end is the guard page
values = (ctypes.c_float * 10)(*range(1, 11))
ol.olMemcpy(None, x, host, ctypes.addressof(values), host, 40)
ctypes.memset(out, 0, 4)
ol.olLaunchKernel(None, host, sum_k, struct.pack("QQQ", x, out, 10), ol.KernelLaunchSizeArgs(1, (2, 1, 1), (8, 1, 1)))
print(ctypes.c_int32.from_address(out).value)
ol.olMemFree(x)
ol.olShutDown()
"""
    proc = run_child(code, {"OFFLOAD_HOST_CHECK": "1"}, "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["55"]
