/* offload_native_gpu.h: the native entry points (offload_native.h) of a GPU backend that reaches
 * its driver through a Cython binding's C API, written once for offload-cuda
 * (cuda.bindings.cydriver) and offload-amdgpu (rocm.bindings.cyhip).
 *
 * A backend's extension module (one C file) includes this header once, writes thin adapters over
 * the driver functions it takes from the binding's `__pyx_capi__` capsules (a table of names and
 * C signatures: each capsule's name is the function's signature, checked against the one the
 * adapter was written for) and ends with OFFLOAD_GPU_EXTENSION(...), which makes them an
 * `offload_gpu_driver` and the module's PyInit. The module offers the backend's Python side
 * (offload.backend.native):
 * - `entry_points()`: the PyCapsule "offload.native_entry_points" (static storage), or None when
 *   a capsule was missing or had another signature; `unavailable` then says why (None otherwise).
 * - `DeviceRecord(context, ordinal, select)`, `QueueRecord(stream)`, `KernelRecord(function,
 *   extent, dyn_limit)`: the C records the entry points take (`address` is the word `native_word`
 *   hands the core); the backend keeps each alive as long as its device, queue or kernel. Fields
 *   stay writable: `QueueRecord.python_work`, `KernelRecord.dyn_limit`.
 * - `host_function(callback)`: calls `callback()` with the calling thread marked as running a
 *   host function (the driver forbids driver calls there: every entry point defers on it).
 * - `layout()`: the records' sizes and offsets (for a ctypes mirror in tests).
 *
 * What the entry points do, and when they defer (OFFLOAD_NATIVE_DEFER, having done nothing):
 * - Every one defers on the thread of a host function, and on any driver error (the Python hook
 *   then makes the call again and raises the error, so each message has one source).
 * - launch_kernel: queued launches only (a synchronous one defers: its wait could fail after the
 *   kernel ran, and a kernel must not run twice); the argument bytes copied to the stack, exactly
 *   the kernel's extent passed as CU/HIP_LAUNCH_PARAM_BUFFER_SIZE; defers for an extent above
 *   OFFLOAD_GPU_ARGS_MAX, or dynamic shared memory above the kernel record's `dyn_limit` (the
 *   Python hook raises the kernel's limit first, then updates the record) or above 2**32 - 1.
 * - data_submit/retrieve/exchange: on the queue's stream, or (queue 0) on the null stream, then
 *   waited for, as the Python hooks do. A synchronous copy whose wait fails defers after the copy
 *   was made: the Python hook copies the same bytes again (a wait fails only with the context's
 *   sticky error, which the repeated copy meets first). data_exchange between two devices defers
 *   (peer access is the Python hook's state).
 * - data_fill (where the backend defines OFFLOAD_GPU_FILL, its fill adapter): a 1-byte pattern,
 *   or a 2- or 4-byte one at an address aligned to it, as one memset on the stream as data_submit
 *   (the Python hook's one-call case); any other pattern defers (the hook's strided 2-D fills).
 * - synchronize / has_pending_work: defer for a queue whose `python_work` is set (the Python side
 *   sets it when a host function is enqueued on it: host functions, the work they defer and the
 *   errors they keep are the Python hooks' business); else the stream's wait / query.
 * - A binding function that raised a Python exception (its library lacks the symbol) returns the
 *   binding's `exception_status`: the entry point then takes the GIL to clear it, and defers.
 */
#ifndef OFFLOAD_NATIVE_GPU_H
#define OFFLOAD_NATIVE_GPU_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "offload_native.h"

/* the most argument bytes a launch copies (CUDA's classic parameter limit); above: defer */
#define OFFLOAD_GPU_ARGS_MAX 4096

typedef struct offload_gpu_device {
  uintptr_t context; /* CUDA: the primary context; HIP: unused */
  int32_t ordinal;   /* the driver's device ordinal */
  uint32_t select;   /* HIP: whether a synchronous call makes the device current first */
} offload_gpu_device;

typedef struct offload_gpu_queue {
  uintptr_t stream;
  uint32_t python_work; /* set by the Python side: a host function was enqueued (sync/pending defer) */
  uint32_t reserved;
} offload_gpu_queue;

