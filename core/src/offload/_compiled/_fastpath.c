/* _fastpath.c - offload._compiled._fastpath: the module, the Entry type (a compiled ol* function) and
 * the helpers its operations share (_fastpath_ops.c holds the operations, _config.c the
 * configuration, _verdicts.c the verdicts they replay).
 *
 * An Entry is called like the generated Python function it was made from (its fallback): its
 * operation makes the common case and answers DEFER for anything else, and then the fallback is
 * called with the same arguments. Counters (fast / deferred / native calls) say which path ran.
 */
#include "_fastpath.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>


/* ------------------------------------------------------------------------------------ */
/* Helpers of the operations                                                              */

PyObject *fp_session(void) {
  PyObject *ctx = FIELD(FP.state, state, untraced);
  return ctx == NULL || ctx == Py_None || Py_TYPE(ctx) != FP.session_t ? NULL : ctx;
}

PyObject *fp_snapshot(PyObject *ctx) {
  PyObject *allocations = FIELD(ctx, session, allocations);
  return allocations == NULL || Py_TYPE(allocations) != FP.allocation_map_t ? NULL : FIELD(allocations, allocation_map, snapshot);
}

int fp_register(PyObject *ctx, PyObject *entry) {
  PyObject *calls = FIELD(ctx, session, calls);
  if (calls == NULL || !PyList_CheckExact(calls)) {
    PyErr_SetString(PyExc_RuntimeError, "offload._compiled._fastpath: the session has no calls list");
    return -1;
  }
  return PyList_Append(calls, entry);
}

/* Removes the last item of a list whose items are referenced elsewhere too (a registered name
 * or kernel, None): as list.pop() does, without its checks; nothing is deallocated. */
static inline void pop_last(PyObject *list, Py_ssize_t n) {
  PyObject *item = PyList_GET_ITEM(list, n - 1);
  Py_SET_SIZE(list, n - 1);
  Py_DECREF(item);
}

void fp_unregister(PyObject *ctx, PyObject *entry) {
  PyObject *calls = FIELD(ctx, session, calls);
  if (calls == NULL || !PyList_CheckExact(calls)) return;
  /* the latest registration of this very object: equal to the first equal one, as far as
   * anyone reading the list can tell (a name is a name, a kernel is compared by identity) */
  Py_ssize_t n = PyList_GET_SIZE(calls);
  if (n > 0 && PyList_GET_ITEM(calls, n - 1) == entry && Py_REFCNT(entry) > 1) {
    pop_last(calls, n); /* (the usual case: the caller holds `entry` too) */
    return;
  }
  for (Py_ssize_t i = n - 1; i >= 0; --i) {
    if (PyList_GET_ITEM(calls, i) == entry) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      if (PyList_SetSlice(calls, i, i + 1, NULL) < 0) PyErr_Clear();
      PyErr_Restore(type, value, tb);
      return;
    }
  }
}

int fp_still(PyObject *ctx) { return FIELD(FP.state, state, ctx) == ctx; }

PyObject *fp_hold(PyObject *ctx) {
  PyObject *holds = FIELD(ctx, session, holds);
  if (holds == NULL || !PyList_CheckExact(holds)) {
    PyErr_SetString(PyExc_RuntimeError, "offload._compiled._fastpath: the session has no holds list");
    return NULL;
  }
  if (PyList_Append(holds, Py_None) < 0) return NULL;
  return Py_NewRef(holds);
}

