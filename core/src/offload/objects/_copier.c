/* _copier.c - offload.objects._copier: the object layer's common copies in C (issue 18).
 *
 * A `Copier` replaces `Buffer.copy_from`, `Buffer.copy_to`, `Array.copy_from` or `Queue.copy`
 * (objects/_compiled_copy.py) and is called as that method is. It makes the call that the
 * method's one-frame common case (`fast_copy`, objects/_buffer.py) makes, and only when
 * `fast_copy` would make it: both sides Buffers (or C-contiguous Arrays of one dtype and shape)
 * of exactly the layer's classes, of the current session, live (a nonzero address), the
 * destination writable, a nonzero size, nonnegative offsets within both Buffers. Then it calls
 * the flat olMemcpy (the function object `offload.olMemcpy`: the compiled one where it runs)
 * with the arguments `fast_copy` passes and, on a queue, holds `(src, dst)` until the queue's
 * sync. Anything else (another class, keyword or offset type, a closed or read-only Buffer, one
 * of another session, an overrun, no configuration yet) calls the Python method (`fallback`)
 * with the same arguments, which checks and names it: the C code raises no error of its own
 * (an error of olMemcpy itself is olMemcpy's, as in `fast_copy`). It runs no Python code
 * before the copy: every value it tests is an exact int, bool, tuple or the very object.
 */
#include "_cmethod.h"

#include <stdint.h>

/* The methods a Copier can be. */
enum { BUFFER_COPY_FROM, BUFFER_COPY_TO, ARRAY_COPY_FROM, QUEUE_COPY, KINDS };

static struct {
  int configured;
  PyTypeObject *buffer_t, *array_t, *queue_t, *device_t; /* objects.Buffer, Array, Queue, Device */
  PyObject *state;                                       /* the session cell (_runtime.STATE) */
  PyObject *memcpy;                                      /* the flat olMemcpy */
  PyObject *s_offset, *s_queue;                          /* "offset", "queue" */
  Py_ssize_t st_ctx;
  Py_ssize_t b_address, b_size, b_device, b_ctx, b_readonly;
  Py_ssize_t a_buffer, a_shape, a_dtype, a_offset, a_nbytes, a_contiguous;
  Py_ssize_t q_handle, q_inflight, d_handle;
} C;

typedef struct {
  CMETHOD_HEAD /* (fallback: the Python method) */
  int kind;
  unsigned long long fast, deferred; /* calls copied here / made by the fallback */
} Copier;

/* An exact int in [0, 2**63) into *out; 0 otherwise (no exception: an exact int raises none). */
static inline int size_of(PyObject *obj, long long *out) {
  if (obj == NULL || !PyLong_CheckExact(obj)) return 0;
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow || v < 0) return 0;
  *out = v;
  return 1;
}

/* `address + offset` as an int (the address object itself for offset 0), or NULL (overflow:
 * no exception set, or an exception). */
static PyObject *moved(PyObject *address, long long a, long long offset) {
  long long sum;
  if (!offset) return Py_NewRef(address);
  if (__builtin_add_overflow(a, offset, &sum)) return NULL;
  return PyLong_FromLongLong(sum);
}

/* The device handle of a Buffer (its objects.Device's `_handle`), borrowed, or NULL. */
static PyObject *device_handle(PyObject *buffer) {
  PyObject *device = SLOT(buffer, C.b_device);
  return device != NULL && Py_TYPE(device) == C.device_t ? SLOT(device, C.d_handle) : NULL;
}

/* Whether `nbytes` from `offset` (nonnegative) lie within `buffer` (its whole size object from 0: at once). */
static inline int within(PyObject *buffer, long long offset, PyObject *nbytes_obj, long long nbytes) {
  PyObject *size_obj = SLOT(buffer, C.b_size);
  long long size, end;
  if (offset == 0 && size_obj == nbytes_obj) return 1;
  return size_of(size_obj, &size) && !__builtin_add_overflow(offset, nbytes, &end) && end <= size;
}

/* Appends `(src, dst)` to a queue's `inflight` list, which holds both Buffers until the queue's
 * sync: the list's last entry when it is that very pair (a repeated copy: no new tuple), else a
 * new tuple. (An entry per copy all the same: a sync drops the entries it saw when it began.) */
