"""A hypothesis state machine over lifetimes: allocations, queues, programs, kernels, launches,
copies and failing host functions, created and destroyed in any order, in one or two nested
olInit sessions, against simdev (which records every lifetime or range rule the core lets
through). Examples: 20 x OFFLOAD_ROBUSTNESS_BUDGET (default 1)."""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule  # noqa: E402

import offload as ol  # noqa: E402
from offload._core.session import STATE  # noqa: E402

import simdev  # noqa: E402
from simdev import offload_threads  # noqa: E402
from helpers import devices  # noqa: E402

E = ol.ErrorCode
BUDGET = float(os.environ.get("OFFLOAD_ROBUSTNESS_BUDGET", "1"))
ALLOC = 64
ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))


class Thing:
    """A handle or allocation with the model's view of whether it is live."""

    def __init__(self, value: Any, **extra: Any) -> None:
        self.value = value
        self.live = True
        self.__dict__.update(extra)


def _code(call: Any, *args: Any) -> E | None:
    try:
        call(*args)
    except ol.OffloadError as error:
        return error.code
    return None


class Lifetimes(RuleBasedStateMachine):
    allocations = Bundle("allocations")
    queues = Bundle("queues")
    programs = Bundle("programs")
    kernels = Bundle("kernels")

    def __init__(self) -> None:
        super().__init__()
        assert STATE.ctx is None
        simdev.VIOLATIONS.clear()
        ol.register_backend("simdev", simdev.SimBackend)
        ol.olInit()
        self.refs = 1
        self.sim = next(d for d in devices() if d.platform.name == "simdev")
        self.host = next(d for d in devices() if d.platform.kind is ol.PlatformBackend.HOST)
        self.buffer = (ctypes.c_char * 256)()

    @rule(target=allocations)
    def alloc(self) -> Thing:
        return Thing(ol.olMemAlloc(self.sim, ol.AllocType.DEVICE, ALLOC))

    @rule(thing=allocations)
    def free(self, thing: Thing) -> None:
        code = _code(ol.olMemFree, thing.value)
        assert code is (None if thing.live else E.INVALID_ARGUMENT)
        thing.live = False

    @rule(target=queues)
    def create_queue(self) -> Thing:
        return Thing(ol.olCreateQueue(self.sim), failures=0)  # a reused parked queue never fails here

    @rule(thing=queues)
    def destroy_queue(self, thing: Thing) -> None:
        code = _code(ol.olDestroyQueue, thing.value)
        if not thing.live:
            assert code is E.INVALID_QUEUE
        elif code is not None:  # finished: its own failed host functions are raised to its owner
            assert thing.failures and code in (E.UNKNOWN, E.INVALID_ARGUMENT), code
        thing.live = False

    @rule(thing=queues, fail=st.booleans(), sleep=st.sampled_from([0.0, 0.001]))
    def host_function(self, thing: Thing, fail: bool, sleep: float) -> None:
        def work(_: object) -> None:
            time.sleep(sleep)
            if fail:
                raise ValueError("a failing host function")

        code = _code(ol.olLaunchHostFunction, thing.value, work, None)
        assert code is (None if thing.live else E.INVALID_QUEUE)
        if thing.live and fail:
            thing.failures += 1

    @rule(thing=queues)
    def sync(self, thing: Thing) -> None:
        code = _code(ol.olSyncQueue, thing.value)
        if not thing.live:
            assert code is E.INVALID_QUEUE
        else:
            assert code is (E.INVALID_ARGUMENT if thing.failures else None), (code, thing.failures)
            thing.failures = 0

    @rule(target=programs, sleep=st.sampled_from([0.0, 0.001]))
    def create_program(self, sleep: float) -> Thing:
        data = simdev.program({"k": [[0, 8]], "free": []}, {"g": 16}, sleep=sleep)
        return Thing(ol.olCreateProgram(self.sim, data), kernels=[])

    @rule(thing=programs)
    def destroy_program(self, thing: Thing) -> None:
        code = _code(ol.olDestroyProgram, thing.value)
        assert code is (None if thing.live else E.INVALID_ARGUMENT)
        thing.live = False

    @rule(target=kernels, program=programs, name=st.sampled_from(["k", "free"]))
    def get_kernel(self, program: Thing, name: str) -> Thing:
        try:
            symbol = ol.olGetSymbol(program.value, name, ol.SymbolKind.KERNEL)
        except ol.OffloadError as error:
            assert not program.live and error.code is E.INVALID_ARGUMENT
            symbol = None
        return Thing(symbol, program=program, name=name)

    @rule(kernel=kernels, queue=st.one_of(st.none(), queues), size=st.sampled_from([None, 0, 7, 8, 24]))
    def launch(self, kernel: Thing, queue: Thing | None, size: int | None) -> None:
        if kernel.value is None:
            return
        args = None if size is None else bytes(size)
        code = _code(ol.olLaunchKernel, None if queue is None else queue.value, self.sim, kernel.value, args, ONE)
        if queue is not None and not queue.live:
            assert code is E.INVALID_QUEUE
        elif not kernel.program.live:
            assert code is E.INVALID_ARGUMENT
        elif kernel.name == "k" and (size is None or size < 8):
            assert code is E.INVALID_ARGUMENT
        else:
            assert code is None

    @rule(
        thing=allocations,
        queue=st.one_of(st.none(), queues),
        offset=st.sampled_from([0, 8, 60, 64, 2**64]),
        size=st.sampled_from([0, 4, 8, 64, 2**64 - 4]),
        inbound=st.booleans(),
    )
    def copy(self, thing: Thing, queue: Thing | None, offset: int, size: int, inbound: bool) -> None:
        address = thing.value + offset
        host = ctypes.addressof(self.buffer)
        args = (address, self.sim, host, self.host) if inbound else (host, self.host, address, self.sim)
        code = _code(ol.olMemcpy, None if queue is None else queue.value, *args, size)
        if queue is not None and not queue.live:
            assert code is E.INVALID_QUEUE
        elif address >= 2**64:
            assert code is E.INVALID_ARGUMENT
        elif size > 256 or address + size > 2**64:
            assert code in (E.INVALID_SIZE, E.INVALID_ARGUMENT)
        elif size == 0:
            assert code is None
        elif not thing.live:
            assert code is E.INVALID_ARGUMENT
        elif offset + size > ALLOC:
            assert code is (E.INVALID_SIZE if offset < ALLOC else E.INVALID_ARGUMENT)
        else:
            assert code is None

    @precondition(lambda self: self.refs < 3)
    @rule()
    def init(self) -> None:
        ol.olInit()
        self.refs += 1

    @precondition(lambda self: self.refs > 1)
    @rule()
    def shutdown(self) -> None:
        ol.olShutDown()
        self.refs -= 1

    @invariant()
    def no_rule_broken(self) -> None:
        assert not simdev.VIOLATIONS, simdev.VIOLATIONS

    def teardown(self) -> None:
        try:
            for _ in range(self.refs - 1):
                ol.olShutDown()
            try:
                ol.olShutDown()
            except ol.OffloadError as error:
                assert all(e.code in (E.UNKNOWN, E.INVALID_ARGUMENT) for e in error.errors), error
        finally:
            ol.unregister_backend("simdev")
        assert STATE.ctx is None
        assert not simdev.VIOLATIONS, simdev.VIOLATIONS
        assert not [i for i in simdev.IMAGES if i.loaded]
        for thread in offload_threads():
            thread.join(5)
            assert not thread.is_alive(), thread


Lifetimes.TestCase.settings = settings(
    max_examples=max(1, int(20 * BUDGET)),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
test_lifetimes = Lifetimes.TestCase
