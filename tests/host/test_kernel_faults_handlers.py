"""Host kernel faults and the process's other signal handlers: faults outside kernel code still
reach the handlers that were there before (Python's faulthandler, enabled before or after olInit,
the default action), and a SIGSEGV sent by another process is not taken for a kernel's."""

from __future__ import annotations

import signal

from helpers import ERROR_OF, HOST_CHILD_PRELUDE, WILD_KERNEL
from kernel_fault_cases import run_child


FAULTHANDLER = r"""
import faulthandler
if ENABLE_FIRST:
    faulthandler.enable()
""" + HOST_CHILD_PRELUDE + ERROR_OF + f"SOURCE = {WILD_KERNEL!r}\n" + r"""
import ctypes, struct, sys, offload_host
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="wild"))
wild = ol.olGetSymbol(program, "wild", ol.SymbolKind.KERNEL)
if not ENABLE_FIRST:
    faulthandler.enable()
error = error_of(ol.olLaunchKernel, None, host, wild, struct.pack("Q", 0x10), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))
print("kernel fault:", error[0] if error else None, flush=True)

def python_code_faulting():
    ctypes.string_at(0x10)  # a fault of Python's own thread, outside any kernel

python_code_faulting()
print("survived", flush=True)
"""


def test_faults_outside_kernels_still_reach_pythons_faulthandler() -> None:
    """faulthandler enabled before olInit (as pytest, -X faulthandler and PYTHONFAULTHANDLER do): a
    kernel's fault is its launch's error and faulthandler says nothing; a fault of Python's own
    code then goes to faulthandler (its traceback) and the process dies of SIGSEGV as before."""
    proc = run_child("ENABLE_FIRST = True\n" + FAULTHANDLER, {}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "kernel fault: BACKEND_FAILURE" in proc.stdout, proc.stdout
    assert "survived" not in proc.stdout
    assert proc.stderr.count("Fatal Python error: Segmentation fault") == 1, proc.stderr[-3000:]
    assert "in python_code_faulting" in proc.stderr, proc.stderr[-3000:]


def test_faulthandler_enabled_after_olInit_sees_a_kernel_fault_first_and_the_process_lives() -> None:
    """faulthandler enabled after olInit sits above our handler: it reports a kernel's fault
    first (and, as it does, hands the signal back to the handler below it, ours, by re-raising
    it), the launch still fails with BACKEND_FAILURE and the process goes on; the Python fault
    after it gets the default action (faulthandler uninstalled itself when it reported)."""
    proc = run_child("ENABLE_FIRST = False\n" + FAULTHANDLER, {}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "kernel fault: BACKEND_FAILURE" in proc.stdout, proc.stdout
    assert "survived" not in proc.stdout
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr[-3000:]


def test_a_fault_sent_by_another_process_is_not_taken_for_a_kernels() -> None:
    """kill -SEGV while a kernel runs on every thread: not the kernel's fault (its si_code says it
    was sent), so the default action ends the process as it would have."""
    code = HOST_CHILD_PRELUDE + r"""
import os, signal, struct, threading, time, offload_host
SOURCE = '''#include <offload_host.h>
#include <stdint.h>
#include <time.h>
struct a { uint64_t ns; };
OFFLOAD_KERNEL_PARAMS(spin, struct a, OFFLOAD_UINT(ns));
OFFLOAD_KERNEL(spin) {
  struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
  do { clock_gettime(CLOCK_MONOTONIC, &t); } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < OFFLOAD_ARGS(struct a)->ns);
}
'''
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="spin"))
spin = ol.olGetSymbol(program, "spin", ol.SymbolKind.KERNEL)
queue = ol.olCreateQueue(host)
ol.olLaunchKernel(queue, host, spin, struct.pack("Q", 3_000_000_000), ol.KernelLaunchSizeArgs(1, (64, 1, 1), (1, 1, 1)))
time.sleep(0.3)
print("sending", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
ol.olSyncQueue(queue)
print("survived", flush=True)
"""
    # the host backend alone: a driver that brings LLVM (PoCL) installs LLVM's own SIGSEGV handler
    # above ours, and LLVM's returns from a signal that was sent, so the process would survive it
    proc = run_child(code, {"OFFLOAD_BACKENDS": "host"}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "sending" in proc.stdout and "survived" not in proc.stdout
