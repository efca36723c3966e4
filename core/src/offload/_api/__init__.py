"""The flat ``ol*`` API: the declarative table, the functions generated from it, their semantics
by ``hookspecs`` section, and the doors a layer over it uses (``flat``, ``sessions``, ``build``).
"""
