"""Memory-safety scenarios, each run in a child process of its own (``python scenarios.py NAME``):
a fault fails only the test that ran it. Each prints one JSON line, ``RESULT {...}``, with what
it saw (error code names, bytes read back); the test decides what was right. The path (compiled
or pure Python) is the child's ``OFFLOAD_COMPILED``, inherited from the test run. The scenarios
are in scenarios_copies.py and scenarios_races.py, their helpers in scenario_kit.py."""

from __future__ import annotations

import scenarios_copies  # noqa: F401 - registers its scenarios
import scenarios_races  # noqa: F401 - registers its scenarios
from scenario_kit import main

if __name__ == "__main__":
    main()
