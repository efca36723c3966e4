/* _replay.c - offload.objects._compiled._replay: the object layer's records, verdicts and the C methods
 * that replay them (the interface: _replay.h; the Python side: _records.py).
 *
 * A `Copier` is Buffer.copy_from, Buffer.copy_to, Array.copy_from or Queue.copy; a `Relauncher`
 * is Queue.launch or Kernel.launch. Each is called as its Python method is (its `fallback`).
 * It lines the call's arguments up as Python published them (self first, then the positional
 * arguments, then each keyword in declared order, its default where not given), reads the
 * verdict on the record it was published on (the copy's destination; the kernel) and, when that
 * verdict was made for exactly these objects (identity) under the stamps that still hold, makes
 * the verdict's flat call and holds what the Python method holds on a queue. A launch of the
 * method's shape that neither of the kernel's verdicts was made for goes where the Python method
 * sends it (`miss`, given by Python: Kernel._run, which packs and remembers). Any other call, and
 * any object that is not a record, goes to the fallback unchanged: C decides nothing, raises
 * nothing of its own (an error of the flat call is the flat call's, as in Python), and runs no
 * Python code before the call it replays.
 */
#include "_cmethod.h"
#include "_replay.h"

static offload_replay_stamps *S; /* the fields of the one Stamps object */
static PyTypeObject CopyVerdictType;

/* ------------------------------------------------------------------------------------ */
/* Records                                                                                */

static int memory_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((offload_memory_record *)self)->copied);
  return 0;
}

static int memory_clear(PyObject *self) {
  Py_CLEAR(((offload_memory_record *)self)->copied);
  return 0;
}

static void memory_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  memory_clear(self);
  Py_TYPE(self)->tp_free(self);
}

/* A record, given the next serial (Buffer.wrap and Queue.from_stream make theirs by __new__ too). */
static PyObject *record_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *self = PyType_GenericNew(type, args, kwargs);
  if (self != NULL) ((offload_record *)self)->serial = ++S->births;
  return self;
}

static int queue_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((offload_queue_record *)self)->handle);
  Py_VISIT(((offload_queue_record *)self)->inflight);
  return 0;
}

static int queue_clear(PyObject *self) {
  Py_CLEAR(((offload_queue_record *)self)->handle);
  Py_CLEAR(((offload_queue_record *)self)->inflight);
  return 0;
}

static void queue_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  queue_clear(self);
  Py_TYPE(self)->tp_free(self);
}

static int kernel_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((offload_kernel_record *)self)->memo);
  Py_VISIT(((offload_kernel_record *)self)->memo_previous);
  return 0;
}

static int kernel_clear(PyObject *self) {
  Py_CLEAR(((offload_kernel_record *)self)->memo);
  Py_CLEAR(((offload_kernel_record *)self)->memo_previous);
  return 0;
}

static void kernel_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  kernel_clear(self);
  Py_TYPE(self)->tp_free(self);
}

static PyMemberDef memory_members[] = {
    {"_serial", T_ULONGLONG, offsetof(offload_memory_record, serial), READONLY, "the record's birth number"},
    {"_copied", T_OBJECT_EX, offsetof(offload_memory_record, copied), 0, "the CopyVerdict of the last copy into this object"},
    {NULL, 0, 0, 0, NULL},
};
static PyMemberDef queue_members[] = {
    {"_serial", T_ULONGLONG, offsetof(offload_queue_record, serial), READONLY, "the record's birth number"},
    {"_handle", T_OBJECT_EX, offsetof(offload_queue_record, handle), 0, "the flat QueueHandle"},
    {"_inflight", T_OBJECT_EX, offsetof(offload_queue_record, inflight), 0, "the objects of enqueued work, held until a sync"},
    {NULL, 0, 0, 0, NULL},
};
static PyMemberDef kernel_members[] = {
    {"_memo", T_OBJECT_EX, offsetof(offload_kernel_record, memo), 0, "the LaunchVerdict of the last launch that may be reused"},
    {"_memo_previous", T_OBJECT_EX, offsetof(offload_kernel_record, memo_previous), 0, "the one before"},
    {NULL, 0, 0, 0, NULL},
};

