"""The simulator core's strict-driver rules, shown through the CUDA front with raw cuda.bindings
calls (no offload): device memory is not host memory, the push buffer blocks, a faulting
kernel leaves a sticky error, host functions run application code (tests/simulators/README.md
cites the documentation of each rule). Every child runs in its own process: some must crash."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from cuda_child import RAW_PRELUDE, raw_child

pytestmark = pytest.mark.usefixtures("simulated")



def _skip_unless_protected(run_child: Any, child_env: Any) -> None:
    out = run_child(RAW_PRELUDE + "emit(protected())", child_env()).result
    if not out[0]:
        pytest.skip(f"the simulator cannot protect device memory here: {out[1]}")


_DEREFERENCE = raw_child(
    r"""
mem = ck(d.cuMemAlloc(4096))
src = (ctypes.c_uint32 * 4)(1, 2, 3, 4)
ck(d.cuMemcpyHtoD(mem, ctypes.addressof(src), 16))
back = (ctypes.c_uint32 * 4)()
ck(d.cuMemcpyDtoH(ctypes.addressof(back), mem, 16))
pinned = ck(d.cuMemAllocHost(64))
ctypes.c_uint32.from_address(int(pinned)).value = 7  # pinned host memory is host memory
emit({"copied_back": list(back), "pinned": ctypes.c_uint32.from_address(int(pinned)).value})
where = sys.argv[1] if len(sys.argv) > 1 else os.environ["WHERE"]
if where == "main":
    value = ctypes.c_uint32.from_address(int(mem)).value  # a GPU faults here
elif where == "host_function":
    stream = ck(d.cuStreamCreate(1))
    ck(d.cuLaunchHostFunc(stream, host_fn(lambda: ctypes.c_uint32.from_address(int(mem)).value), 0))
    ck(d.cuStreamSynchronize(stream))
