"""Small helpers shared by the project's tests."""

from __future__ import annotations

import offload as ol


def devices() -> list[ol.Device]:
    found: list[ol.Device] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    return found
