"""The ICD loader and drivers offload opens are the ones PyOpenCL's extension opens, found
without importing PyOpenCL (``offload_opencl._locate``, ``_elf``): the same libraries mapped, the
same platforms in whichever order the two come, PyOpenCL working after offload's discovery, and a
reason naming what was searched where no platform is found. What loads drivers runs in a child."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import child_environ

_ABSENT = "offload-opencl or pyopencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)"
cl = pytest.importorskip("pyopencl", reason=_ABSENT)
pytest.importorskip("offload_opencl", reason=_ABSENT)

from offload_opencl import _elf, _locate  # noqa: E402

#: The OpenCL libraries a process has mapped (the loader and its drivers), and its platforms.
_MAPPED = r"""
def mapped():
    import os
    names = {line.split()[-1] for line in open("/proc/self/maps") if len(line.split()) >= 6}
    return sorted(n for n in names if "OpenCL" in os.path.basename(n) or "pocl" in os.path.basename(n))
"""
_OFFLOAD_FIRST = _MAPPED + r"""
import json, sys
import offload as ol
ol.olInit()
names = [d.name for d in ol.devices("opencl")]
pyopencl_at_init = "pyopencl" in sys.modules
from offload_opencl import _icd
ids = _icd.Loader.open().platforms()
import numpy as np, pyopencl as cl
platforms = cl.get_platforms()
ctx = cl.Context(platforms[0].get_devices())
queue = cl.CommandQueue(ctx)
data = np.arange(256, dtype=np.uint32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
back = np.empty_like(data)
cl.enqueue_copy(queue, back, buf).wait()
print(json.dumps({"names": names, "pyopencl_at_init": pyopencl_at_init, "ours": ids, "theirs": [p.int_ptr for p in platforms],
                  "copied": bool((back == data).all()), "mapped": mapped()}))
ol.olShutDown()
"""
_PYOPENCL_FIRST = _MAPPED + r"""
import json
import pyopencl as cl
theirs = [p.int_ptr for p in cl.get_platforms()]
import offload as ol
ol.olInit()
from offload_opencl import _icd
print(json.dumps({"names": [d.name for d in ol.devices("opencl")], "ours": _icd.Loader.open().platforms(), "theirs": theirs,
                  "mapped": mapped()}))
ol.olShutDown()
"""
_OFFLOAD_ALONE = _MAPPED + r"""
import json
import offload as ol
ol.olInit()
print(json.dumps({"names": [d.name for d in ol.devices("opencl")], "mapped": mapped()}))
"""
_PYOPENCL_ALONE = _MAPPED + r"""
import json
import pyopencl as cl
devices = [d for p in cl.get_platforms() for d in p.get_devices()]  # as olInit enumerates them
print(json.dumps({"theirs": [p.int_ptr for p in cl.get_platforms()], "mapped": mapped()}))
"""


def _child(code: str, **env: str) -> tuple[Any, str]:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env={**child_environ(), "OFFLOAD_BACKENDS": "opencl", **env}
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_offload_first_then_pyopencl_in_one_process() -> None:
    """Discovery before PyOpenCL's import finds the devices through the loader PyOpenCL then uses:
    its platforms are offload's, and it copies data through them (ocl-icd reports no driver it
    could not open)."""
    out, stderr = _child(_OFFLOAD_FIRST, OCL_ICD_DEBUG="7")
    assert out["names"] and not out["pyopencl_at_init"], out
    assert out["ours"] == out["theirs"] and out["copied"], out
    assert "error while dlopening" not in stderr, [line for line in stderr.splitlines() if "dlopen" in line]
    assert len([m for m in out["mapped"] if "libOpenCL" in m]) == 1, out["mapped"]


def test_pyopencl_first_then_offload_in_one_process() -> None:
    out, _ = _child(_PYOPENCL_FIRST)
    assert out["names"] and out["ours"] == out["theirs"], out
    assert len([m for m in out["mapped"] if "libOpenCL" in m]) == 1, out["mapped"]


def test_offload_maps_what_pyopencl_maps() -> None:
    """The loader and drivers a process that only uses offload maps are those PyOpenCL alone maps."""
    alone, _ = _child(_PYOPENCL_ALONE)
    ours, _ = _child(_OFFLOAD_ALONE)
    assert alone["theirs"] and ours["names"], (alone, ours)
    assert ours["mapped"] == alone["mapped"], (ours["mapped"], alone["mapped"])


def test_locate_reads_the_loader_pyopencls_extension_links_to() -> None:
    located = _locate.locate()
    package = Path(cl.__file__).parent
    (extension,) = package.glob("_cl.*.so")
    needed = [n for n in _elf.read_dynamic(str(extension)).needed if n.startswith("libOpenCL")]
    assert needed and Path(located.loader).name == needed[0], (located, needed)
    assert located.pyopencl_home == str(package)
    assert located.icds, f"no ICD file: {located.describe()}"


def _cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the test libraries")
    return cc


@pytest.mark.parametrize("tags", ["--disable-new-dtags", "--enable-new-dtags"])
def test_the_elf_reader_reads_needed_soname_and_search_paths(tags: str, tmp_path: Path) -> None:
    cc = _cc()
    (tmp_path / "a.c").write_text("int a(void) { return 1; }\n")
    (tmp_path / "b.c").write_text("int a(void); int b(void) { return a(); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "liba.so"), str(tmp_path / "a.c"), "-Wl,-soname,liba.so.7"], check=True)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(tmp_path / "libb.so"), str(tmp_path / "b.c"), f"-L{tmp_path}", "-la",
         f"-Wl,{tags},-rpath,$ORIGIN/x:/opt/y"], check=True,
    )  # fmt: skip
    found = _elf.read_dynamic(str(tmp_path / "libb.so"))
    assert "liba.so.7" in found.needed and found.soname is None
    paths = found.rpath if tags == "--disable-new-dtags" else found.runpath
    assert paths == ["$ORIGIN/x", "/opt/y"] and not (found.runpath if paths is found.rpath else found.rpath), found
    assert _elf.read_dynamic(str(tmp_path / "liba.so")).soname == "liba.so.7"


def test_the_elf_reader_names_a_file_that_is_not_elf(tmp_path: Path) -> None:
    (tmp_path / "x.so").write_bytes(b"not an ELF file at all" * 8)
    with pytest.raises(_elf.ElfError, match=r"x\.so is not a little-endian ELF64 file"):
        _elf.read_dynamic(str(tmp_path / "x.so"))


_STATUS = r"""
import json, sys
import offload as ol
ol.olInit()
status = next(s for s in ol.backend_status() if s.name == "opencl")
print(json.dumps({"loaded": status.loaded, "devices": status.device_count, "note": status.note, "pyopencl": "pyopencl" in sys.modules}))
ol.olShutDown()
"""


def _wheel_without_drivers(tmp_path: Path, icds: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A PyOpenCL package laid out as the wheel (``_cl`` and its loader in ``.libs``, linked, not
    copied) whose ``.libs`` holds only ``icds`` (file name -> library), first on the path; the
    system's ICD folder replaced by an empty one."""
    package = Path(cl.__file__).parent
    (extension,) = package.glob("_cl.*.so")
    loader = Path(_locate.locate().loader)
    if not loader.is_file() or loader.parent != package / ".libs":
        pytest.skip(f"PyOpenCL here is not the wheel layout (its loader: {loader})")
    fake = tmp_path / "site" / "pyopencl"
    (fake / ".libs").mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the test stand-in of PyOpenCL is not for import')\n")
    (fake / extension.name).symlink_to(extension)
    (fake / ".libs" / loader.name).symlink_to(loader)
    for name, library in icds.items():
        (fake / ".libs" / name).write_text(library + "\n")
    (tmp_path / "vendors").mkdir()
    return fake, {"PYTHONPATH": str(tmp_path / "site"), "OCL_ICD_VENDORS": str(tmp_path / "vendors")}


