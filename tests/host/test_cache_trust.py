"""The host program cache holds code loaded into the process: it is used only when nobody else
could have written it (created 0700; a folder or file not owned by this user, or writable by
group or others, is refused with one warning and the program is built without it).

Each case runs in a fresh interpreter (the in-memory cache would hide the disk cache).
"""

from __future__ import annotations

import os
import pathlib
import stat
from typing import Any

import pytest

# Builds a program whose source is unique to the test (so nothing else cached it), loads it and
# runs its kernel, then prints the cache key's file name and the warnings it saw.
BUILD = r"""
import ctypes, struct, sys, warnings
import offload as ol, offload_host
from offload_host import build

source = '''#include <offload_host.h>
struct args { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(put, struct args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(put) { const struct args *a = OFFLOAD_ARGS(struct args); OFFLOAD_FOR_EACH_ITEM(tid) { a->out[0] = %d; } }
''' % int(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    data = offload_host.build_program(source, name="put")
    again = offload_host.build_program(source, name="put")  # from memory: no second warning
print("WARN", len([w for w in caught if issubclass(w.category, offload_host.OffloadHostCacheWarning)]))
for w in caught:
    print("MSG", w.message)
compiler = build._compiler()
flags = build._program_flags(compiler, None, ())
print("KEY", build._cache_key(build._compiler_id(compiler), flags, source))
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]
program = ol.olCreateProgram(host, data)
kernel = ol.olGetSymbol(program, "put", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 4)
ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))
print("VALUE", ctypes.c_uint32.from_address(out).value)
ol.olMemFree(out); ol.olDestroyProgram(program); ol.olShutDown()
"""