void fp_unhold(PyObject *holds) {
  Py_ssize_t n = PyList_GET_SIZE(holds);
  if (n > 0 && PyList_GET_ITEM(holds, n - 1) == Py_None) { /* every item is None: any one of them is this hold */
    pop_last(holds, n);
  } else if (n > 0) {
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

/* The capsule last opened and its pointer (kept: a capsule at its address is that capsule), so
 * the name is compared once per capsule, not per call. */
static PyObject *ep_capsule;
static const offload_native_entry_points *ep_pointer;

const offload_native_entry_points *fp_entry_points(PyObject *device) {
  PyObject *capsule = FIELD(device, device, entry_points);
  if (capsule == ep_capsule && capsule != NULL) return ep_pointer;
  if (capsule == NULL || !PyCapsule_CheckExact(capsule)) return NULL;
  const offload_native_entry_points *ep = PyCapsule_GetPointer(capsule, OFFLOAD_NATIVE_CAPSULE_NAME); /* checked by configure's caller */
  if (ep == NULL) {
    PyErr_Clear();
    return NULL;
  }
  PyObject *old = ep_capsule; /* (a capsule's destructor is C: the backend's, run on the last reference) */
  ep_capsule = Py_NewRef(capsule);
  ep_pointer = ep;
  Py_XDECREF(old);
  return ep;
}

offload_native_word fp_word(PyObject *word, int *ok) {
  uint64_t w;
  *ok = word != NULL && fp_u64(word, &w);
  return *ok ? (offload_native_word)w : 0;
}

int fp_u64_slow(PyObject *obj, uint64_t *out) {
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

/* Each HOT slot's tuple last read and its bounds (the tuple kept: immutable, and no other tuple
 * can take its address meanwhile). */
static struct {
  PyObject *tuple;
  uint64_t lo, hi;
} hot_seen[4];

int fp_hot_covers(int slot, PyObject *snapshot, uint64_t start, uint64_t end, PyObject *device) {
  PyObject *hot = PyList_GET_ITEM(FP.hot, slot);
  if (hot != hot_seen[slot].tuple) {
    uint64_t lo, hi;
    if (!PyTuple_CheckExact(hot) || PyTuple_GET_SIZE(hot) != 4 || !fp_u64(PyTuple_GET_ITEM(hot, 0), &lo) ||
        !fp_u64(PyTuple_GET_ITEM(hot, 1), &hi))
      return 0;
    /* (the tuple dropped may be the last reference to an old snapshot: its callers check the
     * snapshot again after this, in case dropping it ran Python code) */
    PyObject *old = hot_seen[slot].tuple;
    hot_seen[slot].tuple = Py_NewRef(hot);
    hot_seen[slot].lo = lo;
    hot_seen[slot].hi = hi;
    Py_XDECREF(old);
    if (PyList_GET_ITEM(FP.hot, slot) != hot) return 0;
  }
  if (PyTuple_GET_ITEM(hot, 2) != snapshot) return 0;
  PyObject *owner = PyTuple_GET_ITEM(hot, 3);
  if (owner != Py_None && owner != device) return 0;
  return hot_seen[slot].lo <= start && end <= hot_seen[slot].hi;
}

void fp_forget_cached(void) {
  for (int i = 0; i < 4; ++i) Py_CLEAR(hot_seen[i].tuple);
  Py_CLEAR(ep_capsule);
  ep_pointer = NULL;
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
  return 0;
}

static int entry_clear(Entry *self) {
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->dict);
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

static const char *const KIND_NAMES[FP_KINDS] = {"olLaunchKernel", "olMemcpy", "olMemFill", "olSyncQueue", "olQueryQueue"};

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
    self->fast = self->deferred = self->native = 0;
    PyObject_GC_Track(self);
    return (PyObject *)self;
  }
  return PyErr_Format(PyExc_KeyError, "%s has no compiled path", name);
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
  if (PyModule_AddFunctions(module, fp_config_methods) < 0 || PyModule_AddFunctions(module, fp_verdict_methods) < 0) return -1;
  if (PyModule_AddIntConstant(module, "INTERFACE_VERSION", FP_INTERFACE_VERSION) < 0) return -1;
  return PyModule_AddIntConstant(module, "ABI_VERSION", OFFLOAD_NATIVE_ABI_VERSION);
}

static PyModuleDef_Slot slots[] = {{Py_mod_exec, fp_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "offload._compiled._fastpath",
    "The compiled common case of offload's per-call ol* functions (see core/DESIGN.md).", 0, methods, slots,
};

PyMODINIT_FUNC PyInit__fastpath(void) { return PyModuleDef_Init(&module_def); }