#define RECORD_TYPE(name, ctype, doc, prefix, make)                                                              \
  {                                                                                                             \
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.objects._compiled._replay." name, .tp_basicsize = sizeof(ctype),     \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, .tp_doc = doc,                     \
    .tp_new = make, .tp_dealloc = prefix##_dealloc, .tp_traverse = prefix##_traverse,                            \
    .tp_clear = prefix##_clear, .tp_members = prefix##_members,                                                 \
  }

static PyTypeObject MemoryRecordType =
    RECORD_TYPE("MemoryRecord", offload_memory_record, "The record of a Buffer or an Array (_replay.h).", memory, record_new);
static PyTypeObject QueueRecordType =
    RECORD_TYPE("QueueRecord", offload_queue_record, "The record of a Queue (_replay.h).", queue, record_new);
static PyTypeObject KernelRecordType =
    RECORD_TYPE("KernelRecord", offload_kernel_record, "The record of a Kernel (_replay.h).", kernel, PyType_GenericNew);

/* ------------------------------------------------------------------------------------ */
/* Stamps                                                                                 */

typedef struct {
  PyObject_HEAD
  offload_replay_stamps stamps;
} Stamps;

static PyObject *stamps_close(PyObject *self, PyObject *Py_UNUSED(ignored)) {
  ((Stamps *)self)->stamps.closes++;
  Py_RETURN_NONE;
}

static PyMethodDef stamps_methods[] = {
    {"close", stamps_close, METH_NOARGS, "close(): bump `closes` (memory went, or the session: every verdict dies)"},
    {NULL, NULL, 0, NULL},
};
static PyMemberDef stamps_members[] = {
    {"closes", T_ULONGLONG, offsetof(Stamps, stamps.closes), READONLY, "bumped by close()"},
    {"births", T_ULONGLONG, offsetof(Stamps, stamps.births), READONLY, "the serial of the last record made"},
    {NULL, 0, 0, 0, NULL},
};
static PyTypeObject StampsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.objects._compiled._replay.Stamps", .tp_basicsize = sizeof(Stamps),
    .tp_flags = Py_TPFLAGS_DEFAULT, .tp_doc = "The stamps verdicts are made under (one object: STAMPS).",
    .tp_methods = stamps_methods, .tp_members = stamps_members,
};

/* ------------------------------------------------------------------------------------ */
/* Verdicts                                                                               */

/* PyObject_TypeCheck, its usual cases first: the record type itself, or a class made directly
 * on it (Buffer, Queue, ...): no walk of the MRO per call. */
static inline int of_record(PyObject *obj, PyTypeObject *record) {
  PyTypeObject *type = Py_TYPE(obj);
  return type == record || type->tp_base == record || PyType_IsSubtype(type, record);
}

static inline int is_record(PyObject *obj) {
  return PyObject_TypeCheck(obj, &MemoryRecordType) || PyObject_TypeCheck(obj, &QueueRecordType);
}

/* publish_copy(destination, kind, items, call, stamp): the CopyVerdict recorded as the
 * destination's `_copied` (a MemoryRecord), replacing any before. */
static PyObject *publish_copy(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5 || !PyObject_TypeCheck(args[0], &MemoryRecordType) || !PyLong_Check(args[1]) || !PyTuple_Check(args[2]) ||
      PyTuple_GET_SIZE(args[2]) > OFFLOAD_COPY_ITEMS || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) < 1 ||
      !PyLong_Check(args[4])) {
    PyErr_Format(PyExc_TypeError, "publish_copy(destination, kind, items, call, stamp): a record, an int, at most %d "
                                  "items, a call, an int", OFFLOAD_COPY_ITEMS);
    return NULL;
  }
  int kind = _PyLong_AsInt(args[1]);
  unsigned long long stamp = PyLong_AsUnsignedLongLong(args[4]);
  if (PyErr_Occurred()) return NULL;
  offload_copy_verdict *self = PyObject_New(offload_copy_verdict, &CopyVerdictType);
  if (self == NULL) return NULL;
  PyObject *items = args[2];
  self->kind = kind;
  self->n = PyTuple_GET_SIZE(items);
  self->owned = 0;
  for (Py_ssize_t i = 0; i < self->n; ++i) {
    PyObject *item = PyTuple_GET_ITEM(items, i);
    self->items[i] = item; /* a record by address and serial, anything else referenced */
    if (is_record(item)) {
      self->serials[i] = ((offload_record *)item)->serial;
      self->types[i] = (PyTypeObject *)Py_NewRef(Py_TYPE(item));
    } else {
      Py_INCREF(item);
      self->owned |= 1u << i;
    }
  }
  self->call = Py_NewRef(args[3]);
  self->stamp = stamp;
  Py_XSETREF(((offload_memory_record *)args[0])->copied, (PyObject *)self);
  Py_RETURN_NONE;
}

