/* _fastpath.c - offload._compiled._fastpath: the module, its configuration, the Entry type (a compiled
 * ol* function) and the helpers its operations share (_fastpath_ops.c holds the operations).
 *
 * An Entry is called like the generated Python function it was made from (its fallback): its
 * operation makes the common case and answers DEFER for anything else, and then the fallback is
 * called with the same arguments. Counters (fast / deferred / native calls) say which path ran.
 */
#include "_fastpath.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>

fp_config FP;
int fp_configured;

/* ------------------------------------------------------------------------------------ */
/* Helpers of the operations                                                              */

PyObject *fp_session(void) {
  PyObject *ctx = SLOT(FP.state, FP.st_untraced);
  return ctx == NULL || ctx == Py_None ? NULL : ctx;
}

int fp_register(PyObject *ctx, PyObject *entry) {
  PyObject *calls = SLOT(ctx, FP.cx_calls);
  if (calls == NULL || !PyList_CheckExact(calls)) {
    PyErr_SetString(PyExc_RuntimeError, "offload._compiled._fastpath: the session has no calls list");
    return -1;
  }
  return PyList_Append(calls, entry);
}

void fp_unregister(PyObject *ctx, PyObject *entry) {
  PyObject *calls = SLOT(ctx, FP.cx_calls);
  if (calls == NULL || !PyList_CheckExact(calls)) return;
  /* the latest registration of this very object: equal to the first equal one, as far as
   * anyone reading the list can tell (a name is a name, a kernel is compared by identity) */
  for (Py_ssize_t i = PyList_GET_SIZE(calls) - 1; i >= 0; --i) {
    if (PyList_GET_ITEM(calls, i) == entry) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      if (PyList_SetSlice(calls, i, i + 1, NULL) < 0) PyErr_Clear();
      PyErr_Restore(type, value, tb);
      return;
    }
  }
}

int fp_still(PyObject *ctx) { return SLOT(FP.state, FP.st_ctx) == ctx; }

PyObject *fp_hold(PyObject *ctx) {
  PyObject *holds = SLOT(ctx, FP.cx_holds);
  if (holds == NULL || !PyList_CheckExact(holds)) {
    PyErr_SetString(PyExc_RuntimeError, "offload._compiled._fastpath: the session has no holds list");
    return NULL;
  }
  if (PyList_Append(holds, Py_None) < 0) return NULL;
  return Py_NewRef(holds);
}

void fp_unhold(PyObject *holds) {
  Py_ssize_t n = PyList_GET_SIZE(holds);
  if (n > 0) { /* every item is None: any one of them is this hold */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyList_SetSlice(holds, n - 1, n, NULL) < 0) PyErr_Clear();
    PyErr_Restore(type, value, tb);
  }
  Py_DECREF(holds);
}

PyObject *fp_hook(PyObject *backend, PyObject *name, PyObject *const *args, size_t nargs, PyObject *what) {
  PyObject *hook = PyObject_GetAttr(backend, name);
  if (hook == NULL) return NULL;
  PyObject *result = PyObject_Vectorcall(hook, args, nargs, NULL);
  Py_DECREF(hook);
  if (result != NULL || PyErr_ExceptionMatches(FP.offload_error) || !PyErr_ExceptionMatches(PyExc_Exception))
    return result;
  /* raise as_offload_error(exc, what) from exc */
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != NULL) PyException_SetTraceback(value, tb);
  PyObject *error = PyObject_CallFunctionObjArgs(FP.as_offload_error, value, what, NULL);
  if (error == NULL) {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
  }
  if (error != value) {
    PyException_SetCause(error, Py_NewRef(value));
    PyException_SetContext(error, Py_NewRef(value));
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_SetObject((PyObject *)Py_TYPE(error), error);
  Py_DECREF(error);
  return NULL;
}

const offload_native_entry_points *fp_entry_points(PyObject *device) {
  PyObject *capsule = SLOT(device, FP.d_entry_points);
  if (capsule == NULL || !PyCapsule_CheckExact(capsule)) return NULL;
  return PyCapsule_GetPointer(capsule, OFFLOAD_NATIVE_CAPSULE_NAME); /* checked by configure's caller */
}

offload_native_word fp_word(PyObject *obj, Py_ssize_t off, int *ok) {
  PyObject *word = SLOT(obj, off);
  if (word == NULL || !PyLong_CheckExact(word)) {
    *ok = 0;
    return 0;
  }
  offload_native_word w = (offload_native_word)PyLong_AsUnsignedLongLongMask(word);
  *ok = !PyErr_Occurred();
  PyErr_Clear();
  return w;
}

