"""A child made by ``os.fork()`` after the object layer was used: the parent's objects are clear
errors there, and the child always exits (its normal exit runs atexit). The whole scenario runs in
a child interpreter with a timeout as the hang guard."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import offload, offload_host
    from offload import OffloadError
    host = offload.devices("host")[0]
    x = offload.to_device(np.arange(16, dtype=np.float32), host)
    view = np.asarray(offload.to_device(np.arange(4, dtype=np.float32), host, offload.AllocType.HOST))
    kernel = host.load_program(offload_host.build_test_kernel("saxpy")).kernel(
        "saxpy", "float a, const float *x, float *y, uint64_t n")
    queue = host.queue()
    kernel.launch(1, 16, 1.0, x, x, 16, queue=queue)
    pid = os.fork()
    if pid == 0:
        for name, use in [
            ("copy", lambda: x.to_numpy()),
            ("launch", lambda: kernel.launch(1, 16, 1.0, x, x, 16)),
            ("new buffer", lambda: offload.Buffer(16, "host")),
        ]:
            try:
                use()
                print(name, "worked")
            except OffloadError as error:
                print(name, error.code.name in ("UNINITIALIZED", "INVALID_ARGUMENT"), "fork" in error.details)
        sys.stdout.flush()
        sys.exit(0)  # the normal exit: atexit handlers run
    _, status = os.waitpid(pid, 0)
    queue.sync()
    print("child exit", os.waitstatus_to_exitcode(status), x.to_numpy()[3])
    """
)


def test_a_forked_child_says_the_parents_devices_are_not_usable_and_exits() -> None:
    try:
        proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as hang:
        raise AssertionError(f"the forked child never exited: {hang.stdout!r}") from None
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == [
        "copy True True",
        "launch True True",
        "new buffer True True",
    ], proc.stdout + proc.stderr
    assert lines[3] == "child exit 0 6.0"  # and the parent goes on (x = x + x ran once)
