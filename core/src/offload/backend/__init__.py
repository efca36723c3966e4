"""What backend authors import beside ``offload.hookspecs``: ``support`` (what every backend does
alike), ``native`` (a GPU backend's native entry points, the Python side) and ``build`` (what a
``build_source`` hook does alike).
"""
