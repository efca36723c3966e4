"""Where the OpenCL ICD loader and its drivers are, found as PyOpenCL's extension finds them,
without importing PyOpenCL.

PyOpenCL's ``_cl`` extension names its loader in ``DT_NEEDED`` (``libOpenCL-<hash>.so.1.0.0``
bundled in the wheel's ``pyopencl/.libs``; ``libOpenCL.so.1`` where PyOpenCL was built against a
system or conda loader) and finds it through its ``DT_RPATH``/``DT_RUNPATH`` (``$ORIGIN/.libs``,
conda's ``$ORIGIN/../../..``) or the default search. The loader then ``dlopen``s each driver by
the name its ``.icd`` file gives; a bare name (the wheel's ``pocl.icd``: ``libpocl-<hash>.so``)
is found through the extension's ``DT_RPATH`` only, which applies because the extension loaded the
loader. Loading the loader ourselves, that path is missing: ``preload_drivers`` loads each driver
an ``.icd`` file names by bare name from those directories first, so the loader's ``dlopen`` by
that name finds the library already loaded (glibc matches it by soname), as it would under PyOpenCL.

The ``.icd`` files ocl-icd reads: those in ``OCL_ICD_VENDORS`` (a folder, or one ``.icd`` file)
or else ``/etc/OpenCL/vendors``, and, for the wheel's patched loader, those in
``$PYOPENCL_HOME/.libs``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

from ._elf import Dynamic, ElfError, read_dynamic

__all__ = ["Located", "SYSTEM_LOADER", "VENDORS", "locate"]

SYSTEM_LOADER = "libOpenCL.so.1"
VENDORS = "/etc/OpenCL/vendors"


@dataclass
class Located:
    """The loader to open (a path, or ``SYSTEM_LOADER`` for the default search), the value
    ``PYOPENCL_HOME`` needs (None where PyOpenCL is not installed), the folders the loader's bare
    driver names resolve in before the default search, the ``.icd`` files the loader reads (file
    -> the library it names) and what was done to make those drivers loadable."""

    loader: str
    how: str
    pyopencl_home: str | None = None
    driver_dirs: list[str] = field(default_factory=list)
    icd_dirs: list[str] = field(default_factory=list)
    icds: dict[str, str] = field(default_factory=dict)
    preloaded: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """What was searched, for a reason shown by ``offload backends``."""
        icds = ", ".join(f"{Path(f).name} -> {lib}" for f, lib in self.icds.items()) or "none"
        text = f"loader {self.loader} ({self.how}); ICD files in {', '.join(self.icd_dirs) or 'no folder'}: {icds}"
        if self.driver_dirs:
            text += f"; bare driver names looked up in {', '.join(self.driver_dirs)} first"
        return text

    def driver_errors(self) -> list[str]:
        """For each driver an ``.icd`` file names, why it cannot be loaded (none: an empty list)."""
        errors = []
        for icd, library in self.icds.items():
            try:
                ctypes.CDLL(self.preloaded.get(library, library))
            except OSError as exc:
                errors.append(f"{Path(icd).name}: {exc}")
        return errors

    def preload_drivers(self) -> None:
        """Load each driver named by bare name that lies in ``driver_dirs`` (as PyOpenCL's
        extension would find it), so the loader's ``dlopen`` by that name finds it loaded."""
        for library in self.icds.values():
            if "/" in library or library in self.preloaded:
                continue
            for folder in self.driver_dirs:
                candidate = os.path.join(folder, library)
                if os.path.isfile(candidate):
                    try:
                        ctypes.CDLL(candidate)
                    except OSError:  # the loader's own dlopen will fail too; driver_errors says why
                        break
                    self.preloaded[library] = candidate
                    break


def _pyopencl_extension() -> tuple[str, str] | None:
    """PyOpenCL's package folder and its ``_cl`` extension, found without importing PyOpenCL."""
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or spec.origin is None:
        return None
    package = os.path.dirname(os.path.abspath(spec.origin))  # as pyopencl/__init__.py names it
    extensions = sorted(str(p) for p in Path(package).glob("_cl.*.so"))
    return package, extensions[0] if extensions else ""


def _expand(entries: list[str], origin: str) -> list[str]:
    return [os.path.normpath(e.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)) for e in entries]


def _driver_dirs(extension: Dynamic, origin: str, loader: str) -> list[str]:
    """The extension's ``DT_RPATH`` folders: glibc searches them for what the loader it loaded
    ``dlopen``s, unless the extension or the loader has a ``DT_RUNPATH``."""
    if extension.runpath or not extension.rpath:
        return []
    try:
        if os.path.isfile(loader) and read_dynamic(loader).runpath:
            return []
    except (OSError, ElfError):
        return []
    return _expand(extension.rpath, origin)


def _icd_dirs(bundled_in: str | None) -> list[str]:
    """The folders (or ``.icd`` file) ocl-icd reads; the wheel's loader, bundled with the package
    ``bundled_in``, also reads ``$PYOPENCL_HOME/.libs``."""
    folders = [os.environ.get("OCL_ICD_VENDORS") or VENDORS]
    if bundled_in is not None:
        folders.append(os.path.join(bundled_in, ".libs"))
    return folders


def _read_icds(folders: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder in folders:
        files = [Path(folder)] if folder.endswith(".icd") else sorted(Path(folder).glob("*.icd"))
        for icd in files:
            try:
                library = icd.read_text(errors="replace").strip().splitlines()[0].strip()
            except (OSError, IndexError):
                continue
            found[str(icd)] = library
    return found


def locate() -> Located:
    """The loader PyOpenCL's extension links to, and the drivers its ``.icd`` files name."""
    found = _pyopencl_extension()
    if found is None:
        located = Located(SYSTEM_LOADER, "PyOpenCL is not installed: the system's")
    else:
        package, extension = found
        located = Located(SYSTEM_LOADER, f"no PyOpenCL extension _cl in {package}: the system's", pyopencl_home=package)
        try:
            dynamic = read_dynamic(extension) if extension else None
        except (OSError, ElfError) as exc:
            dynamic, located.how = None, f"PyOpenCL's extension cannot be read ({exc}): the system's"
        if dynamic is not None:
            origin = os.path.dirname(extension)
            search = _expand(dynamic.runpath or dynamic.rpath, origin)
            needed = next((n for n in dynamic.needed if n.startswith("libOpenCL")), SYSTEM_LOADER)
            located.loader = next((p for d in search if os.path.isfile(p := os.path.join(d, needed))), needed)
            located.how = f"{needed}, which {Path(extension).name} links to"
            located.driver_dirs = _driver_dirs(dynamic, origin, located.loader)
    # the wheel's loader (in pyopencl/.libs, or pyopencl.libs beside it) reads $PYOPENCL_HOME/.libs
    bundled = found is not None and located.loader.startswith(os.path.dirname(found[0]) + os.sep)
    located.icd_dirs = _icd_dirs(found[0] if bundled and found else None)
    located.icds = _read_icds(located.icd_dirs)
    return located
