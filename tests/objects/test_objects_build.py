"""offload.build on the host platform: the portable header, compile errors with their log, a
missing compiler, the cache, the listeners, argument checks, and the object layer's doors."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload import objects
from offload._api.sessions import kernel_parameters
from offload_host import HostBackend

SAXPY = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "kernels" / "saxpy_portable.c").read_text()
E = ol.ErrorCode


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    ol.clear_build_cache()
    yield
    ol.clear_build_cache()


def _saxpy_on(device: objects.Device) -> np.ndarray:
    program = objects.Program.from_source(device, SAXPY)
    x = ol.to_device(np.arange(1000, dtype=np.float32), device)
    y = ol.to_device(np.ones(1000, dtype=np.float32), device)
    with program, device.queue() as queue:
        queue.launch(program.kernel("saxpy"), 4, 256, 2.0, x, y, 1000)
    return y.to_numpy()


def test_portable_saxpy_runs_on_the_host() -> None:
    (host,) = ol.devices("host")
    np.testing.assert_array_equal(_saxpy_on(host), 2 * np.arange(1000, dtype=np.float32) + 1)


def test_portable_kernel_declares_its_parameters() -> None:
    source = """#include <offload_kernel.h>
struct pair { int a, b; };
OFFLOAD_PORTABLE_KERNEL(kinds, (int8_t, i8), (uint16_t, u16), (double, f64), (const double *, cd),
                        (int32_t *, pi), (void *, v), (struct pair, s), (unsigned long long, ull)) {
  if (offload_global_id(0) == 0) pi[0] = (int32_t)i8 + u16 + (int32_t)f64 + (int32_t)cd[0] + s.a + (int32_t)ull + (v != 0);
}"""
    program = ol.devices("host")[0].build_program(source)
    symbol = ol.olGetSymbol(program.handle, "kinds", ol.SymbolKind.KERNEL)
    params = kernel_parameters(symbol)
    assert params is not None
    described = [(p.name, p.kind, p.size, p.element, p.const) for p in params]
    assert described == [
        ("i8", "int", 1, None, False),
        ("u16", "uint", 2, None, False),
        ("f64", "float", 8, None, False),
        ("cd", "pointer", 8, "float64", True),
        ("pi", "pointer", 8, "int32", False),
        ("v", "pointer", 8, None, False),
        ("s", "bytes", 8, None, False),
        ("ull", "uint", 8, None, False),
    ]
    out = ol.empty(1, "int32", "host")
    cd = ol.to_device(np.array([4.0]), "host")
    with ol.devices("host")[0].queue() as queue:
        queue.launch(program.kernel("kinds"), 1, 1, np.int8(1), np.uint16(2), 3.0, cd, out, out, b"\x05\0\0\0\0\0\0\0", 6)
    assert out.to_numpy()[0] == 1 + 2 + 3 + 4 + 5 + 6 + 1


def test_compile_error_carries_the_compiler_log() -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.build(SAXPY + "\nint broken = undeclared_identifier_xyz;\n", ol.devices("host")[0])
    assert info.value.code is E.COMPILE_FAILURE
    assert "undeclared_identifier_xyz" in info.value.details and "error" in info.value.details


def test_missing_compiler_is_host_tool_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(ol.OffloadError) as info:
        ol.build(SAXPY, ol.devices("host")[0])
    assert info.value.code is E.HOST_TOOL_NOT_FOUND and "no-such-cc" in info.value.details


class CountingHost(HostBackend):
    """The host backend, counting its builds."""

    builds: list[tuple[str, tuple[str, ...]]] = []

    @ol.hookimpl
    def build_source(self, device: Any, source: str, options: Sequence[str]) -> bytes:
        CountingHost.builds.append((source, tuple(options)))
        return HostBackend.build_source(self, device, source, options)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[objects.Device]:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "counted,host")
    CountingHost.builds = []
    ol.register_backend("counted", CountingHost)
    ol.olInit()
    try:
        yield objects.devices("counted")[0]
    finally:
        ol.olShutDown()
        ol.unregister_backend("counted")


def test_builds_are_cached_by_source_options_and_target(counted: objects.Device) -> None:
    seen: list[ol.BuiltProgram] = []
    remove = ol.add_build_listener(seen.append)
    try:
        first = ol.build(SAXPY, counted)
        assert ol.build(SAXPY, counted.handle) is first  # the flat handle too; from the cache
        assert len(CountingHost.builds) == 1
        ol.build(SAXPY, counted, ["-DUNUSED=1"])
        ol.build(SAXPY + "\n", counted)
        assert [b[1] for b in CountingHost.builds] == [(), ("-DUNUSED=1",), ()]
        host_image = ol.build(SAXPY, ol.devices("host")[0])  # another platform: its own entry
        assert len(CountingHost.builds) == 3 and host_image == first
    finally:
        remove()
    assert [(b.platform, b.options) for b in seen] == [
        ("counted", ()), ("counted", ()), ("counted", ("-DUNUSED=1",)), ("counted", ()), ("host", ()),
    ]  # fmt: skip
    assert seen[0].image == first and seen[0].source == SAXPY and seen[0].target
    ol.build(SAXPY, counted)
    assert len(seen) == 5  # removed: not told any more
    ol.clear_build_cache()
    ol.build(SAXPY, counted)
    assert len(CountingHost.builds) == 4


def test_a_failing_listener_fails_the_build() -> None:
    def refuse(built: ol.BuiltProgram) -> None:
        raise ol.OffloadError(E.INVALID_BINARY, f"refused {built.platform}")

    remove = ol.add_build_listener(refuse)
    try:
        with pytest.raises(ol.OffloadError, match="refused host"):
            ol.build(SAXPY, ol.devices("host")[0])
    finally:
        remove()


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        ((b"int x;", "host"), E.INVALID_ARGUMENT, "source must be str"),
        (("int x;", None), E.INVALID_DEVICE, "must be an offload device"),
        (("int x;", "host:0"), E.INVALID_DEVICE, "must be an offload device"),
        (("int x;", "host", "-O2"), E.INVALID_ARGUMENT, "options must be a sequence of str"),
        (("int x;", "host", [1]), E.INVALID_ARGUMENT, "options must be a sequence of str"),
    ],
)
def test_bad_arguments(args: tuple[Any, ...], code: ol.ErrorCode, words: str) -> None:
    source, device, *options = args
    if device == "host":
        device = ol.devices("host")[0]
    with pytest.raises(ol.OffloadError) as info:
        ol.build(source, device, *options)
    assert info.value.code is code and words in info.value.details


def test_a_device_of_an_ended_session_is_refused() -> None:
    ol.olInit()
    found: list[Any] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    ol.olShutDown()
    device = found[-1]
    with pytest.raises(ol.OffloadError) as info:
        ol.build(SAXPY, device)
    assert info.value.code is E.INVALID_DEVICE and "no live session" in info.value.details


def test_the_header_ships_with_the_core() -> None:
    assert (ol.kernel_include_dir() / "offload_kernel.h").is_file()
