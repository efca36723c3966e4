"""``offload backends``: every discovered backend (loaded or skipped, and why), the backends that
``OFFLOAD_BACKENDS`` filtered out, and the names it gives that no installed backend provides."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, TextIO

import offload as ol
from offload._core.registry import ENTRY_POINT_GROUP, SELECT_ENV, Selection, last_selection

from ._common import EXIT_OK, _print_json, _session, format_table

FILTERED = f"filtered out by {SELECT_ENV}"
NOT_INSTALLED = "not installed"


def _status_document(status: ol.BackendStatus) -> dict[str, Any]:
    return asdict(status)


def format_backends(statuses: Sequence[ol.BackendStatus], selection: Selection | None = None) -> list[str]:
    """The human listing of ``offload backends``."""
    selection = selection or Selection(None)
    rows = [("NAME", "DISTRIBUTION", "VERSION", "STATUS", "DEVICES")]
    for s in statuses:
        rows.append(
            (s.name, s.distribution or "(in-process)", s.version or "-", "loaded" if s.loaded else "skipped", str(s.device_count))
        )
    dists = _distributions()
    rows += [(name, *dists.get(name, ("(in-process)", "-")), FILTERED, "-") for name in selection.filtered_out]
    rows += [(name, "-", "-", NOT_INSTALLED, "-") for name in selection.not_installed]
    if len(rows) == 1:
        return [f"No backends discovered (nothing is installed in the entry-point group {ENTRY_POINT_GROUP})."]
    lines = format_table(rows)
    for s in statuses:
        if not s.loaded:
            lines.append(f"{s.name}: skipped: {s.reason or 'no reason given'}")
        elif s.note:
            lines.append(f"{s.name}: {'no devices' if not s.device_count else 'devices left out'}: {s.note}")
    if selection.setting is not None:
        lines.append(f"{SELECT_ENV}={selection.setting!r}")
    for name in selection.filtered_out:
        lines.append(f"{name}: installed, but {FILTERED}")
    for name in selection.not_installed:
        lines.append(f"{name}: named by {SELECT_ENV}, but {NOT_INSTALLED}: no discovered backend has this name")
    return lines


def _distributions() -> dict[str, tuple[str, str]]:
    """Backend name -> (distribution, version) for every installed entry point."""
    from importlib.metadata import entry_points  # here, not at the top: importlib.metadata takes ~25 ms to import, which only this command pays

    found: dict[str, tuple[str, str]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.dist is not None:
            found.setdefault(ep.name, (ep.dist.name, ep.dist.version))
    return found


def cmd_backends(args: argparse.Namespace, out: TextIO) -> int:
    with _session():
        statuses = ol.backend_status()
        selection = last_selection()
    if args.json:
        document = {
            "backends": [_status_document(s) for s in statuses],
            "selection": {
                "variable": SELECT_ENV,
                "setting": selection.setting,
                "filtered_out": list(selection.filtered_out),
                "not_installed": list(selection.not_installed),
            },
        }
        _print_json(document, out)
    else:
        for line in format_backends(statuses, selection):
            print(line, file=out)
    return EXIT_OK
