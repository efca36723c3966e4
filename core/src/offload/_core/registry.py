"""Backend discovery and binding.

Backends come from the entry-point group ``offload.backends`` (scanned at each fresh ``olInit``;
nothing is imported at ``import offload``) and from ``register_backend`` (in-process; it wins over
an entry point of the same name). ``OFFLOAD_BACKENDS=a,b`` selects by name. Each backend is
instantiated, registered with a fresh pluggy ``PluginManager`` (which validates the hookimpls),
bound (its implementations looked up once, so per-call dispatch never goes through
``pm.hook``) and initialised. A failure at any step skips that backend with its reason kept and
warned once; ``OFFLOAD_BACKENDS_STRICT`` makes it raise instead.

A name in ``OFFLOAD_BACKENDS`` that matches no discovered backend is reported: warned once
(``OffloadBackendWarning``), or under ``OFFLOAD_BACKENDS_STRICT`` an ``OL_ERRC_NOT_FOUND`` from
``olInit``. ``last_selection()`` tells the backends filtered out by the variable from the names
that are not installed (``offload backends`` prints both).
"""

from __future__ import annotations

import inspect
import os
import threading
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from .. import hookspecs
from .installed import entry_points
from .._values.enums import ErrorCode, PlatformBackend, PlatformInfo
from .._values.errors import OffloadError, as_offload_error, join_errors

if TYPE_CHECKING:
    from .._values.enums import AllocType, DeviceInfo, MemMigrationFlag, SymbolKind
    from .._values.types import KernelLaunchSizeArgs, KernelParam
    from ..hookspecs import NativeDevice, NativeEvent, NativeKernel, NativeProgram, NativeQueue

ENTRY_POINT_GROUP = "offload.backends"
SELECT_ENV = "OFFLOAD_BACKENDS"
STRICT_ENV = "OFFLOAD_BACKENDS_STRICT"

_BACKEND_KINDS = {
    "cuda": PlatformBackend.CUDA,
    "amdgpu": PlatformBackend.AMDGPU,
    "level_zero": PlatformBackend.LEVEL_ZERO,
    "host": PlatformBackend.HOST,
}


class OffloadBackendWarning(UserWarning):
    """A discovered backend could not be loaded and was skipped, or ``OFFLOAD_BACKENDS`` names one not installed."""


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


@dataclass(frozen=True)
class Selection:
    """How ``OFFLOAD_BACKENDS`` applied at the last discovery (``setting`` None: variable unset)."""

    setting: str | None
    filtered_out: tuple[str, ...] = ()  # discovered backends the variable did not name
    not_installed: tuple[str, ...] = ()  # names in the variable that match no discovered backend


@dataclass
class _Candidate:
    name: str
    load: Callable[[], Any]  # returns the factory or backend object
    distribution: str | None
    version: str | None


_registered: dict[str, Any] = {}
_registered_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()
_last_selection = Selection(None)


def last_selection() -> Selection:
    """How ``OFFLOAD_BACKENDS`` filtered the backends at the last fresh ``olInit``."""
    return _last_selection


def register_backend(name: str, backend: Any) -> None:
    """Register a backend in-process for the next fresh ``olInit`` (tests, frozen applications).

    ``backend`` is a zero-argument factory (a class works), called at every fresh ``olInit``, or
    an already-made backend object (a module or instance with hookimpls), reused each time.
    """
    if not isinstance(name, str) or not name:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"backend name must be a non-empty str, got {name!r}")
    with _registered_lock:
        _registered[name] = backend


def registered_backend(name: str) -> Any:
    """The object ``register_backend(name, ...)`` registered in this process, or None."""
    with _registered_lock:
        return _registered.get(name)


def unregister_backend(name: str) -> None:
    """Forget an in-process registration (``NOT_FOUND`` if there is none)."""
    with _registered_lock:
        if _registered.pop(name, None) is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no backend named {name!r} is registered in-process")


def _candidates(strict: bool = False) -> list[_Candidate]:
    """Every discovered backend that ``OFFLOAD_BACKENDS`` selects (records ``last_selection``)."""
    global _last_selection
    found: dict[str, _Candidate] = {}
    for ep in entry_points(ENTRY_POINT_GROUP):
        found.setdefault(ep.name, _Candidate(ep.name, ep.load, ep.dist_name, ep.dist_version))
    with _registered_lock:
        for name, backend in _registered.items():
            found[name] = _Candidate(name, _constant(backend), None, None)
    setting = os.environ.get(SELECT_ENV)
    if setting is None:
        _last_selection = Selection(None)
    else:
        wanted = [n.strip() for n in setting.split(",") if n.strip()]
        unknown = tuple(dict.fromkeys(n for n in wanted if n not in found))
        _last_selection = Selection(setting, tuple(sorted(n for n in found if n not in wanted)), unknown)
        found = {n: c for n, c in found.items() if n in wanted}
        if unknown:
            _report_unknown(unknown, sorted([*found, *_last_selection.filtered_out]), strict)
    return sorted(found.values(), key=lambda c: (c.name == "host", c.name))


def _report_unknown(unknown: tuple[str, ...], discovered: list[str], strict: bool) -> None:
    names = ", ".join(repr(n) for n in unknown)
    message = (
        f"{SELECT_ENV} names {names}, which no installed backend provides "
        f"(discovered: {', '.join(discovered) or 'none'})"
    )
    if strict:
        raise OffloadError(ErrorCode.NOT_FOUND, message)
    key = ("", message)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, OffloadBackendWarning, stacklevel=6)


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


