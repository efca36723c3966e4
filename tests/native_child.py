"""Child code (source text) of the GPU backends' native entry-point tests: a ctypes mirror of
``offload_native_entry_points`` (core/src/offload/include/offload_native.h), to call a backend's
entry points directly, without the core."""

#: Defines `EntryPoints` (the struct), `entry_points(capsule)` (its contents), `dims(...)` (an
#: offload_launch_dims), `pending(ep, device, queue)` -> (result, *pending), DONE and DEFER, and
#: `fake_signature(capi, name, signature)`: the binding's capsule of `name` replaced by one with
#: another C signature (the same pointer), so a backend's extension imported next refuses it.
NATIVE_MIRROR = r"""
import ctypes

W = ctypes.c_size_t  # offload_native_word: uintptr_t


class Dims(ctypes.Structure):
    _fields_ = [("num_groups", ctypes.c_uint32 * 3), ("group_size", ctypes.c_uint32 * 3),
                ("dyn_shared_memory", ctypes.c_size_t)]


LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Dims))
MOVE = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, ctypes.c_size_t, W)
EXCHANGE = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, W, ctypes.c_size_t, W)
SYNC = ctypes.CFUNCTYPE(ctypes.c_int, W, W)
PENDING = ctypes.CFUNCTYPE(ctypes.c_int, W, W, ctypes.POINTER(ctypes.c_int))


class EntryPoints(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32), ("launch_kernel", LAUNCH),
                ("data_submit", MOVE), ("data_retrieve", MOVE), ("data_exchange", EXCHANGE),
                ("synchronize", SYNC), ("has_pending_work", PENDING)]


DONE, DEFER = 0, 1
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_names = []  # a capsule keeps its name's pointer: the bytes stay alive


def entry_points(capsule):
    return EntryPoints.from_address(_get_pointer(capsule, b"offload.native_entry_points"))


def dims(groups=1, size=64, dyn=0):
    return Dims((groups, 1, 1), (size, 1, 1), dyn)


def pending(ep, device, queue):
    flag = ctypes.c_int(-1)
    return ep.has_pending_work(device, queue, ctypes.byref(flag)), flag.value


def fake_signature(capi, name, signature):
    real = capi[name]
    pointer = _get_pointer(real, _get_name(real))
    _names.append(signature.encode())
    capi[name] = _new(pointer, _names[-1], None)
"""
