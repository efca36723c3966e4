"""OFFLOAD_TRACE: liboffload's line format, JSON mode, routing into an application's structlog."""

from __future__ import annotations

import json
import re

import pytest

import offload as ol

SCRIPT = """
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
try:
    ol.olMemAlloc(host, ol.AllocType.DEVICE, 0)
except ol.OffloadError:
    pass
ptr = ol.olMemAlloc(host, ol.AllocType.DEVICE, 16)
ol.olGetDeviceInfo(host, ol.DeviceInfo.TYPE)
ol.olMemFree(ptr)
ol.olShutDown()
"""

GOLDEN = [
    "---> olInit()-> OL_SUCCESS",
    "---> olIterateDevices(.Callback = ADDR, .UserData = nullptr)-> OL_SUCCESS",
    "---> olMemAlloc(.Device = ADDR, .Type = OL_ALLOC_TYPE_DEVICE, .Size = 0, .AllocationOut = ADDR (nullptr))-> OL_ERRC_INVALID_SIZE",
    "     *Error Details* validation failure: Size == 0 ",
    "---> olMemAlloc(.Device = ADDR, .Type = OL_ALLOC_TYPE_DEVICE, .Size = 16, .AllocationOut = ADDR (ADDR))-> OL_SUCCESS",
    "---> olGetDeviceInfo(.Device = ADDR, .PropName = OL_DEVICE_INFO_TYPE, .PropSize = 4, .PropValue = ADDR (OL_DEVICE_TYPE_HOST))-> OL_SUCCESS",
    "---> olMemFree(.Address = ADDR)-> OL_SUCCESS",
    "---> olShutDown()-> OL_SUCCESS",
]


def _normalise(text: str) -> list[str]:
    return [re.sub(r"0x[0-9a-f]+", "ADDR", line) for line in text.splitlines()]


def test_trace_lines_match_liboffload_format(run_python) -> None:
    proc = run_python(SCRIPT, env={"OFFLOAD_TRACE": "1"})
    assert proc.stdout == ""
    assert _normalise(proc.stderr) == GOLDEN


def test_trace_presence_counts_not_value(run_python) -> None:
    assert _normalise(run_python(SCRIPT, env={"OFFLOAD_TRACE": "0"}).stderr) == GOLDEN


def test_no_trace_without_the_variable(run_python) -> None:
    proc = run_python(SCRIPT)
    assert proc.stderr == "" and proc.stdout == ""


def test_json_trace(run_python) -> None:
    proc = run_python(SCRIPT, env={"OFFLOAD_TRACE": "json"})
    records = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [r["api"] for r in records] == [
        "olInit", "olIterateDevices", "olMemAlloc", "olMemAlloc", "olGetDeviceInfo", "olMemFree", "olShutDown",
    ]
    failed = records[2]
    assert failed["result"] == "OL_ERRC_INVALID_SIZE"
    assert failed["details"] == "validation failure: Size == 0"
    assert failed["args"]["Size"] == "0" and failed["args"]["Type"] == "OL_ALLOC_TYPE_DEVICE"
    assert all(set(r) == {"api", "args", "result", "details", "elapsed_ns", "thread"} for r in records)
    assert all(isinstance(r["elapsed_ns"], int) and r["elapsed_ns"] >= 0 for r in records)
    assert records[3]["thread"] == "MainThread"


def test_tracing_never_configures_structlog_or_logging(run_python) -> None:
    code = SCRIPT + """
import logging, structlog
assert not structlog.is_configured(), "offload configured structlog"
assert logging.getLogger().handlers == [], "offload configured logging"
"""
    run_python(code, env={"OFFLOAD_TRACE": "1"})


def test_application_logger_receives_events() -> None:
    structlog = pytest.importorskip("structlog")
    from structlog.testing import LogCapture

    capture = LogCapture()
    logger = structlog.wrap_logger(structlog.ReturnLogger(), processors=[capture], wrapper_class=structlog.BoundLogger)
    ol.set_trace_logger(logger)
    try:
        ol.olInit()
        try:
            ol.olGetDeviceInfo(None, ol.DeviceInfo.NAME)
        except ol.OffloadError:
            pass
        ol.olShutDown()
    finally:
        ol.set_trace_logger(None)
    apis = [e["api"] for e in capture.entries]
    assert apis == ["olInit", "olGetDeviceInfo", "olShutDown"]
    bad = capture.entries[1]
    assert bad["result"] == "OL_ERRC_INVALID_NULL_HANDLE" and bad["log_level"] == "info"
    assert bad["args"]["Device"] == "nullptr"
