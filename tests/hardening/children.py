"""Running crash-capable cases in child processes: many cases per child, and a child that dies
names the case it died in and is restarted after it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Outcomes:
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  # case -> (class, outcome)
    crashes: list[str] = field(default_factory=list)  # "case: how the child died"


def run_cases(script: str, env: dict[str, str], timeout: float = 300) -> Outcomes:
    """Run ``script`` (in this folder; protocol of ``matrix.py``) until it reaches END."""
    outcomes = Outcomes()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") or k == "OFFLOAD_HOST_CACHE"}
    full_env.update(env)
    after: list[str] = []
    while True:
        proc = subprocess.run(
            [sys.executable, str(HERE / script), *after],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=HERE,
        )
        started = None
        ended = False
        for line in proc.stdout.splitlines():
            if line.startswith("START "):
                started = line[6:]
            elif line.startswith("RESULT "):
                name, klass, outcome = line[7:].split(" ", 2)
                outcomes.results[name] = (klass, outcome)
                started = None
            elif line == "END":
                ended = True
        if ended and proc.returncode == 0:
            return outcomes
        tail = proc.stderr.strip().splitlines()[-3:]
        if started is None:
            outcomes.crashes.append(f"<outside any case>: exit {proc.returncode}: {' | '.join(tail)}")
            return outcomes
        outcomes.crashes.append(f"{started}: exit {proc.returncode}: {' | '.join(tail)}")
        after = ["--after", started]
