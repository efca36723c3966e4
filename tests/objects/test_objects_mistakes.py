"""Mistakes a new user makes from the docs, caught before they reach a kernel (issue 29, part 4).

Each mistake that used to kill the process ("Segmentation fault", exit 139) runs in a child
process, once with the compiled path (``OFFLOAD_COMPILED=1``: the C relauncher of
``_launch_memo.c`` hands the call to the Python code) and once without it: the child must survive,
print the refusal, and exit 0. The refusals are ``OffloadError`` with the flat API's code and a
message naming what was wrong."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from helpers import child_environ

PATHS = pytest.mark.parametrize("compiled", ["1", "0"])

# what each child starts with: the host device, x and y of 1024 floats, the saxpy test program
PRELUDE = """
import numpy as np
import offload, offload_host
from offload import ErrorCode, OffloadError
from offload.objects import Kernel, Queue, _compiled_memo

dev = offload.devices("host")[0]
x = offload.to_device(np.arange(1024, dtype=np.float32), dev)
y = offload.to_device(np.ones(1024, dtype=np.float32), dev)

def refused(call, code):
    try:
        call()
    except OffloadError as error:
        assert error.code is code, error
        print("refused:", error.details)
        return error
    raise AssertionError("accepted")
"""


def run_child(body: str, compiled: str) -> str:
    """Run PRELUDE + ``body`` in a fresh interpreter on one path; its stdout (it must exit 0)."""
    env = {**child_environ(), "OFFLOAD_COMPILED": compiled}
    code = PRELUDE + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


# --- (a) a plain integer for a pointer parameter ---------------------------------------------


@PATHS
@pytest.mark.parametrize("declared", ["reported", "signature"])
def test_an_integer_for_a_pointer_parameter_is_refused(compiled: str, declared: str) -> None:
    """The arguments one place off (n where x goes): a wild pointer in the kernel on main."""
    out = run_child(
        f"""
        signature = None if {declared!r} == "reported" else "float a, const float *x, float *y, uint64_t n"
        with dev.load_program(offload_host.build_test_kernel("saxpy")) as program, dev.queue() as queue:
            saxpy = program.kernel("saxpy", signature)
            for _ in range(3):  # remembered: the C relauncher has the launch, and misses on the int below
                queue.launch(saxpy, 4, 256, 2.0, x, y, x.size)
            queue.sync()
            for bad in (1024, np.int64(1024), True):
                error = refused(lambda: queue.launch(saxpy, 4, 256, 2.0, bad, y, x.size), ErrorCode.INVALID_ARGUMENT)
                assert "parameter 'x'" in error.details and "saxpy" in error.details, error
            refused(lambda: saxpy.launch(4, 256, np.float32(2), x, 4096, x.size), ErrorCode.INVALID_ARGUMENT)
            if _compiled_memo.ACTIVE:  # the compiled path ran, and handed the int to the Python code
                assert Queue.launch.counts["fast"] >= 2, Queue.launch.counts
            queue.sync()
        assert (y.to_numpy() == 1 + 3 * 2 * np.arange(1024)).all()  # only the three good launches ran
        print("survived")
        """,
        compiled,
    )
    assert out.count("refused:") == 4 and "survived" in out, out


@PATHS
def test_integer_addresses_of_reachable_memory_still_work(compiled: str) -> None:
    """0 is NULL; an address of an allocation (the flat API's, or inside a Buffer) and, on the
    host, of any mapped memory (numpy's) is a pointer the kernel may use."""
    out = run_child(
        """
        host_x = np.arange(1024, dtype=np.float32)
        flat = offload.olMemAlloc(dev.handle, offload.AllocType.MANAGED, 4096)
        offload.olMemcpy(None, flat, dev.handle, host_x.ctypes.data, dev.handle, 4096)
        with dev.load_program(offload_host.build_test_kernel("saxpy")) as program:
            saxpy = program.kernel("saxpy")
            saxpy.launch(4, 256, np.float32(1), flat, y, 1024)          # the flat API's allocation
            saxpy.launch(4, 256, np.float32(1), x.address, y, 1024)     # inside a Buffer
            saxpy.launch(4, 256, np.float32(1), host_x.ctypes.data, y, 1024)  # host memory numpy owns
            saxpy.launch(4, 256, np.float32(1), x, y, 0)                # n = 0: nothing read
            assert (y.to_numpy() == 1 + 3 * np.arange(1024)).all()
            offload.olMemFree(flat)  # its pages are unmapped: the same int is now a wild pointer
            refused(lambda: saxpy.launch(4, 256, np.float32(1), flat, y, 1024), ErrorCode.INVALID_ARGUMENT)
        print("ok")
        """,
        compiled,
    )
    assert out.count("refused:") == 1 and "ok" in out, out


# --- (c) a plain C function loaded as a host kernel -----------------------------------------

PLAIN = "void fill(int *out, unsigned long n) { for (unsigned long i = 0; i < n; ++i) out[i] = 7; }\n"


@PATHS
def test_a_plain_c_function_is_not_a_kernel(compiled: str) -> None:
    """The library's advice for an undeclared kernel (declare it with signature=) led straight
    into calling ``fill(args, group)``: n was the group's address. The function is refused at
    olGetSymbol, with or without a signature, naming the host kernel forms."""
    out = run_child(
        f"""
        plain = {PLAIN!r}
        marked = plain.replace("void fill(int *out, unsigned long n)", "#include <offload_host.h>\\nOFFLOAD_KERNEL(ok) {{}}\\nvoid fill(int *out, unsigned long n)")
        with dev.load_program(offload_host.build_program(marked)) as program, dev.alloc(64) as buffer:
            for signature in (None, "int *out, unsigned long n"):
                error = refused(lambda: program.kernel("fill", signature).launch(1, 1, buffer, 16), ErrorCode.NOT_FOUND)
                assert "OFFLOAD_KERNEL(fill)" in error.details and "OFFLOAD_PORTABLE_KERNEL(fill" in error.details, error
            refused(lambda: offload.olGetSymbol(program.handle, "fill", offload.SymbolKind.KERNEL), ErrorCode.NOT_FOUND)
            listed = []
            offload.olIterateSymbols(program.handle, offload.SymbolKind.KERNEL,
                                     lambda s, seen: seen.append(offload.olGetSymbolInfo(s, offload.SymbolInfo.NAME)) or True, listed)
            assert listed == ["ok"], listed  # the marked kernel only (not fill, not the mark)
            program.kernel("ok").launch(1, 1)
        print("survived")
        """,
        compiled,
    )
    assert out.count("refused:") == 3 and "survived" in out, out


@PATHS
def test_kernels_written_with_the_header_are_found(compiled: str) -> None:
    """OFFLOAD_KERNEL alone (undeclared, so launched with a signature), OFFLOAD_PORTABLE_KERNEL,
    and the mark of a kernel that is a global variable of nobody's."""
    out = run_child(
        """
        source = (
            "#include <offload_kernel.h>\\n"
            "struct a { int *out; uint64_t n; };\\n"
            "OFFLOAD_KERNEL(undeclared) { const struct a *p = OFFLOAD_ARGS(struct a);\\n"
            "  OFFLOAD_FOR_EACH_ITEM(tid) { if (offload_global_id_x(tid) < p->n) p->out[offload_global_id_x(tid)] = 5; } }\\n"
            "OFFLOAD_PORTABLE_KERNEL(portable, (int *, out), (uint64_t, n)) {\\n"
            "  uint64_t i = offload_global_id(0); if (i < n) out[i] += 1; }\\n"
            "int counter = 3;\\n"
        )
        with dev.build_program(source) as program:
            out = offload.empty(64, "int32", dev)
            program.kernel("undeclared", "int *out, uint64_t n").launch(1, 64, out, 64)
            program.kernel("portable").launch(1, 64, out, 64)
            assert (out.to_numpy() == 6).all()
            names = {kind: [] for kind in (offload.SymbolKind.KERNEL, offload.SymbolKind.GLOBAL_VARIABLE)}
            for kind, seen in names.items():
                offload.olIterateSymbols(program.handle, kind,
                                         lambda s, u: u.append(offload.olGetSymbolInfo(s, offload.SymbolInfo.NAME)) or True, seen)
            assert names == {offload.SymbolKind.KERNEL: ["portable", "undeclared"],
                             offload.SymbolKind.GLOBAL_VARIABLE: ["counter"]}, names
        print("ok")
        """,
        compiled,
    )
    assert "ok" in out, out
