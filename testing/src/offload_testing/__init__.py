"""offload-testing: the pytest side of offload's conformance kit.

``offload_testing.plugin`` is the pytest plugin (the ``pytest11`` entry point ``offload``, loaded
by pytest wherever this distribution is installed) and ``offload_testing.suite`` the suite
(``from offload_testing.suite import *`` in a test module runs it). What a backend declares,
``Capabilities`` and its registry, stays in offload-core's ``offload.testing`` (backends and
``offload selfcheck`` read it without pytest); it is re-exported here. ``offload.testing``'s
docstring walks through a backend author's setup.
"""

from __future__ import annotations

from offload.testing import *  # noqa: F403 (what a backend declares, re-exported whole)
from offload.testing import __all__ as __all__