def test_no_driver_is_a_reason_naming_what_was_searched(tmp_path: Path) -> None:
    """A loader without drivers (the wheel's layout without its PoCL, no system ICD): no crash, and
    ``offload backends`` names the loader and the folders searched for ICD files."""
    fake, env = _wheel_without_drivers(tmp_path, {})
    out, _ = _child(_STATUS, **env)
    assert out["loaded"] and out["devices"] == 0 and not out["pyopencl"], out
    assert out["note"].startswith("no OpenCL platform (clGetPlatformIDs failed: OpenCL status -1001 (CL_PLATFORM_NOT_FOUND_KHR"), out
    assert f"ICD files in {tmp_path / 'vendors'}, {fake / '.libs'}: none" in out["note"], out["note"]
    proc = subprocess.run(
        [sys.executable, "-m", "offload", "backends"], capture_output=True, text=True, timeout=120, env={**child_environ(), **env}
    )
    assert proc.returncode == 0, proc.stderr
    assert "opencl: no devices: no OpenCL platform (clGetPlatformIDs failed" in proc.stdout, proc.stdout


def test_a_driver_that_cannot_be_loaded_is_named(tmp_path: Path) -> None:
    _, env = _wheel_without_drivers(tmp_path, {"broken.icd": "libnot-a-driver-offload-test.so"})
    out, _ = _child(_STATUS, **env)
    assert out["devices"] == 0, out
    assert "broken.icd -> libnot-a-driver-offload-test.so" in out["note"], out["note"]
    assert "drivers that cannot be loaded: broken.icd: libnot-a-driver-offload-test.so: cannot open shared object file" in out["note"], out["note"]


