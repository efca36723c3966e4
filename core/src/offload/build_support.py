"""Deprecated: ``offload.build_support`` is ``offload.backend.build``; this name still imports that very
module, with a ``DeprecationWarning``."""

import sys
import warnings

from .backend import build as _moved

warnings.warn("offload.build_support moved to offload.backend.build", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
