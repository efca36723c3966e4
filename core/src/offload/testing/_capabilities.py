"""``Capabilities``: what a backend supports, derived from its hooks where that can be seen.

Every optional hook group of ``offload.hookspecs`` is one flag. A flag left ``None`` (the default)
is derived from the hooks the backend serves (``FEATURES``): the hooks its class defines, or,
where the device decides at ``init``, those its ``served_hooks`` hook names then (the kit resolves
the flags from the live platform, after ``init``). An author declares only what the hooks cannot
show: a hook that exists but a feature that is limited (``False``), or a fact about the device
(``zero_info``, ``dtor_out``, ``binary``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from offload import DeviceInfo

__all__ = ["FEATURES", "Feature", "Capabilities"]


@dataclass(frozen=True)
class Feature:
    """One optional feature: the hooks that provide it and the features it builds on."""

    flag: str
    #: The hooks that provide the feature (all of them; with ``any_hook``, at least one).
    hooks: tuple[str, ...]
    #: Flags that must be True for this one to be (e.g. events need queues).
    needs: tuple[str, ...] = ()
    #: True when one of ``hooks`` suffices.
    any_hook: bool = False
    #: Another flag that provides the feature when the hooks are absent (the core's fallback).
    fallback: str | None = None

    def provided_by(self, implemented: Collection[str]) -> bool:
        if not self.hooks:
            return True
        found = [hook in implemented for hook in self.hooks]
        return any(found) if self.any_hook else all(found)


#: Every optional feature, in dependency order (a flag's ``needs`` come before it).
FEATURES: tuple[Feature, ...] = (
    Feature("memory", ("mem_alloc", "mem_free")),
    Feature("managed_memory", (), needs=("memory",)),
    Feature("host_memory", (), needs=("memory",)),
    Feature("copies", ("data_submit", "data_retrieve")),
    Feature("device_to_device", ("data_exchange",), fallback="copies"),
    Feature("fill", ("data_fill",)),
    Feature("mem_register", ("mem_register", "mem_unregister")),
    Feature("queues", ("create_queue",)),
    Feature("queued_fill", (), needs=("fill", "queues")),
    Feature("host_functions", ("enqueue_host_call",), needs=("queues",)),
    Feature("events", ("create_event", "wait_event", "is_event_complete", "sync_event"), needs=("queues",)),
    Feature("events_elapsed_time", ("event_elapsed_time",), needs=("events",)),
    Feature("programs", ("get_kernel", "get_global"), any_hook=True),
    Feature("globals", ("get_global",), needs=("programs",)),
    Feature("constructors", (), needs=("programs",)),
    Feature("kernel_params", ("kernel_params",), needs=("programs",)),
    Feature("kernel_launch", ("get_kernel", "launch_kernel"), needs=("programs",)),
    Feature("occupancy", ("get_kernel", "max_group_size"), needs=("programs",)),
    Feature(
        "cooperative_launch", ("launch_kernel_cooperative", "max_cooperative_groups"), needs=("kernel_launch",)
    ),
    Feature("iterate_symbols", ("symbol_names",), needs=("programs",)),
    Feature("aligned_alloc", ("mem_alloc_aligned",), needs=("memory",)),
    Feature("prefetch", ("mem_prefetch",), needs=("memory", "queues")),
)
_BY_FLAG = {feature.flag: feature for feature in FEATURES}


class Capabilities:
    """What a backend supports, for the conformance suite (subclass it, set what you must).

    Each feature flag is ``None`` (derived from the hooks the backend implements: see ``FEATURES``),
    ``True`` (the suite insists: ``OL_ERRC_UNSUPPORTED`` then fails the test) or ``False`` (the
    feature's tests skip naming this flag, and ``TestAbsentFeatures`` checks that the API answers
    ``OL_ERRC_UNSUPPORTED`` for it). The suite sees the resolved copy (``resolve``), where every
    flag is a bool.
    """

    #: ``olMemAlloc`` / ``olMemFree`` (hooks ``mem_alloc``, ``mem_free``).
    memory: bool | None = None
    #: ``OL_ALLOC_TYPE_MANAGED`` memory exists and is readable from the host (declare False when
    #: ``mem_alloc`` answers UNSUPPORTED for it).
    managed_memory: bool | None = None
    #: ``OL_ALLOC_TYPE_HOST`` memory exists (declare False when ``mem_alloc`` answers UNSUPPORTED).
    host_memory: bool | None = None
    #: ``olMemcpy`` between host and device memory (``data_submit``, ``data_retrieve``).
    copies: bool | None = None
    #: ``olMemcpy`` between device memory (``data_exchange``, or the core's bounce through host).
    device_to_device: bool | None = None
    #: ``olMemFill`` (``data_fill``).
    fill: bool | None = None
    #: ``olMemRegister`` / ``olMemUnregister`` (``mem_register``, ``mem_unregister``).
    mem_register: bool | None = None
    #: ``olCreateQueue`` (``create_queue``).
    queues: bool | None = None
    #: ``olMemFill`` on a queue is ordered behind earlier work of the queue (the Enqueue cases).
    queued_fill: bool | None = None
    #: ``olLaunchHostFunction`` runs callbacks in queue order (``enqueue_host_call``).
    host_functions: bool | None = None
    #: ``olCreateEvent``, ``olSyncEvent``, ``olWaitEvents``, event info (``create_event``,
    #: ``wait_event``, ``is_event_complete``, ``sync_event``).
    events: bool | None = None
    #: ``olGetEventElapsedTime`` (``event_elapsed_time``).
    events_elapsed_time: bool | None = None
    #: Programs with symbols: ``olGetSymbol`` (``get_kernel`` or ``get_global``) on ``binary()``
    #: programs. Without it ``load_binary`` refuses every image (``INVALID_BINARY``).
    programs: bool | None = None
    #: Global variables: ``olGetSymbol(..., GLOBAL_VARIABLE)`` gives an address and size
    #: (``get_global``); the ``global`` and ``byte`` programs' variables are read and written.
    #: Without it, asking for a global variable answers ``OL_ERRC_UNSUPPORTED``.
    globals: bool | None = None
    #: Global constructors run at ``olCreateProgram`` and destructors at ``olDestroyProgram``
    #: (programs ``global_ctor``, ``global_dtor``); declare False for a program format without
    #: them (OpenCL C): those programs are then never asked for.
    constructors: bool | None = None
    #: The ``kernel_params`` hook describes kernel parameters (checked against the test programs).
    kernel_params: bool | None = None
    #: ``olLaunchKernel`` runs kernels of ``binary()`` programs (``get_kernel``, ``launch_kernel``).
    kernel_launch: bool | None = None
    #: ``olCalculateOptimalOccupancy`` (``max_group_size``).
    occupancy: bool | None = None
    #: Cooperative launches (``KernelLaunchPropType.IS_COOPERATIVE``: every group resident, a grid
    #: barrier synchronises them) and ``olGetKernelMaxCooperativeGroupCount``
    #: (``launch_kernel_cooperative``, ``max_cooperative_groups``).
    cooperative_launch: bool | None = None
    #: ``olIterateSymbols`` (``symbol_names``).
    iterate_symbols: bool | None = None
    #: ``olMemAllocAligned`` beyond the alignment ``mem_alloc`` happens to give (``mem_alloc_aligned``).
    aligned_alloc: bool | None = None
    #: ``olMemPrefetch`` reaches the device (``mem_prefetch``; without it the hint is ignored).
    prefetch: bool | None = None
    #: the ``global_dtor`` program exports ``uint32_t *dtor_out`` and its destructor writes 64
    #: ones there, so the suite can observe that ``olDestroyProgram`` ran the destructor.
    dtor_out: bool = False
    #: Device properties that may legitimately read 0 on this device (value checks are ``> 0``
    #: otherwise), e.g. ``MEMORY_CLOCK_RATE`` when the firmware hides it.
    zero_info: frozenset[DeviceInfo] = frozenset()

    #: Where the default ``binary()`` finds the test programs: the environment variable naming a
    #: folder that holds ``<name><programs_suffix>`` for each (None: no programs).
    programs_env: str | None = None
    programs_suffix: str = ""
    #: The test programs' symbol names as this backend's programs spell them, where they differ
    #: (``{"global": "global_"}``: ``global`` is a keyword of OpenCL C); see ``symbol``.
    symbol_aliases: dict[str, str] = {}

    #: Set on the copy ``resolve`` returns: flag -> why it is False.
    _absent: dict[str, str] | None = None

    def binary(self, name: str) -> bytes | None:
        """The program bytes of liboffload's test program ``name`` for this backend, or None:
        by default ``$<programs_env>/<name><programs_suffix>``, None when unset or absent."""
        folder = os.environ.get(self.programs_env) if self.programs_env else None
        if not folder:
            return None
        path = Path(folder) / f"{name}{self.programs_suffix}"
        return path.read_bytes() if path.is_file() else None

    def symbol(self, name: str) -> str:
        """The name under which this backend's test programs export liboffload's symbol ``name``
        (``symbol_aliases``, else ``name``): the kit asks ``olGetSymbol`` for this name."""
        return self.symbol_aliases.get(name, name)

    def resolve(self, implemented: Collection[str]) -> Capabilities:
        """A copy with every ``None`` flag derived from the hooks in ``implemented``.

        A flag is derived True when its hooks are implemented (or its ``fallback`` is True) and
        every flag it ``needs`` is True. The copy remembers why each False flag is False.
        """
        resolved = copy.copy(self)
        absent: dict[str, str] = {}
        for feature in FEATURES:
            declared = getattr(self, feature.flag)
            if declared is not None:
                setattr(resolved, feature.flag, bool(declared))
                if not declared:
                    absent[feature.flag] = f"declared False by {type(self).__name__}"
                continue
            missing_needs = [need for need in feature.needs if not getattr(resolved, need)]
            if missing_needs:
                value, why = False, " and ".join(f"capabilities.{n} is False" for n in missing_needs)
            elif feature.provided_by(implemented):
                value, why = True, ""
            elif feature.fallback is not None and getattr(resolved, feature.fallback):
                value, why = True, ""
            else:
                lacking = [hook for hook in feature.hooks if hook not in implemented]
                value, why = False, "the backend does not implement " + ", ".join(lacking)
            setattr(resolved, feature.flag, value)
            if not value:
                absent[feature.flag] = why
        resolved._absent = absent
        return resolved

    def why_absent(self, flag: str) -> str:
        """``capabilities.<flag> is False (<why>)``, the reason every skip for that flag gives."""
        why = (self._absent or {}).get(flag, "declared False")
        return f"capabilities.{flag} is False ({why})"

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def feature(flag: str) -> Feature:
    """The ``Feature`` of ``flag`` (KeyError for a flag that is not an optional feature)."""
    return _BY_FLAG[flag]


def contradictions(capabilities: Capabilities, implemented: Collection[str]) -> list[str]:
    """Flags declared True that the hooks or other flags contradict (each a sentence)."""
    resolved = capabilities.resolve(implemented)
    found = []
    for feat in FEATURES:
        if getattr(capabilities, feat.flag) is not True:
            continue
        name = f"{type(capabilities).__name__}.{feat.flag} is True"
        provided = feat.provided_by(implemented) or (feat.fallback is not None and getattr(resolved, feat.fallback))
        if not provided:
            lacking = ", ".join(hook for hook in feat.hooks if hook not in implemented)
            found.append(f"{name} but the backend does not implement {lacking}")
        for need in feat.needs:
            if not getattr(resolved, need):
                found.append(f"{name} but it needs {resolved.why_absent(need)}")
    return found


def partial_groups(implemented: Collection[str]) -> list[str]:
    """Hook groups implemented in part (each a sentence): the group's feature is then absent
    although some of its hooks exist. Only hooks that belong to one feature count."""
    owners: dict[str, int] = {}
    for feat in FEATURES:
        for hook in feat.hooks:
            owners[hook] = owners.get(hook, 0) + 1
    found = []
    for feat in FEATURES:
        if feat.any_hook:
            continue
        own = [hook for hook in feat.hooks if owners[hook] == 1]
        present = [hook for hook in own if hook in implemented]
        if present and len(present) < len(own):
            lacking = ", ".join(hook for hook in own if hook not in implemented)
            found.append(f"{feat.flag}: the backend implements {', '.join(present)} but not {lacking}")
    return found