static void copy_verdict_dealloc(PyObject *op) {
  offload_copy_verdict *self = (offload_copy_verdict *)op;
  for (Py_ssize_t i = 0; i < self->n; ++i) {
    if (self->owned & (1u << i))
      Py_DECREF(self->items[i]);
    else
      Py_DECREF(self->types[i]);
  }
  Py_XDECREF(self->call);
  Py_TYPE(op)->tp_free(op);
}

static PyMemberDef copy_verdict_members[] = {
    {"kind", T_INT, offsetof(offload_copy_verdict, kind), READONLY, "which copy method"},
    {"call", T_OBJECT, offsetof(offload_copy_verdict, call), READONLY, "the flat call: the callable, then its arguments"},
    {"stamp", T_ULONGLONG, offsetof(offload_copy_verdict, stamp), READONLY, "STAMPS.closes when the decision began"},
    {NULL, 0, 0, 0, NULL},
};
static PyTypeObject CopyVerdictType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.objects._compiled._replay.CopyVerdict",
    .tp_basicsize = sizeof(offload_copy_verdict), .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A copy verdict (made by publish_copy): see _replay.h", .tp_dealloc = copy_verdict_dealloc,
    .tp_members = copy_verdict_members,
};

#define LV_OBJECTS(X) X(args) X(grid) X(block) X(shared_memory) X(launch) X(device) X(kernel) X(data) X(sizes) \
  X(first_class) X(second_class) X(owner)

/* LaunchVerdict(args, grid, block, shared_memory, closes, launch, device, kernel, data, sizes,
 * first, first_class, second, second_class, owner): positional arguments only (a vectorcall:
 * made at every launch that packs). */
static PyObject *launch_verdict_vectorcall(PyObject *type, PyObject *const *a, size_t nargsf, PyObject *kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs != 15 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || !PyTuple_Check(a[0]) || !PyLong_Check(a[4]) ||
      !PyLong_Check(a[10]) || !PyLong_Check(a[12])) {
    PyErr_SetString(PyExc_TypeError, "LaunchVerdict takes 15 positional arguments (args a tuple; closes, first, second ints)");
    return NULL;
  }
  unsigned long long closes = PyLong_AsUnsignedLongLong(a[4]);
  Py_ssize_t first = PyLong_AsSsize_t(a[10]), second = PyLong_AsSsize_t(a[12]);
  if (PyErr_Occurred()) return NULL;
  offload_launch_verdict *self = PyObject_GC_New(offload_launch_verdict, (PyTypeObject *)type);
  if (self == NULL) return NULL;
  self->args = Py_NewRef(a[0]);
  self->grid = Py_NewRef(a[1]);
  self->block = Py_NewRef(a[2]);
  self->shared_memory = Py_NewRef(a[3]);
  self->closes = closes;
  self->launch = Py_NewRef(a[5]);
  self->device = Py_NewRef(a[6]);
  self->kernel = Py_NewRef(a[7]);
  self->data = Py_NewRef(a[8]);
  self->sizes = Py_NewRef(a[9]);
  self->first = first;
  self->first_class = Py_NewRef(a[11]);
  self->second = second;
  self->second_class = Py_NewRef(a[13]);
  self->owner = Py_NewRef(a[14]);
  PyObject_GC_Track(self);
  return (PyObject *)self;
}

