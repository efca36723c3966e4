"""offload-core installed alone (no backend distribution): run by scripts/test.sh in its own venv."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import offload as ol

from helpers import devices


def test_no_backend_is_installed() -> None:
    assert list(entry_points(group="offload.backends")) == []
    assert importlib.util.find_spec("offload_host") is None


def test_init_works_with_zero_devices(session: None) -> None:
    assert devices() == []
    assert ol.backend_status() == []


def test_calls_fail_with_clear_errors(session: None) -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olCreateQueue(None)
    assert info.value.code is ol.ErrorCode.INVALID_NULL_HANDLE
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemFree(0x1000)
    assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT
    with pytest.raises(ol.OffloadError) as info:
        ol.olGetMemInfo(0x1000, ol.MemInfo.SIZE)
    assert info.value.code is ol.ErrorCode.NOT_FOUND


def test_cli_reports_no_backends_and_selfcheck_fails() -> None:
    listing = subprocess.run([sys.executable, "-m", "offload", "backends"], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert "no backend" in (listing.stdout + listing.stderr).lower()
    check = subprocess.run([sys.executable, "-m", "offload", "selfcheck"], capture_output=True, text=True, timeout=60)
    assert check.returncode != 0
    assert "no device" in (check.stdout + check.stderr).lower()
