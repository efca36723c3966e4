"""The API's vocabulary: enumerations, the exception, value types, info kinds and opaque values
(what ``hookspecs``, backends and the core share; imports nothing else of ``offload``).
"""
