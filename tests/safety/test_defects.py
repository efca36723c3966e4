"""Issue 29's memory-safety defects, one test each, every scenario in a child process of its own
(``scenarios.py``; the path, compiled or pure Python, is this run's ``OFFLOAD_COMPILED``): a
copy past an allocation, a stale range cache or a race is an error code, never a fault or a
write where none may be made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run(name: str, timeout: float = 240) -> Any:
    """The scenario's result; fails naming how the child died when it did not finish."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") or k in ("OFFLOAD_COMPILED", "OFFLOAD_HOST_CACHE")}
    proc = subprocess.run(
        [sys.executable, str(HERE / "scenarios.py"), name], capture_output=True, text=True, env=env, timeout=timeout, cwd=HERE
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"{name}: the child exited {proc.returncode} (signal {-proc.returncode} if negative)\n"
        f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1][len("RESULT ") :])


def test_a_rect_far_past_a_managed_allocation_is_refused_whole() -> None:
    result = run("rect_far_past_managed")
    assert result == {
        "rect": "INVALID_SIZE",
        "memcpy_of_span": "INVALID_SIZE",
        "dst_untouched": True,
        "neighbour_untouched": True,
        "canary_untouched": True,
    }


def test_a_rect_whose_later_rows_leave_the_allocation_writes_nothing() -> None:
    result = run("rect_rows_past_allocation")
    assert result == {key: ["INVALID_SIZE", True] for key in result}
    assert len(result) == 6


def test_a_rect_whose_second_source_row_overruns_writes_nothing() -> None:
    result = run("rect_source_row_overruns")
    assert result == {"sync": ["INVALID_SIZE", True], "queued": ["INVALID_SIZE", True], "inside": ["OK", True]}


def _refused_or_reused(code: str, mapped_now: bool) -> bool:
    """A copy into memory given back: refused, or accepted only because something else mapped
    the address since (it is plain host memory again)."""
    return code == "INVALID_ARGUMENT" or (code == "OK" and mapped_now)


def test_a_copy_into_freed_memory_found_safe_before_is_refused() -> None:
    result = run("copy_after_free")
    assert len(result) == 3
    for size, (code, mapped_now) in result.items():
        assert _refused_or_reused(code, mapped_now), (size, code)


def test_memory_freed_from_a_host_function_is_refused_there_and_after() -> None:
    result = run("free_from_host_function")
    assert len(result) == 8
    for round_, (copy_inside, fill_inside, after, mapped_now) in result.items():
        assert (copy_inside, fill_inside) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT"), round_
        assert _refused_or_reused(after, mapped_now), (round_, after)


def test_a_destroyed_host_programs_global_is_refused() -> None:
    result = run("copy_after_program_destroyed")
    assert len(result) == 3
    for round_, (before, after, mapped_now) in result.items():
        assert before == "OK", round_
        assert _refused_or_reused(after, mapped_now), (round_, after)


def test_exactly_one_of_a_make_and_a_racing_context_destroy_succeeds() -> None:
    result = run("alloc_races_destroy_context")
    assert result["both"] == 0 and result["neither"] == 0, result["tallies"]
    winners = {key.split(":")[1] for key in result["tallies"]}
    assert winners <= {"OK/INVALID_CONTEXT", "INVALID_CONTEXT/OK"}, result["tallies"]
    # which side wins is the scheduler's: on a loaded machine one order may be all that happens
    # (CI saw 1800 of 1800 one way); the promise checked is that exactly one succeeds every time
    print("orders seen:", sorted(winners))


def test_copies_and_fills_racing_a_free_are_done_or_refused() -> None:
    result = run("copy_races_free")
    assert set(result["codes"]) <= {"OK", "INVALID_ARGUMENT"}, result
    assert result["codes"].get("OK", 0) > 0 and result["codes"].get("INVALID_ARGUMENT", 0) > 0, result


def test_fills_racing_the_final_shutdown_are_done_or_uninitialized() -> None:
    result = run("fill_races_shutdown")
    assert set(result["codes"]) <= {"OK", "UNINITIALIZED"}, result
    assert result["codes"].get("UNINITIALIZED", 0) > 0, result


def test_a_fill_caught_by_the_final_shutdown_sees_the_session_end() -> None:
    result = run("fill_as_shutdown_begins")
    assert result == {"codes": ["OK"] * 3}
