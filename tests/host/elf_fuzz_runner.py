"""Runs corrupted program images through olIsValidBinary and olCreateProgram in child processes.

``run_images`` starts a child (this file run as a script) on a batch of images; the child reports
each image before trying it and after, so when a child dies or hangs the image that killed it is
known: it is recorded as a crash and a new child goes on with the rest of the batch.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

_HANG_S = 20.0  # no progress for this long: the image is counted as a hang


@dataclass
class Outcome:
    description: str
    valid: bool | None = None  # olIsValidBinary
    created: bool | None = None  # olCreateProgram succeeded
    error: str = ""  # error code of a failed olCreateProgram, or the raw exception
    crash: str = ""  # how the child died on this image ("" when it did not)


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def crashes(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.crash]

    @property
    def disagreements(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.crash and o.valid != o.created]

    @property
    def raw_exceptions(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error.startswith("raw ")]

    def leftover_files(self, tmp: str) -> list[str]:
        return os.listdir(tmp)


def _write_batch(path: str, images: Sequence[bytes]) -> None:
    with open(path, "wb") as f:
        for data in images:
            f.write(struct.pack("<Q", len(data)))
            f.write(data)


def _run_child(batch_path: str, start: int, env: dict[str, str]) -> tuple[list[tuple[str, ...]], str]:
    """Lines the child reported from image ``start`` on, and how it ended ("" for a clean exit)."""
    proc = subprocess.Popen(
        [sys.executable, __file__, batch_path, str(start)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert proc.stdout is not None
    lines: list[tuple[str, ...]] = []
    buffer = b""
    how = ""
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], _HANG_S)
        if not ready:
            proc.kill()
            how = "hang"
            break
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines.extend(tuple(line.decode(errors="replace").split("\t")) for line in complete)
    code = proc.wait()
    proc.stdout.close()
    if not how and code != 0:
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    return lines, how


def run_images(images: Sequence[tuple[str, bytes]], tmp: str, env: dict[str, str] | None = None) -> Report:
    """Try every image (in as few children as crashes allow); every child's TMPDIR is ``tmp``."""
    # (this file also runs as the child script, without tests/ on its path: helpers.child_environ inline)
    child_env = {k: v for k, v in os.environ.items() if k == "OFFLOAD_COMPILED" or not k.startswith("OFFLOAD_")}
    child_env.update(env or {})
    child_env["TMPDIR"] = tmp
    report = Report([Outcome(description) for description, _ in images])
    with tempfile.NamedTemporaryFile(prefix="fuzz-batch-", dir=os.path.dirname(tmp)) as batch:
        _write_batch(batch.name, [data for _, data in images])
        start = 0
        while start < len(images):
            lines, how = _run_child(batch.name, start, child_env)
            last_started = None
            for line in lines:
                index = int(line[1])
                if line[0] == "S":
                    last_started = index
                else:
                    outcome = report.outcomes[index]
                    outcome.valid, outcome.created, outcome.error = line[2] == "1", line[3] == "1", line[4]
                    last_started = None
            if last_started is None:
                if how:  # died between images (e.g. at exit): blame nothing, stop
                    raise AssertionError(f"fuzz child ended with {how} outside any image")
                break
            report.outcomes[last_started].crash = how or "exit 0 mid-image"
            start = last_started + 1
    return report


def _child(batch_path: str, start: int) -> None:
    import offload as ol

    images: list[bytes] = []
    with open(batch_path, "rb") as f:
        while header := f.read(8):
            images.append(f.read(struct.unpack("<Q", header)[0]))
    ol.olInit()
    found: list[ol.DeviceHandle] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
    out = sys.stdout
    for index in range(start, len(images)):
        out.write(f"S\t{index}\n")
        out.flush()
        data = images[index]
        error = ""
        valid = created = False
        try:
            valid = ol.olIsValidBinary(host, data)
            program = ol.olCreateProgram(host, data)
            created = True
            for name, kind in (("foo", ol.SymbolKind.KERNEL), ("global", ol.SymbolKind.GLOBAL_VARIABLE)):
                try:
                    ol.olGetSymbol(program, name, kind)
                except ol.OffloadError:
                    pass
            ol.olDestroyProgram(program)
        except ol.OffloadError as exc:
            error = exc.code.name
        except Exception as exc:  # a raw internal exception is a defect too
            error = f"raw {type(exc).__name__}: {exc}".replace("\t", " ").replace("\n", " ")
        out.write(f"R\t{index}\t{int(valid)}\t{int(created)}\t{error}\n")
        out.flush()
    ol.olShutDown()


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]))
