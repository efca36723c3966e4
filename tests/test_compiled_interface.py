"""The compiled path reads a declared, versioned interface (``offload._compiled.interface``) and
replays the verdicts the Python definitions publish, nothing else (issue 30):

- the extension's own table of fields and its version equal the Python declaration, and the
  classes playing each role declare those fields;
- ``configure`` refuses another version, other fields, or a class without a declared field (in a
  child that loads the extension alone, before offload configures it);
- a verdict is replayed only for the objects it was published for: the same copy on another
  queue, or after the allocation map changed, goes to the Python definition again;
- the publish functions refuse malformed verdicts.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import textwrap

import pytest

import offload as ol
from offload._compiled import interface
from offload._core import native as _native_entry
from offload._core.allocations import AllocationMap
from offload._core.handles import DeviceHandle, QueueHandle, SymbolHandle, _Handle
from offload._core.session import STATE, Session

needs_compiled = pytest.mark.skipif(
    not _native_entry.ENABLED, reason="the compiled path is off here (OFFLOAD_COMPILED=0, or offload._compiled._fastpath not built)"
)

ROLES = {"state": type(STATE), "session": Session, "allocation_map": AllocationMap, "handle": _Handle,
         "device": DeviceHandle, "queue": QueueHandle, "symbol": SymbolHandle}  # fmt: skip


def test_every_role_declares_its_fields_as_slots() -> None:
    assert set(interface.FIELDS) == set(ROLES)
    for role, names in interface.FIELDS.items():
        slots = ROLES[role].__slots__
        assert tuple(slots[: len(names)]) == names, (role, slots)  # declared first, in the table's order


@needs_compiled
def test_the_extension_reads_exactly_the_declaration() -> None:
    fastpath = _native_entry._fastpath
    assert fastpath.INTERFACE_VERSION == interface.VERSION
    assert fastpath.fields() == interface.FIELDS
    assert fastpath.COMPILED == ("olLaunchKernel", "olMemcpy", "olMemFill", "olSyncQueue", "olQueryQueue")


PROBE = """
import importlib.machinery, importlib.util, json, pathlib, sys
root = pathlib.Path(importlib.util.find_spec("offload").origin).parent / "_compiled"
path = next(p for p in root.iterdir() if p.name.startswith("_fastpath") and p.suffix == ".so")
spec = importlib.util.spec_from_file_location("probe._fastpath", path)
fp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fp)
fields = fp.fields()
class Slotted:
    __slots__ = tuple(sorted({n for names in fields.values() for n in names}))
class Missing:
    __slots__ = ("_ctx",)
def config(version=fp.INTERFACE_VERSION, fields=fields, device=Slotted):
    types = {"session": Slotted, "allocation_map": Slotted, "device": device, "queue": Slotted, "symbol": Slotted}
    objects = {"state": Slotted(), "hot": [None] * 4, "OffloadError": Exception, "as_offload_error": print}
    return {"version": version, "fields": fields, "types": types, "objects": objects}
out = {}
for name, cfg in (("version", config(version=fp.INTERFACE_VERSION + 1)),
                  ("fields", config(fields={**fields, "queue": ("device",)})),
                  ("missing", config(device=Missing))):
    try:
        fp.configure(cfg)
        out[name] = None
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


@needs_compiled
def test_configure_refuses_another_version_other_fields_and_a_class_without_them() -> None:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["version"][0] == "ImportError" and "interface version" in out["version"][1]
    assert out["fields"][0] == "ImportError" and "FIELDS" in out["fields"][1]
    assert out["missing"][0] == "TypeError" and "role device" in out["missing"][1] and "backend" in out["missing"][1]


@needs_compiled
def test_a_route_is_replayed_only_for_its_own_queue_and_snapshot() -> None:
    ol.olInit()
    try:
        found: list[ol.DeviceHandle] = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        host = next(d for d in found if d.is_host)
        buf = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
        src = (ctypes.c_char * 64)(*b"x" * 64)
        s = ctypes.addressof(src)
        q1, q2 = ol.olCreateQueue(host), ol.olCreateQueue(host)
        dev = ol.olMemAlloc(host, ol.AllocType.DEVICE, 64)
        counts = ol.olMemcpy.counts

        def copy(queue: ol.QueueHandle | None) -> tuple[int, int]:
            before = dict(ol.olMemcpy.counts)
            ol.olMemcpy(queue, dev, host, s, host, 8)
            after = ol.olMemcpy.counts
            return after["fast"] - before["fast"], after["deferred"] - before["deferred"]

        assert counts is not None
        # host device memory is host memory: a queued copy between host memory is the Python
        # definition's (its HostCopy); a synchronous one is replayed once its route is published
        assert copy(None) == (0, 1) and copy(None) == (1, 0)
        assert copy(q1) == (0, 1) and copy(q1) == (0, 1)  # never replayed: a queued host copy
        ol.olSyncQueue(q1)
        other = ol.olMemAlloc(host, ol.AllocType.HOST, 8)  # a new snapshot: every route of the old one is dead
        assert copy(None) == (0, 1) and copy(None) == (1, 0)
        for address in (buf, dev, other):
            ol.olMemFree(address)
        for queue in (q1, q2):
            ol.olDestroyQueue(queue)
    finally:
        ol.olShutDown()


@needs_compiled
@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("publish_route", (None, None, None, None, 9, 0, 0, 0), "kind must be 0..3"),
        ("publish_route", (None, None, None, None, 0, -1, 0, 0), "limit must be an int"),
        ("publish_route", (None,), "takes 8 arguments"),
        ("publish_fill", (None, None, 1, "x", None), "hi must be an int"),
        ("publish_launch", (None,) * 5 + (0, (1, 1, 1), (1, 1, 1), -1, True), "dyn_shared_memory must be an int"),
    ],
)
def test_a_malformed_verdict_is_refused(name: str, args: tuple[object, ...], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        getattr(_native_entry._fastpath, name)(*args)
