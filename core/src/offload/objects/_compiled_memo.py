"""The compiled remembered launch (``offload.objects._launch_memo``, issue 18): ``Queue.launch``
and ``Kernel.launch`` become C methods that relaunch the kernel's remembered launch
(``Kernel._memo``) without a Python frame, hand other arguments to ``Kernel._run`` (as the Python
methods do) and call the Python method for any other shape of call (``_launch_memo.c``). Their
``counts`` say which ran.

It runs where the compiled path does (``_api.sessions.compiled_path_runs``: ``offload._compiled._fastpath`` built and
``OFFLOAD_COMPILED`` not ``0``) and the extension was built (``core/setup.py``: optional); else
the methods stay the Python functions, which make the same check themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .._api.sessions import compiled_path_runs as ENABLED

try:
    import offload.objects._launch_memo as _launch_memo  # (by its full name: an extension module)
except ImportError:  # built without a compiler: the Python methods
    _launch_memo = None  # type: ignore[assignment]

ACTIVE = ENABLED and _launch_memo is not None

F = TypeVar("F", bound=Callable[..., Any])


def relaunching(queued: bool) -> Callable[[F], F]:
    """A decorator: the method as a ``Relauncher`` (``queued``: ``Queue.launch``'s arguments,
    else ``Kernel.launch``'s) when ``ACTIVE``, else the method itself."""

    def wrap(method: F) -> F:
        if not ACTIVE:
            return method
        return _launch_memo.Relauncher(method, queued)  # type: ignore[return-value]  # (called, named as the method)

    return wrap


def configure(kernel: type, queue: type, closes: list[int], launch: Callable[..., Any]) -> None:
    """Tell the Relaunchers the classes whose slots they read, ``CLOSES`` and the flat
    ``olLaunchKernel`` (until then they call the Python methods)."""
    if ACTIVE:
        _launch_memo.configure(kernel, queue, closes, launch)
