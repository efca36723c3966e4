/* _launch_memo.c - offload.objects._launch_memo: the remembered launch of the object layer
 * (Kernel._memo, objects/_program.py) checked and relaunched in C (issue 18).
 *
 * A `Relauncher` replaces `Queue.launch` or `Kernel.launch` (objects/_compiled_memo.py) and is
 * called as that method is. When the call's arguments are those of the kernel's last launch, or
 * of the one before (then swapped, as Kernel._run does), it calls the flat olLaunchKernel with
 * the remembered packed buffer and launch size and, on a queue, holds the remembered tuple until
 * the queue's sync, exactly as the Python method does. A call of the usual shape whose arguments
 * are not the remembered ones goes where the Python method sends it, `Kernel._run` (which packs,
 * remembers, and names any error), without the Python method's frame; anything else (another
 * kernel or queue class, another keyword, no configuration yet) calls the Python method
 * (`fallback`) with the same arguments. So each error has one source, and a miss runs the
 * Python path unchanged. The check runs no Python code: Buffers and Arrays (and any
 * other object) must be the very objects remembered, scalars exact ints or floats of the
 * remembered class and value, never a float 0.0 (0.0 == -0.0, but they pack apart); the grid,
 * block and shared memory the same objects; and no Buffer closed since (`CLOSES`: an address
 * may be reused).
 */
#include "_cmethod.h"

/* The fields of a remembered launch (Kernel._memo) this file reads. */
enum { M_ARGS, M_GRID, M_BLOCK, M_SHARED, M_CLOSES, M_DEVICE, M_KERNEL, M_DATA, M_SIZES, M_LENGTH = 14 };

static struct {
  int configured;
  PyTypeObject *kernel_t, *queue_t; /* objects.Kernel, objects.Queue */
  PyObject *closes;                 /* objects._buffer.CLOSES: [how many Buffers were closed] */
  PyObject *launch;                 /* the flat olLaunchKernel */
  PyObject *zero;                   /* shared_memory's default, 0 */
  PyObject *s_shared_memory;        /* "shared_memory" */
  PyObject *s_run;                  /* "_run" */
  Py_ssize_t k_memo, k_previous, q_handle, q_inflight;
} M;

typedef struct {
  CMETHOD_HEAD                     /* (fallback: the Python method) */
  int queued;                      /* 1: Queue.launch(queue, kernel, grid, block, *args); 0: Kernel.launch(kernel, grid, block, *args) */
  unsigned long long fast, packed, deferred; /* calls relaunched here / by Kernel._run / by the fallback */
} Relauncher;

/* Whether the remembered launch `m` is this call's (see the top of the file). */
static int same_call(PyObject *m, PyObject *const *args, Py_ssize_t n, PyObject *grid, PyObject *block, PyObject *shared) {
  if (m == NULL || !PyTuple_CheckExact(m) || PyTuple_GET_SIZE(m) != M_LENGTH) return 0; /* NO_MEMO */
  PyObject *remembered = PyTuple_GET_ITEM(m, M_ARGS);
  if (PyTuple_GET_ITEM(m, M_GRID) != grid || PyTuple_GET_ITEM(m, M_BLOCK) != block ||
      PyTuple_GET_ITEM(m, M_SHARED) != shared || PyList_GET_SIZE(M.closes) < 1 ||
      PyTuple_GET_ITEM(m, M_CLOSES) != PyList_GET_ITEM(M.closes, 0) || !PyTuple_CheckExact(remembered) ||
      PyTuple_GET_SIZE(remembered) != n)
    return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *a = args[i], *r = PyTuple_GET_ITEM(remembered, i);
    if (a == r) continue;
    if (Py_TYPE(a) != Py_TYPE(r)) return 0;
    if (PyLong_CheckExact(a)) {
      if (PyObject_RichCompareBool(a, r, Py_EQ) != 1) return 0; /* (exact ints: never fails) */
    } else if (PyFloat_CheckExact(a)) {
      double x = PyFloat_AS_DOUBLE(a);
      if (x == 0.0 || x != PyFloat_AS_DOUBLE(r)) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

/* A miss: `kernel._run(queue, grid, block, shared_memory, args)`, as the Python method calls it,
 * its answer held by the queue (`inflight`) until a sync. `call` points at grid, block, then the
 * n arguments; `shared` is the shared memory. */
static PyObject *pack(Relauncher *self, PyObject *kernel, PyObject *queue, PyObject *inflight, PyObject *const *call,
                      Py_ssize_t n, PyObject *shared) {
  PyObject *tuple = PyTuple_New(n);
  if (tuple == NULL) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(tuple, i, Py_NewRef(call[2 + i]));
  PyObject *run_args[6] = {kernel, queue, call[0], call[1], shared, tuple};
  PyObject *held = PyObject_VectorcallMethod(M.s_run, run_args, 6, NULL);
  Py_DECREF(tuple);
  if (held == NULL) return NULL;
  int failed = inflight != NULL && PyList_Append(inflight, held) < 0;
  Py_DECREF(held);
  if (failed) return NULL;
  self->packed++;
  Py_RETURN_NONE;
}

static PyObject *relaunch(Relauncher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), first = self->queued ? 4 : 3;
  PyObject *shared = M.zero, *kernel, *queue = Py_None, *inflight = NULL;
  if (!M.configured || nargs < first) goto defer;
  if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, 0); /* (a str: the interpreter checked) */
    if (PyTuple_GET_SIZE(kwnames) != 1 || !cm_is(name, M.s_shared_memory))
      goto defer;
    shared = args[nargs];
  }
  if (self->queued) {
    if (Py_TYPE(args[0]) != M.queue_t) goto defer;
    queue = SLOT(args[0], M.q_handle);
    inflight = SLOT(args[0], M.q_inflight);
    if (queue == NULL || inflight == NULL || !PyList_CheckExact(inflight)) goto defer;
  }
  kernel = args[first - 3];
  if (Py_TYPE(kernel) != M.kernel_t || SLOT(kernel, M.k_memo) == NULL || SLOT(kernel, M.k_previous) == NULL) goto defer;
  PyObject *grid = args[first - 2], *block = args[first - 1];
  PyObject *m = SLOT(kernel, M.k_memo);
  if (!same_call(m, args + first, nargs - first, grid, block, shared)) {
    m = SLOT(kernel, M.k_previous);
    if (!same_call(m, args + first, nargs - first, grid, block, shared))
      return pack(self, kernel, queue, inflight, args + first - 2, nargs - first, shared);
    /* the launch before the last is now the last (the two slots swap their references) */
    SLOT(kernel, M.k_previous) = SLOT(kernel, M.k_memo);
    SLOT(kernel, M.k_memo) = m;
  }
  Py_INCREF(m); /* kept while the launch runs: another thread may replace the kernel's memo */
  PyObject *call[5] = {queue, PyTuple_GET_ITEM(m, M_DEVICE), PyTuple_GET_ITEM(m, M_KERNEL), PyTuple_GET_ITEM(m, M_DATA),
                       PyTuple_GET_ITEM(m, M_SIZES)};
  PyObject *result = PyObject_Vectorcall(M.launch, call, 5, NULL);
  if (result == NULL || (inflight != NULL && PyList_Append(inflight, m) < 0)) { /* holds it until a sync */
    Py_XDECREF(result);
    Py_DECREF(m);
    return NULL;
  }
  Py_DECREF(result);
  Py_DECREF(m);
  self->fast++;
  Py_RETURN_NONE;