static int hold(PyObject *inflight, PyObject *src, PyObject *dst) {
  Py_ssize_t n = PyList_GET_SIZE(inflight);
  PyObject *last = n ? PyList_GET_ITEM(inflight, n - 1) : NULL;
  if (last != NULL && PyTuple_CheckExact(last) && PyTuple_GET_SIZE(last) == 2 && PyTuple_GET_ITEM(last, 0) == src &&
      PyTuple_GET_ITEM(last, 1) == dst)
    return PyList_Append(inflight, last);
  PyObject *pair = PyTuple_New(2);
  if (pair == NULL) return -1;
  PyTuple_SET_ITEM(pair, 0, Py_NewRef(src));
  PyTuple_SET_ITEM(pair, 1, Py_NewRef(dst));
  int result = PyList_Append(inflight, pair);
  Py_DECREF(pair);
  return result;
}

/* `fast_copy(dst, dst_offset, src, src_offset, nbytes, queue)`: 1 copied, 0 not (nothing done,
 * no exception), -1 with an exception (olMemcpy's, or no memory). `queue` is None or a Queue. */
static int copy(PyObject *dst, long long dst_offset, PyObject *src, long long src_offset, PyObject *nbytes_obj, PyObject *queue) {
  PyObject *ctx = SLOT(C.state, C.st_ctx);
  long long nbytes, dst_address, src_address;
  if (ctx == NULL || ctx == Py_None || Py_TYPE(dst) != C.buffer_t || Py_TYPE(src) != C.buffer_t ||
      SLOT(dst, C.b_ctx) != ctx || SLOT(src, C.b_ctx) != ctx || SLOT(dst, C.b_readonly) != Py_False ||
      !size_of(nbytes_obj, &nbytes) || !nbytes || !size_of(SLOT(dst, C.b_address), &dst_address) || !dst_address ||
      !size_of(SLOT(src, C.b_address), &src_address) || !src_address || dst_offset < 0 || src_offset < 0 ||
      !within(dst, dst_offset, nbytes_obj, nbytes) || !within(src, src_offset, nbytes_obj, nbytes))
    return 0;
  PyObject *dst_device = device_handle(dst), *src_device = device_handle(src), *handle = Py_None, *inflight = NULL;
  if (dst_device == NULL || src_device == NULL) return 0;
  if (queue != Py_None) {
    handle = SLOT(queue, C.q_handle);
    inflight = SLOT(queue, C.q_inflight);
    if (handle == NULL || inflight == NULL || !PyList_CheckExact(inflight)) return 0;
  }
  PyObject *to = moved(SLOT(dst, C.b_address), dst_address, dst_offset);
  PyObject *from = to == NULL ? NULL : moved(SLOT(src, C.b_address), src_address, src_offset);
  if (from == NULL) {
    Py_XDECREF(to);
    return PyErr_Occurred() ? -1 : 0;
  }
  /* every argument held while olMemcpy runs (slots are borrowed; the call may run Python code) */
  PyObject *call[6] = {Py_NewRef(handle), to, Py_NewRef(dst_device), from, Py_NewRef(src_device), Py_NewRef(nbytes_obj)};
  Py_XINCREF(inflight);
  PyObject *result = PyObject_Vectorcall(C.memcpy, call, 6, NULL);
  for (int i = 0; i < 6; ++i) Py_DECREF(call[i]);
  int failed = result == NULL;
  Py_XDECREF(result);
  if (!failed && inflight != NULL) failed = hold(inflight, src, dst) < 0;
  Py_XDECREF(inflight);
  return failed ? -1 : 1;
}

/* Whether two Array shapes are equal tuples of exact ints (compared without Python code). */
static int same_shape(PyObject *a, PyObject *b) {
  if (a == b) return a != NULL;
  if (a == NULL || b == NULL || !PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
    return 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) {
    PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
    if (!PyLong_CheckExact(x) || !PyLong_CheckExact(y) || PyObject_RichCompareBool(x, y, Py_EQ) != 1) return 0;
  }
  return 1;
}

/* Whether `obj` is an Array of exactly the layer's class, C-contiguous, with an int offset. */
static int contiguous_array(PyObject *obj, long long *offset) {
  return Py_TYPE(obj) == C.array_t && SLOT(obj, C.a_contiguous) == Py_True && size_of(SLOT(obj, C.a_offset), offset);
}

/* The copy between two Arrays: `nbytes` of `src` into `dst` (the Python methods' conditions on
 * the Arrays were checked by the caller). */
