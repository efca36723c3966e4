"""Mistakes a new user makes from the docs, caught before they reach a kernel (issue 29, part 4).

Each mistake that used to kill the process ("Segmentation fault", exit 139) runs in a child
process, once with the compiled path (``OFFLOAD_COMPILED=1``: the C relauncher of
``_replay.c`` hands the call to the Python code) and once without it: the child must survive,
print the refusal, and exit 0. The refusals are ``OffloadError`` with the flat API's code and a
message naming what was wrong."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import offload
import offload_host
from offload import ErrorCode, OffloadError

from helpers import child_environ

PATHS = pytest.mark.parametrize("compiled", ["1", "0"])

# what each child starts with: the host device, x and y of 1024 floats, the saxpy test program
PRELUDE = """
import numpy as np
import offload, offload_host
from offload import ErrorCode, OffloadError
from offload.objects import Kernel, Queue, _records

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
            if _records.ACTIVE:  # the compiled path ran, and handed the int to the Python code
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


# --- copies between dtypes: numpy's casting rules --------------------------------------------


def test_copies_between_dtypes_follow_numpys_casting_rules(host: offload.objects.Device) -> None:
    """NaN into int32 was INT_MIN without a word (numpy.asarray's unsafe cast): now same_kind
    by default, as numpy.copyto, and casting= goes further."""
    ints = offload.empty(3, "int32", host)
    ints.copy_from(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError) as info:  # an OffloadTypeError
        ints.copy_from(np.array([1.5, np.nan, 3.0]))
    error = info.value
    assert isinstance(error, OffloadError) and error.code is ErrorCode.INVALID_ARGUMENT
    assert "float64 to int32" in error.details and "'same_kind'" in error.details and "casting='unsafe'" in error.details
    np.testing.assert_array_equal(ints.to_numpy(), [0, 1, 2])  # nothing was copied
    ints.copy_from(np.arange(3, dtype=np.int64) + 7)  # int64 -> int32: the same kind
    np.testing.assert_array_equal(ints.to_numpy(), [7, 8, 9])
    ints.copy_from([4, 5, 6])  # a list of Python ints: int64, the same kind
    with np.errstate(invalid="ignore"):
        ints.copy_from(np.array([1.5, 2.5, -3.5]), casting="unsafe")  # asked for: numpy's astype
    np.testing.assert_array_equal(ints.to_numpy(), [1, 2, -3])
    floats = offload.empty(3, "float32", host)
    floats.copy_from(np.ones(3))  # float64 -> float32 (the README's y.copy_from(np.ones(1024)))
    with pytest.raises(OffloadError, match="int64 to float32 under casting='safe'"):
        floats.copy_from(np.arange(3), casting="safe")
    for bad in ("sometimes", 5):
        with pytest.raises(OffloadError, match="casting must be one of"):
            floats.copy_from(np.ones(3), casting=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # an OffloadValueError: a string numpy cannot read as a number
        floats.copy_from(np.array(["1", "x", "2"], dtype=object), casting="unsafe")


def test_array_to_array_copies_convert_on_the_host_under_the_same_rule(host: offload.objects.Device) -> None:
    doubles = offload.to_device(np.array([0.5, np.nan, 2.0]), host)
    ints = offload.empty(3, "int64", host)
    with pytest.raises(OffloadError, match="float64 to int64 under casting='same_kind'"):
        ints.copy_from(doubles)
    singles = offload.empty(3, "float32", host)
    with host.queue() as queue:
        singles.copy_from(doubles, queue=queue)
    np.testing.assert_array_equal(singles.to_numpy(), np.array([0.5, np.nan, 2.0], np.float32))
    wide = offload.empty(3, "float64", host)
    wide.copy_from(singles)  # float32 -> float64: safe
    np.testing.assert_array_equal(wide.to_numpy(), singles.to_numpy())


# --- wrong types in the object layer are OffloadErrors (TypeError / ValueError too) -----------


def test_a_queue_of_the_wrong_type_is_refused_on_every_path(host: offload.objects.Device) -> None:
    """queue="q" was AttributeError ('str' object has no attribute 'handle')."""
    buffer, other = offload.Buffer(16, host), offload.Buffer(16, host)
    array = offload.empty(4, "float32", host)
    with host.load_program(offload_host.build_test_kernel("saxpy")) as program:
        saxpy = program.kernel("saxpy")
        calls = [
            lambda q: buffer.copy_from(b"1234", queue=q),
            lambda q: buffer.copy_from(other, queue=q),  # the Buffer-to-Buffer fast path (C where compiled)
            lambda q: buffer.copy_to(bytearray(4), queue=q),
            lambda q: buffer.fill(b"\0", queue=q),
            lambda q: buffer.prefetch(q),
            lambda q: array.copy_from(array, queue=q),
            lambda q: array.copy_from(np.ones(4, np.float32), queue=q),
            lambda q: array.to_numpy(queue=q),
            lambda q: saxpy.launch(1, 1, 1.0, array, array, 0, queue=q),
        ]
        for call in calls:
            for bad in ("q", 1, object()):
                with pytest.raises(TypeError) as info:
                    call(bad)
                assert isinstance(info.value, OffloadError) and info.value.code is ErrorCode.INVALID_QUEUE, info.value
                assert "queue must be an offload.objects.Queue" in info.value.details


def test_other_wrong_types_are_offload_errors(host: offload.objects.Device) -> None:
    buffer = offload.Buffer(16, host)
    with host.queue() as queue, host.load_program(offload_host.build_test_kernel("saxpy")) as program:
        event = queue.record()
        cases = [
            (lambda: queue.launch("saxpy", 1, 1), ErrorCode.INVALID_ARGUMENT),  # the kernel's name, not the kernel
            (lambda: queue.fill(b"\0", buffer), ErrorCode.INVALID_ARGUMENT),  # arguments swapped
            (lambda: queue.wait(queue), ErrorCode.INVALID_EVENT),
            (lambda: event.elapsed_time(1.5), ErrorCode.INVALID_EVENT),
            (lambda: program.kernel("saxpy", 4), ErrorCode.INVALID_ARGUMENT),  # a signature that is no signature
            (lambda: buffer.view("uint8", (4,), 1), ErrorCode.INVALID_ARGUMENT),  # strides: not a tuple
            (lambda: buffer.view("uint8", (4,), ("1",)), ErrorCode.INVALID_ARGUMENT),
            (lambda: offload.Buffer.wrap("0x1000", 8, host, "host"), ErrorCode.INVALID_ARGUMENT),
            (lambda: offload.Buffer(16, host).copy_from(b"12345678", offset=True), ErrorCode.INVALID_SIZE),
            (lambda: buffer.copy_to(bytearray(4), offset=False), ErrorCode.INVALID_SIZE),
            (lambda: offload.Buffer(True, host), ErrorCode.INVALID_SIZE),
            (lambda: offload.Buffer(16, 5), ErrorCode.INVALID_DEVICE),  # type: ignore[arg-type]
        ]
        for call, code in cases:
            with pytest.raises(TypeError) as info:
                call()
            assert isinstance(info.value, OffloadError) and info.value.code is code, info.value
        with pytest.raises(ValueError) as negative:
            offload.Buffer.wrap(-4096, 8, host, "host")
        assert isinstance(negative.value, OffloadError) and negative.value.code is ErrorCode.INVALID_ARGUMENT
