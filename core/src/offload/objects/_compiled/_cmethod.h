/* _cmethod.h - the object layer's compiled methods (_replay.c): the method descriptor.
 *
 * A compiled method is an object called as the Python method it replaces (its `fallback`, whose
 * __name__, __qualname__, __module__ and __doc__ it forwards): it binds like a function (a
 * method descriptor), replays a verdict where one applies (_replay.h) and calls the fallback
 * with the same arguments for anything else.
 *
 * The including file uses what it needs; the functions are static.
 */
#ifndef OFFLOAD_OBJECTS_CMETHOD_H
#define OFFLOAD_OBJECTS_CMETHOD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <structmember.h>

/* The head of every compiled method object: its vectorcall, the Python method and what the
 * method was told of its parameters (`spec`: a tuple, or NULL). */
#define CMETHOD_HEAD      \
  PyObject_HEAD           \
  vectorcallfunc vectorcall; \
  PyObject *fallback;     \
  PyObject *spec;

typedef struct {
  CMETHOD_HEAD
} CMethod;

/* Whether `name` (a keyword's name: a str) is the interned `wanted`. */
static inline int cm_is(PyObject *name, PyObject *wanted) {
  return name == wanted || PyUnicode_Compare(name, wanted) == 0;
}

/* A new compiled method of `type` calling `call`, its Python method `fallback` (a callable:
 * else a TypeError naming `what`), or NULL. The caller sets its own fields. */
static CMethod *cmethod_new(PyTypeObject *type, PyObject *fallback, vectorcallfunc call, const char *what) {
  if (!PyCallable_Check(fallback)) {
    PyErr_Format(PyExc_TypeError, "%s: fallback must be callable", what);
    return NULL;
  }
  CMethod *self = (CMethod *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->vectorcall = call;
  self->fallback = Py_NewRef(fallback);
  return self;
}

static int cmethod_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((CMethod *)self)->fallback);
  Py_VISIT(((CMethod *)self)->spec);
  return 0;
}

static int cmethod_clear(PyObject *self) {
  Py_CLEAR(((CMethod *)self)->fallback);
  Py_CLEAR(((CMethod *)self)->spec);
  return 0;
}

static void cmethod_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(((CMethod *)self)->fallback);
  Py_CLEAR(((CMethod *)self)->spec);
  Py_TYPE(self)->tp_free(self);
}

/* A method: bound to an instance, itself when read from the class. */
static PyObject *cmethod_get(PyObject *self, PyObject *obj, PyObject *type) {
  (void)type;
  return obj == NULL || obj == Py_None ? Py_NewRef(self) : PyMethod_New(self, obj);
}

static PyObject *cmethod_fallback(PyObject *self, void *closure) {
  (void)closure;
  return Py_NewRef(((CMethod *)self)->fallback);
}

/* The fallback's attribute `name` (the closure): named and documented as its method. */
static PyObject *cmethod_forwarded(PyObject *self, void *name) {
  return PyObject_GetAttrString(((CMethod *)self)->fallback, name);
}

static PyObject *cmethod_repr(PyObject *self) {
  return PyUnicode_FromFormat("<%s of %R>", Py_TYPE(self)->tp_name, ((CMethod *)self)->fallback);
}

/* The attributes of a compiled method: `counts` (its getter `counts`, documented by `doc`), the
 * Python method as `fallback` and `__wrapped__`, and the method's names and documentation. */
#define CMETHOD_GETSET(counts, doc)                                                                        \
  {                                                                                                        \
    {"counts", (getter)(counts), NULL, doc, NULL},                                                         \
    {"fallback", (getter)cmethod_fallback, NULL, "the Python method", NULL},                               \
    {"__wrapped__", (getter)cmethod_fallback, NULL, "the Python method (inspect.signature follows it)", NULL}, \
    {"__name__", (getter)cmethod_forwarded, NULL, NULL, "__name__"},                                       \
    {"__qualname__", (getter)cmethod_forwarded, NULL, NULL, "__qualname__"},                               \
    {"__module__", (getter)cmethod_forwarded, NULL, NULL, "__module__"},                                   \
    {"__doc__", (getter)cmethod_forwarded, NULL, NULL, "__doc__"},                                         \
    {NULL, NULL, NULL, NULL, NULL},                                                                        \
  }

/* The type object of the compiled method `ctype` (a struct beginning with CMETHOD_HEAD), named
 * `name`, made by `make` (its tp_new), with the attributes `getset` (CMETHOD_GETSET). */
#define CMETHOD_TYPE(name, ctype, doc, make, getset)                                                             \
  {                                                                                                             \
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = name, .tp_basicsize = sizeof(ctype),                                \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR, \
    .tp_doc = doc, .tp_new = make, .tp_dealloc = cmethod_dealloc, .tp_traverse = cmethod_traverse,               \
    .tp_clear = cmethod_clear, .tp_call = PyVectorcall_Call, .tp_vectorcall_offset = offsetof(CMethod, vectorcall), \
    .tp_descr_get = cmethod_get, .tp_getset = getset, .tp_repr = cmethod_repr,                                   \
  }

#endif
