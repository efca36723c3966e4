"""Small habits of GPU Python users (issue 32 part 6): ``end - start`` for events, and a wrong
kernel or global name answered with the names the program has (object layer and flat API)."""

from __future__ import annotations

import pytest

import offload
import offload_host
from offload import ErrorCode, OffloadError, SymbolKind


def test_end_minus_start_is_the_elapsed_time(host: offload.objects.Device) -> None:
    with host.queue() as queue:
        start = queue.record()
        offload.zeros(1 << 16, device=host).fill(1, queue=queue)
        end = queue.record()
        queue.sync()
        elapsed = end - start
        assert isinstance(elapsed, float) and elapsed == start.elapsed_time(end) and elapsed >= 0
        with pytest.raises(TypeError):
            end - 1.0  # type: ignore[operator]


def test_a_wrong_kernel_name_lists_the_kernels(host: offload.objects.Device) -> None:
    source = (
        "#include <offload_host.h>\n"
        "OFFLOAD_KERNEL(first) {}\nOFFLOAD_KERNEL(second) {}\n"
    )
    with host.load_program(offload_host.build_program(source, name="two_kernels")) as program:
        with pytest.raises(OffloadError, match=r"'frist' not found .*the program's kernels are 'first', 'second'") as info:
            program.kernel("frist")
        assert info.value.code is ErrorCode.NOT_FOUND
        with pytest.raises(OffloadError, match=r"the program's kernels are 'first', 'second'"):
            offload.olGetSymbol(program.handle, "third", SymbolKind.KERNEL)
        with pytest.raises(OffloadError, match=r"the program has no global variables") as info:
            program.global_variable("counter")
        assert info.value.code is ErrorCode.NOT_FOUND
        assert program.kernel("second").name == "second"