typedef struct offload_gpu_kernel {
  uintptr_t function;
  uint64_t extent;    /* the argument bytes the driver is given (launch_extent) */
  uint64_t dyn_limit; /* the dynamic shared memory the kernel is set up for */
} offload_gpu_kernel;

/* The driver as the backend adapts it: every function returns the driver's status (0: success). */
typedef struct offload_gpu_driver {
  int not_ready;         /* the status of a stream query with work pending */
  int exception_status;  /* what a binding function returns when it raised a Python exception */
  uintptr_t extra_end;   /* the launch `extra` array's end marker (CUDA 0, HIP 3) */
  int activate_queued;   /* whether queued work makes the device current first (CUDA's Python hooks do) */
  int (*activate)(const offload_gpu_device *device); /* make the device current on this thread */
  int (*launch)(uintptr_t function, const offload_launch_dims *dims, uintptr_t stream, void **extra);
  int (*submit)(uintptr_t dst, uintptr_t src, size_t size, uintptr_t stream);
  int (*retrieve)(uintptr_t dst, uintptr_t src, size_t size, uintptr_t stream);
  int (*exchange)(uintptr_t dst, uintptr_t src, size_t size, uintptr_t stream);
  int (*stream_sync)(uintptr_t stream);
  int (*stream_query)(uintptr_t stream);
  /* a one-call fill of `count` elements of `element` bytes (1, 2 or 4) with `value`, as the
   * Python hook makes it for such a pattern; NULL: fills use the Python hook */
  int (*fill)(uintptr_t dst, unsigned element, uint32_t value, size_t count, uintptr_t stream);
} offload_gpu_driver;

/* The name of the backend's fill adapter (offload_gpu_driver.fill): a backend that has one defines
 * OFFLOAD_GPU_FILL before including this header. */
#ifndef OFFLOAD_GPU_FILL
#define OFFLOAD_GPU_FILL NULL
#endif

/* One driver function of the binding's C API: its name, the signature its capsule must carry. */
typedef struct offload_gpu_function {
  const char *name;
  const char *signature;
  void **slot;
} offload_gpu_function;

static const offload_gpu_driver *offload_gpu; /* set once every function is bound */
static _Thread_local int offload_gpu_in_host_function;

/* --- the entry points --------------------------------------------------------------------- */

/* A failed driver call: clear the exception a binding function raised (under the GIL), defer. */
static offload_native_result offload_gpu_failed(int status) {
  if (status == offload_gpu->exception_status) {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyErr_Clear();
    PyGILState_Release(gil);
  }
  return OFFLOAD_NATIVE_DEFER;
}

static int offload_gpu_prepare(offload_native_word device, offload_native_word queue) {
  if (offload_gpu_in_host_function) return -1;
  if (queue != 0 && !offload_gpu->activate_queued) return 0;
  int status = offload_gpu->activate((const offload_gpu_device *)device);
  if (status) offload_gpu_failed(status);
  return status ? -1 : 0;
}

