"""One backend bound: its hook implementations looked up once (``BoundBackend``), so per-call
dispatch never goes through pluggy, and ``BackendStatus``, what happened to it at ``olInit``
(``registry`` discovers, instantiates and binds the backends).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from .. import hookspecs
from .._values.enums import ErrorCode, PlatformBackend, PlatformInfo
from .._values.errors import OffloadError

if TYPE_CHECKING:
    from .._values.enums import AllocType, DeviceInfo, MemMigrationFlag, SymbolKind
    from .._values.types import KernelLaunchSizeArgs, KernelParam
    from ..hookspecs import NativeDevice, NativeEvent, NativeKernel, NativeProgram, NativeQueue

__all__ = ["BackendStatus", "BoundBackend"]

_BACKEND_KINDS = {
    "cuda": PlatformBackend.CUDA,
    "amdgpu": PlatformBackend.AMDGPU,
    "level_zero": PlatformBackend.LEVEL_ZERO,
    "host": PlatformBackend.HOST,
}



@dataclass
class BackendStatus:
    """What happened to one discovered backend at the last ``olInit``."""

    name: str
    distribution: str | None  # None for an in-process registration
    version: str | None
    loaded: bool = False
    reason: str | None = None  # why it was not loaded
    device_count: int = 0
    note: str | None = None  # a loaded backend's word on why it has no devices (``no_devices_reason``)


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _unsupported(backend_name: str, hook: str, why: str = "") -> Callable[..., Any]:
    because = f": {why}" if why else ""

    def missing(*args: Any) -> Any:
        raise OffloadError(ErrorCode.UNSUPPORTED, f"backend {backend_name!r} does not implement {hook!r}{because}")

    return missing


def _adapt(function: Callable[..., Any], spec_args: tuple[str, ...], impl_args: tuple[str, ...]) -> Callable[..., Any]:
    """Call an implementation that takes a subset of the spec's arguments with the full list."""
    if impl_args == spec_args:
        return function
    picks = tuple(spec_args.index(a) for a in impl_args)
    return lambda *args: function(*(args[i] for i in picks))


