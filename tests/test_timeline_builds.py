"""Builds in the timeline (issue 32: "a build is an unexplained gap"): each ``offload.build`` is a
span of category ``build`` on the calling thread, with the cache's outcome (``miss``: compiled now,
``hit``: the process's cache, ``disk``: the cache of an earlier process), in the Perfetto file and
in the JSON one alike; a failed build's span carries its result."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

JOB = r"""
import offload as ol
SOURCE = '''
#include <offload_host.h>
struct one_args { unsigned *out; };
OFFLOAD_KERNEL_PARAMS(one, struct one_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(one) { (void)offload_args_; (void)offload_group_; }
'''
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
dev = [d for d in found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST][0]
image = ol.build(SOURCE, dev)      # compiled now
ol.build(SOURCE, dev)              # the process's cache
ol.clear_build_cache()
program = ol.olCreateProgram(dev, ol.build(SOURCE, dev))  # the disk's
try:
    ol.build("this is not C", dev)
except ol.OffloadError as error:
    print("failed", error.code.name)
ol.olDestroyProgram(program)
ol.olShutDown()
"""


@pytest.mark.parametrize("suffix", [".pftrace", ".json"])
def test_builds_are_spans_with_their_cache_outcome(run_python: Any, tmp_path: pathlib.Path, suffix: str) -> None:
    from offload._trace.perfetto_read import load

    path = tmp_path / f"builds{suffix}"
    env = {"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "host", "OFFLOAD_BUILD_CACHE": str(tmp_path / "cache")}
    proc = run_python(JOB, env=env)
    assert "failed COMPILE_FAILURE" in proc.stdout
    document = json.loads(path.read_text()) if suffix == ".json" else load(str(path))
    events = document["traceEvents"]
    builds = sorted((e for e in events if e.get("cat") == "build"), key=lambda e: e["ts"])
    assert [e["name"] for e in builds] == ["offload.build"] * 4
    assert [e["args"]["cache"] for e in builds] == ["miss", "hit", "disk", "miss"]
    assert [e["args"].get("result") for e in builds] == [None, None, None, "OL_ERRC_COMPILE_FAILURE"]
    for e in builds:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["args"]["platform"] == "host" and e["args"]["source_bytes"] > 0
    assert builds[0]["args"]["target"] and builds[0]["args"]["target"] == builds[2]["args"]["target"]
    calls = {(e["pid"], e["tid"]) for e in events if e.get("cat") == "api"}
    assert {(e["pid"], e["tid"]) for e in builds} <= calls  # on the thread that built, beside its calls
    create = next(e for e in events if e.get("name") == "olCreateProgram")
    assert builds[2]["ts"] + builds[2]["dur"] <= create["ts"] + 1e-3  # the build, then the program made of it
    assert builds[0]["dur"] > builds[1]["dur"]  # compiling takes longer than a lookup
    from offload.cli._trace import format_summary, load_events, summarise

    summary = summarise(load_events(str(path)))
    assert {k: (t.count, t.failed) for k, t in summary.builds.items()} == {"miss": (2, 1), "hit": (1, 0), "disk": (1, 0)}
    lines = format_summary(summary)
    assert "builds per cache outcome" in lines and any(line.split()[:3] == ["miss", "2", "1"] for line in lines)
