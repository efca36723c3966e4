"""Small helpers shared by the project's tests."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import offload as ol


def child_environ(strip: str | tuple[str, ...] = "OFFLOAD_") -> dict[str, str]:
    """This process's environment without the variables starting with ``strip`` (a child's own
    settings come from the test), keeping ``OFFLOAD_COMPILED``: the suite's pure-Python run
    (``OFFLOAD_COMPILED=0``) reaches every child."""
    return {k: v for k, v in os.environ.items() if k == "OFFLOAD_COMPILED" or not k.startswith(strip)}


def devices() -> list[ol.DeviceHandle]:
    found: list[ol.DeviceHandle] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    return found


def rss_kib() -> int:
    """This process's resident set size (VmRSS) in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def run_in_threads(target: Callable[[], object], count: int) -> None:
    """Start ``count`` threads running ``target`` at once, then wait for every one to end."""
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@contextlib.contextmanager
def registered(name: str, factory: Callable[[], object]) -> Iterator[str]:
    """``factory`` registered in-process as the backend ``name`` for the block, unregistered after."""
    ol.register_backend(name, factory)
    try:
        yield name
    finally:
        ol.unregister_backend(name)


class MinimalBackend:
    """The required hooks of a backend that runs nothing (subclasses override what they test):
    one device, no info, every program refused as INVALID_BINARY, queues always idle."""

    device_name = "minimal"

    @ol.hookimpl
    def init(self) -> list[Any]:
        return [self.device_name]

    @ol.hookimpl
    def deinit(self) -> None:
        pass

    @ol.hookimpl
    def get_device_info(self, device: Any) -> dict[Any, Any]:
        return {}

    @ol.hookimpl
    def load_binary(self, device: Any, data: bytes) -> Any:
        raise ol.OffloadError(ol.ErrorCode.INVALID_BINARY, f"{type(self).__name__} runs no programs")

    @ol.hookimpl
    def unload_binary(self, device: Any, image: Any) -> None:
        pass

    @ol.hookimpl
    def synchronize(self, device: Any, queue: Any, release: bool) -> None:
        pass

    @ol.hookimpl
    def has_pending_work(self, device: Any, queue: Any) -> bool:
        return False


#: The start of a child process's code on the host device: `ol` and `offload_host` imported,
#: olInit done, `host` the host device, `load_kernel(name)` -> (program, kernel) of a test kernel,
#: `build_kernel(source, name)` -> (program, kernel) of the kernel `name` built from C `source`.
HOST_CHILD_PRELUDE = r"""
import offload as ol, offload_host

ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]


def _program_kernel(image, name):
    program = ol.olCreateProgram(host, image)
    return program, ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL)


def load_kernel(name):
    return _program_kernel(offload_host.build_test_kernel(name), name)


def build_kernel(source, name):
    return _program_kernel(offload_host.build_program(source, name=name), name)
"""


#: Child code (needs `ol`): `error_of(fn, *args)` is [code name, details] of the OffloadError that
#: `fn(*args)` raises, or None when it returns.
ERROR_OF = r"""
def error_of(fn, *args):
    try:
        fn(*args)
    except ol.OffloadError as exc:
        return [exc.code.name, exc.details]
    return None
"""


#: Child code (needs `ol`, after olInit): `device_of(platform)`, the first device of the platform
#: named `platform`.
DEVICE_OF = r"""
def device_of(platform):
    found = []
    ol.olIterateDevices(lambda d, acc: acc.append(d) or True, found)
    return next(d for d in found if d.platform.name == platform)
"""


#: C source of a host kernel ``wild(uint64_t *p)`` that stores 1 at p[global id]: launched with
#: p = 0x10, it faults (SIGSEGV, address not mapped) on every item.
WILD_KERNEL = r"""
#include <offload_host.h>
#include <stdint.h>

struct wild_args { uint64_t *p; };
OFFLOAD_KERNEL_PARAMS(wild, struct wild_args, OFFLOAD_POINTER(p));
OFFLOAD_KERNEL(wild) {
  const struct wild_args *a = OFFLOAD_ARGS(struct wild_args);
  OFFLOAD_FOR_EACH_ITEM(t) { a->p[offload_global_id_x(t)] = 1; }
}
"""


