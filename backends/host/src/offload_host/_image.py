"""Program images of the host device: ELF shared objects for this machine.

An image is accepted only when (1) the static checks of ``_elf`` prove that the dynamic loader
stays inside the object's own memory, and (2) a trial load in a child process (``ld.so`` in
trace mode, relocating everything but running no constructor) succeeds: that child meets the
loader's remaining verdicts (missing libraries, undefined symbols or versions) and, should the
loader still crash on the image, dies instead of this process. ``olIsValidBinary`` runs the same
two steps, so it is true exactly when ``olCreateProgram`` loads the image. Verdicts are cached
per image content.

A loaded image lives in an anonymous memory file (``memfd``; where the kernel has none, an
unnamed ``O_TMPFILE`` file, else a temporary file unlinked at once, in ``tempfile.gettempdir()``)
that is dlopen'd as ``/proc/self/fd/N``: no path is ever left behind, even if the process dies,
and two programs never share a handle even when their bytes are equal.

The image's own code is trusted: its constructors run in this process at load, its destructors
at unload, and a constructor that crashes takes the process with it, as in any dlopen.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import struct
import threading
from collections import OrderedDict
from functools import lru_cache

from offload import ErrorCode, KernelParam, OffloadError

from ._native import dl_base, dl_close, dl_open
from ._elf import inspect
from ._elf_format import STT_COMMON, STT_FUNC, STT_OBJECT, ElfImage, ElfProblem

__all__ = ["HostImage", "image_problem", "kernel_params_of"]

_PARAMS_PREFIX = "offload_params_"  # offload_host.h: OFFLOAD_KERNEL_PARAMS
_MARK_PREFIX = "offload_kernel_"  # offload_host.h: OFFLOAD_KERNEL's mark
_MARK = struct.Struct("<I")
_MARK_MAGIC = 0x4B52454B  # OFFLOAD_KERNEL_MAGIC, "KERK"
_MARKS = (_PARAMS_PREFIX, _MARK_PREFIX)
_PARAMS_MAGIC, _PARAMS_VERSION = 0x504B464F, 1  # "OFKP"
_PARAMS_HEADER = struct.Struct("<IIQQ")  # magic, version, args_size, count
_PARAM_ENTRY = struct.Struct("<QQII48s")  # offset, size, kind, element, name
_ELEMENTS = {1: "bool", 2: "int8", 3: "uint8", 4: "int16", 5: "uint16", 6: "int32", 7: "uint32",
             8: "int64", 9: "uint64", 10: "float16", 11: "float32", 12: "float64"}  # fmt: skip
_ELEMENT_CONST = 0x100
_KINDS = {1: "pointer", 2: "int", 3: "uint", 4: "float", 5: "bytes"}
_KIND_SIZES = {"pointer": (8,), "int": (1, 2, 4, 8), "uint": (1, 2, 4, 8), "float": (2, 4, 8)}

#: Parameters of every kernel handed out by ``get_kernel`` and not unloaded yet, by address
#: (addresses are unique among loaded images; ``kernel_params`` looks them up here).
kernel_params_of: dict[int, tuple[KernelParam, ...] | None] = {}

_trials: OrderedDict[bytes, str | None] = OrderedDict()  # sha256 of an image -> trial verdict
_trials_lock = threading.Lock()
_TRIALS_KEPT = 1024
_TRIAL_S = 60


# --- the private copy ---------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _anonymous_copy(data: bytes) -> int:
    """A file descriptor of an unnamed file holding ``data``; HOST_IO when none can be made."""
    try:
        fd = os.memfd_create("offload-host-image", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        fd = _temp_dir_copy()
    try:
        _write_all(fd, data)
    except OSError as exc:
        os.close(fd)
        raise OffloadError(ErrorCode.HOST_IO, f"failed to write the program image copy: {exc}") from exc
    return fd


def _temp_dir_copy() -> int:
    """An unnamed file in the temp dir (never visible there), for kernels without memfd."""
    import tempfile  # here and in _trial_load: at a program's first load, not by every olInit

    directory = tempfile.gettempdir()
    try:
        try:
            return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o700)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
        fd, path = tempfile.mkstemp(prefix="offload-host-", suffix=".so", dir=directory)
        os.unlink(path)
        return fd
    except OSError as exc:
        raise OffloadError(
            ErrorCode.HOST_IO, f"cannot create the program image copy in the temp dir {directory!r}: {exc}"
        ) from exc


# --- verdicts -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _dynamic_loader() -> str | None:
    """This process's dynamic loader (PT_INTERP of its executable)."""
    try:
        with open("/proc/self/exe", "rb") as exe:
            data = exe.read(1 << 16)
        phoff = struct.unpack_from("<Q", data, 32)[0]
        phnum = struct.unpack_from("<H", data, 56)[0]
        for i in range(phnum):
            p_type, _f, offset, _v, _p, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * 56)
            if p_type == 3:  # PT_INTERP
                with open("/proc/self/exe", "rb") as exe:
                    exe.seek(offset)
                    return exe.read(filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        pass
    return None


def _trial_load(fd: int) -> str | None:
    """Map and relocate the image in a child ``ld.so`` (no constructor runs); why it failed, or
    None. When the child cannot be started at all, the static checks stand alone."""
    import subprocess

    loader = _dynamic_loader()
    if loader is None:
        return None
    env = dict(os.environ, LD_TRACE_LOADED_OBJECTS="1", LD_WARN="yes", LD_BIND_NOW="yes")
    env.pop("LD_PRELOAD", None)  # preloaded symbols are in this process's global scope (below)
    try:
        result = subprocess.run(
            [loader, f"/proc/self/fd/{fd}"], pass_fds=(fd,), env=env, capture_output=True, timeout=_TRIAL_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"the dynamic loader did not finish a trial load within {_TRIAL_S} s"
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode < 0:
        try:
            name = signal.Signals(-result.returncode).name
        except ValueError:
            name = f"signal {-result.returncode}"
        return f"the dynamic loader crashed on it in a trial load ({name})"
    stderr = result.stderr.decode(errors="replace").replace(f"/proc/self/fd/{fd}", "<image>")
    # The child's global scope is the image and its own dependencies; dlopen here also resolves
    # against this process's (python, libm, RTLD_GLOBAL libraries): such symbols are fine.
    problems = [line for line in stderr.splitlines() if line.strip() and not _resolved_here(line)]
    problems += [
        f"needed library {line.split('=>')[0].strip()!r} not found"
        for line in result.stdout.decode(errors="replace").splitlines()
        if "=> not found" in line
    ]
    if problems:
        return problems[0]
    if result.returncode != 0:
        return f"the trial load failed (exit {result.returncode})"
    return None


def _resolved_here(line: str) -> bool:
    """Whether ``line`` is the trial's "undefined symbol: NAME" for a NAME that this process's
    global scope defines (unversioned; a versioned miss stays a problem)."""
    prefix = "undefined symbol: "
    if not line.startswith(prefix):
        return False
    name = line[len(prefix) :].split("\t", 1)[0].strip()
    if not name or "," in name:
        return False
    try:
        _global_scope()[name]
    except AttributeError:
        return False
    return True


@lru_cache(maxsize=1)
def _global_scope() -> ctypes.CDLL:
    return ctypes.CDLL(None)  # dlopen(NULL): the executable and every RTLD_GLOBAL library


def _verdict(data: bytes, fd: int | None = None) -> tuple[ElfImage | None, str | None]:
    """(the parsed image, None) when ``data`` loads, else (None, why not). The trial load's
    verdict is cached per content (the parse is redone: it is cheap, and not kept alive)."""
    try:
        elf = inspect(data)
    except ElfProblem as exc:
        return None, str(exc)
    import hashlib  # at the first program: OpenSSL's loading is not every olInit's (start-up)

    key = hashlib.sha256(data).digest()
    with _trials_lock:
        if key in _trials:
            _trials.move_to_end(key)
            problem = _trials[key]
            return (elf if problem is None else None), problem
    copy = _anonymous_copy(data) if fd is None else fd
    try:
        problem = _trial_load(copy)
    finally:
        if fd is None:
            os.close(copy)
    with _trials_lock:
        _trials[key] = problem
        while len(_trials) > _TRIALS_KEPT:
            _trials.popitem(last=False)
    return (elf if problem is None else None), problem


def image_problem(data: bytes) -> str | None:
    """Why ``data`` is not a program for this device (None when ``HostImage(data)`` loads it).
    HOST_IO when no scratch copy can be made for the trial load."""
    return _verdict(data)[1]


# --- kernel parameter declarations --------------------------------------------------------------


def _declared_params(elf: ElfImage, kernel: str) -> tuple[KernelParam, ...] | None:
    """The parameters ``OFFLOAD_KERNEL_PARAMS`` declared for ``kernel`` (None: undeclared).
    Read from the image's bytes, never from process memory."""
    symbol = elf.symbols.get(_PARAMS_PREFIX + kernel)
    if symbol is None or symbol.type not in (STT_OBJECT, STT_COMMON):
        return None

    def bad(why: str) -> OffloadError:
        return OffloadError(ErrorCode.INVALID_BINARY, f"kernel '{kernel}': malformed parameter declaration: {why}")

    raw = elf.read(symbol.value, symbol.size)
    if raw is None or len(raw) < _PARAMS_HEADER.size:
        raise bad("the declaration is truncated")
    magic, version, args_size, count = _PARAMS_HEADER.unpack_from(raw)
    if magic != _PARAMS_MAGIC or version != _PARAMS_VERSION:
        raise bad(f"unknown magic {magic:#x} or version {version}")
    if _PARAMS_HEADER.size + count * _PARAM_ENTRY.size > len(raw):
        raise bad(f"{count} parameters do not fit in {len(raw)} bytes")
    params = []
    for index in range(count):
        offset, size, kind_code, element_code, name_raw = _PARAM_ENTRY.unpack_from(raw, _PARAMS_HEADER.size + index * _PARAM_ENTRY.size)
        kind = _KINDS.get(kind_code)
        name = name_raw.split(b"\0", 1)[0].decode(errors="replace")
        if kind is None:
            raise bad(f"parameter {name!r} has unknown kind {kind_code}")
        if size == 0 or offset + size > args_size or (kind in _KIND_SIZES and size not in _KIND_SIZES[kind]):
            raise bad(f"parameter {name!r} ({kind}, {size} bytes at {offset}) does not fit its kind or the {args_size}-byte struct")
        element = _ELEMENTS.get(element_code & ~_ELEMENT_CONST)
        if element_code and (kind != "pointer" or element is None or element_code & ~(_ELEMENT_CONST | 0xFF)):
            raise bad(f"parameter {name!r} ({kind}) has unknown element type code {element_code:#x}")
        params.append(KernelParam(offset, size, kind, name, element, bool(element_code & _ELEMENT_CONST)))
    return tuple(params)


def _marked(elf: ElfImage, kernel: str) -> bool:
    """Whether the function ``kernel`` was written as a host kernel: ``OFFLOAD_KERNEL``'s mark (its
    magic read from the image's bytes), or an ``OFFLOAD_KERNEL_PARAMS`` declaration, beside it."""
    mark = elf.symbols.get(_MARK_PREFIX + kernel)
    if mark is not None and mark.type in (STT_OBJECT, STT_COMMON) and mark.size == _MARK.size:
        raw = elf.read(mark.value, mark.size)
        if raw is not None and len(raw) == _MARK.size and _MARK.unpack(raw)[0] == _MARK_MAGIC:
            return True
    declaration = elf.symbols.get(_PARAMS_PREFIX + kernel)
    return declaration is not None and declaration.type in (STT_OBJECT, STT_COMMON)


def _not_a_kernel(name: str) -> OffloadError:
    return OffloadError(
        ErrorCode.NOT_FOUND,
        f"'{name}' is a plain C function, not a host kernel (it has no OFFLOAD_KERNEL mark): the host device "
        f"calls a kernel as {name}(const void *args, const offload_group_t *group) once per work-group, which "
        f"a function of another signature cannot survive. Write it with offload_host.h as "
        f"OFFLOAD_KERNEL({name}) {{ const struct {name}_args *a = OFFLOAD_ARGS(struct {name}_args); "
        f"OFFLOAD_FOR_EACH_ITEM(tid) {{ ... }} }} (declaring the struct with OFFLOAD_KERNEL_PARAMS), or with "
        f"offload_kernel.h as OFFLOAD_PORTABLE_KERNEL({name}, (float, a), (float *, x), ...) {{ ... }}",
    )


# --- loaded images ------------------------------------------------------------------------------


_LOADER_FUNCTIONS = frozenset({"_init", "_fini"})


class HostImage:
    """One dlopen'd program. ``unload`` runs its destructors (dlclose) and closes the copy."""

    __slots__ = ("handle", "fd", "base", "elf", "kernels")

    def __init__(self, data: bytes) -> None:
        fd = _anonymous_copy(data)
        try:
            elf, problem = _verdict(data, fd)
            if problem is not None or elf is None:
                raise OffloadError(ErrorCode.INVALID_BINARY, f"invalid host binary: {problem}")
            try:
                # Constructors run here. The path stays valid while fd is open, and fd stays
                # open until dlclose so that no later image can be given the same name.
                self.handle = dl_open(f"/proc/self/fd/{fd}")
            except OSError as exc:
                raise OffloadError(ErrorCode.INVALID_BINARY, f"failed to load target image: {exc}") from exc
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.elf = elf
        self.base = dl_base(self.handle)
        self.kernels: list[int] = []

    def kernel(self, name: str) -> int:
        """The address of the function ``name`` that this image itself defines; its declared
        parameters become ``kernel_params_of[address]``."""
        symbol = self.elf.symbols.get(name)
        if symbol is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"kernel '{name}' not found in the program")
        if symbol.type != STT_FUNC:
            raise OffloadError(ErrorCode.NOT_FOUND, f"'{name}' is not a kernel (it is a data symbol)")
        address = self.base + symbol.value
        if address not in kernel_params_of:
            if not _marked(self.elf, name):
                raise _not_a_kernel(name)
            kernel_params_of[address] = _declared_params(self.elf, name)
            self.kernels.append(address)
        return address

    def symbol_names(self, kernels: bool) -> list[str]:
        """The kernels (functions the image defines and exports with a kernel's mark, ``_marked``)
        or global variables (data objects, the marks and ``OFFLOAD_KERNEL_PARAMS`` declarations
        aside), by name."""
        if kernels:
            return sorted(
                n for n, s in self.elf.symbols.items()
                if s.type == STT_FUNC and n not in _LOADER_FUNCTIONS and _marked(self.elf, n)
            )
        return sorted(
            n for n, s in self.elf.symbols.items() if s.type in (STT_OBJECT, STT_COMMON) and not n.startswith(_MARKS)
        )

    def global_variable(self, name: str) -> tuple[int, int]:
        """(address, size) of the data object ``name`` that this image itself defines."""
        symbol = self.elf.symbols.get(name)
        if symbol is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"failed to load global '{name}'")
        if symbol.type not in (STT_OBJECT, STT_COMMON):
            raise OffloadError(ErrorCode.NOT_FOUND, f"'{name}' is not a global variable (it is a function)")
        return self.base + symbol.value, symbol.size

    def unload(self) -> None:
        for address in self.kernels:
            kernel_params_of.pop(address, None)
        try:
            dl_close(self.handle)  # global destructors run here
        except OSError as exc:
            raise OffloadError(ErrorCode.UNKNOWN, f"failed to unload the program image: {exc}") from exc
        finally:
            os.close(self.fd)