static PyObject *launch_verdict_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
    PyErr_SetString(PyExc_TypeError, "LaunchVerdict takes positional arguments only");
    return NULL;
  }
  return launch_verdict_vectorcall((PyObject *)type, ((PyTupleObject *)args)->ob_item, (size_t)PyTuple_GET_SIZE(args), NULL);
}

static int launch_verdict_traverse(PyObject *op, visitproc visit, void *arg) {
  offload_launch_verdict *self = (offload_launch_verdict *)op;
#define LV_VISIT(f) Py_VISIT(self->f);
  LV_OBJECTS(LV_VISIT)
#undef LV_VISIT
  return 0;
}

static int launch_verdict_clear(PyObject *op) {
  offload_launch_verdict *self = (offload_launch_verdict *)op;
#define LV_CLEAR(f) Py_CLEAR(self->f);
  LV_OBJECTS(LV_CLEAR)
#undef LV_CLEAR
  return 0;
}

static void launch_verdict_dealloc(PyObject *op) {
  PyObject_GC_UnTrack(op);
  launch_verdict_clear(op);
  Py_TYPE(op)->tp_free(op);
}

#define LV_MEMBER(f) {#f, T_OBJECT, offsetof(offload_launch_verdict, f), READONLY, NULL},
static PyMemberDef launch_verdict_members[] = {
    LV_OBJECTS(LV_MEMBER)
    {"closes", T_ULONGLONG, offsetof(offload_launch_verdict, closes), READONLY, NULL},
    {"first", T_PYSSIZET, offsetof(offload_launch_verdict, first), READONLY, NULL},
    {"second", T_PYSSIZET, offsetof(offload_launch_verdict, second), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};
#undef LV_MEMBER

static PyTypeObject LaunchVerdictType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.objects._compiled._replay.LaunchVerdict",
    .tp_basicsize = sizeof(offload_launch_verdict), .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "LaunchVerdict(args, grid, block, shared_memory, closes, launch, device, kernel, data, sizes, first, "
              "first_class, second, second_class, owner): see _replay.h",
    .tp_new = launch_verdict_new, .tp_vectorcall = launch_verdict_vectorcall, .tp_dealloc = launch_verdict_dealloc,
    .tp_traverse = launch_verdict_traverse, .tp_clear = launch_verdict_clear, .tp_members = launch_verdict_members,
};

/* ------------------------------------------------------------------------------------ */
/* The calls a method was told about                                                      */

/* `items` (room for OFFLOAD_COPY_ITEMS + more): self and the positional arguments, then each
 * keyword of `spec` (names, defaults) given or its default; the count, or -1 for a keyword the
 * method does not take (no exception set). */
static Py_ssize_t line_up(PyObject *spec, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **items) {
  PyObject *names = PyTuple_GET_ITEM(spec, 0), *defaults = PyTuple_GET_ITEM(spec, 1);
  Py_ssize_t nkw = PyTuple_GET_SIZE(names), given = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) items[k] = PyTuple_GET_ITEM(defaults, k);
  for (Py_ssize_t j = 0; j < given; ++j) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, j);
    Py_ssize_t k = 0;
    while (k < nkw && name != PyTuple_GET_ITEM(names, k)) ++k; /* (interned names: the usual case) */
    if (k == nkw)
      for (k = 0; k < nkw && !cm_is(name, PyTuple_GET_ITEM(names, k)); ++k) {
      }
    if (k == nkw) return -1;
    items[k] = args[nargs + j];
  }
  return nkw;
}

/* Appends `(src, dst)` to a queue's `inflight` list (the list's last entry when it is that very
 * pair: a repeated copy makes no new tuple), as the Python method holds them. */
static int hold(PyObject *inflight, PyObject *src, PyObject *dst) {
  Py_ssize_t n = PyList_GET_SIZE(inflight);
  PyObject *last = n ? PyList_GET_ITEM(inflight, n - 1) : NULL;
  if (last != NULL && PyTuple_CheckExact(last) && PyTuple_GET_SIZE(last) == 2 && PyTuple_GET_ITEM(last, 0) == src &&
      PyTuple_GET_ITEM(last, 1) == dst)
    return PyList_Append(inflight, last);
  PyObject *pair = PyTuple_Pack(2, src, dst);
  if (pair == NULL) return -1;
  int result = PyList_Append(inflight, pair);
  Py_DECREF(pair);
  return result;
}

