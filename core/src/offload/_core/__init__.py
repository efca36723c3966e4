"""The microkernel's state: the flat handles, the session (``runtime``: one per olInit, torn down
by the final olShutDown, ``drain`` its waits), backend discovery and binding (``registry``,
``installed``), allocations and memory-range safety (``allocations``, ``ranges``, ``foreign``),
native entry points and the compiled path's switch (``native``), and the process's rank (``ranks``).
"""