defer:
  self->deferred++;
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* ------------------------------------------------------------------------------------ */
/* The Relauncher type: a method (a descriptor binding like a function)                   */

static PyObject *relauncher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *fallback;
  int queued;
  static char *names[] = {"fallback", "queued", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Op:Relauncher", names, &fallback, &queued)) return NULL;
  Relauncher *self = (Relauncher *)cmethod_new(type, fallback, (vectorcallfunc)relaunch, "Relauncher");
  if (self != NULL) self->queued = queued;
  return (PyObject *)self;
}

static PyObject *relauncher_counts(Relauncher *self, void *closure) {
  (void)closure;
  return Py_BuildValue("{sKsKsK}", "fast", self->fast, "packed", self->packed, "deferred", self->deferred);
}

static PyGetSetDef relauncher_getset[] = CMETHOD_GETSET(relauncher_counts, "{'fast', 'packed', 'deferred'}: calls relaunched here / by Kernel._run / by the fallback");

static PyTypeObject RelauncherType = CMETHOD_TYPE(
    "offload.objects._launch_memo.Relauncher", Relauncher,
    "Relauncher(fallback, queued): Queue.launch (queued) or Kernel.launch with the kernel's remembered launch in C",
    relauncher_new, relauncher_getset);

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                          */

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 4 || !PyType_Check(args[0]) || !PyType_Check(args[1]) || !PyList_CheckExact(args[2]) ||
      PyList_GET_SIZE(args[2]) != 1 || !PyCallable_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError, "configure(Kernel, Queue, CLOSES, olLaunchKernel): two classes, a list of one, a callable");
    return NULL;
  }
  if (M.configured) Py_RETURN_NONE; /* once per process: the classes and CLOSES never change */
  PyTypeObject *kernel_t = (PyTypeObject *)args[0], *queue_t = (PyTypeObject *)args[1];
  if ((M.k_memo = slot_offset(kernel_t, "_memo")) < 0 || (M.k_previous = slot_offset(kernel_t, "_memo_previous")) < 0 ||
      (M.q_handle = slot_offset(queue_t, "_handle")) < 0 || (M.q_inflight = slot_offset(queue_t, "_inflight")) < 0)
    return NULL;
  M.kernel_t = (PyTypeObject *)Py_NewRef(kernel_t);
  M.queue_t = (PyTypeObject *)Py_NewRef(queue_t);
  M.closes = Py_NewRef(args[2]);
  M.launch = Py_NewRef(args[3]);
  M.configured = 1;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(Kernel, Queue, CLOSES, olLaunchKernel): what the Relaunchers read (once; until then they defer)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "offload.objects._launch_memo",
    "The object layer's remembered launch in C (see _launch_memo.c)", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__launch_memo(void) {
  if (PyType_Ready(&RelauncherType) < 0) return NULL;
  if (M.zero == NULL && ((M.zero = PyLong_FromLong(0)) == NULL ||
                         (M.s_shared_memory = PyUnicode_InternFromString("shared_memory")) == NULL ||
                         (M.s_run = PyUnicode_InternFromString("_run")) == NULL))
    return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  if (PyModule_AddObjectRef(module, "Relauncher", (PyObject *)&RelauncherType) < 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