class BoundBackend:
    """One backend's implementations, looked up once: ``bound.launch_kernel(...)`` calls it directly."""

    name: str
    kind: PlatformBackend
    plugin: Any
    status: BackendStatus
    implemented: frozenset[str]
    platform_values: dict[PlatformInfo, str]

    def __init__(self, name: str, plugin: Any, pm: pluggy.PluginManager, status: BackendStatus) -> None:
        self.name = name
        self.kind = _BACKEND_KINDS.get(name, PlatformBackend.UNKNOWN)
        self.plugin = plugin
        self.status = status
        #: the backend's ``platform_info`` answer (asked once at ``olInit``), empty without the hook
        self.platform_values: dict[PlatformInfo, str] = {}
        implemented = set()
        for caller in pm.get_hookcallers(plugin) or ():
            if caller.spec is None:
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT, f"backend {name!r} implements {caller.name!r}, which is not an offload hook"
                )
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    setattr(self, caller.name, _adapt(impl.function, caller.spec.argnames, impl.argnames))
                    implemented.add(caller.name)
        missing = hookspecs.REQUIRED_HOOKS - implemented
        if missing:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT, f"backend {name!r} lacks required hooks: {', '.join(sorted(missing))}"
            )
        for hook in hookspecs.HOOK_NAMES:
            if hook not in implemented:
                setattr(self, hook, _unsupported(name, hook))
        self.implemented = frozenset(implemented)

    def narrow(self, served: Any) -> None:
        """Keep only the optional hooks in ``served`` (the ``served_hooks`` answer after ``init``):
        every other one is bound as missing (``UNSUPPORTED`` naming the backend and the hook)."""
        if served is None:
            return
        if isinstance(served, str) or not all(isinstance(hook, str) for hook in served):
            raise OffloadError(ErrorCode.INVALID_VALUE, f"served_hooks must give hook names (str), got {served!r}")
        served = frozenset(served) | hookspecs.REQUIRED_HOOKS | {"served_hooks"}
        unknown = served - self.implemented
        if unknown:
            raise OffloadError(
                ErrorCode.INVALID_VALUE,
                f"served_hooks names hooks backend {self.name!r} does not implement: {', '.join(sorted(unknown))}",
            )
        for hook in self.implemented - served:
            setattr(self, hook, _unsupported(self.name, hook, "it does not serve it on this device (served_hooks)"))
        self.implemented = frozenset(served)

    def __repr__(self) -> str:
        return f"<BoundBackend {self.name!r}>"

    if TYPE_CHECKING:  # every hook of offload.hookspecs is bound as an attribute, typed as its spec
        init: Callable[[], Sequence[NativeDevice]]
        served_hooks: Callable[[], Collection[str] | None]
        no_devices_reason: Callable[[], str | None]
        platform_info: Callable[[], Mapping[PlatformInfo, str]]
        deinit: Callable[[], None]
        deinit_device: Callable[[NativeDevice], None]
        get_device_info: Callable[[NativeDevice], Mapping[DeviceInfo, Any]]
        is_valid_binary: Callable[[NativeDevice, bytes], bool]
        load_binary: Callable[[NativeDevice, bytes], NativeProgram]
        unload_binary: Callable[[NativeDevice, NativeProgram], None]
        build_target: Callable[[NativeDevice], str]
        build_source: Callable[[NativeDevice, str, Sequence[str]], bytes]
        foreign_stream_wait: Callable[[NativeDevice, int, NativeEvent], None]
        foreign_stream_sync: Callable[[NativeDevice, int], None]
        queue_stream: Callable[[NativeDevice, NativeQueue], int]
        adopt_stream: Callable[[NativeDevice, int], NativeQueue]
        get_kernel: Callable[[NativeDevice, NativeProgram, str], NativeKernel]
        get_global: Callable[[NativeDevice, NativeProgram, str], tuple[int, int]]
        kernel_params: Callable[[NativeDevice, NativeKernel], Sequence[KernelParam] | None]
        max_group_size: Callable[[NativeDevice, NativeKernel, int], int]
        launch_kernel: Callable[[NativeDevice, NativeQueue | None, NativeKernel, Any, KernelLaunchSizeArgs], None]
        mem_alloc: Callable[[NativeDevice, AllocType, int], int]
        mem_free: Callable[[NativeDevice, int, AllocType], None]
        mem_alloc_async: Callable[[NativeDevice, NativeQueue, AllocType, int], int]
        mem_free_async: Callable[[NativeDevice, NativeQueue, int], None]
        mem_register: Callable[[NativeDevice, int, int, bool], int]
        mem_unregister: Callable[[NativeDevice, int, int, bool], None]
        data_submit: Callable[[NativeDevice, int, int, int, NativeQueue | None], None]
        data_retrieve: Callable[[NativeDevice, int, int, int, NativeQueue | None], None]
        data_exchange: Callable[[NativeDevice, int, NativeDevice, int, int, NativeQueue | None], None]
        data_fill: Callable[[NativeDevice, int, bytes, int, NativeQueue | None], None]
        data_copy_rect: Callable[
            [NativeDevice, int, tuple[int, int], int, tuple[int, int], tuple[int, int, int], NativeQueue | None], None
        ]
        create_queue: Callable[[NativeDevice], NativeQueue]
        synchronize: Callable[[NativeDevice, NativeQueue, bool], None]
        has_pending_work: Callable[[NativeDevice, NativeQueue], bool]
        enqueue_host_call: Callable[[NativeDevice, NativeQueue, Callable[[], None]], None]
        create_event: Callable[[NativeDevice, NativeQueue], NativeEvent]
        destroy_event: Callable[[NativeDevice, NativeEvent], None]
        wait_event: Callable[[NativeDevice, NativeQueue, NativeEvent], None]
        is_event_complete: Callable[[NativeDevice, NativeEvent], bool]
        sync_event: Callable[[NativeDevice, NativeEvent, NativeQueue | None], None]
        event_elapsed_time: Callable[[NativeDevice, NativeEvent, NativeEvent], float]
        native_entry_points: Callable[[NativeDevice], Any]
        native_word: Callable[[NativeDevice, Any], int | None]
        launch_kernel_cooperative: Callable[
            [NativeDevice, NativeQueue | None, NativeKernel, bytes | None, KernelLaunchSizeArgs], None
        ]
        max_cooperative_groups: Callable[[NativeDevice, NativeKernel, KernelLaunchSizeArgs], int]
        symbol_names: Callable[[NativeDevice, NativeProgram, SymbolKind], Sequence[str]]
        mem_alloc_aligned: Callable[[NativeDevice, AllocType, int, int], int]
        mem_prefetch: Callable[[NativeDevice, NativeQueue, int, int, MemMigrationFlag], None]
