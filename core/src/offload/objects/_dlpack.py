"""DLPack with ctypes: capsules for ``__dlpack__`` and reading any producer's capsule.

Export: ``export(...)`` builds a ``DLManagedTensor`` (or, when the consumer asks for
``max_version >= (1, 0)``, a ``DLManagedTensorVersioned``) and keeps the exporting object alive
until the consumer calls the deleter or drops the capsule unconsumed (see "export" below). Import: ``consume(obj)`` takes ``obj.__dlpack__()``, marks the capsule used, and
returns the tensor's fields with an owner object that calls the producer's deleter when dropped.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import sysconfig
import threading
import weakref
from dataclasses import dataclass
from typing import Any

# DLDeviceType
CPU = 1
CUDA = 2
CUDA_HOST = 3
ROCM = 10
ROCM_HOST = 11
EXT_DEV = 12
CUDA_MANAGED = 13
ONE_API = 14
HOST_ACCESSIBLE = frozenset({CPU, CUDA_HOST, ROCM_HOST, CUDA_MANAGED})

# DLDataTypeCode
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6

VERSION = (1, 0)
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_USED_NAME_V = b"used_dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
_capsule_is_valid_obj = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)

# --- export ------------------------------------------------------------------------------------
#
# No Python code may run when a consumer releases a tensor: consumers drop capsules and call
# deleters while their own exception is pending (``np.from_dlpack(x) + "a"`` frees the array
# after the TypeError is set), and a Python callback then fails on entry, replacing that
# exception with a SystemError. So, on CPython with the GIL:
#
# * the deleter is a C function, ``Py_IncRef``: it adds one to the first word of the managed
#   struct (the DLPack version, or the data pointer), which the consumer no longer reads by then;
# * capsules have no destructor: each export holds its capsule;
# * ``_sweep`` (at every export, after every garbage collection, and in ``exported_count``)
#   releases the exports whose first word changed (deleted by their consumer) and those whose
#   capsule nobody else holds and nobody consumed.
#
# Where Py_IncRef does not touch the first word (free-threaded builds, other interpreters) the
# deleter is a ctypes callback instead (it fails only in the pending-exception case above).

_exported: dict[int, list[Any]] = {}  # managed struct address -> [first word, ..., capsule]
_exported_lock = threading.RLock()
_CAPSULE_ONLY_OURS = 3  # references to a capsule held by nobody else: the entry, a local, the call's argument


def _delete_exported_impl(address: int | None) -> None:
    with _exported_lock:
        _exported.pop(address or 0, None)


_python_deleter = _Deleter(_delete_exported_impl)
_C_DELETER = sys.implementation.name == "cpython" and not sysconfig.get_config_var("Py_GIL_DISABLED")
_PY_INCREF = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p).value or 0
_delete_exported = _Deleter(_PY_INCREF) if _C_DELETER else _python_deleter
_U32 = 0xFFFFFFFF


def _first_word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


_sweeping = threading.local()


def _sweep() -> None:
    """Release the exports their consumers deleted, and those of capsules dropped unconsumed.

    Not reentrant: a collection that an allocation inside a sweep triggers (its callback sweeps)
    finds this thread sweeping and leaves the work to the sweep under way.
    """
    if getattr(_sweeping, "active", False):
        return
    with _exported_lock:
        _sweeping.active = True
        try:
            _sweep_locked()
        finally:
            _sweeping.active = False


def _sweep_locked() -> None:
    for address, entry in list(_exported.items()):
        if _C_DELETER and _first_word(address) != entry[0]:
            _exported.pop(address, None)  # the consumer called the deleter
            continue
        capsule = entry[-1]
        if capsule is None:
            continue
        if not (_capsule_is_valid_obj(capsule, _NAME) or _capsule_is_valid_obj(capsule, _NAME_V)):
            entry[-1] = None  # consumed: the consumer calls the deleter when done
        elif sys.getrefcount(capsule) <= _CAPSULE_ONLY_OURS:
            _exported.pop(address, None)
        del capsule


def _sweep_after_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and _exported:
        _sweep()


gc.callbacks.append(_sweep_after_gc)


def exported_count() -> int:
    """How many exported tensors are still held by consumers (tests check it drops to 0)."""
    _sweep()
    with _exported_lock:
        return len(_exported)


def any_exported() -> bool:
    """Whether any export may still be held (False: none was made or all were released; a read
    without the lock: a stale True only costs a sweep)."""
    return bool(_exported)


def live_owners() -> list[Any]:
    """The exporting objects of the tensors still held by consumers."""
    _sweep()
    with _exported_lock:
        return [entry[4] for entry in _exported.values()]


def export(
    owner: Any,
    address: int,
    device: tuple[int, int],
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: tuple[int, int],
    versioned: bool,
    read_only: bool = False,
    copied: bool = False,
) -> Any:
    """A DLPack capsule over ``address`` (``strides`` in elements) keeping ``owner`` alive."""
    ndim = len(shape)
    shape_array = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_array = (ctypes.c_int64 * max(ndim, 1))(*strides)
    managed: DLManagedTensor | DLManagedTensorVersioned
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    tensor = managed.dl_tensor
    if (address & _U32) == _U32:  # Py_IncRef leaves a 32-bit half of all ones as it is: step back a byte
        tensor.data, tensor.byte_offset = address - 1, 1
    else:
        tensor.data, tensor.byte_offset = address or None, 0
    tensor.device = DLDevice(*device)
    tensor.ndim = ndim
    tensor.dtype = DLDataType(dtype[0], dtype[1], 1)
    tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _delete_exported
    if isinstance(managed, DLManagedTensorVersioned):
        managed.version = DLPackVersion(*VERSION)
        managed.flags = (FLAG_READ_ONLY if read_only else 0) | (FLAG_IS_COPIED if copied else 0)
    _sweep()
    key = ctypes.addressof(managed)
    with _exported_lock:
        _exported[key] = [_first_word(key), managed, shape_array, strides_array, owner]
    capsule = _capsule_new(key, _NAME_V if versioned else _NAME, None)
    with _exported_lock:
        _exported[key].append(capsule)
    return capsule


# --- import ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Imported:
    """The fields of a consumed DLPack tensor; ``owner`` calls the producer's deleter when dropped."""

    address: int  # data + byte_offset
    device_type: int
    device_id: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # in elements; None: C-contiguous
    code: int
    bits: int
    lanes: int
    read_only: bool
    owner: Any