emit({"survived": True})
"""
)


@pytest.mark.parametrize("where", ["main", "host_function"])
def test_host_dereference_of_device_memory_faults(run_child: Any, child_env: Any, where: str) -> None:
    """cuMemAlloc memory is the device's: reading it from the application's thread, or from a host
    function (which runs on the driver's thread), is a segmentation fault, as on a GPU; the
    driver's own copies and pinned host memory work."""
    _skip_unless_protected(run_child, child_env)
    child = run_child(_DEREFERENCE, child_env(WHERE=where), check=False)
    first = child.stdout.splitlines()[0] if child.stdout else ""
    assert first == '{"copied_back": [1, 2, 3, 4], "pinned": 7}', child.stderr
    assert child.returncode == -signal.SIGSEGV, (child.returncode, child.stdout, child.stderr)
    assert "survived" not in child.stdout


def test_protection_can_be_turned_off_and_says_so(run_child: Any, child_env: Any) -> None:
    """GPUSIM_PROTECT=0: device memory is readable by the host again, and the simulator's query
    says why (what a test skips with where pkeys are unavailable)."""
    child = run_child(_DEREFERENCE + "\nemit(protected())", child_env(WHERE="main", GPUSIM_PROTECT="0"))
    assert child.stdout.splitlines()[1:] == [
        '{"survived": true}',
        '[false, "device memory protection turned off (GPUSIM_PROTECT=0)"]',
    ]


_PUSH_BUFFER = raw_child(
    r"""
stream = ck(d.cuStreamCreate(1))
mem = ck(d.cuMemAlloc(4096))
gate = threading.Event()
ck(d.cuLaunchHostFunc(stream, host_fn(lambda: gate.wait(120)), 0))  # holds the stream
enqueued = []
errors = []

def producer():
    ck(d.cuCtxSetCurrent(ctx))  # the current context is per thread
    for i in range(20):
        rc = d.cuMemsetD32Async(mem, i, 16, stream)[0]
        if rc:
            errors.append(name(rc))
        enqueued.append(i)

worker = threading.Thread(target=producer)
worker.start()
limit = int(os.environ["GPUSIM_PUSH_BUFFER"])
deadline = time.monotonic() + 60
while len(enqueued) < limit - 1 and time.monotonic() < deadline:
    time.sleep(0.01)
reached = len(enqueued)
worker.join(0.5)  # a full push buffer holds the producer: it must still be blocked
blocked = worker.is_alive()
after_wait = len(enqueued)
gate.set()
worker.join(120)
ck(d.cuStreamSynchronize(stream))
out = (ctypes.c_uint32 * 16)()
ck(d.cuMemcpyDtoH(ctypes.addressof(out), mem, 64))
emit({"reached": reached, "blocked": blocked, "after_wait": after_wait, "total": len(enqueued), "errors": errors,
      "last_value": out[0]})
"""
)


def test_push_buffer_blocks_the_enqueuing_call(run_child: Any, child_env: Any) -> None:
    """With GPUSIM_PUSH_BUFFER=8 and a stream held by a host function, the 8th pending operation
    (the host function is one) does not fail: the call that would exceed it blocks until the
    stream drains, then every operation runs, in order."""
    out = run_child(_PUSH_BUFFER, child_env(GPUSIM_PUSH_BUFFER="8")).result
    assert out["reached"] == 7 and out["after_wait"] == 7 and out["blocked"] is True, out
    assert out["total"] == 20 and out["errors"] == [] and out["last_value"] == 19


_FAULT = raw_child(
    r"""
module, fault = fault_kernel()
n = 128
out_mem = ck(d.cuMemAlloc(4 * n))
stream = ck(d.cuStreamCreate(1))

def launch(trap_block):
    args = [ctypes.c_uint64(int(out_mem)), ctypes.c_uint32(n), ctypes.c_uint32(trap_block)]
    params = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    return name(d.cuLaunchKernel(fault, 4, 1, 1, 32, 1, 1, 0, stream, ctypes.addressof(params), 0))

result = {"good_launch": launch(1000)}
ck(d.cuStreamSynchronize(stream))
host = (ctypes.c_uint32 * n)()
ck(d.cuMemcpyDtoH(ctypes.addressof(host), out_mem, 4 * n))
result["good_values"] = list(host) == list(range(n))
called = []
result["faulting_launch"] = launch(2)
result["host_fn_after_fault"] = name(d.cuLaunchHostFunc(stream, host_fn(lambda: called.append(1)), 0))
result["stream_sync"] = name(d.cuStreamSynchronize(stream))
result["host_fn_called"] = called
later = {}
later["ctx_sync"] = name(d.cuCtxSynchronize())
later["alloc"] = name(d.cuMemAlloc(64))
later["copy"] = name(d.cuMemcpyDtoH(ctypes.addressof(host), out_mem, 4))
later["launch"] = launch(1000)
later["stream_query"] = name(d.cuStreamQuery(stream))
later["stream_create"] = name(d.cuStreamCreate(1))
later["event_create"] = name(d.cuEventCreate(0))
later["module_load"] = name(d.cuModuleLoadData((KERNELS / "fault.cubin").read_bytes()))
result["later"] = later
result["attribute_query"] = name(d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev))
# releasing the primary context ends the faulted context; a new one works
result["release"] = name(d.cuDevicePrimaryCtxRelease(dev))
ctx = ck(d.cuDevicePrimaryCtxRetain(dev))
ck(d.cuCtxSetCurrent(ctx))
module, fault = fault_kernel()
out_mem = ck(d.cuMemAlloc(4 * n))
stream = ck(d.cuStreamCreate(1))
result["after_reset"] = [launch(1000), name(d.cuStreamSynchronize(stream))]
ck(d.cuMemcpyDtoH(ctypes.addressof(host), out_mem, 4 * n))
result["after_reset_values"] = list(host) == list(range(n))
emit(result)
"""
)


def test_a_trapping_kernel_leaves_a_sticky_error(run_child: Any, child_env: Any, kernels: Any) -> None:
    """A kernel that executes a trap (the test kernel `fault`) fails with
    CUDA_ERROR_ILLEGAL_INSTRUCTION, and every later call needing the context returns it (the
    driver: "any further CUDA work will return the same error"), host functions queued behind it
    never run; device queries without a context still work; a new primary context works."""
    out = run_child(_FAULT, child_env(kernels=kernels, delay_us=2000)).result
    assert out["good_launch"] == "CUDA_SUCCESS" and out["good_values"]
    assert out["faulting_launch"] == "CUDA_SUCCESS"  # launches are asynchronous: the fault comes later
    assert out["host_fn_after_fault"] in ("CUDA_SUCCESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION")
    assert out["stream_sync"] == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
    assert out["host_fn_called"] == []
    assert out["later"] == dict.fromkeys(out["later"], "CUDA_ERROR_ILLEGAL_INSTRUCTION"), out["later"]
    assert out["attribute_query"] == "CUDA_SUCCESS"
    assert out["release"] == "CUDA_SUCCESS"
    assert out["after_reset"] == ["CUDA_SUCCESS", "CUDA_SUCCESS"] and out["after_reset_values"]


_WILD = raw_child(
    r"""
module, fault = fault_kernel()
stream = ck(d.cuStreamCreate(1))
freed = ck(d.cuMemAlloc(1 << 16))
ck(d.cuMemFree(freed))

def launch(pointer):
    args = [ctypes.c_uint64(pointer), ctypes.c_uint32(64), ctypes.c_uint32(1000)]  # no block traps
    params = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    return name(d.cuLaunchKernel(fault, 2, 1, 1, 32, 1, 1, 0, stream, ctypes.addressof(params), 0))

out = {"launch": launch(int(os.environ["WILD"], 0) if os.environ["WILD"] != "freed" else int(freed))}
out["sync"] = name(d.cuStreamSynchronize(stream))
out["later"] = [name(d.cuMemAlloc(64)), name(d.cuCtxSynchronize())]
ck(d.cuDevicePrimaryCtxRelease(dev))
ctx = ck(d.cuDevicePrimaryCtxRetain(dev))
ck(d.cuCtxSetCurrent(ctx))
out["after_release"] = name(d.cuMemAlloc(64))
emit(out)
"""
)


@pytest.mark.parametrize("wild", ["0x8", "freed"])
def test_a_kernel_touching_unmapped_memory_leaves_a_sticky_illegal_address(
    run_child: Any, child_env: Any, kernels: Any, wild: str
) -> None:
    """A kernel storing through a wild pointer, or into device memory already freed, does not
    crash the process: as on a GPU, the launch fails with CUDA_ERROR_ILLEGAL_ADDRESS ("a load or
    store instruction on an invalid memory address") and every later call returns it until the
    context ends."""
    out = run_child(_WILD, child_env(kernels=kernels, WILD=wild)).result
    assert out == {
        "launch": "CUDA_SUCCESS",
        "sync": "CUDA_ERROR_ILLEGAL_ADDRESS",
        "later": ["CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_ADDRESS"],
        "after_release": "CUDA_SUCCESS",
    }

