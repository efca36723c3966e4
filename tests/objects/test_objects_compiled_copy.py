"""The replayed copies (``offload.objects._compiled._replay``, objects/_records.py): ``Buffer.copy_from``,
``Buffer.copy_to``, ``Array.copy_from`` and ``Queue.copy`` decide in Python (``fast_copy``), which
publishes a verdict on the destination where the compiled path runs; the C methods replay a
verdict for exactly the call it was made for and hand every other call to the Python method.
Each case below runs twice through the method and twice through its Python method
(``fallback``), on fresh memory of the same contents, and must give the same bytes or the same
error; the methods' ``counts`` ({'fast', 'deferred'}) prove which cases C replayed (the second
call of a case Python decided was the common one; so no case passes by always deferring). Under
``OFFLOAD_COMPILED=0`` the methods are the Python functions and the cases only check themselves.
(tests/compiled_cases.py runs the same kinds of call in a child with the switch on and off.)"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import offload
from offload.objects import Array, Buffer, Queue, _hostbuf, _records

from objects_support import release_library
from offload._core.session import STATE

needs_replay = pytest.mark.skipif(
    not _records.ACTIVE, reason="the replayed copies are off here (OFFLOAD_COMPILED=0, or not built)"
)
METHODS = {"Buffer.copy_from": Buffer.copy_from, "Buffer.copy_to": Buffer.copy_to, "Array.copy_from": Array.copy_from,
           "Queue.copy": Queue.copy}


class Memory:
    """The objects one case copies between, made afresh (with the same bytes) for each run."""

    def __init__(self, device: offload.objects.Device, queue: Queue) -> None:
        self.queue = queue
        self.a = offload.Buffer(16, device)
        self.b = offload.Buffer(8, device)
        self.c = offload.Buffer(4, device)
        for buffer, first in ((self.a, 0x10), (self.b, 0x40), (self.c, 0x70)):
            buffer.copy_from(bytes(range(first, first + buffer.size)))
        self.x = self.b.view(np.float32)  # 2 floats
        self.y = self.a.view(np.float32, 2, offset=8)
        self.ro = offload.Buffer.wrap(self.a.address, 16, device, "host", self.a, readonly=True,
                                      session=self.a._ctx)
        self.closed = offload.Buffer(8, device)
        self.closed.close()
        self.foreign = offload.Buffer.wrap(self.b.address, 8, device, "host", self.b)  # memory of no session

    def state(self) -> tuple[bytes, ...]:
        self.queue.sync()
        return self.a.to_bytes(), self.b.to_bytes(), self.c.to_bytes()


# (name, method, call, copied in C): `call(m, method)` calls `method` (the compiled one or its
# Python method) on the objects of `m`
Case = tuple[str, str, Callable[[Memory, Any], Any], bool]
CASES: list[Case] = [
    ("whole source", "Buffer.copy_from", lambda m, f: f(m.a, m.b), True),
    ("at an offset", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offset=8), True),
    ("on a queue", "Buffer.copy_from", lambda m, f: f(m.a, m.c, offset=3, queue=m.queue), True),
    ("overrun", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offset=9), False),
    ("negative offset", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offset=-1), False),
    ("float offset", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offset=1.0), False),
    ("bool offset", "Buffer.copy_from", lambda m, f: f(m.a, m.c, offset=True), False),
    ("huge offset", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offset=1 << 70), False),
    ("read-only destination", "Buffer.copy_from", lambda m, f: f(m.ro, m.b), False),
    ("closed destination", "Buffer.copy_from", lambda m, f: f(m.closed, m.b), False),
    ("closed source", "Buffer.copy_from", lambda m, f: f(m.a, m.closed), False),
    ("memory of no session", "Buffer.copy_from", lambda m, f: f(m.a, m.foreign), False),
    ("a bytes source", "Buffer.copy_from", lambda m, f: f(m.a, b"12345678"), False),
    ("an int source", "Buffer.copy_from", lambda m, f: f(m.a, 42), False),
    ("a str queue", "Buffer.copy_from", lambda m, f: f(m.a, m.b, queue="q"), False),
    ("a positional offset", "Buffer.copy_from", lambda m, f: f(m.a, m.b, 4), False),
    ("an unknown keyword", "Buffer.copy_from", lambda m, f: f(m.a, m.b, offst=4), False),
    ("whole destination", "Buffer.copy_to", lambda m, f: f(m.a, m.c, offset=12), True),
    ("to a queue", "Buffer.copy_to", lambda m, f: f(m.b, m.c, queue=m.queue), True),
    ("past the end", "Buffer.copy_to", lambda m, f: f(m.a, m.c, offset=13), False),
    ("into read-only memory", "Buffer.copy_to", lambda m, f: f(m.b, m.ro), False),
    ("from a closed buffer", "Buffer.copy_to", lambda m, f: f(m.closed, m.c), False),
    ("into a bytearray", "Buffer.copy_to", lambda m, f: f(m.a, bytearray(4)), False),
    ("arrays", "Array.copy_from", lambda m, f: f(m.y, m.x), True),
    ("arrays on a queue", "Array.copy_from", lambda m, f: f(m.y, m.x, queue=m.queue), True),
    ("another shape", "Array.copy_from", lambda m, f: f(m.y, m.a.view(np.float32, 1)), False),
    ("another dtype", "Array.copy_from", lambda m, f: f(m.y, m.b.view(np.int32)), False),
    ("a strided source", "Array.copy_from", lambda m, f: f(m.a.view(np.uint8, 2), m.b.view(np.uint8, 2, (4,))), False),
    ("a numpy source", "Array.copy_from", lambda m, f: f(m.y, np.array([1.5, 2.5], np.float32)), False),
    ("buffers", "Queue.copy", lambda m, f: f(m.queue, m.a, m.b), True),
    ("a larger source", "Queue.copy", lambda m, f: f(m.queue, m.c, m.b), False),
    ("contiguous arrays", "Queue.copy", lambda m, f: f(m.queue, m.y, m.x), True),
    ("a closed source", "Queue.copy", lambda m, f: f(m.queue, m.a, m.closed), False),
    ("a host buffer", "Queue.copy", lambda m, f: f(m.queue, m.a, bytearray(4)), False),
]


def _counts(method: Any) -> dict[str, int]:
    return dict(getattr(method, "counts", {"fast": 0, "deferred": 0}))


def _outcome(memory: Memory, call: Callable[[], Any], counted: Any) -> tuple[tuple[str, ...], list[dict[str, int]]]:
    """What a call made twice did: "ok" or the exception's class and message (addresses hidden)
    each time, then the bytes after them; and how much each of the ``counts`` of ``counted``
    grew during each call. (The collector is off: a record it freed would end every verdict.)"""
    said: list[str] = []
    grown: list[dict[str, int]] = []
    gc.disable()
    try:
        for _ in range(2):
            before = _counts(counted)
            try:
                call()
                said += ["ok", ""]
            except Exception as error:  # (TypeError, AttributeError as well as OffloadError: the same both ways)
                said += [type(error).__name__, re.sub(r"0x[0-9a-f]+", "0x?", str(error))]
            grown.append({key: value - before[key] for key, value in _counts(counted).items()})
    finally:
        gc.enable()
    return (*said, *(part.hex() for part in memory.state())), grown


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}: {c[0]}" for c in CASES])
def test_a_copy_gives_what_the_python_method_gives(host: offload.objects.Device, case: Case) -> None:
    name, method_name, call, in_c = case
    method = METHODS[method_name]
    with host.queue() as queue:
        python = getattr(method, "fallback", method)
        memory = Memory(host, queue)
        expected, untouched = _outcome(memory, lambda: call(memory, python), method)
        memory = Memory(host, queue)
        got, grown = _outcome(memory, lambda: call(memory, method), method)
    assert got == expected, name
    assert got[0] == "ok" or not in_c, got
    if _records.ACTIVE:  # C replayed exactly the cases it should, the second time (the Python method: nothing counted)
        assert untouched == [{"fast": 0, "deferred": 0}] * 2
        assert grown == [{"fast": 0, "deferred": 1}, {"fast": int(in_c), "deferred": int(not in_c)}], name


def test_the_methods_are_compiled_exactly_where_the_compiled_path_runs() -> None:
    for name, method in METHODS.items():
        assert (type(method).__name__ == "Copier") is _records.ACTIVE
        assert method.__qualname__ == name and method.__doc__
    probe = "from offload.objects import Buffer, Array, Queue; print(*(type(m).__name__ for m in " \
            "(Buffer.copy_from, Buffer.copy_to, Array.copy_from, Queue.copy)))"
    unbuilt = "import sys; sys.modules['offload.objects._compiled._replay'] = None; "  # as if built without a compiler
    for switch, code in (("0", probe), ("1", unbuilt + probe)):
        env = {**os.environ, "OFFLOAD_COMPILED": switch}
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout.split() == ["function"] * 4, run.stdout + run.stderr


def test_an_enqueued_copy_holds_both_buffers_until_the_sync(host: offload.objects.Device) -> None:
    with host.queue() as queue:
        src, dst = offload.Buffer(8, host), offload.Buffer(8, host)
        src.copy_from(b"abcdefgh")
        for _ in range(3):
            dst.copy_from(src, queue=queue)
        assert queue._inflight == [(src, dst)] * 3  # one entry a copy (the first Python's, the others replayed)
        queue.sync()
        assert queue._inflight == [] and dst.to_bytes() == b"abcdefgh"


def test_a_copy_of_an_ended_session_names_it(host: offload.objects.Device) -> None:
    stale = offload.Buffer(8, host)
    release_library()
    fresh = offload.Buffer(8, offload.devices(backend="host")[0])
    before = dict(getattr(Buffer.copy_from, "counts", {}))
    for call in (lambda: fresh.copy_from(stale), lambda: stale.copy_from(fresh)):
        with pytest.raises(offload.OffloadError, match="ended") as info:
            call()
        assert info.value.code is offload.ErrorCode.INVALID_ARGUMENT
    if _records.ACTIVE:
        assert Buffer.copy_from.counts == {**before, "deferred": before["deferred"] + 2}  # type: ignore[attr-defined]


def test_a_verdict_ends_with_a_close_and_the_session(host: offload.objects.Device) -> None:
    """A replayed copy stops at whatever could change the decision: any Buffer closed (its
    address may come back), the layer's session reference dropped; the Python method then
    decides (and names the error) again. A Buffer made and gone ends nothing."""
    counts = lambda: dict(getattr(Buffer.copy_from, "counts", {"fast": 0, "deferred": 0}))  # noqa: E731
    src, dst = offload.Buffer(8, host), offload.Buffer(8, host)
    src.copy_from(b"12345678")
    for event, ends in ((lambda: offload.Buffer(8, host).close(), True), (lambda: offload.Buffer(8, host), False)):
        dst.copy_from(src)  # decided (a verdict published where C replays)
        before = counts()
        dst.copy_from(src)
        assert counts()["fast"] == before["fast"] + _records.ACTIVE
        event()  # a close, or a Buffer made and gone
        dst.copy_from(src)
        replayed = _records.ACTIVE and not ends
        assert counts() == {"fast": before["fast"] + _records.ACTIVE + replayed,
                            "deferred": before["deferred"] + (_records.ACTIVE and ends)}
    dst.copy_from(src, offset=0)  # another offset object of the same value: the verdict's (an int stands for its value)
    before = counts()
    dst.copy_from(src, offset=int("0"))
    assert counts()["fast"] == before["fast"] + _records.ACTIVE and dst.to_bytes() == b"12345678"
    release_library()
    with pytest.raises(offload.OffloadError, match="ended") as info:
        dst.copy_from(src)
    assert info.value.code is offload.ErrorCode.INVALID_ARGUMENT


@needs_replay
def test_a_new_object_at_a_dead_one_s_address_is_not_it(host: offload.objects.Device) -> None:
    """A verdict names the records it was made for by address and serial (their birth numbers),
    holding none: a new Buffer that takes a collected source's address does not replay it."""
    dst = offload.Buffer(8, host)
    for _ in range(200):
        src = offload.Buffer(8, host)
        dst.copy_from(src)  # decided, a verdict naming src
        address, serial = id(src), src._serial
        del src  # (nothing else holds it: the verdict does not)
        again = offload.Buffer(8, host)
        if id(again) == address:
            break
    else:
        pytest.skip("no new Buffer took the address of a collected one")
    assert again._serial != serial
    before = dict(Buffer.copy_from.counts)  # type: ignore[attr-defined]
    dst.copy_from(again)
    assert Buffer.copy_from.counts == {**before, "deferred": before["deferred"] + 1}  # type: ignore[attr-defined]


