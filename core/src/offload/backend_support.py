"""Deprecated: ``offload.backend_support`` is ``offload.backend.support``; this name still imports that very
module, with a ``DeprecationWarning``."""

import sys
import warnings

from .backend import support as _moved

warnings.warn("offload.backend_support moved to offload.backend.support", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
