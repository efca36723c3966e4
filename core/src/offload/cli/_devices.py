"""``offload devices``: every platform and device with every property."""

from __future__ import annotations

import argparse
import functools
from typing import Any, TextIO

import offload as ol

from ._common import (
    EXIT_NOTHING,
    EXIT_OK,
    _devices,
    _platforms,
    _print_json,
    _query,
    _session,
    format_table,
    format_value,
    json_value,
)


def _platform_properties(platform: ol.PlatformHandle) -> dict[str, Any]:
    return {p.name: _query(functools.partial(ol.olGetPlatformInfo, platform, p)) for p in ol.PlatformInfo}


def _device_properties(device: ol.DeviceHandle) -> dict[str, Any]:
    return {p.name: _query(functools.partial(ol.olGetDeviceInfo, device, p)) for p in ol.DeviceInfo}


def empty_platforms() -> list[tuple[str, str]]:
    """(name, reason) of every loaded backend whose platform has no device (last ``olInit``)."""
    return [
        (s.name, s.note or "the backend gave no reason")
        for s in ol.backend_status()
        if s.loaded and s.device_count == 0
    ]


def cmd_devices(args: argparse.Namespace, out: TextIO) -> int:
    with _session():
        devices = _devices()
        listing = [
            (_platform_properties(platform), [_device_properties(d) for d in members])
            for platform, members in _platforms(devices)
        ]
        empty = empty_platforms()
    if args.json:
        document = {
            "platforms": [
                {
                    **{k: json_value(v) for k, v in props.items()},
                    "devices": [
                        {"index": i, "info": {k: json_value(v) for k, v in d.items()}} for i, d in enumerate(devs)
                    ],
                }
                for props, devs in listing
            ],
            "platforms_without_devices": [{"name": name, "reason": reason} for name, reason in empty],
        }
        _print_json(document, out)
    else:
        if not listing:
            print("No devices found.", file=out)
        for name, reason in empty:
            print(f"Platform {name}: 0 devices: {reason}", file=out)
        if empty:
            print(file=out)
        for number, (props, devs) in enumerate(listing):
            print(f"Platform {number}: {format_value(props['NAME'])}", file=out)
            for line in format_table([(k, format_value(v)) for k, v in props.items() if k != "NAME"], "  "):
                print(line, file=out)
            for index, info in enumerate(devs):
                print(f"  Device {index}: {format_value(info['NAME'])}", file=out)
                for line in format_table([(k, format_value(v)) for k, v in info.items()], "    "):
                    print(line, file=out)
            print(file=out)
    return EXIT_OK if listing else EXIT_NOTHING
