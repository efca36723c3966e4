"""Every public function x every parameter x bad values, in child processes, with validation on,
off, and with tracing on: never a crash, never a raw exception, and the memory cases refused with
the right code."""

from __future__ import annotations

import collections

import pytest

from children import run_cases

MODES = {
    "validation": {},
    "no-validation": {"OFFLOAD_DISABLE_VALIDATION": "1"},
    "tracing": {"OFFLOAD_TRACE": "1"},
}
MEMORY_CLASSES = {"null", "wrap", "unmapped", "freed", "overrun", "foreign"}


def _expected(case: str, klass: str, validate: bool) -> set[str] | None:
    """The outcomes allowed for a memory case of olMemcpy / olMemFill (None: any OffloadError or OK)."""
    variant, _, rest = case.partition(":")
    param, _, label = rest.partition("=")
    memory_param = param in ("DstPtr", "SrcPtr", "Ptr", "Size", "FillSize")
    if variant.split("@")[0] not in ("olMemcpy", "olMemFill") or klass not in MEMORY_CLASSES or not memory_param:
        if case in ("olMemAlloc:Size=2**64", "olMemAlloc:Size=2**64+8"):
            return {"OL_ERRC_INVALID_SIZE"}
        if variant.startswith("olLaunchKernel@foo") and param == "ArgumentsData" and klass in ("none", "overrun"):
            return {"OL_ERRC_INVALID_ARGUMENT"}
        if case.startswith("olWaitEvents:Events=int"):
            return {"OL_ERRC_INVALID_ARGUMENT"}
        return None
    if param in ("Size", "FillSize"):
        return {"OL_ERRC_INVALID_SIZE"}
    if klass == "null":
        return {"OL_ERRC_INVALID_NULL_POINTER"} if validate else {"OL_ERRC_INVALID_ARGUMENT"}
    if klass == "overrun":
        return {"OL_ERRC_INVALID_SIZE"}
    if label in ("2**64", "2**64+a", "negative"):
        return {"OL_ERRC_INVALID_ARGUMENT"}
    if label == "top-8":
        return {"OL_ERRC_INVALID_SIZE"}
    return {"OL_ERRC_INVALID_ARGUMENT"}


@pytest.mark.parametrize("mode", list(MODES))
def test_bad_values_of_every_function(mode: str) -> None:
    outcomes = run_cases("matrix.py", MODES[mode])
    assert not outcomes.crashes, outcomes.crashes
    raw = [f"{case}: {outcome}" for case, (_, outcome) in outcomes.results.items() if outcome.startswith("RAW")]
    assert not raw, raw
    wrong = []
    for case, (klass, outcome) in outcomes.results.items():
        allowed = _expected(case, klass, mode != "no-validation")
        if allowed is not None and outcome not in allowed:
            wrong.append(f"{case}: {outcome}, expected {sorted(allowed)}")
    assert not wrong, wrong
    per_class = collections.Counter(klass for klass, _ in outcomes.results.values())
    assert len(outcomes.results) > 600, per_class
    print(f"\n{mode}: {len(outcomes.results)} cases {dict(sorted(per_class.items()))}")
