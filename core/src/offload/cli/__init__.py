"""The ``offload`` command: inspect platforms, devices and backends, and run a self-check.

``offload devices [--json]``
    Every platform and every device with every ``DeviceInfo`` property (as
    llvm-offload-device-info prints them). A property that fails shows ``<error: CODE>``.
``offload backends [--json]``
    Every discovered backend: distribution, version, loaded or skipped (with the reason), devices.
``offload trace FILE``
    A summary of a timeline written by ``OFFLOAD_TRACE=perfetto``: calls per API, time per
    kernel, bytes copied per direction, idle gaps per queue (and per rank, for a merged file).
``offload trace merge FILE... -o OUT``
    One timeline for a job from its ranks' files, clocks aligned, one process group per rank.
``offload trace plot FILE -o PNG``
    A picture of a timeline: API calls per thread, device work per queue (needs matplotlib: the plot extra, pip install 'offload[plot]').
``offload --version``
    The versions of offload-core and of every installed backend distribution.
``offload selfcheck [--json] [--platform NAME] [--size N]``
    A real job on every device: allocate, copy in, launch ``saxpy``, copy out, verify, time it.
    The program comes from the backend's conformance capabilities (entry-point group
    ``offload.conformance``): the host backend builds it with the C compiler; a GPU backend reads
    ``$<programs_env>/saxpy<programs_suffix>`` (CUDA: ``OFFLOAD_CUDA_TEST_PROGRAMS``/saxpy.bin,
    AMDGPU: ``OFFLOAD_AMDGPU_PROGRAMS``/saxpy.hsaco). A device without a saxpy binary is skipped,
    not failed, and the skip says which variable to set. ``--size`` is at most 2**32 - 1 and what
    the machine's memory holds (about 24 bytes per float). ``offload devices`` also lists a loaded
    backend's platform that has no device, with the backend's reason; ``selfcheck --platform``
    of such a platform says it too.

``offload`` with no command prints this help and exits 0.

Exit status: 0 success; 1 a device failed, an API call failed, or the system refused (a file
or memory error, named on stderr); 2 nothing to do (no device, no device of the selected
platform, every device skipped) or a usage error (a reserved or over-long backend name, a
``--size`` beyond the machine, a file that is not a trace); 130 interrupted (Ctrl-C).
Results go to stdout, errors to stderr. ``main`` balances its own ``olInit`` with ``olShutDown``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import offload as ol

from ._backends import cmd_backends
from ._common import (
    _ERROR_PREFIX,
    DEFAULT_SIZE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOTHING,
    EXIT_OK,
    PropertyError,
    format_value,
    json_value,
)
from ._devices import cmd_devices
from ._new_backend import add_parser as _add_new_backend
from ._selfcheck import cmd_selfcheck, saxpy_expected
from ._trace import cmd_trace
from ._trace_merge import cmd_merge
from ._trace_plot import cmd_plot

__all__ = ["main", "build_parser", "PropertyError", "format_value", "json_value", "saxpy_expected"]


def version_text() -> str:
    """``offload --version``: offload-core's version and each installed backend distribution's."""
    from importlib.metadata import entry_points  # here, not at the top: importlib.metadata takes ~25 ms to import, which only this command pays

    lines = [f"offload {ol.__version__} (offload-core)"]
    seen = set()
    for ep in entry_points(group="offload.backends"):
        dist = ep.dist
        if dist is not None and dist.name not in seen:
            seen.add(dist.name)
            lines.append(f"  backend {ep.name}: {dist.name} {dist.version}")
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offload", description="Inspect and check offload platforms and devices.")
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    devices = commands.add_parser("devices", help="list every platform and device with every property")
    devices.add_argument("--json", action="store_true", help="print a JSON document")
    devices.set_defaults(run=cmd_devices)

    backends = commands.add_parser("backends", help="list discovered backends: loaded or skipped, and why")
    backends.add_argument("--json", action="store_true", help="print a JSON document")
    backends.set_defaults(run=cmd_backends)

    selfcheck = commands.add_parser("selfcheck", help="run and verify a saxpy job on every device")
    selfcheck.add_argument("--json", action="store_true", help="print a JSON document")
    selfcheck.add_argument("--platform", metavar="NAME", help="check only the devices of this platform")
    selfcheck.add_argument(
        "--size", type=int, default=DEFAULT_SIZE, metavar="N", help="floats per vector (default 2**20)"
    )
    selfcheck.set_defaults(run=cmd_selfcheck)

    trace = commands.add_parser(
        "trace", help="summarise a timeline file written by OFFLOAD_TRACE=perfetto ('trace merge FILE... -o OUT' merges ranks' files, "
        "'trace plot FILE -o PNG' draws it)"
    )
    trace.add_argument("file", metavar="FILE", help="the Chrome trace-event JSON file")
    trace.add_argument("--json", action="store_true", help="print a JSON document")
    trace.set_defaults(run=cmd_trace)

    _add_new_backend(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``offload`` command with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:2] == ["trace", "merge"]:  # a subcommand of trace, whose first word is otherwise a FILE
        return cmd_merge(words[2:], sys.stdout)
    if words[:2] == ["trace", "plot"]:
        return cmd_plot(words[2:], sys.stdout)
    parser = build_parser()
    try:
        args = parser.parse_args(words)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else EXIT_NOTHING
    if args.command is None:
        parser.print_help(sys.stdout)
        return EXIT_OK
    try:
        return int(args.run(args, sys.stdout))
    except ol.OffloadError as error:
        print(f"{_ERROR_PREFIX}{error}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `offload devices | head`
        return EXIT_OK
    except KeyboardInterrupt:
        print(f"{_ERROR_PREFIX}interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (OSError, MemoryError, RecursionError) as error:  # the machine said no: a message, not a traceback
        print(f"{_ERROR_PREFIX}{args.command} failed: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
