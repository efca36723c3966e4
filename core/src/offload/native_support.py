"""Deprecated: ``offload.native_support`` is ``offload.backend.native``; this name still imports that very
module, with a ``DeprecationWarning``."""

import sys
import warnings

from .backend import native as _moved

warnings.warn("offload.native_support moved to offload.backend.native", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
