"""Reading AMDGPU program images (no HIP): real clang-19 output for the right and the wrong
target, xnack settings, offload bundles, a cubin-shaped ELF, PTX, garbage, and the metadata note."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

import hipsim
from offload import KernelParam
from offload_amdgpu import CodeObject, Target, code_object_for
from offload_amdgpu._code_object import MACH_NAMES, describe
from offload_amdgpu._msgpack import unpack

DEVICE = Target.parse("gfx90a:sramecc+:xnack-")


def test_target_parse_and_text() -> None:
    assert Target.parse("gfx90a") == Target("gfx90a")
    assert Target.parse("gfx90a:sramecc+:xnack-") == Target("gfx90a", "+", "-")
    assert str(Target("gfx90a", "+", "-")) == "gfx90a:sramecc+:xnack-"
    for bad in ("sm_90", "gfx90a:xnack", "gfx90a:foo+", ""):
        with pytest.raises(ValueError):
            Target.parse(bad)


def test_target_compatibility() -> None:
    assert Target("gfx90a").runs_on(DEVICE) is None  # unspecified features run anywhere
    assert Target("gfx90a", "any", "any").runs_on(DEVICE) is None
    assert Target("gfx90a", None, "-").runs_on(DEVICE) is None
    assert "xnack+" in (Target("gfx90a", None, "+").runs_on(DEVICE) or "")
    assert "sramecc-" in (Target("gfx90a", "-", None).runs_on(DEVICE) or "")
    assert "gfx1030" in (Target("gfx1030").runs_on(DEVICE) or "")


def test_right_target_and_metadata(hip_build) -> None:
    data = (hip_build.programs / "multiargs.hsaco").read_bytes()
    code = code_object_for(data, DEVICE)
    assert code.target.processor == "gfx90a" and code.abi_version >= 1
    info = code.kernels["multiargs"]
    # char a, int *b, short c: natural alignment, as the C struct of the parameters
    assert info.params == (KernelParam(0, 1, "bytes"), KernelParam(8, 8, "pointer"), KernelParam(16, 2, "bytes"))
    assert info.explicit_size == 18


OPENCL_TYPED = """
__kernel void typed(__global const double *src, __global int *dst, ulong n, __global void *raw,
                    __global uchar *bytes) {
  dst[0] = (int)(src[0] * 2) + (int)n + (raw != 0) + bytes[0];
}
"""


def test_opencl_type_names_give_pointer_element_types(clang: str, tmp_path: Path) -> None:
    """clang's OpenCL C metadata (``.type_name`` "double*", ``.is_const``) becomes
    ``KernelParam.element`` / ``const``; ``void*`` stays untyped. (HIP
    code objects carry no ``.type_name``: ``test_right_target_and_metadata``.)"""
    source = tmp_path / "typed.cl"
    source.write_text(OPENCL_TYPED)
    out = tmp_path / "typed.hsaco"
    subprocess.run([clang, "-x", "cl", "-cl-std=CL2.0", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-nogpulib",
                    "-O2", "-o", str(out), str(source)], check=True, capture_output=True)  # fmt: skip
    params = CodeObject.parse(out.read_bytes()).kernels["typed"].params
    assert [(p.kind, p.element, p.const) for p in params] == [
        ("pointer", "float64", True), ("pointer", "int32", False), ("uint", None, False),
        ("pointer", None, False), ("pointer", "uint8", False),
    ]  # fmt: skip


def test_hidden_arguments_are_left_out(hip_build) -> None:
    code = CodeObject.parse((hip_build.programs / "foo.hsaco").read_bytes())
    info = code.kernels["foo"]  # uses blockDim: the runtime appends hidden arguments
    assert info.params == (KernelParam(0, 8, "pointer"),)
    assert info.kernarg_size > info.explicit_size == 8


def test_globals_and_init_fini_kernels(hip_build) -> None:
    ctor = CodeObject.parse((hip_build.programs / "global_ctor.hsaco").read_bytes())
    assert ctor.globals["global"] == 64 * 4
    assert "amdgcn.device.init" in ctor.kernels  # clang lowers the device constructor to it
    dtor = CodeObject.parse((hip_build.programs / "global_dtor.hsaco").read_bytes())
    assert dtor.globals["dtor_out"] == 8 and "amdgcn.device.fini" in dtor.kernels
    assert not any(name.endswith(".kd") for name in ctor.globals)


def test_wrong_target(hip_build) -> None:
    data = (hip_build.other / "foo.hsaco").read_bytes()
    assert CodeObject.parse(data).target.processor == "gfx1030"
    with pytest.raises(ValueError, match="built for gfx1030 but the device is gfx90a"):
        code_object_for(data, DEVICE)


def test_xnack_setting_is_checked(hip_build, tmp_path: Path) -> None:
    on = hipsim.build_code_object(hipsim.KERNELS / "noargs.cu", "gfx90a:xnack+", tmp_path / "on.hsaco").read_bytes()
    off = hipsim.build_code_object(hipsim.KERNELS / "noargs.cu", "gfx90a:xnack-", tmp_path / "off.hsaco").read_bytes()
    assert CodeObject.parse(on).target == Target("gfx90a", "any", "+")
    with pytest.raises(ValueError, match="xnack"):
        code_object_for(on, DEVICE)
    assert code_object_for(off, DEVICE).target.xnack == "-"


@pytest.mark.parametrize("processor", ["gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"])
def test_mach_table_matches_clang(clang: str, tmp_path: Path, processor: str) -> None:
    code = hipsim.build_code_object(hipsim.KERNELS / "noargs.cu", processor, tmp_path / "k.hsaco").read_bytes()
    mach = struct.unpack_from("<I", code, 48)[0] & 0xFF
    assert MACH_NAMES[mach] == processor
    assert CodeObject.parse(code).target.processor == processor


def test_bundle_selects_the_device_entry(foo_bundle: Path) -> None:
    data = foo_bundle.read_bytes()
    assert data.startswith(b"__CLANG_OFFLOAD_BUNDLE__") and describe(data) == "a clang offload bundle"
    assert code_object_for(data, DEVICE).target.processor == "gfx90a"
    assert code_object_for(data, Target.parse("gfx1030")).target.processor == "gfx1030"
    with pytest.raises(ValueError, match=r"no code object for gfx908 \(it has: .*gfx90a"):
        code_object_for(data, Target.parse("gfx908"))


def test_truncated_bundle(foo_bundle: Path) -> None:
    data = foo_bundle.read_bytes()
    with pytest.raises(ValueError, match="offload bundle"):
        code_object_for(data[:100], DEVICE)


def test_cubin_shaped_elf_is_refused(hip_build) -> None:
    """An ELF with EM_CUDA (190), as nvcc's cubins: the machine is named."""
    code = bytearray((hip_build.programs / "foo.hsaco").read_bytes())
    code[18:20] = struct.pack("<H", 190)
    assert describe(bytes(code)) == "a CUDA cubin (EM_CUDA)"
    with pytest.raises(ValueError, match="not EM_AMDGPU"):
        code_object_for(bytes(code), DEVICE)


