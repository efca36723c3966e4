"""Code the AMDGPU tests run in child processes (source text)."""

from typing import Any


def programs_prelude(build: Any, prelude: str) -> str:
    """``prelude`` after the line naming the folders of the built test programs: ``PROGRAMS`` (for
    the simulator's target) and ``OTHER`` (for another gfx target)."""
    return f"PROGRAMS, OTHER = {str(build.programs)!r}, {str(build.other)!r}\n" + prelude

#: Child code (needs `ol`): olInit, then `devs` every device, `amd` the AMDGPU ones, `host` the
#: host device and `dev` the first AMDGPU device.
DEVICES = """
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
amd = [d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU]
host = next(d for d in devs if d.platform.kind is ol.PlatformBackend.HOST)
dev = amd[0]
"""
