"""The compiled path: ``_compiled._fastpath``, the optional C extension holding the common case of the
per-call ol* functions (core/DESIGN.md "The compiled path"). It imports nothing of ``offload``:
``_api.compiled`` configures it at import with what it reads, and ``_core.native`` says whether
it was built and runs (``OFFLOAD_COMPILED``).
"""
