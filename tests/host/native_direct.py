"""What the tests of the host backend's native module used directly (no core API) share: the
module and the build helper (``native``, ``build``), the fixtures ``private_cache`` (autouse: a
build cache of the session's own), ``load``, ``pool`` and ``alloc``, and ``kernel``/``ptr_args``.
A test module imports the fixtures it uses from here (tests/host/test_native_*.py)."""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import pathlib
import struct
import types
import uuid
from collections.abc import Callable, Iterator

import pytest

_PKG_DIR = pathlib.Path(__file__).resolve().parents[2] / "backends" / "host" / "src" / "offload_host"


def _load_from_file(name: str, path: pathlib.Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load() -> tuple[types.ModuleType, types.ModuleType]:
    """``offload_host._native`` and ``offload_host.build``; straight from their files when the
    package itself cannot be imported (its ``__init__`` needs the core)."""
    try:
        return importlib.import_module("offload_host._native"), importlib.import_module("offload_host.build")
    except ImportError:
        sos = sorted(_PKG_DIR.glob("_native*.so"))
        if not sos:
            pytest.skip("offload_host._native is not built", allow_module_level=True)
        return _load_from_file("_offload_host_native", sos[0]), _load_from_file("_offload_host_build", _PKG_DIR / "build.py")


native, build = _load()

KIND_FUNC, KIND_OBJECT = 0, 1


# --------------------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("OFFLOAD_HOST_CACHE")
    os.environ["OFFLOAD_HOST_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        del os.environ["OFFLOAD_HOST_CACHE"]
    else:
        os.environ["OFFLOAD_HOST_CACHE"] = old


@pytest.fixture
def load(tmp_path: pathlib.Path) -> Iterator[Callable[..., int]]:
    """load(name | bytes) -> dl handle of that program, closed at teardown."""
    handles: list[int] = []

    def _load(program: str | bytes) -> int:
        data = build.build_test_kernel(program) if isinstance(program, str) else program
        path = tmp_path / f"lib{uuid.uuid4().hex}.so"
        path.write_bytes(data)
        handle = native.dl_open(str(path))
        handles.append(handle)
        return handle

    yield _load
    for handle in handles:
        native.dl_close(handle)


@pytest.fixture(params=[0, 1, 3], ids=lambda n: f"threads{n}")
def pool(request: pytest.FixtureRequest) -> Iterator[int]:
    handle = native.pool_create(request.param)
    yield handle
    native.pool_destroy(handle)


class Buffer:
    """Native memory from mem_alloc viewed as a ctypes array."""

    def __init__(self, ctype: type, count: int, fill: int = 0) -> None:
        self.size = ctypes.sizeof(ctype) * count
        self.address = native.mem_alloc(self.size)
        self.array = (ctype * count).from_address(self.address)
        ctypes.memset(self.address, fill, self.size)

    def free(self) -> None:
        native.mem_free(self.address)


@pytest.fixture
def alloc() -> Iterator[Callable[..., Buffer]]:
    buffers: list[Buffer] = []

    def _alloc(ctype: type, count: int, fill: int = 0) -> Buffer:
        buffers.append(Buffer(ctype, count, fill))
        return buffers[-1]

    yield _alloc
    for b in buffers:
        b.free()


def kernel(handle: int, name: str) -> int:
    sym = native.dl_symbol(handle, name)
    assert sym is not None, name
    assert sym[2] == KIND_FUNC
    return sym[0]


def ptr_args(*addresses: int) -> bytes:
    return struct.pack(f"<{len(addresses)}Q", *addresses)