/* The verdict's call (`call[0](*call[1:])`), its result dropped: 0, or -1 with its exception. */
static int make_call(PyObject *call) {
  PyObject **items = ((PyTupleObject *)call)->ob_item;
  PyObject *result = PyObject_Vectorcall(items[0], items + 1, PyTuple_GET_SIZE(call) - 1, NULL);
  if (result == NULL) return -1;
  Py_DECREF(result);
  return 0;
}

/* Whether `a` and `b` are both exact ints of one value (compared without Python code): a
 * verdict made for an int (an offset, a count) was made for its value. */
static inline int same_int(PyObject *a, PyObject *b) {
  return PyLong_CheckExact(a) && PyLong_CheckExact(b) && PyObject_RichCompareBool(a, b, Py_EQ) == 1;
}

/* ------------------------------------------------------------------------------------ */
/* Copier                                                                                 */

typedef struct {
  CMETHOD_HEAD /* (spec: (keyword names, their defaults)) */
  int kind;
  Py_ssize_t positional, destination, source, queue; /* self counts as positional; indices into the items */
  unsigned long long fast, deferred;                 /* calls replayed here / made by the fallback */
} Copier;

/* 1 replayed, 0 for the fallback (nothing done), -1 with the flat call's exception. */
static int copy_replay(Copier *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *items[OFFLOAD_COPY_ITEMS];
  if (nargs != self->positional) return 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) items[i] = args[i];
  Py_ssize_t nkw = line_up(self->spec, args, nargs, kwnames, items + nargs), n = nargs + nkw;
  if (nkw < 0) return 0;
  PyObject *dst = items[self->destination], *queue = items[self->queue], *inflight = NULL;
  if (!of_record(dst, &MemoryRecordType)) return 0;
  offload_copy_verdict *verdict = (offload_copy_verdict *)((offload_memory_record *)dst)->copied;
  if (verdict == NULL || Py_TYPE(verdict) != &CopyVerdictType || verdict->kind != self->kind || verdict->n != n ||
      verdict->stamp != S->closes)
    return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (verdict->owned & (1u << i)) { /* a value: the very object, or an exact int of its value */
      if (verdict->items[i] != items[i] && !same_int(verdict->items[i], items[i])) return 0;
    } else if (verdict->items[i] != items[i] || Py_TYPE(items[i]) != verdict->types[i] ||
               ((offload_record *)items[i])->serial != verdict->serials[i]) {
      return 0; /* (a record: the call's object, alive and of the record's class, has a serial to read) */
    }
  }
  if (queue != Py_None) {
    if (!of_record(queue, &QueueRecordType)) return 0;
    inflight = ((offload_queue_record *)queue)->inflight;
    if (inflight == NULL || !PyList_CheckExact(inflight)) return 0;
  }
  Py_INCREF(verdict); /* the call may run other threads, which may publish another verdict */
  Py_XINCREF(inflight);
  int failed = make_call(verdict->call) < 0 || (inflight != NULL && hold(inflight, items[self->source], dst) < 0);
  Py_XDECREF(inflight);
  Py_DECREF(verdict);
  return failed ? -1 : 1;
}

static PyObject *copier_call(Copier *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  int done = copy_replay(self, args, PyVectorcall_NARGS(nargsf), kwnames);
  if (done < 0) return NULL;
  if (done) {
    self->fast++;
    Py_RETURN_NONE;
  }
  self->deferred++;
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* The spec `(names, defaults)` of a method: two tuples of one length, the names str. */
static PyObject *spec_of(PyObject *names, PyObject *defaults, Py_ssize_t most, const char *what) {
  if (!PyTuple_Check(names) || !PyTuple_Check(defaults) || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(defaults) ||
      PyTuple_GET_SIZE(names) > most)
    return PyErr_Format(PyExc_TypeError, "%s: keywords and defaults must be tuples of one length (at most %zd)", what, most);
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); ++k)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(names, k))) return PyErr_Format(PyExc_TypeError, "%s: keywords must be str", what);
  return PyTuple_Pack(2, names, defaults);
}

