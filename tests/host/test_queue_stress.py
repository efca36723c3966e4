"""``stress/queue_stress.py`` (run under ThreadSanitizer by test_native_tsan.py) counts only what
it synchronised: here it runs without TSan with the last ops of every round held back behind a
slow host function, as a busy machine holds back a parked queue's work; the counts must still
match."""

from __future__ import annotations

import pathlib
from typing import Any

STRESS = pathlib.Path(__file__).resolve().parent / "stress"

HARNESS = r"""
import sys, time
sys.path.insert(0, {stress!r})
import offload as ol
import queue_stress

real = ol.olLaunchKernel
seen = {{}}

def late(_):
    time.sleep(0.25)  # the rest of this round's launches wait on the parked queue

def launch(q, *args):
    n = seen[q] = seen.get(q, 0) + 1
    if n == queue_stress.OPS - 5:
        ol.olLaunchHostFunction(q, late, None)
    return real(q, *args)

ol.olLaunchKernel = launch
sys.exit(queue_stress.main())
"""


def test_queue_stress_counts_what_it_synchronised(run_python: Any) -> None:
    proc = run_python(HARNESS.format(stress=str(STRESS)), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failures []" in proc.stdout
