"""6.8 program (olCreateProgram, olIsValidBinary, olDestroyProgram) and 6.9 symbol (olGetSymbol,
olGetSymbolInfo(Size))."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import FORCE_UINT32, NULL_HANDLE, NULL_POINTER, Base, InfoQueryRefusals, global_variable, kernel, raises, require

_GARBAGE = b"not an offload binary"


class TestProgram(Base):
    def test_success(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        program = ol.olCreateProgram(device, program_binary("foo"))
        assert isinstance(program, ol.ProgramHandle)
        symbol = kernel(program, "foo")  # the program holds its kernel
        assert ol.olGetSymbolInfo(symbol, ol.SymbolInfo.KIND) is ol.SymbolKind.KERNEL
        ol.olDestroyProgram(program)

    def test_success_bytearray_and_memoryview(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        data = program_binary("foo")
        for view in (bytearray(data), memoryview(data)):
            ol.olDestroyProgram(ol.olCreateProgram(device, view))

    def test_success_twice(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        data = program_binary("foo")
        first = ol.olCreateProgram(device, data)
        second = ol.olCreateProgram(device, data)
        assert first is not second
        ol.olDestroyProgram(first)
        kernel(second, "foo")  # the second copy is still usable
        ol.olDestroyProgram(second)

    def test_null_device_handle(self, program_binary: Callable[[str], bytes]) -> None:
        with raises(NULL_HANDLE):
            ol.olCreateProgram(None, program_binary("foo"))

    def test_null_prog_data(self, device: Any) -> None:
        with raises(NULL_POINTER):
            ol.olCreateProgram(device, None)

    def test_zero_size_binary(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_BINARY):
            ol.olCreateProgram(device, b"")

    def test_invalid_binary(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_BINARY):
            ol.olCreateProgram(device, _GARBAGE)

    def test_destroy_success(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        program = ol.olCreateProgram(device, program_binary("foo"))
        ol.olDestroyProgram(program)

    def test_destroy_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olDestroyProgram(None)

    def test_destroy_invalidates_symbols(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        program = ol.olCreateProgram(device, program_binary("foo"))
        symbol = kernel(program, "foo")
        ol.olDestroyProgram(program)
        with raises(ol.ErrorCode.INVALID_ARGUMENT) as info:  # the core's answer for a dead handle
            ol.olGetSymbolInfo(symbol, ol.SymbolInfo.KIND)
        assert "destroyed" in info.value.details, info.value
        with raises(ol.ErrorCode.INVALID_ARGUMENT) as info:
            kernel(program, "foo")
        assert "destroyed" in info.value.details, info.value


class TestIsValidBinary(Base):
    def test_success(self, device: Any, program_binary: Callable[[str], bytes]) -> None:
        data = program_binary("foo")
        assert ol.olIsValidBinary(device, data) is True
        assert ol.olIsValidBinary(device, data[:0]) is False  # the same data with size 0

    def test_invalid_data(self, device: Any) -> None:
        assert ol.olIsValidBinary(device, _GARBAGE) is False

    def test_empty(self, device: Any) -> None:
        assert ol.olIsValidBinary(device, b"") is False

    def test_null_data(self, device: Any) -> None:
        with raises(NULL_POINTER):
            ol.olIsValidBinary(device, None)

    def test_null_device(self) -> None:
        with raises(NULL_HANDLE):
            ol.olIsValidBinary(None, _GARBAGE)


# --- symbols ---------------------------------------------------------------------------------

K = ol.SymbolKind
S = ol.SymbolInfo


class _ProgramBase(Base):
    @pytest.fixture
    def foo(self, load_program: Callable[[str], Any]) -> Any:
        return load_program("foo")

    @pytest.fixture
    def global_program(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "globals")
        return load_program("global")

    @pytest.fixture
    def global_symbol(self, global_program: Any) -> Any:
        return global_variable(global_program, "global")

    @pytest.fixture
    def foo_kernel(self, foo: Any) -> Any:
        return kernel(foo, "foo")


class TestSymbol(_ProgramBase):
    def test_kernel_success(self, foo: Any) -> None:
        symbol = kernel(foo, "foo")
        assert isinstance(symbol, ol.SymbolHandle)

    def test_kernel_same_handle(self, foo: Any) -> None:
        assert kernel(foo, "foo") is kernel(foo, "foo")

    def test_kernel_invalid_null_program(self) -> None:
        with raises(NULL_HANDLE):
            ol.olGetSymbol(None, "foo", K.KERNEL)

    def test_kernel_invalid_null_name(self, foo: Any) -> None:
        with raises(NULL_POINTER):
            ol.olGetSymbol(foo, None, K.KERNEL)

    def test_invalid_kernel_name(self, foo: Any) -> None:
        with raises(ol.ErrorCode.NOT_FOUND):
            ol.olGetSymbol(foo, "invalid_kernel_name", K.KERNEL)

    def test_invalid_kind(self, foo: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetSymbol(foo, "foo", FORCE_UINT32)

    def test_global_success(self, global_program: Any) -> None:
        symbol = global_variable(global_program, "global")
        assert isinstance(symbol, ol.SymbolHandle)

    def test_global_same_handle(self, global_program: Any) -> None:
        first = global_variable(global_program, "global")
        assert first is global_variable(global_program, "global")

    def test_global_kernels(self, global_program: Any) -> None:
        read, write = kernel(global_program, "read"), kernel(global_program, "write")
        assert read is not write

    def test_global_invalid_null_program(self) -> None:
        with raises(NULL_HANDLE):
            ol.olGetSymbol(None, "global", K.GLOBAL_VARIABLE)

    def test_global_invalid_null_name(self, global_program: Any) -> None:
        with raises(NULL_POINTER):
            ol.olGetSymbol(global_program, None, K.GLOBAL_VARIABLE)

    def test_invalid_global_name(self, global_program: Any) -> None:
        with raises(ol.ErrorCode.NOT_FOUND):
            ol.olGetSymbol(global_program, "invalid_global", K.GLOBAL_VARIABLE)

    def test_same_name_in_two_programs(self, load_program: Callable[[str], Any]) -> None:
        """foo and bar both export a kernel named foo: two different symbols."""
        foo, bar = load_program("foo"), load_program("bar")
        assert kernel(foo, "foo") is not kernel(bar, "foo")


class TestSymbolInfo(_ProgramBase, InfoQueryRefusals):
    query, valid, subject = "olGetSymbolInfo", S.KIND, "global_symbol"

    def test_kernel_success_kind(self, foo: Any) -> None:
        assert ol.olGetSymbolInfo(kernel(foo, "foo"), S.KIND) == K.KERNEL

    def test_global_success_kind(self, global_program: Any) -> None:
        assert ol.olGetSymbolInfo(global_variable(global_program, "global"), S.KIND) == K.GLOBAL_VARIABLE

    @pytest.mark.parametrize("prop", [S.GLOBAL_VARIABLE_ADDRESS, S.GLOBAL_VARIABLE_SIZE], ids=lambda p: p.name)
    def test_kernel_invalid_global_property(self, foo: Any, prop: Any) -> None:
        with raises(ol.ErrorCode.SYMBOL_KIND):
            ol.olGetSymbolInfo(kernel(foo, "foo"), prop)

    def test_global_success_address(self, global_program: Any) -> None:
        address = ol.olGetSymbolInfo(global_variable(global_program, "global"), S.GLOBAL_VARIABLE_ADDRESS)
        assert type(address) is int and address != 0

    def test_global_success_size(self, global_program: Any) -> None:
        size = ol.olGetSymbolInfo(global_variable(global_program, "global"), S.GLOBAL_VARIABLE_SIZE)
        assert size == 64 * 4


class TestSymbolInfoSize(_ProgramBase, InfoQueryRefusals):
    query, valid, subject = "olGetSymbolInfoSize", S.KIND, "foo_kernel"

    def test_kernel_success_kind(self, foo: Any) -> None:
        assert ol.olGetSymbolInfoSize(kernel(foo, "foo"), S.KIND) == 4  # sizeof(ol_symbol_kind_t)

    @pytest.mark.parametrize(
        ("prop", "size"),
        [(S.KIND, 4), (S.GLOBAL_VARIABLE_ADDRESS, 8), (S.GLOBAL_VARIABLE_SIZE, 8)],
        ids=["KIND", "ADDRESS", "SIZE"],
    )
    def test_global_success(self, global_program: Any, prop: Any, size: int) -> None:
        assert ol.olGetSymbolInfoSize(global_variable(global_program, "global"), prop) == size

    def test_kernel_invalid_address(self, foo: Any) -> None:
        with raises(ol.ErrorCode.SYMBOL_KIND):
            ol.olGetSymbolInfoSize(kernel(foo, "foo"), S.GLOBAL_VARIABLE_ADDRESS)