def test_the_declared_interface_is_the_extension_s() -> None:
    """``_records`` declares the names and version ``_replay.h`` gives its C structs; an extension
    of another version (or records without the declared fields) is not used."""
    sources = Path(__file__).resolve().parents[2] / "core" / "src" / "offload" / "objects" / "_compiled"  # (the checkout's)
    header = (sources / "_replay.h").read_text()
    assert f"#define OFFLOAD_REPLAY_VERSION {_records.VERSION}" in header
    for field in (*_records.MEMORY_FIELDS, *_records.QUEUE_FIELDS, *_records.KERNEL_FIELDS, *_records.STAMP_FIELDS):
        assert f"`{field}`" in header, field
    for field in _records.LAUNCH_FIELDS:
        assert re.search(rf"\b{field}\b", header), field
    source = (sources / "_replay.c").read_text()
    for lookup in ("GetAttr", "CallMethod", "VectorcallMethod", "PyImport", "tp_dictoffset", "slot_offset"):
        assert lookup not in source, lookup  # C reads its own structs only: no attribute, slot or module of the layer
    if _records._replay is None:
        return
    assert _records._declared(_records._replay) is True
    other = type("Other", (), {**vars(_records._replay), "VERSION": _records.VERSION + 1})
    assert _records._declared(other) is False
    if _records.ACTIVE:
        assert type(_records.STAMPS).__module__ == "offload.objects._compiled._replay"
        assert Buffer.__mro__[1] is _records._replay.MemoryRecord and Queue.__mro__[1] is _records._replay.QueueRecord


