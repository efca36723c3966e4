"""Deprecated: the conformance suite moved to offload-testing (``offload_testing.suite``).

``from offload.testing.suite import *`` still runs it while offload-testing is installed (the
same test classes), warning with ``DeprecationWarning``; write ``from offload_testing.suite import *``.
"""

from __future__ import annotations

import warnings

from ._moved import moved

_suite = moved("offload.testing.suite", "offload_testing.suite")
__all__ = list(_suite.__all__)
globals().update({name: getattr(_suite, name) for name in __all__})
warnings.warn(
    "offload.testing.suite moved to offload_testing.suite (distribution offload-testing)", DeprecationWarning, stacklevel=2
)