def _build(
    run_python: Any, tmp_path: pathlib.Path, cache: pathlib.Path | None, value: int, env: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """Build in a child; ``cache`` is OFFLOAD_HOST_CACHE (None: unset, the XDG folder is used)."""
    script = tmp_path / "build_it.py"
    script.write_text(BUILD)
    code = f"import sys, runpy\nsys.argv = ['b', '{value}']\nrunpy.run_path({str(script)!r}, run_name='__main__')"
    proc = run_python(code, env={**({} if cache is None else {"OFFLOAD_HOST_CACHE": str(cache)}), **(env or {})})
    result: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        head, _, rest = line.partition(" ")
        result.setdefault(head, []).append(rest)
    return result


def test_a_new_cache_is_private_and_reused(run_python: Any, tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "deep" / "cache"
    first = _build(run_python, tmp_path, cache, 11)
    assert first["WARN"] == ["0"] and first["VALUE"] == ["11"]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    (key,) = first["KEY"]
    cached = cache / f"{key}.so"
    assert stat.S_IMODE(cached.stat().st_mode) & 0o077 == 0
    mtime = cached.stat().st_mtime_ns
    second = _build(run_python, tmp_path, cache, 11)
    assert second["WARN"] == ["0"] and second["VALUE"] == ["11"] and cached.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_shared_folder_is_refused(run_python: Any, tmp_path: pathlib.Path, mode: int) -> None:
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(mode)
    result = _build(run_python, tmp_path, cache, 12)
    assert result["WARN"] == ["1"], result
    assert "writable by group or others" in result["MSG"][0] and str(cache) in result["MSG"][0]
    assert result["VALUE"] == ["12"]
    assert not list(cache.iterdir())  # nothing was written into it


def _plant(run_python: Any, tmp_path: pathlib.Path, cache: pathlib.Path) -> tuple[pathlib.Path, bytes]:
    """Build once (value 13) into ``cache``, then plant the program of value 99 under its key."""
    (key,) = _build(run_python, tmp_path, cache, 13)["KEY"]
    evil = _build(run_python, tmp_path, tmp_path / "other", 99)["KEY"][0]
    planted = (tmp_path / "other" / f"{evil}.so").read_bytes()
    target = cache / f"{key}.so"
    target.unlink()
    target.write_bytes(planted)
    return target, planted


def test_a_writable_cached_file_is_refused(run_python: Any, tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "cache"
    target, _ = _plant(run_python, tmp_path, cache)
    target.chmod(0o666)
    result = _build(run_python, tmp_path, cache, 13)
    assert result["WARN"] == ["1"] and "writable by group or others" in result["MSG"][0], result
    assert result["VALUE"] == ["13"]  # the planted code did not run


def test_a_linked_cached_file_is_not_followed(run_python: Any, tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "cache"
    target, planted = _plant(run_python, tmp_path, cache)
    elsewhere = tmp_path / "planted.so"
    elsewhere.write_bytes(planted)
    target.unlink()
    target.symlink_to(elsewhere)
    result = _build(run_python, tmp_path, cache, 13)
    assert result["VALUE"] == ["13"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file owned by another user needs root")
@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_cache_owned_by_another_user_is_refused(run_python: Any, tmp_path: pathlib.Path, what: str) -> None:
    cache = tmp_path / "cache"
    target, _ = _plant(run_python, tmp_path, cache)
    os.chown(cache if what == "folder" else target, 65534, 65534)
    result = _build(run_python, tmp_path, cache, 13)
    assert result["WARN"] == ["1"] and "owned by uid 65534" in result["MSG"][0], result
    assert result["VALUE"] == ["13"]


def test_the_control_a_trusted_planted_file_is_served(run_python: Any, tmp_path: pathlib.Path) -> None:
    """The control for the cases above: a private planted file IS used (the key is the only
    check), so those cases fail for the reason they name."""
    cache = tmp_path / "cache"
    _plant(run_python, tmp_path, cache)
    result = _build(run_python, tmp_path, cache, 13)
    assert result["WARN"] == ["0"] and result["VALUE"] == ["99"]


def _xdg_env(tmp_path: pathlib.Path, xdg: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    # the host backend alone: other drivers follow XDG_CACHE_HOME too (PoCL writes its kernel cache
    # there, a relative one into the working directory), which this test is not about
    return {"HOME": str(home), "XDG_CACHE_HOME": xdg, "OFFLOAD_BACKENDS": "host"}


def test_the_cache_follows_xdg_cache_home(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Without OFFLOAD_HOST_CACHE: $XDG_CACHE_HOME/offload-host (an absolute XDG_CACHE_HOME),
    created private and reused; nothing is written under ~/.cache."""
    xdg = tmp_path / "xdg-cache"
    env = _xdg_env(tmp_path, str(xdg))
    first = _build(run_python, tmp_path, None, 21, env)
    assert first["WARN"] == ["0"] and first["VALUE"] == ["21"]
    (key,) = first["KEY"]
    cached = xdg / "offload-host" / f"{key}.so"
    assert cached.is_file() and stat.S_IMODE((xdg / "offload-host").stat().st_mode) == 0o700
    assert not (tmp_path / "home" / ".cache").exists()
    mtime = cached.stat().st_mtime_ns
    again = _build(run_python, tmp_path, None, 21, env)
    assert again["VALUE"] == ["21"] and cached.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("xdg", ["", "relative/cache"], ids=["unset", "relative"])
def test_without_an_absolute_xdg_cache_home_the_cache_is_in_home(run_python: Any, tmp_path: pathlib.Path, xdg: str) -> None:
    """An empty or relative XDG_CACHE_HOME is ignored, as the XDG Base Directory spec says: ~/.cache."""
    first = _build(run_python, tmp_path, None, 22, _xdg_env(tmp_path, xdg))
    assert first["WARN"] == ["0"] and first["VALUE"] == ["22"]
    (key,) = first["KEY"]
    assert (tmp_path / "home" / ".cache" / "offload-host" / f"{key}.so").is_file()
    assert not (tmp_path / "relative").exists() and not (pathlib.Path.cwd() / "relative" / "cache").exists()


def test_a_shared_xdg_cache_folder_is_refused(run_python: Any, tmp_path: pathlib.Path) -> None:
    """The ownership and mode checks hold for the XDG folder as for OFFLOAD_HOST_CACHE."""
    xdg = tmp_path / "xdg-cache"
    (xdg / "offload-host").mkdir(parents=True)
    os.chmod(xdg / "offload-host", 0o777)
    result = _build(run_python, tmp_path, None, 23, _xdg_env(tmp_path, str(xdg)))
    assert result["WARN"] == ["1"] and result["VALUE"] == ["23"]
    assert str(xdg / "offload-host") in result["MSG"][0] and "writable by group or others (mode 0777)" in result["MSG"][0]
    assert list((xdg / "offload-host").iterdir()) == []