static PyObject *copier_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *fallback, *names, *defaults;
  int kind;
  Py_ssize_t positional, destination, source, queue;
  static char *kw[] = {"fallback", "kind", "positional", "keywords", "defaults", "destination", "source", "queue", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OinOOnnn:Copier", kw, &fallback, &kind, &positional, &names, &defaults,
                                   &destination, &source, &queue))
    return NULL;
  if (positional < 1 || positional > OFFLOAD_COPY_ITEMS) return PyErr_Format(PyExc_TypeError, "Copier: positional must be 1..%d", OFFLOAD_COPY_ITEMS);
  PyObject *spec = spec_of(names, defaults, OFFLOAD_COPY_ITEMS - positional, "Copier");
  if (spec == NULL) return NULL;
  Py_ssize_t n = positional + PyTuple_GET_SIZE(names);
  if (destination < 0 || destination >= n || source < 0 || source >= n || queue < 0 || queue >= n) {
    Py_DECREF(spec);
    return PyErr_Format(PyExc_TypeError, "Copier: destination, source and queue must index the %zd arguments", n);
  }
  Copier *self = (Copier *)cmethod_new(type, fallback, (vectorcallfunc)copier_call, "Copier");
  if (self == NULL) {
    Py_DECREF(spec);
    return NULL;
  }
  self->spec = spec;
  self->kind = kind;
  self->positional = positional;
  self->destination = destination;
  self->source = source;
  self->queue = queue;
  return (PyObject *)self;
}

static PyObject *copier_counts(Copier *self, void *closure) {
  (void)closure;
  return Py_BuildValue("{sKsK}", "fast", self->fast, "deferred", self->deferred);
}

static PyGetSetDef copier_getset[] = CMETHOD_GETSET(copier_counts, "{'fast', 'deferred'}: calls replayed here / made by the fallback");

static PyTypeObject CopierType = CMETHOD_TYPE(
    "offload.objects._compiled._replay.Copier", Copier,
    "Copier(fallback, kind, positional, keywords, defaults, destination, source, queue): a copy method replaying "
    "the CopyVerdict on its destination",
    copier_new, copier_getset);

/* ------------------------------------------------------------------------------------ */
/* Relauncher                                                                             */

#define MOST_KEYWORDS 4

typedef struct {
  CMETHOD_HEAD /* (spec: (keyword names, their defaults, miss)) */
  int queued;         /* 1: Queue.launch(queue, kernel, grid, block, *args); 0: Kernel.launch(kernel, grid, block, *args) */
  Py_ssize_t shared;  /* which keyword is the shared memory (every other one must be its default) */
  unsigned long long fast, packed, deferred; /* calls replayed here / handed to `miss` / made by the fallback */
} Relauncher;

/* Whether the LaunchVerdict `m` was made for exactly this call (see _replay.h). */
static int made_for(PyObject *op, PyObject *const *args, Py_ssize_t n, PyObject *grid, PyObject *block, PyObject *shared) {
  offload_launch_verdict *m = (offload_launch_verdict *)op;
  if (op == NULL || Py_TYPE(op) != &LaunchVerdictType || m->closes != S->closes || m->grid != grid || m->block != block ||
      m->shared_memory != shared || !PyTuple_CheckExact(m->args) || PyTuple_GET_SIZE(m->args) != n)
    return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *a = args[i], *r = PyTuple_GET_ITEM(m->args, i);
    if (a == r) continue;
    /* the scalars (`first`, `second`): of the class stated, and the value (an exact int or float) */
    PyObject *cls = i == m->first ? m->first_class : i == m->second ? m->second_class : NULL;
    if (cls == NULL || (PyObject *)Py_TYPE(a) != cls || Py_TYPE(r) != Py_TYPE(a)) return 0;
    if (PyFloat_CheckExact(a) ? PyFloat_AS_DOUBLE(a) != PyFloat_AS_DOUBLE(r) : !same_int(a, r)) return 0;
  }
  return 1;
}

