"""The conformance suite: ``from offload_testing.suite import *`` in a test module runs it.

Every test class is re-exported here (and only test classes), so that pytest collects them in
the module that star-imports this package. See ``offload.testing`` (offload-core) for the setup. The classes
follow liboffload's ``offload/unittests/OffloadAPI`` directories: init, platform, device, memory,
queue, event, program, symbol, kernel; and two of its own: ``TestCapabilities`` (the declared
flags agree with the hooks) and ``TestAbsentFeatures`` (each absent optional feature answers
``OL_ERRC_UNSUPPORTED``).
"""

from __future__ import annotations

from ._absent import TestAbsentFeatures, TestCapabilities
from ._device import TestDeviceInfo, TestDeviceInfoSize, TestIterateDevices
from ._event import TestEvent, TestEventElapsedTime, TestEventElapsedTimeProfiling, TestEventInfo, TestEventInfoSize
from ._init import TestInit
from ._kernel import TestKernelParams, TestLaunchKernel, TestOccupancy, TestSingleCounter
from ._alloc import TestMemAlloc, TestMemFree, TestMemInfo, TestMemInfoSize, TestMemRegister
from ._copy import TestMemcpy, TestMemcpyGlobal, TestMemFill
from ._platform import TestPlatformInfo, TestPlatformInfoSize
from ._program import TestIsValidBinary, TestProgram, TestSymbol, TestSymbolInfo, TestSymbolInfoSize
from ._queue import TestHostFunction, TestQueue, TestQueueInfo, TestQueueInfoSize, TestWaitEvents
from ._context import TestContext, TestContextOwnership
from ._memory_main import TestMemAllocAligned, TestMemAllocHost, TestMemIsAccessible, TestMemPrefetch
from ._rect import TestMemcpyRect, TestMemcpyRectUpstream
from ._main_level import TestMainLevelSemantics, TestMemFillValidationOff
from ._teardown import TEARDOWN_LIMIT_S as TEARDOWN_LIMIT_S, TestTeardown  # noqa: F401 (the contract's bound)
from ._api_main import (
    TestCooperativeLaunch,
    TestEventFlags,
    TestIterateCompatibleDevices,
    TestIteratePlatforms,
    TestIterateSymbols,
    TestLaunchKernelCooperative,
    TestLaunchPerArgument,
    TestSymbolName,
)

__all__ = [
    "TestInit",
    "TestPlatformInfo",
    "TestPlatformInfoSize",
    "TestIterateDevices",
    "TestDeviceInfo",
    "TestDeviceInfoSize",
    "TestMemAlloc",
    "TestMemFree",
    "TestMemcpy",
    "TestMemcpyGlobal",
    "TestMemFill",
    "TestMemInfo",
    "TestMemInfoSize",
    "TestMemRegister",
    "TestQueue",
    "TestQueueInfo",
    "TestQueueInfoSize",
    "TestWaitEvents",
    "TestHostFunction",
    "TestEvent",
    "TestEventInfo",
    "TestEventInfoSize",
    "TestEventElapsedTime",
    "TestProgram",
    "TestIsValidBinary",
    "TestSymbol",
    "TestSymbolInfo",
    "TestSymbolInfoSize",
    "TestLaunchKernel",
    "TestSingleCounter",
    "TestOccupancy",
    "TestKernelParams",
    "TestCapabilities",
    "TestAbsentFeatures",
    # liboffload main (issue 17)
    "TestContext",
    "TestContextOwnership",
    "TestMemAllocHost",
    "TestMemAllocAligned",
    "TestMemPrefetch",
    "TestMemcpyRect",
    "TestMemcpyRectUpstream",
    "TestMemIsAccessible",
    "TestIteratePlatforms",
    "TestIterateCompatibleDevices",
    "TestIterateSymbols",
    "TestSymbolName",
    "TestLaunchPerArgument",
    "TestCooperativeLaunch",
    "TestLaunchKernelCooperative",
    "TestEventFlags",
    "TestEventElapsedTimeProfiling",
    "TestMainLevelSemantics",
    "TestMemFillValidationOff",
    # issue 34
    "TestTeardown",
]
