"""The conformance suite: ``from offload.testing.suite import *`` in a test module runs it.

Every test class is re-exported here (and only test classes), so that pytest collects them in
the module that star-imports this package. See ``offload.testing`` for the setup.
"""

from __future__ import annotations

from ._device import TestDeviceInfo, TestDeviceInfoSize, TestIterateDevices
from ._init import TestInit
from ._platform import TestPlatformInfo, TestPlatformInfoSize

__all__ = [
    "TestInit",
    "TestPlatformInfo",
    "TestPlatformInfoSize",
    "TestIterateDevices",
    "TestDeviceInfo",
    "TestDeviceInfoSize",
]
