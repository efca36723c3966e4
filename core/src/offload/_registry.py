"""Backend discovery and binding.

Backends come from the entry-point group ``offload.backends`` (scanned at each fresh ``olInit``;
nothing is imported at ``import offload``) and from ``register_backend`` (in-process; it wins over
an entry point of the same name). ``OFFLOAD_BACKENDS=a,b`` selects by name. Each backend is
instantiated, registered with a fresh pluggy ``PluginManager`` (which validates the hookimpls),
bound (its implementations looked up once, so per-call dispatch never goes through
``pm.hook``) and initialised. A failure at any step skips that backend with its reason kept and
warned once; ``OFFLOAD_BACKENDS_STRICT`` makes it raise instead.
"""

from __future__ import annotations

import inspect
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from . import hookspecs
from ._enums import ErrorCode, PlatformBackend
from ._errors import OffloadError, as_offload_error

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
    """A discovered backend could not be loaded and was skipped."""


@dataclass
class BackendStatus:
    """What happened to one discovered backend at the last ``olInit``."""

    name: str
    distribution: str | None  # None for an in-process registration
    version: str | None
    loaded: bool = False
    reason: str | None = None  # why it was not loaded
    device_count: int = 0


@dataclass
class _Candidate:
    name: str
    load: Callable[[], Any]  # returns the factory or backend object
    distribution: str | None
    version: str | None


_registered: dict[str, Any] = {}
_registered_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()


def register_backend(name: str, backend: Any) -> None:
    """Register a backend in-process for the next fresh ``olInit`` (tests, frozen applications).

    ``backend`` is a zero-argument factory (a class works), called at every fresh ``olInit``, or
    an already-made backend object (a module or instance with hookimpls), reused each time.
    """
    if not isinstance(name, str) or not name:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"backend name must be a non-empty str, got {name!r}")
    with _registered_lock:
        _registered[name] = backend


def unregister_backend(name: str) -> None:
    """Forget an in-process registration (``NOT_FOUND`` if there is none)."""
    with _registered_lock:
        if _registered.pop(name, None) is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no backend named {name!r} is registered in-process")


def _candidates() -> list[_Candidate]:
    from importlib.metadata import entry_points

    found: dict[str, _Candidate] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        found.setdefault(
            ep.name,
            _Candidate(ep.name, ep.load, dist.name if dist else None, dist.version if dist else None),
        )
    with _registered_lock:
        for name, backend in _registered.items():
            found[name] = _Candidate(name, _constant(backend), None, None)
    selected = os.environ.get(SELECT_ENV)
    if selected is not None:
        wanted = {n.strip() for n in selected.split(",") if n.strip()}
        found = {n: c for n, c in found.items() if n in wanted}
    return sorted(found.values(), key=lambda c: (c.name == "host", c.name))


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _unsupported(backend_name: str, hook: str) -> Callable[..., Any]:
    def missing(*args: Any) -> Any:
        raise OffloadError(ErrorCode.UNSUPPORTED, f"backend {backend_name!r} does not implement {hook!r}")

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

    def __init__(self, name: str, plugin: Any, pm: pluggy.PluginManager, status: BackendStatus) -> None:
        self.name = name
        self.kind = _BACKEND_KINDS.get(name, PlatformBackend.UNKNOWN)
        self.plugin = plugin
        self.status = status
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

    def __repr__(self) -> str:
        return f"<BoundBackend {self.name!r}>"

    if TYPE_CHECKING:  # every hook of offload.hookspecs is bound as an attribute

        def __getattr__(self, hook: str) -> Callable[..., Any]: ...


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


def load_backends() -> tuple[list[tuple[BoundBackend, list[Any]]], list[BackendStatus]]:
    """Discover, bind and ``init`` every selected backend.

    Returns the loaded backends with their native devices, and a status for every discovered one.
    In strict mode the first failure raises (after ``deinit`` of those already initialised).
    """
    strict = STRICT_ENV in os.environ
    loaded: list[tuple[BoundBackend, list[Any]]] = []
    statuses: list[BackendStatus] = []
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    try:
        for candidate in _candidates():
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
            status.loaded = True
            status.device_count = len(devices)
            loaded.append((bound, devices))
    except BaseException:
        for bound, _ in loaded:
            try:
                bound.deinit()
            except Exception:
                pass
        raise
    return loaded, statuses
