"""In-process test backends for the object layer's tests (registered with offload.register_backend).

``ReportingHostBackend`` is the real host backend (real memory, real dlopen'd kernels) that also
implements the ``kernel_params`` hook from a table given by the test, as a backend that can read
its kernels' parameter layout does (CUDA's cuFuncGetParamInfo, AMDGPU's code-object metadata).
Registered under the platform name "cuda" or "amdgpu" it also shows the DLPack device types the
layer gives those platforms; its memory is host memory, so numpy can check what it accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from offload import KernelLaunchSizeArgs, KernelParam, hookimpl
from offload_host import HostBackend


class ReportingHostBackend(HostBackend):
    """The host backend plus ``kernel_params`` answered from ``layouts`` (kernel name -> params)."""

    def __init__(self, layouts: Mapping[str, Sequence[KernelParam] | None | Exception] | None = None) -> None:
        self.layouts = dict(layouts or {})

    @hookimpl
    def get_kernel(self, device: Any, image: Any, name: str) -> tuple[str, int]:
        return (name, HostBackend.get_kernel(self, device, image, name))

    @hookimpl
    def kernel_params(self, device: Any, kernel: tuple[str, int]) -> Sequence[KernelParam] | None:
        layout = self.layouts.get(kernel[0])
        if isinstance(layout, Exception):
            raise layout
        return layout

    @hookimpl
    def launch_kernel(
        self, device: Any, queue: Any, kernel: tuple[str, int], args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        HostBackend.launch_kernel(self, device, queue, kernel[1], args, launch)
