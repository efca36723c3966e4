"""The object layer's compiled path: the C extension ``_replay`` (``_replay.c``, over the declared,
versioned interface of ``_replay.h``; ``_cmethod.h`` its method descriptor), which ``objects._records``
loads where it was built. This package imports nothing: what the extension replays is decided in the
layer's Python modules."""
