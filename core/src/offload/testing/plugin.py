"""Deprecated: the conformance kit's pytest plugin moved to offload-testing (``offload_testing.plugin``).

This name stays importable while offload-testing is installed: it is the same module object
(so pytest never registers the plugin twice) and warns once with ``DeprecationWarning``.
"""

from __future__ import annotations

import sys
import warnings

from ._moved import moved

sys.modules[__name__] = moved("offload.testing.plugin", "offload_testing.plugin")
warnings.warn(
    "offload.testing.plugin moved to offload_testing.plugin (distribution offload-testing)", DeprecationWarning, stacklevel=2
)