@needs_replay
def test_the_copier_hands_other_calls_on(host: offload.objects.Device) -> None:
    """Another class of Buffer, queue or keyword: the Python method (here a recorder) runs."""
    deferred: list[tuple[Any, ...]] = []
    copier = _records._replay.Copier(
        lambda *args, **kwargs: deferred.append(args + tuple(kwargs)), _records.BUFFER_COPY_FROM, 2, ("offset", "queue"),
        (0, None), 0, 1, 3,
    )

    class Sub(Buffer):
        __slots__ = ()

    with host.queue() as queue:
        a, b = offload.Buffer(8, host), offload.Buffer(8, host)
        sub = Sub.wrap(b.address, 8, host, "host", b, session=b._ctx)
        copier(a, sub)
        copier(sub, a)
        copier(a, b, queue=queue, offset=0, other=1)
        copier(a, b, queue=object())
        copier(a)
        assert len(deferred) == 5 and copier.counts == {"fast": 0, "deferred": 5}
        a.copy_from(b, offset=0, queue=queue)  # the Python method decides: a verdict on `a`
        copier(a, b, offset=0, queue=queue)
        assert copier.counts == {"fast": 1, "deferred": 5} and len(deferred) == 5
    with pytest.raises(TypeError):
        _records._replay.Copier(print, 0, 2, ("offset",), (0, None), 0, 1, 2)  # keywords and defaults of one length
    with pytest.raises(TypeError):
        _records._replay.Copier(print, 0, 2, ("offset", "queue"), (0, None), 0, 1, 4)  # no such argument


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(6, dtype=np.float32),
        lambda: bytearray(b"offload"),
        lambda: b"read-only bytes",
        lambda: np.zeros((3, 4), np.int16)[1:],
        lambda: bytearray(),
        lambda: np.zeros(0, np.float64),
    ],
    ids=["numpy", "bytearray", "bytes", "numpy-rows", "empty-bytearray", "empty-numpy"],
)
def test_a_host_buffer_address_is_the_same_in_c_and_through_ctypes(make: Callable[[], Any]) -> None:
    obj = make()
    view = memoryview(obj)
    expected = _hostbuf._ctypes_address(view)
    if _records.buffer_address is not None:  # (else host_span takes the ctypes path alone)
        assert _records.buffer_address(view) == expected
    assert _hostbuf.host_span(obj, False, "src")[:2] == (expected if view.nbytes else 0, view.nbytes)  # none: 0
    if view.nbytes:
        assert expected == np.frombuffer(obj, np.uint8).__array_interface__["data"][0]


def test_a_strided_host_buffer_is_refused_alike_in_c_and_through_ctypes() -> None:
    view = memoryview(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(BufferError):
        _hostbuf._ctypes_address(view)
    if _records.buffer_address is not None:
        with pytest.raises(BufferError):
            _records.buffer_address(view)
    with pytest.raises(offload.OffloadError, match="src must be C-contiguous"):
        _hostbuf.host_span(view, False, "src")


def test_a_copy_after_the_flat_api_ended_the_session_under_the_layer_is_refused(host: offload.objects.Device) -> None:
    """More ``olShutDown`` calls than ``olInit`` calls end the session under the layer's own
    reference: the core tells the layer (``on_session_end``), every verdict dies, and the copy
    is the Python method's, refused with the layer's error on both paths; no copy is made."""
    src, dst = offload.Buffer(8, host), offload.Buffer(8, host)
    src.copy_from(b"12345678")
    dst.copy_from(src)
    dst.copy_from(src)  # (replayed where C runs)
    while STATE.ctx is not None:
        offload.olShutDown()
    with pytest.raises(offload.OffloadError) as info:
        dst.copy_from(src)
    assert info.value.code is offload.ErrorCode.INVALID_ARGUMENT, info.value
    release_library()
