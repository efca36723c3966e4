/* _config.c - configure(): interface.py's declaration checked against this extension's own
 * (FP_INTERFACE_VERSION, FP_FIELDS), and the classes and objects that fill it. */
#include "_fastpath.h"

#include <string.h>
#include <structmember.h>

fp_config FP;
int fp_configured;

/* The offset of the declared field `name` of `type` (a slot, found through the MRO), or -1 with an error. */
static Py_ssize_t field_offset(PyObject *type, const char *role, const char *name) {
  PyObject *descr = PyObject_GetAttrString(type, name);
  if (descr == NULL) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "configure(): %R (role %s) does not declare the field %s", type, role, name);
    return -1;
  }
  Py_ssize_t off = -1;
  if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
    PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
    if (def->type == T_OBJECT_EX || def->type == T_OBJECT) off = def->offset;
  }
  Py_DECREF(descr);
  if (off < 0) PyErr_Format(PyExc_TypeError, "configure(): %R.%s (role %s) is not an object slot", type, name, role);
  return off;
}

static PyObject *need(PyObject *dict, const char *key, PyTypeObject *type) {
  PyObject *value = PyDict_GetItemString(dict, key);
  if (value == NULL) return PyErr_Format(PyExc_KeyError, "configure() needs %s", key);
  if (type != NULL && !PyObject_TypeCheck(value, type))
    return PyErr_Format(PyExc_TypeError, "configure(): %s must be a %s", key, type->tp_name);
  return value;
}

/* The declared fields as interface.FIELDS spells them: {role: (name, ...)}. */
static const struct { const char *role, *name; } DECLARED[] = {
#define FP_DECL(role, name) {#role, #name},
    FP_FIELDS(FP_DECL)
#undef FP_DECL
};

static PyObject *declared_fields(void) {
  PyObject *fields = PyDict_New();
  if (fields == NULL) return NULL;
  for (size_t i = 0; i < sizeof DECLARED / sizeof DECLARED[0]; ++i) {
    PyObject *names = PyDict_GetItemString(fields, DECLARED[i].role); /* borrowed, or NULL */
    PyObject *more = Py_BuildValue("(s)", DECLARED[i].name);
    PyObject *joined = more == NULL ? NULL : names == NULL ? Py_NewRef(more) : PySequence_Concat(names, more);
    Py_XDECREF(more);
    if (joined == NULL || PyDict_SetItemString(fields, DECLARED[i].role, joined) < 0) {
      Py_XDECREF(joined);
      Py_DECREF(fields);
      return NULL;
    }
    Py_DECREF(joined);
  }
  return fields;
}

/* configure({"version": int, "fields": {role: names}, "types": {role: class}, "objects": {...}}):
 * interface.py's declaration, checked equal to this extension's, and what fills it. */
static PyObject *py_configure(PyObject *m, PyObject *config) {
  (void)m;
  if (!PyDict_Check(config)) {
    PyErr_SetString(PyExc_TypeError, "configure(config): a dict");
    return NULL;
  }
  if (fp_configured) Py_RETURN_NONE; /* once per process: the classes and the state never change */
  PyObject *version = need(config, "version", &PyLong_Type), *fields = need(config, "fields", &PyDict_Type);
  PyObject *types = need(config, "types", &PyDict_Type), *objects = need(config, "objects", &PyDict_Type);
  if (version == NULL || fields == NULL || types == NULL || objects == NULL) return NULL;
  if (PyLong_AsLong(version) != FP_INTERFACE_VERSION)
    return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ImportError, "offload._compiled._fastpath implements interface version %d, not %R (rebuild offload-core)", FP_INTERFACE_VERSION, version);
  PyObject *ours = declared_fields();
  if (ours == NULL) return NULL;
  int same = PyObject_RichCompareBool(ours, fields, Py_EQ);
  Py_DECREF(ours);
  if (same <= 0)
    return same < 0 ? NULL : PyErr_Format(PyExc_ImportError, "offload._compiled._fastpath: interface.FIELDS differ from FP_FIELDS (version %d)", FP_INTERFACE_VERSION);
#define FP_TYPE(role)                                                                          \
  if ((FP.role##_t = (PyTypeObject *)need(types, #role, &PyType_Type)) == NULL) return NULL; \
  Py_INCREF(FP.role##_t);
  FP_TYPES(FP_TYPE)
#undef FP_TYPE
#define OBJ(field, key) \
  if ((FP.field = need(objects, key, NULL)) == NULL) return NULL; \
  Py_INCREF(FP.field)
  OBJ(state, "state");
  OBJ(hot, "hot");
  OBJ(offload_error, "OffloadError");
  OBJ(as_offload_error, "as_offload_error");
#undef OBJ
  if (!PyList_CheckExact(FP.hot) || PyList_GET_SIZE(FP.hot) != 4) {
    PyErr_SetString(PyExc_TypeError, "configure(): hot must be a list of 4");
    return NULL;
  }
  /* the state's own class plays its role; every handle keeps _ctx where the device does (checked below) */
  PyObject *state_t = (PyObject *)Py_TYPE(FP.state);
#define FP_ROLE_TYPE_state state_t
#define FP_ROLE_TYPE_handle FP.device_t
#define FP_ROLE_TYPE_session FP.session_t
#define FP_ROLE_TYPE_allocation_map FP.allocation_map_t
#define FP_ROLE_TYPE_device FP.device_t
#define FP_ROLE_TYPE_queue FP.queue_t
#define FP_ROLE_TYPE_symbol FP.symbol_t
#define FP_OFF(role, name) \
  if ((FP.off.role##_##name = field_offset((PyObject *)FP_ROLE_TYPE_##role, #role, #name)) < 0) return NULL;
  FP_FIELDS(FP_OFF)
#undef FP_OFF
  /* every handle role shares the handle's _ctx slot (one base class) */
  PyTypeObject *handles[] = {FP.queue_t, FP.symbol_t};
  for (size_t i = 0; i < sizeof handles / sizeof handles[0]; ++i)
    if (field_offset((PyObject *)handles[i], "handle", "_ctx") != FP.off.handle__ctx)
      return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "configure(): %R keeps _ctx elsewhere", handles[i]);
  PyObject **names[] = {&FP.s_launch_kernel, &FP.s_data_submit, &FP.s_data_retrieve, &FP.s_data_fill,
                        &FP.s_synchronize, &FP.s_has_pending_work, &FP.s_data_exchange};
  const char *texts[] = {"launch_kernel", "data_submit", "data_retrieve", "data_fill", "synchronize",
                         "has_pending_work", "data_exchange"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i)
    if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
  fp_configured = 1;
  Py_RETURN_NONE;
}

static PyObject *py_fields(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  return declared_fields();
}

PyMethodDef fp_config_methods[] = {
    {"configure", py_configure, METH_O, "configure(config: dict): interface.py's declaration and what fills it (once)."},
    {"fields", py_fields, METH_NOARGS, "fields(): the declared fields this extension reads, {role: (name, ...)}."},
    {NULL},
};