static int copy_arrays(PyObject *dst, long long dst_offset, PyObject *src, long long src_offset, PyObject *nbytes, PyObject *queue) {
  PyObject *dst_buffer = SLOT(dst, C.a_buffer), *src_buffer = SLOT(src, C.a_buffer);
  if (dst_buffer == NULL || src_buffer == NULL) return 0;
  return copy(dst_buffer, dst_offset, src_buffer, src_offset, nbytes, queue);
}

/* The method's call in C: 1 copied, 0 for the fallback, -1 with an exception. */
static int try_copy(Copier *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *offset_obj = NULL, *queue = Py_None;
  long long offset = 0, dst_offset, src_offset, dst_bytes, src_bytes;
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < nkw; ++i) { /* offset= (Buffer's methods), queue= (not Queue.copy) */
    PyObject *name = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
    if (cm_is(name, C.s_queue) && self->kind != QUEUE_COPY && queue == Py_None) {
      queue = value;
    } else if (cm_is(name, C.s_offset) && (self->kind == BUFFER_COPY_FROM || self->kind == BUFFER_COPY_TO) &&
               offset_obj == NULL) {
      offset_obj = value;
      if (!size_of(offset_obj, &offset)) return 0;
    } else {
      return 0;
    }
  }
  if (nargs != (self->kind == QUEUE_COPY ? 3 : 2)) return 0;
  if (self->kind == QUEUE_COPY) {
    if (Py_TYPE(args[0]) != C.queue_t) return 0;
    queue = args[0];
  } else if (queue != Py_None && Py_TYPE(queue) != C.queue_t) {
    return 0;
  }
  switch (self->kind) {
  case BUFFER_COPY_FROM:
    return Py_TYPE(args[1]) == C.buffer_t ? copy(args[0], offset, args[1], 0, SLOT(args[1], C.b_size), queue) : 0;
  case BUFFER_COPY_TO:
    return Py_TYPE(args[1]) == C.buffer_t ? copy(args[1], 0, args[0], offset, SLOT(args[1], C.b_size), queue) : 0;
  case ARRAY_COPY_FROM: /* the source's dtype the very object, its shape equal */
    if (!contiguous_array(args[0], &dst_offset) || !contiguous_array(args[1], &src_offset) ||
        SLOT(args[0], C.a_dtype) == NULL || SLOT(args[0], C.a_dtype) != SLOT(args[1], C.a_dtype) ||
        !same_shape(SLOT(args[0], C.a_shape), SLOT(args[1], C.a_shape)))
      return 0;
    return copy_arrays(args[0], dst_offset, args[1], src_offset, SLOT(args[0], C.a_nbytes), queue);
  default: /* QUEUE_COPY(queue, dst, src): all of src into dst, no larger */
    if (Py_TYPE(args[1]) == C.buffer_t && Py_TYPE(args[2]) == C.buffer_t) {
      if (!size_of(SLOT(args[1], C.b_size), &dst_bytes) || !size_of(SLOT(args[2], C.b_size), &src_bytes) || src_bytes > dst_bytes)
        return 0;
      return copy(args[1], 0, args[2], 0, SLOT(args[2], C.b_size), queue);
    }
    if (!contiguous_array(args[1], &dst_offset) || !contiguous_array(args[2], &src_offset) ||
        !size_of(SLOT(args[1], C.a_nbytes), &dst_bytes) || !size_of(SLOT(args[2], C.a_nbytes), &src_bytes) ||
        src_bytes > dst_bytes)
      return 0;
    return copy_arrays(args[1], dst_offset, args[2], src_offset, SLOT(args[2], C.a_nbytes), queue);
  }
}