static offload_native_result offload_gpu_launch_kernel(offload_native_word device, offload_native_word queue,
                                                       offload_native_word kernel, const void *args, size_t args_size,
                                                       const offload_launch_dims *dims) {
  const offload_gpu_kernel *k = (const offload_gpu_kernel *)kernel;
  size_t extent = (size_t)k->extent;
  (void)args_size; /* at least `extent`: the core checked it */
  if (queue == 0 || extent > OFFLOAD_GPU_ARGS_MAX || dims->dyn_shared_memory > UINT32_MAX ||
      dims->dyn_shared_memory > __atomic_load_n(&k->dyn_limit, __ATOMIC_ACQUIRE))
    return OFFLOAD_NATIVE_DEFER;
  if (offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  _Alignas(16) unsigned char buffer[OFFLOAD_GPU_ARGS_MAX];
  size_t size = extent;
  void *extra[5] = {(void *)1, buffer, (void *)2, &size, (void *)offload_gpu->extra_end};
  if (extent) memcpy(buffer, args, extent);
  int status = offload_gpu->launch(k->function, dims, ((const offload_gpu_queue *)queue)->stream, extent ? extra : NULL);
  return status ? offload_gpu_failed(status) : OFFLOAD_NATIVE_DONE;
}

/* A copy made: queued, done; synchronous, wait for the null stream. */
static offload_native_result offload_gpu_copied(int status, offload_native_word queue) {
  if (status) return offload_gpu_failed(status);
  if (queue == 0 && (status = offload_gpu->stream_sync(0)) != 0) return offload_gpu_failed(status);
  return OFFLOAD_NATIVE_DONE;
}

static uintptr_t offload_gpu_stream(offload_native_word queue) {
  return queue ? ((const offload_gpu_queue *)queue)->stream : 0;
}

static offload_native_result offload_gpu_data_submit(offload_native_word device, uintptr_t dst, uintptr_t src,
                                                     size_t size, offload_native_word queue) {
  if (offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  return offload_gpu_copied(offload_gpu->submit(dst, src, size, offload_gpu_stream(queue)), queue);
}

static offload_native_result offload_gpu_data_retrieve(offload_native_word device, uintptr_t dst, uintptr_t src,
                                                       size_t size, offload_native_word queue) {
  if (offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  return offload_gpu_copied(offload_gpu->retrieve(dst, src, size, offload_gpu_stream(queue)), queue);
}

static offload_native_result offload_gpu_data_exchange(offload_native_word src_device, uintptr_t src,
                                                       offload_native_word dst_device, uintptr_t dst, size_t size,
                                                       offload_native_word queue) {
  if (src_device != dst_device || offload_gpu_prepare(src_device, queue)) return OFFLOAD_NATIVE_DEFER;
  return offload_gpu_copied(offload_gpu->exchange(dst, src, size, offload_gpu_stream(queue)), queue);
}

static int offload_gpu_python_work(offload_native_word queue) {
  return __atomic_load_n(&((const offload_gpu_queue *)queue)->python_work, __ATOMIC_ACQUIRE) != 0;
}

static offload_native_result offload_gpu_synchronize(offload_native_word device, offload_native_word queue) {
  if (offload_gpu_python_work(queue) || offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  int status = offload_gpu->stream_sync(offload_gpu_stream(queue));
  return status ? offload_gpu_failed(status) : OFFLOAD_NATIVE_DONE;
}

static offload_native_result offload_gpu_has_pending_work(offload_native_word device, offload_native_word queue,
                                                          int *pending) {
  if (offload_gpu_python_work(queue) || offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  int status = offload_gpu->stream_query(offload_gpu_stream(queue));
  if (status != 0 && status != offload_gpu->not_ready) return offload_gpu_failed(status);
  *pending = status != 0;
  return OFFLOAD_NATIVE_DONE;
}

/* data_fill: a 1-byte pattern, or a 2- or 4-byte one at an address aligned to it, in one driver
 * call on the queue's stream (or, synchronously, the null stream, then waited for), as the Python
 * hook makes it; any other pattern (the hook's strided 2-D fills) defers. */
static offload_native_result offload_gpu_data_fill(offload_native_word device, uintptr_t ptr, const void *pattern,
                                                   size_t pattern_size, size_t size, offload_native_word queue) {
  if (!(pattern_size == 1 || ((pattern_size == 2 || pattern_size == 4) && ptr % pattern_size == 0))) return OFFLOAD_NATIVE_DEFER;
  uint32_t value = 0;
  for (size_t i = 0; i < pattern_size; ++i) value |= (uint32_t)((const unsigned char *)pattern)[i] << (8 * i); /* little-endian */
  if (offload_gpu_prepare(device, queue)) return OFFLOAD_NATIVE_DEFER;
  return offload_gpu_copied(offload_gpu->fill(ptr, (unsigned)pattern_size, value, size / pattern_size, offload_gpu_stream(queue)), queue);
}

/* (data_fill set at module init where the driver has a fill adapter) */
static offload_native_entry_points offload_gpu_entry_points = {
    .abi_version = OFFLOAD_NATIVE_ABI_VERSION,
    .struct_size = sizeof(offload_native_entry_points),
    .launch_kernel = offload_gpu_launch_kernel,
    .data_submit = offload_gpu_data_submit,
    .data_retrieve = offload_gpu_data_retrieve,
    .data_exchange = offload_gpu_data_exchange,
    .synchronize = offload_gpu_synchronize,
    .has_pending_work = offload_gpu_has_pending_work,
};

/* --- the records ---------------------------------------------------------------------------- */

#define OFFLOAD_GPU_RECORD(NAME, STRUCT)                                                                      \
  typedef struct {                                                                                            \
    PyObject_HEAD STRUCT record;                                                                              \
  } NAME##Object;                                                                                             \
  static PyObject *NAME##_address(PyObject *self, void *closure) {                                            \
    (void)closure;                                                                                            \
    return PyLong_FromVoidPtr(&((NAME##Object *)self)->record);                                               \
  }

OFFLOAD_GPU_RECORD(DeviceRecord, offload_gpu_device)
OFFLOAD_GPU_RECORD(QueueRecord, offload_gpu_queue)
OFFLOAD_GPU_RECORD(KernelRecord, offload_gpu_kernel)

#define OFFLOAD_GPU_MEMBER(OBJECT, FIELD, TYPE) {#FIELD, TYPE, offsetof(OBJECT, record.FIELD), 0, NULL}

static PyMemberDef offload_gpu_device_members[] = {
    OFFLOAD_GPU_MEMBER(DeviceRecordObject, context, T_ULONGLONG),
    OFFLOAD_GPU_MEMBER(DeviceRecordObject, ordinal, T_INT),
    OFFLOAD_GPU_MEMBER(DeviceRecordObject, select, T_UINT),
    {NULL, 0, 0, 0, NULL},
};
static PyMemberDef offload_gpu_queue_members[] = {
    OFFLOAD_GPU_MEMBER(QueueRecordObject, stream, T_ULONGLONG),
    OFFLOAD_GPU_MEMBER(QueueRecordObject, python_work, T_UINT),
    {NULL, 0, 0, 0, NULL},
};
static PyMemberDef offload_gpu_kernel_members[] = {
    OFFLOAD_GPU_MEMBER(KernelRecordObject, function, T_ULONGLONG),
    OFFLOAD_GPU_MEMBER(KernelRecordObject, extent, T_ULONGLONG),
    OFFLOAD_GPU_MEMBER(KernelRecordObject, dyn_limit, T_ULONGLONG),
    {NULL, 0, 0, 0, NULL},
};

/* Record(field, ...): each field in order, every one given (unsigned 64-bit words). */
static int offload_gpu_record_init(PyObject *self, PyObject *args, PyObject *kwargs, PyMemberDef *members) {
  Py_ssize_t count = 0;
  while (members[count].name != NULL) ++count;
  if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "a record takes its fields positionally");
    return -1;
  }
  if (PyTuple_GET_SIZE(args) != count) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd fields, got %zd", Py_TYPE(self)->tp_name, count, PyTuple_GET_SIZE(args));
    return -1;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject *name = PyUnicode_FromString(members[i].name);
    int failed = name == NULL || PyObject_GenericSetAttr(self, name, PyTuple_GET_ITEM(args, i)) < 0;
    Py_XDECREF(name);
    if (failed) return -1;
  }
  return 0;
}

static int DeviceRecord_init(PyObject *self, PyObject *args, PyObject *kwargs) {
  return offload_gpu_record_init(self, args, kwargs, offload_gpu_device_members);
}
static int QueueRecord_init(PyObject *self, PyObject *args, PyObject *kwargs) {
  /* QueueRecord(stream): python_work starts 0 */
  PyMemberDef stream_only[] = {offload_gpu_queue_members[0], {NULL, 0, 0, 0, NULL}};
  return offload_gpu_record_init(self, args, kwargs, stream_only);
}
static int KernelRecord_init(PyObject *self, PyObject *args, PyObject *kwargs) {
  return offload_gpu_record_init(self, args, kwargs, offload_gpu_kernel_members);
}

#define OFFLOAD_GPU_RECORD_TYPE(NAME, MEMBERS, DOC)                                                           \
  static PyGetSetDef NAME##_getset[] = {                                                                      \
      {"address", NAME##_address, NULL, "the record's address: the word native_word hands the core", NULL}, \
      {NULL, NULL, NULL, NULL, NULL},                                                                         \
  };                                                                                                          \
  static PyType_Slot NAME##_slots[] = {                                                                       \
      {Py_tp_doc, (void *)DOC},   {Py_tp_init, (void *)NAME##_init}, {Py_tp_members, MEMBERS},              \
      {Py_tp_getset, NAME##_getset}, {Py_tp_new, (void *)PyType_GenericNew}, {0, NULL},                      \
  };                                                                                                          \
  static PyType_Spec NAME##_spec = {"offload_native_gpu." #NAME, sizeof(NAME##Object), 0, Py_TPFLAGS_DEFAULT, \
                                    NAME##_slots};

OFFLOAD_GPU_RECORD_TYPE(DeviceRecord, offload_gpu_device_members,
                        "DeviceRecord(context, ordinal, select): a device as the entry points take it")
OFFLOAD_GPU_RECORD_TYPE(QueueRecord, offload_gpu_queue_members,
                        "QueueRecord(stream): a queue; set python_work once a host function is enqueued on it")
OFFLOAD_GPU_RECORD_TYPE(KernelRecord, offload_gpu_kernel_members,
                        "KernelRecord(function, extent, dyn_limit): a kernel; raise dyn_limit with the kernel's")

/* --- the module ----------------------------------------------------------------------------- */

static PyObject *offload_gpu_capsule; /* the entry points, once bound */

static PyObject *offload_gpu_get_entry_points(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  PyObject *capsule = offload_gpu_capsule ? offload_gpu_capsule : Py_None;
  Py_INCREF(capsule);
  return capsule;
}

/* host_function(callback): callback() with the calling thread marked as running a host function
 * (every entry point defers there: the driver forbids driver calls on it). */
static PyObject *offload_gpu_host_function(PyObject *module, PyObject *callback) {
  (void)module;
  ++offload_gpu_in_host_function;
  PyObject *result = PyObject_CallNoArgs(callback);
  --offload_gpu_in_host_function;
  return result;
}

static PyObject *offload_gpu_layout(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  return Py_BuildValue(
      "{s:n,s:n,s:{s:n,s:n,s:n,s:n},s:{s:n,s:n,s:n},s:{s:n,s:n,s:n,s:n}}", "entry_points",
      (Py_ssize_t)sizeof(offload_native_entry_points), "args_max", (Py_ssize_t)OFFLOAD_GPU_ARGS_MAX, "device", "size",
      (Py_ssize_t)sizeof(offload_gpu_device), "context", (Py_ssize_t)offsetof(offload_gpu_device, context), "ordinal",
      (Py_ssize_t)offsetof(offload_gpu_device, ordinal), "select", (Py_ssize_t)offsetof(offload_gpu_device, select),
      "queue", "size", (Py_ssize_t)sizeof(offload_gpu_queue), "stream", (Py_ssize_t)offsetof(offload_gpu_queue, stream),
      "python_work", (Py_ssize_t)offsetof(offload_gpu_queue, python_work), "kernel", "size",
      (Py_ssize_t)sizeof(offload_gpu_kernel), "function", (Py_ssize_t)offsetof(offload_gpu_kernel, function), "extent",
      (Py_ssize_t)offsetof(offload_gpu_kernel, extent), "dyn_limit", (Py_ssize_t)offsetof(offload_gpu_kernel, dyn_limit));
}

static PyMethodDef offload_gpu_methods[] = {
    {"entry_points", offload_gpu_get_entry_points, METH_NOARGS,
     "The PyCapsule 'offload.native_entry_points', or None (see `unavailable`)."},
    {"host_function", offload_gpu_host_function, METH_O,
     "host_function(callback): callback() with this thread marked as a host function's (entry points defer)."},
    {"layout", offload_gpu_layout, METH_NOARGS, "The records' sizes and field offsets."},
    {NULL, NULL, 0, NULL},
};

/* Bind every function of `table` from `capi_module`.__pyx_capi__: NULL when all are there with
 * their signatures, else the reason (a new str), the slots left untouched. */
static PyObject *offload_gpu_bind(const char *capi_module, const offload_gpu_function *table, size_t count) {
  PyObject *module = PyImport_ImportModule(capi_module);
  if (module == NULL) {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject *why = PyUnicode_FromFormat("cannot import %s: %S", capi_module, value ? value : Py_None);
    Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
    return why;
  }
  PyObject *capi = PyObject_GetAttrString(module, "__pyx_capi__");
  Py_DECREF(module);
  if (capi == NULL || !PyDict_Check(capi)) {
    PyErr_Clear();
    Py_XDECREF(capi);
    return PyUnicode_FromFormat("%s has no __pyx_capi__ dict", capi_module);
  }
  void *found[64];
  PyObject *why = count > sizeof found / sizeof found[0] ? PyUnicode_FromString("too many functions to bind") : NULL;
  for (size_t i = 0; i < count && why == NULL; ++i) {
    PyObject *capsule = PyDict_GetItemString(capi, table[i].name); /* borrowed */
    const char *name = capsule && PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    if (capsule == NULL) {
      why = PyUnicode_FromFormat("%s.__pyx_capi__ has no %s", capi_module, table[i].name);
    } else if (name == NULL || strcmp(name, table[i].signature) != 0) {
      why = PyUnicode_FromFormat("%s.__pyx_capi__[%s] is '%s', not '%s'", capi_module, table[i].name,
                                 name ? name : "(no name)", table[i].signature);
    } else if ((found[i] = PyCapsule_GetPointer(capsule, name)) == NULL) {
      PyErr_Clear();
      why = PyUnicode_FromFormat("%s.__pyx_capi__[%s] holds no pointer", capi_module, table[i].name);
    }
  }
  Py_DECREF(capi);
  if (why != NULL) return why;
  for (size_t i = 0; i < count; ++i) *table[i].slot = found[i];
  return NULL;
}

/* The backend's PyInit: the module of `def` (methods: offload_gpu_methods) with the record types,
 * `unavailable` (None, or why there are no entry points) and, when every function of `table`
 * bound, the entry points of `driver`. */
static PyObject *offload_gpu_module(PyModuleDef *def, const offload_gpu_driver *driver, const char *capi_module,
                                    const offload_gpu_function *table, size_t count) {
  PyObject *module = PyModule_Create(def);
  if (module == NULL) return NULL;
  PyType_Spec *specs[] = {&DeviceRecord_spec, &QueueRecord_spec, &KernelRecord_spec};
  const char *names[] = {"DeviceRecord", "QueueRecord", "KernelRecord"};
  for (int i = 0; i < 3; ++i) {
    PyObject *type = PyType_FromSpec(specs[i]);
    if (type == NULL || PyModule_AddObject(module, names[i], type) < 0) {
      Py_XDECREF(type);
      Py_DECREF(module);
      return NULL;
    }
  }
  PyObject *why = offload_gpu_bind(capi_module, table, count);
  if (why == NULL) {
    offload_gpu = driver;
    offload_gpu_entry_points.data_fill = driver->fill != NULL ? offload_gpu_data_fill : NULL;
    offload_gpu_capsule =
        PyCapsule_New((void *)&offload_gpu_entry_points, OFFLOAD_NATIVE_CAPSULE_NAME, NULL);
    if (offload_gpu_capsule == NULL) {
      Py_DECREF(module);
      return NULL;
    }
  }
  if (PyModule_AddObject(module, "unavailable", why ? why : Py_NewRef(Py_None)) < 0) {
    Py_XDECREF(why);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}

/* The rest of a backend's extension, after its adapters (functions named activate, launch, submit,
 * retrieve, exchange, stream_sync, stream_query, as in offload_gpu_driver; fill where
 * OFFLOAD_GPU_FILL names it) and its table
 * `functions`: the driver they make up (NOT_READY ... ACTIVATE_QUEUED: offload_gpu_driver's first
 * fields), the module NAME ("package._native") and its PyInit__native. */
#define OFFLOAD_GPU_EXTENSION(NAME, DOC, CAPI_MODULE, NOT_READY, EXCEPTION_STATUS, EXTRA_END, ACTIVATE_QUEUED)      \
  static const offload_gpu_driver offload_gpu_this_driver = {                                                      \
      NOT_READY, EXCEPTION_STATUS, EXTRA_END, ACTIVATE_QUEUED, activate, launch,                                  \
      submit,    retrieve,         exchange,  stream_sync,     stream_query, OFFLOAD_GPU_FILL,                     \
  };                                                                                                               \
  static struct PyModuleDef offload_gpu_module_def = {                                                             \
      PyModuleDef_HEAD_INIT, NAME, DOC, -1, offload_gpu_methods, NULL, NULL, NULL, NULL,                           \
  };                                                                                                               \
  PyMODINIT_FUNC PyInit__native(void) {                                                                            \
    return offload_gpu_module(&offload_gpu_module_def, &offload_gpu_this_driver, CAPI_MODULE, functions,         \
                              sizeof functions / sizeof *functions);                                               \
  }

#endif /* OFFLOAD_NATIVE_GPU_H */