int fp_u64(PyObject *obj, uint64_t *out) {
  if (!PyLong_CheckExact(obj)) return 0;
  /* (PyLong_AsUnsignedLongLong goes through _PyLong_AsByteArray: a fifth of a host copy's time) */
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow == 0 && v >= 0) {
    *out = (uint64_t)v;
    return 1;
  }
  if (overflow <= 0 || _PyLong_NumBits(obj) > 64) { /* negative, or 2**64 and beyond */
    PyErr_Clear();
    return 0;
  }
  *out = (uint64_t)PyLong_AsUnsignedLongLongMask(obj);
  return 1;
}

int fp_hot_covers(int slot, PyObject *snapshot, uint64_t start, uint64_t end, PyObject *device) {
  PyObject *hot = PyList_GET_ITEM(FP.hot, slot);
  if (!PyTuple_CheckExact(hot) || PyTuple_GET_SIZE(hot) != 4 || PyTuple_GET_ITEM(hot, 2) != snapshot) return 0;
  PyObject *owner = PyTuple_GET_ITEM(hot, 3);
  if (owner != Py_None && owner != device) return 0;
  uint64_t lo, hi;
  if (!fp_u64(PyTuple_GET_ITEM(hot, 0), &lo) || !fp_u64(PyTuple_GET_ITEM(hot, 1), &hi)) return 0;
  return lo <= start && end <= hi;
}

/* ------------------------------------------------------------------------------------ */
/* The Entry type                                                                         */

static PyObject *entry_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  Entry *self = (Entry *)callable;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) {
    PyObject *result = fp_call(self, args, nargs);
    if (result != DEFER) {
      self->fast++;
      return result;
    }
  }
  self->deferred++;
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static int entry_traverse(Entry *self, visitproc visit, void *arg) {
  Py_VISIT(self->fallback);
  Py_VISIT(self->dict);
  Py_VISIT(self->last_launch);
  return 0;
}

static int entry_clear(Entry *self) {
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->last_launch);
  Py_CLEAR(self->name);
  return 0;
}

static void entry_dealloc(Entry *self) {
  PyObject_GC_UnTrack(self);
  entry_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *entry_repr(Entry *self) { return PyUnicode_FromFormat("<compiled offload function %S>", self->name); }

static PyObject *entry_counts(Entry *self, void *closure) {
  (void)closure;
  return Py_BuildValue("{sKsKsK}", "fast", self->fast, "deferred", self->deferred, "native", self->native);
}

static PyObject *entry_fallback(Entry *self, void *closure) {
  (void)closure;
  return Py_NewRef(self->fallback);
}

/* Pickled by name, as the function it replaces is (offload.<name>: this very object). */
static PyObject *entry_reduce(Entry *self, PyObject *unused) {
  (void)unused;
  return Py_NewRef(self->name);
}

static PyMethodDef entry_methods[] = {
    {"__reduce__", (PyCFunction)entry_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"counts", (getter)entry_counts, NULL, "{'fast', 'deferred', 'native'}: calls made here, by the fallback, by a backend's entry point", NULL},
    {"fallback", (getter)entry_fallback, NULL, "the generated Python function this one defers to", NULL},
    {NULL},
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload._compiled._fastpath.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)entry_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A compiled ol* function: the common case in C, everything else by its Python fallback.",
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_getset = entry_getset,
    .tp_methods = entry_methods,
    .tp_dictoffset = offsetof(Entry, dict),
};

static const char *const KIND_NAMES[FP_KINDS] = {
    "olLaunchKernel", "olMemcpy", "olMemFill", "olSyncQueue", "olQueryQueue",
    "olCreateEvent", "olSyncEvent", "olWaitEvents", "olGetEventElapsedTime", "olLaunchHostFunction",
};

static PyObject *py_entry(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "entry(name, fallback): a function name and its Python function");
    return NULL;
  }
  if (!fp_configured) {
    PyErr_SetString(PyExc_RuntimeError, "offload._compiled._fastpath.configure() was not called");
    return NULL;
  }
  const char *name = PyUnicode_AsUTF8(args[0]);
  if (name == NULL) return NULL;
  for (int kind = 0; kind < FP_KINDS; ++kind) {
    if (strcmp(name, KIND_NAMES[kind]) != 0) continue;
    Entry *self = PyObject_GC_New(Entry, &EntryType);
    if (self == NULL) return NULL;
    self->vectorcall = entry_vectorcall;
    self->kind = kind;
    self->fallback = Py_NewRef(args[1]);
    self->name = Py_NewRef(args[0]);
    PyUnicode_InternInPlace(&self->name);
    self->dict = NULL;
    self->last_launch = NULL;
    self->last_dims_ok = 0;
    self->fast = self->deferred = self->native = 0;
    PyObject_GC_Track(self);
    return (PyObject *)self;
  }
  return PyErr_Format(PyExc_KeyError, "%s has no compiled path", name);
}

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                          */