/* A call of the method's shape that no verdict was made for (neither of the kernel's remembered
 * launches, which Python's `same_call` would find as C does): `miss(kernel, queue, grid, block,
 * shared_memory, args)`, the Python code the method itself calls then (it packs, names any
 * error, remembers), its answer held by the queue until a sync. `call` points at grid, block,
 * then the n arguments. 1 done, -1 with its exception. */
static int miss(Relauncher *self, PyObject *kernel, PyObject *handle, PyObject *inflight, PyObject *const *call, Py_ssize_t n,
                PyObject *shared) {
  PyObject *tuple = PyTuple_New(n);
  if (tuple == NULL) return -1;
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(tuple, i, Py_NewRef(call[2 + i]));
  PyObject *run_args[6] = {kernel, handle, call[0], call[1], shared, tuple};
  Py_XINCREF(inflight);
  PyObject *held = PyObject_Vectorcall(PyTuple_GET_ITEM(self->spec, 2), run_args, 6, NULL);
  Py_DECREF(tuple);
  int failed = held == NULL || (inflight != NULL && PyList_Append(inflight, held) < 0);
  Py_XDECREF(held);
  Py_XDECREF(inflight);
  if (failed) return -1;
  self->packed++;
  return 2;
}

static int launch_replay(Relauncher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  Py_ssize_t first = self->queued ? 4 : 3; /* the arguments after self, [kernel,] grid, block */
  PyObject *keywords[MOST_KEYWORDS], *handle = Py_None, *inflight = NULL;
  if (nargs < first) return 0;
  Py_ssize_t nkw = line_up(self->spec, args, nargs, kwnames, keywords);
  if (nkw < 0) return 0;
  PyObject *defaults = PyTuple_GET_ITEM(self->spec, 1);
  for (Py_ssize_t k = 0; k < nkw; ++k)
    if (k != self->shared && keywords[k] != PyTuple_GET_ITEM(defaults, k)) return 0;
  if (self->queued) {
    if (!of_record(args[0], &QueueRecordType)) return 0;
    handle = ((offload_queue_record *)args[0])->handle;
    inflight = ((offload_queue_record *)args[0])->inflight;
    if (handle == NULL || inflight == NULL || !PyList_CheckExact(inflight)) return 0;
  }
  PyObject *kernel = args[first - 3], *grid = args[first - 2], *block = args[first - 1], *shared = keywords[self->shared];
  if (!of_record(kernel, &KernelRecordType)) return 0;
  PyObject *m = ((offload_kernel_record *)kernel)->memo;
  if (!made_for(m, args + first, nargs - first, grid, block, shared)) {
    m = ((offload_kernel_record *)kernel)->memo_previous;
    if (!made_for(m, args + first, nargs - first, grid, block, shared))
      return miss(self, kernel, handle, inflight, args + first - 2, nargs - first, shared);
  }
  offload_launch_verdict *v = (offload_launch_verdict *)m;
  Py_INCREF(m); /* kept while the launch runs: another thread may replace the kernel's memo */
  Py_XINCREF(inflight);
  PyObject *call[5] = {handle, v->device, v->kernel, v->data, v->sizes};
  PyObject *result = PyObject_Vectorcall(v->launch, call, 5, NULL);
  int failed = result == NULL || (inflight != NULL && PyList_Append(inflight, m) < 0); /* held until a sync */
  Py_XDECREF(result);
  Py_XDECREF(inflight);
  Py_DECREF(m);
  return failed ? -1 : 1;
}

