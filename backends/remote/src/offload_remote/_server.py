"""The server: offload's host backend in its own process (``python -m offload_remote._server
SOCKET``, the ``authkey`` in ``OFFLOAD_REMOTE_KEY``, hex), serving each connection on a thread of
its own. A request is a flat-API call by name (``("olMemAlloc", ("@dev", 0), ...)``: a device by
index, a program or symbol by the ``("@h", id)`` the server answered for it) or one of ``_OPS``
(the copies through host buffers, the symbol names, the exit). Replies are ``("ok", value)`` or
``("error", code, details)``. Its device pointers are its own host addresses: the client never
dereferences them."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from multiprocessing.connection import Connection, Listener
from typing import Any

import offload as ol

_devices: list[Any] = []
_handles: dict[int, Any] = {}  # id -> a program or symbol the client names by ("@h", id)


def _decode(arg: Any) -> Any:
    if type(arg) is tuple and arg[:1] == ("@dev",):
        return _devices[arg[1]]
    return _handles[arg[1]] if type(arg) is tuple and arg[:1] == ("@h",) else arg


def _encode(value: Any) -> Any:
    if isinstance(value, ol.Program | ol.Symbol):
        _handles[id(value)] = value
        return ("@h", id(value))
    return value


def _write(dev: Any, address: int, data: bytes) -> None:
    buffer = ctypes.create_string_buffer(data, len(data))
    ol.olMemcpy(None, address, dev, ctypes.addressof(buffer), dev, len(data))


def _read(dev: Any, address: int, size: int) -> bytes:
    buffer = ctypes.create_string_buffer(size)
    ol.olMemcpy(None, ctypes.addressof(buffer), dev, address, dev, size)
    return buffer.raw


def _names(program: Any, kind: Any) -> list[str]:
    found: list[str] = []
    ol.olIterateSymbols(program, kind, lambda symbol, _: found.append(symbol.name) or True, None)
    return found


def _unload(program: Any) -> None:
    ol.olDestroyProgram(program)
    _handles.pop(id(program))


def _info(dev: Any) -> dict[Any, Any]:
    """Every property the host backend answers for (the client's core defaults the rest)."""
    found = {}
    for prop in set(ol.DeviceInfo) - {ol.DeviceInfo.PLATFORM}:
        try:
            found[prop] = ol.olGetDeviceInfo(dev, prop)
        except ol.OffloadError:
            pass
    return found


_OPS = {"write": _write, "read": _read, "names": _names, "unload": _unload}


def serve(conn: Connection) -> None:
    while True:
        try:
            name, *args = conn.recv()
        except (EOFError, OSError):
            return
        if name == "exit":
            ol.olShutDown()
            conn.send(("ok", None))
            os._exit(0)  # no interpreter teardown: the client waits for this exit
        try:
            call = _OPS.get(name) or getattr(ol, name)
            reply: tuple[Any, ...] = ("ok", _encode(call(*map(_decode, args))))
        except ol.OffloadError as exc:
            reply = ("error", exc.code, exc.details)
        except Exception as exc:  # anything else is the server's failure, named
            reply = ("error", ol.ErrorCode.BACKEND_FAILURE, f"remote server: {name}: {exc!r}")
        conn.send(reply)


def main(path: str) -> None:
    ol.olInit()
    ol.olIterateDevices(lambda dev, _: _devices.append(dev) or True, None)
    hooks = sorted(_devices[0].platform.backend.implemented) if _devices else []  # the hooks its backend serves
    with Listener(path + ".new", "AF_UNIX", authkey=bytes.fromhex(os.environ["OFFLOAD_REMOTE_KEY"])) as listener:
        os.rename(path + ".new", path)  # the client connects once the path exists: listening by then
        first = listener.accept()
        first.send(([_info(dev) for dev in _devices], hooks))
        while True:
            threading.Thread(target=serve, args=(first,), daemon=True).start()
            first = listener.accept()


if __name__ == "__main__":
    main(sys.argv[1])