def test_without_pyopencls_extension_the_system_loader_is_named(tmp_path: Path) -> None:
    """A ``pyopencl`` without its ``_cl`` extension: discovery falls back to the system's loader
    (``libOpenCL.so.1``), and the reason says so, whether that loader is absent or finds nothing."""
    (tmp_path / "pyopencl.py").write_text("")
    (tmp_path / "vendors").mkdir()
    out, _ = _child(_STATUS, PYTHONPATH=str(tmp_path), OCL_ICD_VENDORS=str(tmp_path / "vendors"))
    assert out["devices"] == 0 and out["note"].startswith("no OpenCL platform ("), out
    assert "libOpenCL.so.1" in out["note"], out["note"]
    if "cannot be loaded" not in out["note"]:  # the system has a loader: it read the empty folder
        assert f"no PyOpenCL extension _cl in {tmp_path}: the system's" in out["note"], out["note"]
        assert f"ICD files in {tmp_path / 'vendors'}: none" in out["note"], out["note"]


@pytest.mark.parametrize(("extension_tags", "loader_tags", "searched"), [
    ("--disable-new-dtags", "--disable-new-dtags", True),  # DT_RPATH reaches what the loader dlopens
    ("--enable-new-dtags", "--disable-new-dtags", False),  # DT_RUNPATH reaches only the extension's own needs
    ("--disable-new-dtags", "--enable-new-dtags", False),  # a loader with DT_RUNPATH searches only its own
])  # fmt: skip
def test_bare_driver_names_are_looked_up_where_glibc_would(extension_tags: str, loader_tags: str, searched: bool, tmp_path: Path) -> None:
    cc = _cc()
    (tmp_path / "x.c").write_text("int x(void) { return 0; }\n")
    for name, tags in (("libloader.so", loader_tags), ("libext.so", extension_tags)):
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / name), str(tmp_path / "x.c"), f"-Wl,{tags},-rpath,$ORIGIN/libs"], check=True)
    extension = _elf.read_dynamic(str(tmp_path / "libext.so"))
    dirs = _locate._driver_dirs(extension, str(tmp_path), str(tmp_path / "libloader.so"))
    assert dirs == ([str(tmp_path / "libs")] if searched else []), (extension, dirs)