static PyObject *relauncher_call(Relauncher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  int done = launch_replay(self, args, PyVectorcall_NARGS(nargsf), kwnames);
  if (done < 0) return NULL;
  if (done) {
    self->fast += done == 1;
    Py_RETURN_NONE;
  }
  self->deferred++;
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *relauncher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *fallback, *names, *defaults, *on_miss;
  int queued;
  Py_ssize_t shared;
  static char *kw[] = {"fallback", "queued", "keywords", "defaults", "shared", "miss", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OpOOnO:Relauncher", kw, &fallback, &queued, &names, &defaults, &shared,
                                   &on_miss))
    return NULL;
  if (!PyCallable_Check(on_miss)) return PyErr_Format(PyExc_TypeError, "Relauncher: miss must be callable");
  PyObject *pair = spec_of(names, defaults, MOST_KEYWORDS, "Relauncher");
  if (pair == NULL) return NULL;
  PyObject *spec = PyTuple_Pack(3, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), on_miss);
  Py_DECREF(pair);
  if (spec == NULL) return NULL;
  if (shared < 0 || shared >= PyTuple_GET_SIZE(names)) {
    Py_DECREF(spec);
    return PyErr_Format(PyExc_TypeError, "Relauncher: shared must index the keywords");
  }
  Relauncher *self = (Relauncher *)cmethod_new(type, fallback, (vectorcallfunc)relauncher_call, "Relauncher");
  if (self == NULL) {
    Py_DECREF(spec);
    return NULL;
  }
  self->spec = spec;
  self->queued = queued;
  self->shared = shared;
  return (PyObject *)self;
}

static PyObject *relauncher_counts(Relauncher *self, void *closure) {
  (void)closure;
  return Py_BuildValue("{sKsKsK}", "fast", self->fast, "packed", self->packed, "deferred", self->deferred);
}

static PyGetSetDef relauncher_getset[] =
    CMETHOD_GETSET(relauncher_counts, "{'fast', 'packed', 'deferred'}: calls replayed here / handed to miss / made by the fallback");

static PyTypeObject RelauncherType = CMETHOD_TYPE(
    "offload.objects._compiled._replay.Relauncher", Relauncher,
    "Relauncher(fallback, queued, keywords, defaults, shared, miss): Queue.launch (queued) or Kernel.launch replaying "
    "the kernel's LaunchVerdicts",
    relauncher_new, relauncher_getset);

/* ------------------------------------------------------------------------------------ */
/* The module                                                                             */

/* The address of a C-contiguous buffer export (what _hostbuf.host_span asked through ctypes for
 * ~1 us): the export is taken and released here, the caller's memoryview holds its own. */
static PyObject *buffer_address(PyObject *Py_UNUSED(module), PyObject *view) {
  Py_buffer buffer;
  if (PyObject_GetBuffer(view, &buffer, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  PyObject *address = PyLong_FromVoidPtr(buffer.buf);
  PyBuffer_Release(&buffer);
  return address;
}

static PyMethodDef methods[] = {
    {"publish_copy", (PyCFunction)(void (*)(void))publish_copy, METH_FASTCALL,
     "publish_copy(destination, kind, items, call, stamp): record a CopyVerdict on the destination (_replay.h)"},
    {"buffer_address", buffer_address, METH_O,
     "buffer_address(view) -> int\n\nThe address of view's C-contiguous buffer (0 when it has none); BufferError otherwise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "offload.objects._compiled._replay", "The object layer's records, verdicts and replaying methods (see _replay.h)",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__replay(void) {
  PyTypeObject *types[] = {&MemoryRecordType, &QueueRecordType, &KernelRecordType, &StampsType, &CopyVerdictType,
                           &LaunchVerdictType, &CopierType, &RelauncherType};
  const char *names[] = {"MemoryRecord", "QueueRecord", "KernelRecord", "Stamps", "CopyVerdict", "LaunchVerdict", "Copier", "Relauncher"};
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  Stamps *stamps = PyObject_New(Stamps, &StampsType);
  if (stamps == NULL) goto fail;
  stamps->stamps.closes = stamps->stamps.births = 0;
  S = &stamps->stamps; /* (the module holds it for the process: one extension module, never unloaded) */
  if (PyModule_AddObject(module, "STAMPS", (PyObject *)stamps) < 0) {
    Py_DECREF(stamps);
    goto fail;
  }
  Py_INCREF(stamps); /* and C keeps it: S points into it */
  if (PyModule_AddIntConstant(module, "VERSION", OFFLOAD_REPLAY_VERSION) < 0) goto fail;
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i)
    if (PyModule_AddObjectRef(module, names[i], (PyObject *)types[i]) < 0) goto fail;
  return module;
fail:
  Py_DECREF(module);
  return NULL;
}
