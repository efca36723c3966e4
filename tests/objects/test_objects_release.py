"""``objects._release.Release``: the layer's finalizer (what ``weakref.finalize`` with
``atexit = False`` did for Buffers and handle owners): called once at collection or at
``release()``, never after ``detach()``, never at interpreter exit."""

from __future__ import annotations

import gc
import subprocess
import sys

from offload.objects._release import Release


class Owner:
    __slots__ = ("__weakref__",)


def test_it_runs_once_when_the_object_is_collected() -> None:
    calls: list[tuple[object, ...]] = []
    owner = Owner()
    release = Release(owner, lambda *args: calls.append(args), 1, "two")
    assert release.alive
    del owner
    gc.collect()
    assert calls == [(1, "two")] and not release.alive
    assert release() is None and release.detach() is None and calls == [(1, "two")]


def test_a_call_runs_it_now_and_only_once() -> None:
    calls: list[int] = []
    owner = Owner()
    release = Release(owner, lambda: calls.append(1) or "done")
    assert release() == "done" and not release.alive
    assert release() is None
    del owner
    gc.collect()
    assert calls == [1]


def test_a_detached_one_never_runs() -> None:
    calls: list[int] = []
    owner = Owner()
    release = Release(owner, calls.append, 1)
    assert release.detach() is True and not release.alive
    assert release.detach() is None and release() is None
    del owner
    gc.collect()
    assert calls == []


def test_a_dropped_release_still_runs_at_collection() -> None:
    """Nothing needs to hold the Release (as with weakref.finalize): the object's death calls it."""
    calls: list[int] = []
    owner = Owner()
    Release(owner, calls.append, 7)
    del owner
    gc.collect()
    assert calls == [7]


def test_none_runs_at_interpreter_exit() -> None:
    code = (
        "from offload.objects._release import Release\n"
        "class O:\n    __slots__ = ('__weakref__',)\n"
        "keep = O()\nRelease(keep, print, 'ran at exit')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout == "" and run.stderr == "", run
    unguarded = "import atexit\nfrom offload.objects import _release\natexit.unregister(_release._exiting)\n" + code
    run = subprocess.run([sys.executable, "-c", unguarded], capture_output=True, text=True, timeout=120)
    assert run.stdout == "ran at exit\n", run  # (what the guard prevents: the test can fail)
