"""The fidelity call sequence through LLVM's liboffload C library (ctypes; run with OFFLOAD_TRACE=1).

Usage: python sequence_liboffload.py PATH/TO/libLLVMOffload.so. Mirrors ``sequence_offload.py``
call for call. Where the C API takes a ``PropSize``, it passes the size that this project's
trace prints for the same call (Python has no PropSize argument).
"""

import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
S = ctypes.c_size_t
BAD = 0x7777
FORCE = 0x7FFFFFFF

buf = ctypes.create_string_buffer(256)
size = S()
out = P()


def zero_outputs():
    """Out-variables start zeroed before each call, as the Python side's outputs are."""
    ctypes.memset(buf, 0, 256)
    size.value = 0
    out.value = None


lib.olInit()
found = []
callback = ctypes.CFUNCTYPE(ctypes.c_bool, P, P)(lambda device, _: found.append(device) or True)
zero_outputs()
lib.olIterateDevices(callback, None)
device = P(found[-1])
zero_outputs()
lib.olGetDeviceInfo(device, 0, S(4), buf)
zero_outputs()
lib.olGetDeviceInfo(device, BAD, S(8), buf)
zero_outputs()
lib.olGetDeviceInfo(device, FORCE, S(8), buf)
zero_outputs()
lib.olGetDeviceInfoSize(device, 0, ctypes.byref(size))
zero_outputs()
lib.olGetDeviceInfoSize(device, BAD, ctypes.byref(size))
platform = P()
zero_outputs()
lib.olGetDeviceInfo(device, 1, S(8), ctypes.byref(platform))
zero_outputs()
lib.olGetPlatformInfo(platform, 3, S(4), buf)
zero_outputs()
lib.olGetPlatformInfo(platform, 2, S(7), buf)
zero_outputs()
lib.olGetPlatformInfo(platform, 99, S(8), buf)
zero_outputs()
lib.olGetPlatformInfoSize(platform, 99, ctypes.byref(size))
zero_outputs()
lib.olMemAlloc(device, 1, S(0), ctypes.byref(out))
zero_outputs()
lib.olMemAlloc(device, 9, S(0), ctypes.byref(out))
zero_outputs()
lib.olMemAlloc(None, 0, S(16), ctypes.byref(out))
zero_outputs()
lib.olMemFree(None)
zero_outputs()
lib.olGetMemInfo(None, 77, S(8), buf)
zero_outputs()
lib.olGetMemInfoSize(None, 77, ctypes.byref(size))
zero_outputs()
lib.olCreateQueue(None, ctypes.byref(out))
zero_outputs()
lib.olSyncQueue(None)
zero_outputs()
lib.olDestroyQueue(None)
zero_outputs()
lib.olCreateEvent(None, ctypes.byref(out))
zero_outputs()
lib.olSyncEvent(None)
zero_outputs()
lib.olDestroyEvent(None)
zero_outputs()
lib.olDestroyProgram(None)
zero_outputs()
lib.olGetSymbol(None, b"foo", 0, ctypes.byref(out))
elf = b"\x7fELF"
zero_outputs()
lib.olCreateProgram(None, elf, S(len(elf)), ctypes.byref(out))
zero_outputs()
lib.olIsValidBinary(None, elf, S(len(elf)), buf)


class Dimensions(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class LaunchSizeArgs(ctypes.Structure):
    _fields_ = [("Dimensions", S), ("NumGroups", Dimensions), ("GroupSize", Dimensions), ("DynSharedMemory", S)]


zero_outputs()
args = ctypes.create_string_buffer(8)
lib.olLaunchKernel(None, None, None, args, S(8), ctypes.byref(LaunchSizeArgs(1, Dimensions(2, 1, 1), Dimensions(64, 1, 1), 0)))
zero_outputs()
lib.olLaunchKernel(None, device, None, None, S(0), ctypes.byref(LaunchSizeArgs(3, Dimensions(1, 2, 3), Dimensions(4, 5, 6), 16)))
zero_outputs()
lib.olMemcpy(None, None, device, None, device, S(8))
zero_outputs()
pattern = ctypes.create_string_buffer(4)
lib.olMemFill(None, None, S(4), pattern, S(16))
zero_outputs()
lib.olGetQueueInfo(None, 77, S(8), buf)
zero_outputs()
lib.olGetEventInfo(None, 0, S(8), buf)
zero_outputs()
lib.olGetSymbolInfo(None, 0, S(4), buf)
zero_outputs()
lib.olGetMemInfo(None, 2, S(8), buf)
zero_outputs()
lib.olGetMemInfo(None, 0, S(8), buf)
zero_outputs()
lib.olGetMemInfo(None, 3, S(4), buf)
zero_outputs()
lib.olGetDeviceInfo(None, 2, S(8), buf)
zero_outputs()
lib.olGetDeviceInfo(None, 9, S(8), buf)
zero_outputs()
lib.olGetDeviceInfo(None, 8, S(12), buf)
zero_outputs()
lib.olCalculateOptimalOccupancy(None, None, S(0), ctypes.byref(size))
zero_outputs()
host_function = ctypes.CFUNCTYPE(None, P)(lambda _: None)
lib.olLaunchHostFunction(None, host_function, None)
zero_outputs()
lib.olMemRegister(device, None, S(0), 0, ctypes.byref(out))
zero_outputs()
# the lines of issue 29's trace fixes: uint32 and bit-field info values (their PropSize is 4, the
# bit field prints as its number), a void * info value, error details without the address, and a
# bit-field argument. Info numbers are LLVM 22's: SINGLE_FP_CONFIG is 19 there (R1: 20).
lib.olGetDeviceInfo(device, 15, S(4), buf)  # OL_DEVICE_INFO_ADDRESS_BITS
zero_outputs()
lib.olGetDeviceInfoSize(device, 15, ctypes.byref(size))
zero_outputs()
lib.olGetDeviceInfo(device, 19, S(4), buf)  # OL_DEVICE_INFO_SINGLE_FP_CONFIG
zero_outputs()
lib.olGetDeviceInfo(device, 7, S(4), buf)  # OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE
zero_outputs()
lib.olGetMemInfo(None, 1, S(8), buf)  # OL_MEM_INFO_BASE
zero_outputs()
lib.olGetMemInfo(P(0x1234), 1, S(8), buf)
zero_outputs()
lib.olGetMemInfo(P(0x1234), 0, S(8), buf)  # OL_MEM_INFO_DEVICE
zero_outputs()
lib.olMemFree(P(0x1234))
zero_outputs()
lib.olGetSymbolInfo(None, 1, S(8), buf)  # OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS
zero_outputs()
lib.olMemRegister(device, None, S(0), 3, ctypes.byref(out))
zero_outputs()
lib.olShutDown()