/* The offset of the object slot `name` of `type` (found through the MRO), or -1 with an error. */
static Py_ssize_t slot_offset(PyObject *type, const char *name) {
  PyObject *descr = PyObject_GetAttrString(type, name);
  if (descr == NULL) return -1;
  Py_ssize_t off = -1;
  if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
    PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
    if (def->type == T_OBJECT_EX || def->type == T_OBJECT) off = def->offset;
  }
  Py_DECREF(descr);
  if (off < 0) PyErr_Format(PyExc_TypeError, "%R.%s is not an object slot", type, name);
  return off;
}

static PyObject *need(PyObject *config, const char *key, PyTypeObject *type) {
  PyObject *value = PyDict_GetItemString(config, key);
  if (value == NULL) return PyErr_Format(PyExc_KeyError, "configure() needs %s", key);
  if (type != NULL && !PyObject_TypeCheck(value, type))
    return PyErr_Format(PyExc_TypeError, "configure(): %s must be a %s", key, type->tp_name);
  return value;
}

#define TYPE(field, key) \
  if ((FP.field = (PyTypeObject *)need(config, key, &PyType_Type)) == NULL) return NULL; \
  Py_INCREF(FP.field)
#define OBJ(field, key) \
  if ((FP.field = need(config, key, NULL)) == NULL) return NULL; \
  Py_INCREF(FP.field)
#define OFF(field, type, name) \
  if ((FP.field = slot_offset((PyObject *)(type), name)) < 0) return NULL

static PyObject *py_configure(PyObject *m, PyObject *config) {
  (void)m;
  if (!PyDict_Check(config)) {
    PyErr_SetString(PyExc_TypeError, "configure(config): a dict");
    return NULL;
  }
  if (fp_configured) Py_RETURN_NONE; /* once per process: the classes and STATE never change */
  TYPE(device_t, "Device");
  TYPE(queue_t, "Queue");
  TYPE(symbol_t, "Symbol");
  TYPE(event_t, "Event");
  TYPE(launch_t, "KernelLaunchSizeArgs");
  OBJ(state, "STATE");
  OBJ(hot, "HOT");
  OBJ(offload_error, "OffloadError");
  OBJ(as_offload_error, "as_offload_error");
  OBJ(partial, "partial");
  OBJ(run_host_function, "run_host_function");
  if (!PyList_CheckExact(FP.hot) || PyList_GET_SIZE(FP.hot) != 4) {
    PyErr_SetString(PyExc_TypeError, "configure(): HOT must be a list of 4");
    return NULL;
  }
  PyObject *big = need(config, "BIG_HOST_COPY", &PyLong_Type);
  if (big == NULL || !fp_u64(big, &FP.big_host_copy)) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "BIG_HOST_COPY");
  PyObject *state_t = (PyObject *)Py_TYPE(FP.state), *ctx_t = need(config, "Session", &PyType_Type);
  PyObject *map_t = need(config, "AllocationMap", &PyType_Type);
  if (ctx_t == NULL || map_t == NULL) return NULL;
  OFF(st_untraced, state_t, "untraced");
  OFF(st_ctx, state_t, "ctx");
  OFF(st_recorder, state_t, "recorder");
  OFF(cx_calls, ctx_t, "calls");
  OFF(cx_allocations, ctx_t, "allocations");
  OFF(cx_api_level, ctx_t, "api_level");
  OFF(cx_holds, ctx_t, "holds");
  OFF(am_snapshot, map_t, "snapshot");
  OFF(h_ctx, FP.device_t, "_ctx");
  OFF(d_backend, FP.device_t, "backend");
  OFF(d_native, FP.device_t, "native");
  OFF(d_is_host, FP.device_t, "is_host");
  OFF(d_limits, FP.device_t, "limits");
  OFF(d_entry_points, FP.device_t, "entry_points");
  OFF(d_word, FP.device_t, "word");
  OFF(q_device, FP.queue_t, "device");
  OFF(q_native, FP.queue_t, "native");
  OFF(q_id, FP.queue_t, "id");
  OFF(q_word, FP.queue_t, "word");
  OFF(k_launch_device, FP.symbol_t, "launch_device");
  OFF(k_params, FP.symbol_t, "params");
  OFF(k_args_size, FP.symbol_t, "args_size");
  OFF(k_native, FP.symbol_t, "native");
  OFF(k_word, FP.symbol_t, "word");
  OFF(e_device, FP.event_t, "device");
  OFF(e_native, FP.event_t, "native");
  OFF(e_queue, FP.event_t, "queue");
  OFF(e_queue_id, FP.event_t, "queue_id");
  OFF(e_profiling, FP.event_t, "profiling");
  OFF(l_checked_for, FP.launch_t, "checked_for");
  OFF(l_num_groups, FP.launch_t, "num_groups");
  OFF(l_group_size, FP.launch_t, "group_size");
  OFF(l_dyn, FP.launch_t, "dyn_shared_memory");
  PyObject **names[] = {
      &FP.s_main, &FP.s_launch_kernel, &FP.s_data_submit, &FP.s_data_retrieve, &FP.s_data_fill, &FP.s_synchronize,
      &FP.s_has_pending_work, &FP.s_create_event, &FP.s_sync_event, &FP.s_wait_event, &FP.s_event_elapsed_time,
      &FP.s_enqueue_host_call, &FP.s_find, &FP.s_device, &FP.s_data_exchange, &FP.s_implemented,
  };
  const char *texts[] = {
      "main", "launch_kernel", "data_submit", "data_retrieve", "data_fill", "synchronize", "has_pending_work",
      "create_event", "sync_event", "wait_event", "event_elapsed_time", "enqueue_host_call", "find",
      "device", "data_exchange", "implemented",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i)
    if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
  fp_configured = 1;
  Py_RETURN_NONE;
}