def queue_calls_from_host_function(device: str) -> str:
    """Child code (needs `ol`, `emit` and ``ERROR_OF``) that makes two queues of the device named
    `device` and runs on the first a host function that waits for its own queue (refused), queries,
    launches on and waits for the other, then launches three host functions on its own queue (the
    second launching one more from its thread, the third raising ValueError); it emits
    ``{"seen": [...], "error": ...}``: what ran in order, and what syncing the first queue raised."""
    return rf"""
queue, other = ol.olCreateQueue({device}), ol.olCreateQueue({device})
seen = []
def record(what):
    return lambda _: seen.append(what)
def fail(_):
    raise ValueError("nested failure")
def nested_again(_):
    ol.olLaunchHostFunction(queue, record("nested again"), None)  # from the deferred thread
def outer(_):
    seen.append(error_of(ol.olSyncQueue, queue))
    seen.append(ol.olGetQueueInfo(other, ol.QueueInfo.EMPTY))
    ol.olLaunchHostFunction(other, record("other"), None)
    ol.olSyncQueue(other)
    seen.append("other synced")
    ol.olLaunchHostFunction(queue, record("nested"), None)
    ol.olLaunchHostFunction(queue, nested_again, None)
    ol.olLaunchHostFunction(queue, fail, None)
ol.olLaunchHostFunction(queue, outer, None)
error = error_of(ol.olSyncQueue, queue)
ol.olSyncQueue(other)
ol.olShutDown()
emit({{"seen": seen, "error": error}})
"""


def shutdown_from_host_function(queue: str) -> str:
    """Child code (needs `ol` and `threading`) that launches on the queue named `queue` a host
    function calling the final olShutDown, queues a second one behind it, then lets the first
    run: `done` is set once it returned, `result` holds "ok" or its exception's repr, and
    `dropped` what the second one ran with (it must not run)."""
    return rf"""
done, gate, result, dropped = threading.Event(), threading.Event(), [], []
def shut(_):
    gate.wait(20)  # the next host function is queued first
    try:
        ol.olShutDown()
        result.append("ok")
    except BaseException as exc:
        result.append(repr(exc))
    done.set()
ol.olLaunchHostFunction({queue}, shut, None)
ol.olLaunchHostFunction({queue}, dropped.append, "ran after shutdown")
gate.set()
"""


def run_bounded(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in its own process group (text output captured); past ``timeout`` seconds the
    whole group is killed and the calling test fails, showing what it printed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(argv)} hung for {timeout} s\nstdout:\n{out}\nstderr:\n{err[-5000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def release_from_host_function(queue: str) -> str:
    """Child code (needs `ol`, and `mem` and `prog` alive) that launches on the queue named
    `queue` a host function calling olMemFree(mem) and olDestroyProgram(prog): `seen` gets "ok"
    or the exception's repr for each, in that order."""
    return rf"""
seen = []
def release(_):
    for call, arg in ((ol.olMemFree, mem), (ol.olDestroyProgram, prog)):
        try:
            call(arg)
            seen.append("ok")
        except Exception as exc:
            seen.append(repr(exc))
ol.olLaunchHostFunction({queue}, release, None)
"""


def run_pytest(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], str, dict[str, int]]:
    """A child pytest process (``-q -p no:cacheprovider`` and ``args``, 600 s at most): the
    process, the last line it printed (the summary) and the counts that line gives by outcome."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600,
    )  # fmt: skip
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", summary)}
    return proc, summary, counts


def debian_packages(packages: Sequence[str], into: Path) -> str | None:
    """Unpack the Debian ``packages`` into ``into`` (``apt-get download`` and ``dpkg -x``: nothing
    is installed; as root, a failed download retries after ``apt-get update``, as a fresh machine
    may have no package lists yet). None when they are there, or why they cannot be had."""
    import shutil
    import tempfile

    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        return "no apt-get/dpkg on this machine"
    with tempfile.TemporaryDirectory() as download:
        for retry in (False, True):
            proc = subprocess.run(["apt-get", "download", *packages], cwd=download, capture_output=True, text=True, timeout=300)
            if proc.returncode == 0 or retry or os.geteuid() != 0:
                break
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=300)
        unpacked = sorted(Path(download).glob("*.deb"))
        if proc.returncode != 0 or len(unpacked) != len(packages):
            return f"apt-get download failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
        into.mkdir(parents=True, exist_ok=True)
        for deb in unpacked:
            subprocess.run(["dpkg", "-x", str(deb), str(into)], check=True, timeout=300)
    return None