static PyObject *copier_call(Copier *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  int done = C.configured ? try_copy(self, args, PyVectorcall_NARGS(nargsf), kwnames) : 0;
  if (done < 0) return NULL;
  if (done) {
    self->fast++;
    Py_RETURN_NONE;
  }
  self->deferred++;
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* ------------------------------------------------------------------------------------ */
/* The Copier type: a method (a descriptor binding like a function)                       */

static PyObject *copier_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *fallback;
  int kind;
  static char *names[] = {"fallback", "kind", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi:Copier", names, &fallback, &kind)) return NULL;
  if (kind < 0 || kind >= KINDS) return PyErr_Format(PyExc_TypeError, "Copier: kind must be one of 0..%d", KINDS - 1);
  Copier *self = (Copier *)cmethod_new(type, fallback, (vectorcallfunc)copier_call, "Copier");
  if (self != NULL) self->kind = kind;
  return (PyObject *)self;
}

static PyObject *copier_counts(Copier *self, void *closure) {
  (void)closure;
  return Py_BuildValue("{sKsK}", "fast", self->fast, "deferred", self->deferred);
}

static PyGetSetDef copier_getset[] = CMETHOD_GETSET(copier_counts, "{'fast', 'deferred'}: calls copied here / made by the fallback");

static PyTypeObject CopierType = CMETHOD_TYPE(
    "offload.objects._copier.Copier", Copier,
    "Copier(fallback, kind): Buffer.copy_from, Buffer.copy_to, Array.copy_from or Queue.copy, the common case in C",
    copier_new, copier_getset);

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                          */

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 6 || !PyType_Check(args[0]) || !PyType_Check(args[1]) || !PyType_Check(args[2]) ||
      !PyType_Check(args[3]) || !PyCallable_Check(args[5])) {
    PyErr_SetString(PyExc_TypeError, "configure(Buffer, Array, Queue, Device, session_cell, olMemcpy): four classes, the cell, a callable");
    return NULL;
  }
  if (C.configured) Py_RETURN_NONE; /* once per process: the classes and the cell never change */
  PyTypeObject *buffer_t = (PyTypeObject *)args[0], *array_t = (PyTypeObject *)args[1];
  PyTypeObject *queue_t = (PyTypeObject *)args[2], *device_t = (PyTypeObject *)args[3];
  if ((C.st_ctx = slot_offset(Py_TYPE(args[4]), "ctx")) < 0 || (C.b_address = slot_offset(buffer_t, "_address")) < 0 ||
      (C.b_size = slot_offset(buffer_t, "_size")) < 0 || (C.b_device = slot_offset(buffer_t, "_device")) < 0 ||
      (C.b_ctx = slot_offset(buffer_t, "_ctx")) < 0 || (C.b_readonly = slot_offset(buffer_t, "_readonly")) < 0 ||
      (C.a_buffer = slot_offset(array_t, "_buffer")) < 0 || (C.a_shape = slot_offset(array_t, "_shape")) < 0 ||
      (C.a_dtype = slot_offset(array_t, "_dtype")) < 0 || (C.a_offset = slot_offset(array_t, "_offset")) < 0 ||
      (C.a_nbytes = slot_offset(array_t, "_nbytes")) < 0 || (C.a_contiguous = slot_offset(array_t, "_contiguous")) < 0 ||
      (C.q_handle = slot_offset(queue_t, "_handle")) < 0 || (C.q_inflight = slot_offset(queue_t, "_inflight")) < 0 ||
      (C.d_handle = slot_offset(device_t, "_handle")) < 0)
    return NULL;
  C.buffer_t = (PyTypeObject *)Py_NewRef(buffer_t);
  C.array_t = (PyTypeObject *)Py_NewRef(array_t);
  C.queue_t = (PyTypeObject *)Py_NewRef(queue_t);
  C.device_t = (PyTypeObject *)Py_NewRef(device_t);
  C.state = Py_NewRef(args[4]);
  C.memcpy = Py_NewRef(args[5]);
  C.configured = 1;
  Py_RETURN_NONE;
}

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
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(Buffer, Array, Queue, Device, session_cell, olMemcpy): what the Copiers read (once; until then they defer)"},
    {"buffer_address", buffer_address, METH_O,
     "buffer_address(view) -> int\n\nThe address of view's C-contiguous buffer (0 when it has none); BufferError otherwise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "offload.objects._copier", "The object layer's common copies in C (see _copier.c)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__copier(void) {
  if (PyType_Ready(&CopierType) < 0) return NULL;
  if (C.s_offset == NULL &&
      ((C.s_offset = PyUnicode_InternFromString("offset")) == NULL || (C.s_queue = PyUnicode_InternFromString("queue")) == NULL))
    return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  if (PyModule_AddIntConstant(module, "BUFFER_COPY_FROM", BUFFER_COPY_FROM) < 0 ||
      PyModule_AddIntConstant(module, "BUFFER_COPY_TO", BUFFER_COPY_TO) < 0 ||
      PyModule_AddIntConstant(module, "ARRAY_COPY_FROM", ARRAY_COPY_FROM) < 0 ||
      PyModule_AddIntConstant(module, "QUEUE_COPY", QUEUE_COPY) < 0 ||
      PyModule_AddObjectRef(module, "Copier", (PyObject *)&CopierType) < 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