class _ProducerRef:
    """Holds a consumed tensor; calls its deleter once, when garbage-collected."""

    __slots__ = ("__weakref__",)


def _call_deleter(deleter_address: int, managed: int) -> None:
    _Deleter(deleter_address)(managed)


def consume(obj: Any, stream: Any = None) -> Imported:
    """Take a DLPack tensor from ``obj`` (an object with ``__dlpack__``, or a capsule)."""
    if type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=VERSION)
        except TypeError:  # a producer predating the versioned protocol
            capsule = obj.__dlpack__(stream=stream)
    if _capsule_is_valid_obj(capsule, _NAME_V):
        name, used, versioned = _NAME_V, _USED_NAME_V, True
    elif _capsule_is_valid_obj(capsule, _NAME):
        name, used, versioned = _NAME, _USED_NAME, False
    else:
        raise BufferError("not an unconsumed DLPack capsule (was it used already?)")
    pointer = _capsule_pointer(capsule, name) or 0
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned.from_address(pointer)
        if managed.version.major > VERSION[0]:
            raise BufferError(f"DLPack {managed.version.major}.{managed.version.minor} is newer than 1.x")
        read_only = bool(managed.flags & FLAG_READ_ONLY)
    else:
        managed = DLManagedTensor.from_address(pointer)
        read_only = False
    tensor = managed.dl_tensor
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    deleter = ctypes.cast(managed.deleter, ctypes.c_void_p).value
    _capsule_set_name(capsule, used)
    owner = _ProducerRef()
    if deleter:
        weakref.finalize(owner, _call_deleter, deleter, pointer)
    return Imported(
        address=(tensor.data or 0) + tensor.byte_offset,
        device_type=tensor.device.device_type,
        device_id=tensor.device.device_id,
        shape=shape,
        strides=strides,
        code=tensor.dtype.code,
        bits=tensor.dtype.bits,
        lanes=tensor.dtype.lanes,
        read_only=read_only,
        owner=owner,
    )
