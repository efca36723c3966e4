"""Builds offload-capi's libLLVMOffload.so of each ABI level (C over the embedded interpreter that
builds it) into the package's ``lib/`` (LLVM 22's), ``lib/r1/`` (R1's) and ``lib/main/`` (main's),
and pins offload-core to the shared VERSION (everything else: pyproject.toml).

The generated files (each level's ``OffloadAPI.h``, installed under the package's ``include/``, and
``entry.c``) are written at build time from offload's API table: in a checkout the table is read
from ``../core/src`` (stdlib only: ``offload_capi.generate`` imports the table alone); an sdist
carries them (``generated/``, written when the sdist is made).

The library links the libpython of the interpreter running this build (one CPython minor: the
library embeds it, and its extension modules must match), with that libpython's folder as RUNPATH.
"""

import os
import shlex
import tempfile
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _offload_setup.py: a link to the checkout root's
from _offload_setup import requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import Distribution, setup  # noqa: E402
from setuptools.command.build_py import build_py  # noqa: E402
from setuptools.command.sdist import sdist  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNTIME = ["csrc/capi_embed.c", "csrc/capi_convert.c", "csrc/capi_trace.c"]
# ABI level -> (its folder under lib/ and include/, its SONAME); the generated entry.c serves every
# level, compiled with -DCAPI_ABI=CAPI_ABI_<LEVEL> against that level's header
LIBRARIES = {"llvm22": ("", "libLLVMOffload.so.22.1"), "r1": ("r1", "libLLVMOffload.so.23.0git"),
             "main": ("main", "libLLVMOffload.so.23.0git")}
# offload_capi.generate over the checkout's table, in a bare interpreter (-I -S: no site-packages, so
# an installed offload cannot stand in for the checkout's): the package `offload` is a namespace of
# its folder, so that importing the table does not import offload's runtime
_GENERATE = """import sys, types
core, capi, out = sys.argv[1:]
package = types.ModuleType("offload"); package.__path__ = [core + "/offload"]; sys.modules["offload"] = package
sys.path.insert(0, capi)
from offload_capi.generate import main
sys.exit(main([out]))
"""


def generate(out: Path) -> Path:
    """The generated files in ``out`` (include/.../OffloadAPI.h, entry.c): an sdist's copy, or made now."""
    carried = HERE / "generated"
    if (carried / "entry.c").is_file():
        shutil.copytree(carried, out, dirs_exist_ok=True)
        return out
    core = HERE.parent / "core" / "src"
    if not (core / "offload" / "_api" / "table.py").is_file():
        raise SystemExit(f"offload-capi: neither {carried} nor offload's API table ({core}) to generate from")
    subprocess.run([sys.executable, "-I", "-S", "-c", _GENERATE, str(core), str(HERE / "src"), str(out)], check=True)
    return out


def build_library(package: Path, abi: str, generated: Path) -> Path:
    """Compile and link the library of ``abi`` into the built package's lib/ (also as
    ``libLLVMOffload.so``, for -lLLVMOffload)."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise SystemExit("offload-capi: this Python has no shared libpython (configure --enable-shared) to embed")
    folder, soname = LIBRARIES[abi]
    libdir = sysconfig.get_config_var("LIBDIR")
    ldlibrary = sysconfig.get_config_var("LDLIBRARY")  # libpython3.X.so
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")[:1]
    target_dir = package / "lib" / folder
    target_dir.mkdir(parents=True, exist_ok=True)
    out = target_dir / soname
    include = generated / "include" / folder
    cmd = [
        *cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden",
        f"-I{HERE / 'csrc'}", f"-I{include}", f"-I{sysconfig.get_paths()['include']}",
        f"-DCAPI_ABI=CAPI_ABI_{abi.upper()}", *[str(HERE / s) for s in RUNTIME], str(generated / "entry.c"), "-o", str(out),
        f"-Wl,-soname,{soname}", f"-Wl,--version-script={HERE / 'csrc' / 'exports.map'}",
        f"-L{libdir}", f"-l:{ldlibrary}", f"-Wl,-rpath,{libdir}", "-ldl", "-lpthread",
    ]
    print(" ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    shutil.copyfile(out, target_dir / "libLLVMOffload.so")
    return out


class BuildPy(build_py):
    """build_py, then the headers and the libraries into the built package."""

    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "offload_capi"
        with tempfile.TemporaryDirectory() as scratch:
            generated = generate(Path(scratch))
            shutil.copytree(generated / "include", package / "include", dirs_exist_ok=True)
            for abi in LIBRARIES:
                build_library(package, abi, generated)


class Sdist(sdist):
    """An sdist carries the generated files (it has no API table to make them from)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        generate(Path(base_dir) / "generated")


class BinaryDistribution(Distribution):
    """A platform wheel: it carries a native library."""

    def has_ext_modules(self) -> bool:
        return True


setup(
    cmdclass={"build_py": BuildPy, "sdist": Sdist},
    distclass=BinaryDistribution,
    install_requires=[requirement("offload-core", "../core")],
)