/* Whether `capsule` holds entry points this core can call: the name, the ABI version, and a
 * struct at least as large as the one this core was built with. */
static PyObject *py_entry_points_ok(PyObject *m, PyObject *capsule) {
  (void)m;
  if (!PyCapsule_CheckExact(capsule) || !PyCapsule_IsValid(capsule, OFFLOAD_NATIVE_CAPSULE_NAME)) Py_RETURN_FALSE;
  const offload_native_entry_points *ep = PyCapsule_GetPointer(capsule, OFFLOAD_NATIVE_CAPSULE_NAME);
  if (ep == NULL) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  return PyBool_FromLong(ep->abi_version == OFFLOAD_NATIVE_ABI_VERSION &&
                         ep->struct_size >= offsetof(offload_native_entry_points, stamp)); /* (stamp: later, optional) */
}

static PyMethodDef methods[] = {
    {"configure", py_configure, METH_O, "configure(config: dict): the classes and objects the compiled path reads (once)."},
    {"entry", (PyCFunction)(void (*)(void))py_entry, METH_FASTCALL,
     "entry(name, fallback): the compiled function `name`, deferring to `fallback`."},
    {"entry_points_ok", py_entry_points_ok, METH_O,
     "entry_points_ok(capsule): whether a backend's native_entry_points capsule is one this core calls."},
    {NULL},
};

static int fp_exec(PyObject *module) {
  if (PyType_Ready(&EntryType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Entry", (PyObject *)&EntryType) < 0) return -1;
  if (PyType_Ready(&fp_recorder_type) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Recorder", (PyObject *)&fp_recorder_type) < 0) return -1;
  PyObject *names = PyTuple_New(FP_KINDS);
  if (names == NULL) return -1;
  for (int i = 0; i < FP_KINDS; ++i) {
    PyObject *s = PyUnicode_FromString(KIND_NAMES[i]);
    if (s == NULL) {
      Py_DECREF(names);
      return -1;
    }
    PyTuple_SET_ITEM(names, i, s);
  }
  if (PyModule_AddObject(module, "COMPILED", names) < 0) {
    Py_DECREF(names);
    return -1;
  }
  return PyModule_AddIntConstant(module, "ABI_VERSION", OFFLOAD_NATIVE_ABI_VERSION);
}

static PyModuleDef_Slot slots[] = {{Py_mod_exec, fp_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "offload._compiled._fastpath",
    "The compiled common case of offload's per-call ol* functions (see core/DESIGN.md).", 0, methods, slots,
};

PyMODINIT_FUNC PyInit__fastpath(void) { return PyModuleDef_Init(&module_def); }