def test_ptx_is_refused(clang: str, tmp_path: Path) -> None:
    """clang-19's NVPTX output (PTX text) is not an AMDGPU image."""
    out = tmp_path / "f.ptx"
    subprocess.run(
        ["clang-19", "--target=nvptx64-nvidia-cuda", "-march=sm_70", "-S", "-x", "c", "-", "-o", str(out)],
        input="void f(void) {}", capture_output=True, text=True, check=True,
    )  # fmt: skip
    data = out.read_bytes()
    assert b".target sm_70" in data
    with pytest.raises(ValueError, match="not an ELF"):
        code_object_for(data, DEVICE)


@pytest.mark.parametrize(
    "data", [b"", b"garbage" * 20, b"\x7fELF" + b"\0" * 60, b"\x7fELF\x01\x01" + b"\0" * 58, b"CCOB" + b"\0" * 60]
)
def test_garbage_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        code_object_for(data, DEVICE)


def test_truncated_code_object(hip_build) -> None:
    data = (hip_build.programs / "foo.hsaco").read_bytes()
    for cut in (64, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError):
            CodeObject.parse(data[:cut])


def test_msgpack_decoder() -> None:
    assert unpack(b"\x82\xa1a\x01\xa1b\x92\xc3\xc0") == {"a": 1, "b": [True, None]}
    assert unpack(b"\xd0\xff") == -1 and unpack(b"\xcd\x01\x00") == 256 and unpack(b"\xe0") == -32
    assert unpack(b"\xcb" + struct.pack(">d", 1.5)) == 1.5
    for bad in (b"\x92\x01", b"\xc1", b"\x01\x02", b"\xa3ab", b"\x81\x90\x01"):
        with pytest.raises(ValueError, match="msgpack"):
            unpack(bad)