def _instantiate(backend: Any) -> Any:
    if inspect.isclass(backend) or inspect.isfunction(backend) or inspect.ismethod(backend):
        return backend()
    return backend


def _skip(status: BackendStatus, error: BaseException, strict: bool) -> None:
    status.reason = str(error)
    if strict:
        raise as_offload_error(error, f"backend {status.name!r}")
    key = (status.name, status.reason)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"offload backend {status.name!r} skipped: {status.reason}", OffloadBackendWarning, stacklevel=4)


def release_backend(
    bound: BoundBackend, natives: list[Any], interrupts: list[BaseException] | None = None
) -> list[OffloadError]:
    """``deinit_device`` every device, then ``deinit``; return every failure (none dropped).

    With ``interrupts``, a ``BaseException`` from a hook is kept there and the release goes on.
    """
    errors: list[OffloadError] = []
    calls: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = []
    if "deinit_device" in bound.implemented:
        calls += [("deinit_device", bound.deinit_device, (native,)) for native in natives]
    calls.append(("deinit", bound.deinit, ()))
    for hook, call, args in calls:
        try:
            call(*args)
        except Exception as exc:
            errors.append(as_offload_error(exc, f"{bound.name}: {hook}"))
        except BaseException as exc:  # noqa: B036 - kept for the caller to re-raise
            if interrupts is None:
                raise
            if isinstance(exc, BaseExceptionGroup):
                matched, rest = exc.split(Exception)
                if matched is not None:
                    errors.append(as_offload_error(matched, f"{bound.name}: {hook}"))
                exc = rest if rest is not None else exc
            interrupts.append(exc)
    return errors


Loaded = tuple[BoundBackend, list[Any], list[dict[Any, Any]]]  # backend, native devices, their info


def platform_selected(name: str, platforms: tuple[Any, ...] | None) -> bool:
    """Whether ``olInit``'s ``InitArgs.platforms`` brings up the backend ``name`` (None: all; the
    host platform always, as liboffload does). Items are ``PlatformBackend`` values or names."""
    if platforms is None or name == "host":
        return True
    kind = _BACKEND_KINDS.get(name, PlatformBackend.UNKNOWN)
    return any(p == name if isinstance(p, str) else p == kind for p in platforms)


def _platform_values(values: Mapping[Any, Any]) -> dict[PlatformInfo, str]:
    """A backend's ``platform_info`` answer, checked: VENDOR_NAME and VERSION, as ``str``."""
    checked: dict[PlatformInfo, str] = {}
    for prop, value in dict(values).items():
        if prop not in (PlatformInfo.VENDOR_NAME, PlatformInfo.VERSION) or type(prop) is not PlatformInfo:
            raise OffloadError(ErrorCode.INVALID_VALUE, f"platform_info may give VENDOR_NAME and VERSION, not {prop!r}")
        if not isinstance(value, str):
            raise OffloadError(ErrorCode.INVALID_VALUE, f"platform_info: {prop.name} must be a str, got {value!r}")
        checked[prop] = value
    return checked


def load_backends(platforms: tuple[Any, ...] | None = None) -> tuple[list[Loaded], list[BackendStatus]]:
    """Discover, bind, ``init`` every selected backend and ask each device's info once
    (``platforms``: only those ``platform_selected`` brings up).

    Returns the loaded backends with their native devices and device info, and a status for every
    discovered one. In strict mode the first failure raises (after releasing those already loaded).
    """
    strict = STRICT_ENV in os.environ
    loaded: list[Loaded] = []
    statuses: list[BackendStatus] = []
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    try:
        for candidate in _candidates(strict):
            if not platform_selected(candidate.name, platforms):
                continue
            status = BackendStatus(candidate.name, candidate.distribution, candidate.version)
            statuses.append(status)
            try:
                plugin = _instantiate(candidate.load())
                pm.register(plugin, name=candidate.name)
                try:
                    bound = BoundBackend(candidate.name, plugin, pm, status)
                finally:
                    pm.unregister(plugin)
                devices = list(bound.init())
            except Exception as exc:  # a broken backend must not break the others
                _skip(status, exc, strict)
                continue
            try:
                if "served_hooks" in bound.implemented:
                    bound.narrow(bound.served_hooks())
            except Exception as exc:  # initialised, so release it before skipping it
                failure = as_offload_error(exc, "served_hooks")
                _skip(status, join_errors([failure, *release_backend(bound, devices)]) or failure, strict)
                continue
            try:
                infos = [dict(bound.get_device_info(native)) for native in devices]
                if "platform_info" in bound.implemented:
                    bound.platform_values = _platform_values(bound.platform_info())
            except Exception as exc:  # initialised, so release it before skipping it
                failure = as_offload_error(exc, "get_device_info or platform_info")
                _skip(status, join_errors([failure, *release_backend(bound, devices)]) or failure, strict)
                continue
            status.loaded = True
            status.device_count = len(devices)
            if "no_devices_reason" in bound.implemented:
                try:
                    status.note = bound.no_devices_reason() or None
                except Exception as exc:  # the note is informative only: keep what went wrong
                    status.note = f"no_devices_reason failed: {as_offload_error(exc, 'no_devices_reason')}"
            loaded.append((bound, devices, infos))
    except BaseException:
        for bound, devices, _ in loaded:
            release_backend(bound, devices)  # the failure being raised is the one to report
        raise
    return loaded, statuses
