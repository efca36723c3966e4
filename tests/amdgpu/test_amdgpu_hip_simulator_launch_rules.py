"""The simulated HIP runtime's strict launch rules, through raw hip-python calls (no offload), each
in a child process (tests/simulators/hip/README.md, "strict rules"): a faulting kernel's sticky
error until the device is reset, a module used on the device it was loaded on, cooperative
launches that need every block resident and cooperative groups."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import child_environ

from amdgpu_child import RAW_PRELUDE as PRELUDE

HIP_ERROR_LAUNCH_FAILURE = 719


def test_a_faulting_kernel_leaves_a_sticky_error_until_device_reset(hip_build, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
import os, struct
module, kernel = load_kernel("fault")
out = hip.hipMalloc(4 * 256)[1]
def launch(trap_block, target=None):
    args = struct.pack("PII", int(out) if target is None else target, 256, trap_block)
    buf = ctypes.create_string_buffer(args, len(args))
    size = ctypes.c_size_t(len(args))
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(size), 3)
    return st(hip.hipModuleLaunchKernel(kernel, 4, 1, 1, 64, 1, 1, 0, None, None, extra))
res = {"good": launch(99), "good_sync": st(hip.hipStreamSynchronize(None)), "bad": launch(1)}
res["bad_sync"] = st(hip.hipStreamSynchronize(None))
res["malloc"] = st(hip.hipMalloc(8))
res["again"] = st(hip.hipDeviceSynchronize())
res["reset"] = st(hip.hipDeviceReset())
res["after_reset"] = [st(hip.hipMalloc(8)), launch(99), st(hip.hipStreamSynchronize(None))]
launch(99, target=16)  # a wild pointer: the kernel's stores fault
res["wild"] = [st(hip.hipStreamSynchronize(None)), st(hip.hipMalloc(8)), st(hip.hipDeviceReset()), st(hip.hipMalloc(8))]
emit(res)
""",
        hip_build.env(),
    )
    assert result["good"] == 0 and result["good_sync"] == 0
    assert result["bad"] in (0, HIP_ERROR_LAUNCH_FAILURE)  # the fault surfaces at the launch or the sync
    assert result["bad_sync"] == HIP_ERROR_LAUNCH_FAILURE
    assert result["malloc"] == HIP_ERROR_LAUNCH_FAILURE and result["again"] == HIP_ERROR_LAUNCH_FAILURE
    assert result["reset"] == 0 and result["after_reset"] == [0, 0, 0]
    assert result["wild"] == [700, 700, 0, 0]  # hipErrorIllegalAddress, sticky until the reset


def test_a_module_is_used_on_the_device_it_was_loaded_on(hip_build, hip_child) -> None:
    prologue = PRELUDE + """
import os
hip.hipSetDevice(1)
module, kernel = load_kernel("foo")
hip.hipSetDevice(0)
"""
    env = hip_build.env(GPUSIM_DEVICES="2")
    result = hip_child(
        prologue
        + """
wrong = st(hip.hipModuleOccupancyMaxPotentialBlockSize(kernel, 0, 0))
hip.hipSetDevice(1)
emit({"wrong": wrong, "right": st(hip.hipModuleOccupancyMaxPotentialBlockSize(kernel, 0, 0))})
""",
        env,
    )
    assert result == {"wrong": 98, "right": 0}  # hipErrorInvalidDeviceFunction
    full_env = child_environ(("OFFLOAD_", "GPUSIM_"))
    proc = subprocess.run(
        [sys.executable, "-c", prologue + "hip.hipModuleGetFunction(module, b'foo')\nprint('survived')"],
        capture_output=True, text=True, env={**full_env, **env}, timeout=120,
    )  # fmt: skip
    assert proc.returncode < 0 and "survived" not in proc.stdout  # HIP's guarantee() aborts
    assert "Device mismatch from where this module is loaded" in proc.stderr


def test_cooperative_launches_need_every_block_resident(hip_build, hip_child) -> None:
    """hipModuleLaunchCooperativeKernel (issue 17): a grid within the occupancy times the compute
    units runs (its arguments through kernelParams); one block more is hipErrorCooperativeLaunchTooLarge."""
    result = hip_child(
        PRELUDE
        + """
import os
module, kernel = load_kernel("foo")
per_cu = hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(kernel, 64, 0)
cus = hip.hipDeviceGetAttribute(hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount, 0)[1]
limit = per_cu[1] * cus
out = hip.hipMalloc(4 * 64 * (limit + 1))[1]
slot = ctypes.c_void_p(int(out))
params = (ctypes.c_void_p * 1)(ctypes.addressof(slot))
def launch(groups):
    return st(hip.hipModuleLaunchCooperativeKernel(kernel, groups, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params)))
res = {"occupancy": st(per_cu), "per_cu": per_cu[1], "fits": launch(limit), "sync": st(hip.hipStreamSynchronize(None))}
back = (ctypes.c_uint32 * 64)()
hip.hipMemcpy(ctypes.addressof(back), out, 4 * 64, hip.hipMemcpyKind.hipMemcpyDeviceToHost)
res["data"] = list(back)[:4]
res["too_large"] = launch(limit + 1)
res["bad_block"] = st(hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(kernel, 0, 0))
emit(res)
""",
        hip_build.env(),
    )
    assert result["occupancy"] == 0 and result["per_cu"] >= 1
    assert result["fits"] == 0 and result["sync"] == 0 and result["data"] == [0, 1, 2, 3]
    assert result["too_large"] == 720  # hipErrorCooperativeLaunchTooLarge
    assert result["bad_block"] == 1  # hipErrorInvalidValue


@pytest.mark.parametrize("knob", ["1", "0"])
def test_cooperative_launches_need_cooperative_groups(hip_build, hip_child, knob: str) -> None:
    """clr's ihipLaunchKernel_validate: a cooperative launch on a device without cooperative groups
    (hipDeviceAttributeCooperativeLaunch 0: GPUSIM_HIP_COOPERATIVE=0) is hipErrorLaunchFailure (719);
    a plain launch still runs."""
    result = hip_child(
        PRELUDE
        + """
module, kernel = load_kernel("foo")
out = hip.hipMalloc(4 * 64)[1]
slot = ctypes.c_void_p(int(out))
params = (ctypes.c_void_p * 1)(ctypes.addressof(slot))
attribute = hip.hipDeviceGetAttribute(hip.hipDeviceAttribute_t.hipDeviceAttributeCooperativeLaunch, 0)
res = {"attribute": attribute[1], "attribute_status": st(attribute)}
res["cooperative"] = st(hip.hipModuleLaunchCooperativeKernel(kernel, 1, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params)))
res["plain"] = st(hip.hipModuleLaunchKernel(kernel, 1, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params), None))
res["sync"] = st(hip.hipStreamSynchronize(None))
emit(res)
""",
        hip_build.env(GPUSIM_HIP_COOPERATIVE=knob),
    )
    assert result["attribute_status"] == 0 and result["attribute"] == int(knob)
    assert result["cooperative"] == (0 if knob == "1" else 719)  # hipErrorLaunchFailure
    assert result["plain"] == 0 and result["sync"] == 0
