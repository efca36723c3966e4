"""The entry points of one group, read from installed distributions' metadata the way
``importlib.metadata`` reads them, without importing it.

Importing ``importlib.metadata`` costs about 9 ms (it brings in email, zipfile and csv), which
every first ``olInit`` paid to find four backends. ``entry_points`` reads what that module would
read for the common layout: every directory on ``sys.path`` in order (``''`` is the working
directory), each ``<name>-<version>.dist-info`` or ``.egg-info`` directory in it, the first
distribution of each normalised name winning, its ``entry_points.txt`` parsed as
``importlib.metadata`` parses it and its name and version from ``METADATA``/``PKG-INFO``.
Whatever this reader does not model (a zip file or an ``.egg`` on the path, a meta-path finder
with distributions of its own) hands the whole question to ``importlib.metadata``, so the answer
is always that module's.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from importlib.machinery import PathFinder
from typing import Any, NamedTuple

__all__ = ["EntryPointRecord", "entry_points"]

_PATTERN = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPointRecord(NamedTuple):
    """One entry point: ``name = value`` of its group, and its distribution's name and version."""

    name: str
    value: str
    dist_name: str | None
    dist_version: str | None

    def load(self) -> Any:
        """Import the module and resolve the attribute path that ``value`` names."""
        match = _PATTERN.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r}: {self.value!r} is not 'module:attribute'")
        module = importlib.import_module(match.group("module"))
        return functools.reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def entry_points(group: str) -> list[EntryPointRecord]:
    """Every entry point of ``group`` in ``importlib.metadata``'s order."""
    found = _scan(group)
    return found if found is not None else _from_importlib_metadata(group)


def _scan(group: str) -> list[EntryPointRecord] | None:
    """The entry points found by reading directories; None where the layout is one not modelled."""
    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None
    records: list[EntryPointRecord] = []
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            if os.path.exists(root):  # a zip archive or a file: importlib.metadata's business
                return None
            continue
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            continue
        infos: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(".egg"):
                return None
            if low.endswith((".dist-info", ".egg-info")):
                stem = low.rpartition(".")[0].partition("-")[0]
                infos.setdefault(re.sub(r"[-_.]+", "_", stem), []).append(os.path.join(root, child))
        for normalized, paths in infos.items():
            for path in paths:
                if normalized in seen:
                    break
                seen.add(normalized)
                records.extend(_group_of(path, group))
    return records


def _group_of(path: str, group: str) -> list[EntryPointRecord]:
    """The entry points of ``group`` in one distribution's metadata directory."""
    text = _read(path, "entry_points.txt")
    if text is None:
        return []
    pairs = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            key, _, value = line.partition("=")
            pairs.append((key.strip(), value.strip()))
    if not pairs:
        return []
    dist_name, dist_version = _name_and_version(path)
    return [EntryPointRecord(key, value, dist_name, dist_version) for key, value in pairs]


def _name_and_version(path: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the metadata's header block."""
    text = _read(path, "METADATA") or _read(path, "PKG-INFO") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    return fields.get("Name"), fields.get("Version")


def _read(path: str, name: str) -> str | None:
    try:
        with open(os.path.join(path, name), encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


def _from_importlib_metadata(group: str) -> list[EntryPointRecord]:
    # imported only here, for the layouts _scan leaves to it: importing it costs ~9 ms
    from importlib.metadata import entry_points as metadata_entry_points

    return [
        EntryPointRecord(ep.name, ep.value, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
        for ep in metadata_entry_points(group=group)
    ]
