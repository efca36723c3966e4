"""The fidelity call sequence through this project's ``offload`` (run with OFFLOAD_TRACE=1).

The same calls, in the same order, as ``sequence_liboffload.py`` makes through LLVM's C library;
the two traces are compared line by line once addresses are masked. Every call is one whose
result does not depend on the device (validation and enum failures, type queries), so the
comparison is about the trace format, not about two different host devices.
"""

import offload as ol

BAD = 0x7777
FORCE = 0x7FFFFFFF


def attempt(call, *args):
    try:
        call(*args)
    except ol.OffloadError:
        pass


ol.olInit()
devices = []
ol.olIterateDevices(lambda device, _: devices.append(device) or True, None)
device = devices[-1]
ol.olGetDeviceInfo(device, ol.DeviceInfo.TYPE)
attempt(ol.olGetDeviceInfo, device, BAD)
attempt(ol.olGetDeviceInfo, device, FORCE)
ol.olGetDeviceInfoSize(device, ol.DeviceInfo.TYPE)
attempt(ol.olGetDeviceInfoSize, device, BAD)
platform = ol.olGetDeviceInfo(device, 1)
ol.olGetPlatformInfo(platform, 3)
ol.olGetPlatformInfo(platform, ol.PlatformInfo.VERSION)
attempt(ol.olGetPlatformInfo, platform, 99)
attempt(ol.olGetPlatformInfoSize, platform, 99)
attempt(ol.olMemAlloc, device, ol.AllocType.DEVICE, 0)
attempt(ol.olMemAlloc, device, 9, 0)
attempt(ol.olMemAlloc, None, 0, 16)
attempt(ol.olMemFree, None)
attempt(ol.olGetMemInfo, None, 77)
attempt(ol.olGetMemInfoSize, None, 77)
attempt(ol.olCreateQueue, None)
attempt(ol.olSyncQueue, None)
attempt(ol.olDestroyQueue, None)
attempt(ol.olCreateEvent, None)
attempt(ol.olSyncEvent, None)
attempt(ol.olDestroyEvent, None)
attempt(ol.olDestroyProgram, None)
attempt(ol.olGetSymbol, None, "foo", ol.SymbolKind.KERNEL)
attempt(ol.olCreateProgram, None, b"\x7fELF")
attempt(ol.olIsValidBinary, None, b"\x7fELF")
attempt(ol.olLaunchKernel, None, None, None, b"\0" * 8, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (64, 1, 1)))
attempt(ol.olLaunchKernel, None, device, None, None, ol.KernelLaunchSizeArgs(3, (1, 2, 3), (4, 5, 6), 16))
attempt(ol.olMemcpy, None, 0, device, 0, device, 8)
attempt(ol.olMemFill, None, 0, b"\0\0\0\0", 16)
attempt(ol.olGetQueueInfo, None, 77)
attempt(ol.olGetEventInfo, None, 0)
attempt(ol.olGetSymbolInfo, None, 0)
attempt(ol.olGetMemInfo, None, ol.MemInfo.SIZE)
attempt(ol.olGetMemInfo, None, ol.MemInfo.DEVICE)
attempt(ol.olGetMemInfo, None, ol.MemInfo.TYPE)
attempt(ol.olGetDeviceInfo, None, ol.DeviceInfo.NAME)
attempt(ol.olGetDeviceInfo, None, ol.DeviceInfo.MAX_WORK_SIZE)
attempt(ol.olGetDeviceInfo, None, ol.DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION)
attempt(ol.olCalculateOptimalOccupancy, None, None, 0)
attempt(ol.olLaunchHostFunction, None, print, None)
attempt(ol.olMemRegister, device, 0, 0, 0)
ol.olGetDeviceInfo(device, ol.DeviceInfo.ADDRESS_BITS)
ol.olGetDeviceInfoSize(device, ol.DeviceInfo.ADDRESS_BITS)
ol.olGetDeviceInfo(device, ol.DeviceInfo.SINGLE_FP_CONFIG)
ol.olGetDeviceInfo(device, ol.DeviceInfo.MAX_WORK_GROUP_SIZE)
attempt(ol.olGetMemInfo, None, ol.MemInfo.BASE)
attempt(ol.olGetMemInfo, 0x1234, ol.MemInfo.BASE)
attempt(ol.olGetMemInfo, 0x1234, ol.MemInfo.DEVICE)
attempt(ol.olMemFree, 0x1234)
attempt(ol.olGetSymbolInfo, None, ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
attempt(ol.olMemRegister, device, 0, 0, ol.MemoryRegisterFlag.LOCK_MEMORY | ol.MemoryRegisterFlag.UNLOCK_MEMORY)
ol.olShutDown()
