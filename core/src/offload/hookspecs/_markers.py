"""The contract's pluggy markers: ``hookspec`` marks the hooks of the sections here, ``hookimpl`` a
backend's implementations (both of the project ``offload``, the entry-point group's prefix)."""

import pluggy

PROJECT = "offload"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
