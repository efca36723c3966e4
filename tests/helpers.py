"""Small helpers shared by the project's tests."""

from __future__ import annotations

from typing import Any

import offload as ol


def devices() -> list[ol.Device]:
    found: list[ol.Device] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    return found


class MinimalBackend:
    """The required hooks of a backend that runs nothing (subclasses override what they test):
    one device, no info, every program refused as INVALID_BINARY, queues always idle."""

    device_name = "minimal"

    @ol.hookimpl
    def init(self) -> list[Any]:
        return [self.device_name]

    @ol.hookimpl
    def deinit(self) -> None:
        pass

    @ol.hookimpl
    def get_device_info(self, device: Any) -> dict[Any, Any]:
        return {}

    @ol.hookimpl
    def load_binary(self, device: Any, data: bytes) -> Any:
        raise ol.OffloadError(ol.ErrorCode.INVALID_BINARY, f"{type(self).__name__} runs no programs")

    @ol.hookimpl
    def unload_binary(self, device: Any, image: Any) -> None:
        pass

    @ol.hookimpl
    def synchronize(self, device: Any, queue: Any, release: bool) -> None:
        pass

    @ol.hookimpl
    def has_pending_work(self, device: Any, queue: Any) -> bool:
        return False


#: The start of a child process's code on the host device: `ol` and `offload_host` imported,
#: olInit done, `host` the host device, `load_kernel(name)` -> (program, kernel) of a test kernel.
HOST_CHILD_PRELUDE = r"""
import offload as ol, offload_host

ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]


def load_kernel(name):
    program = ol.olCreateProgram(host, offload_host.build_test_kernel(name))
    return program, ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL)
"""
