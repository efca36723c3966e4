/* _verdicts.c - the verdict stores of offload._compiled._fastpath (interface.py declares them).
 *
 * The Python definition of a call publishes a verdict once it has accepted the call: where a copy
 * between two devices goes, which device fills an allocation, that a launch size object of a
 * kernel is accepted on a queue. A compiled call looks its verdict up by the identity of the
 * objects it was made for and replays it; no verdict, no compiled call. A verdict keyed by an
 * allocation snapshot dies with it (every olMemAlloc, olMemFree and device fault publishes a new
 * one); one keyed by handles dies with them (a destroyed handle is no longer live).
 *
 * The stores hold strong references; `forget` (the session's end) drops them all. Each store is
 * small and replaced round robin: a verdict published again stays where it is.
 */
#include "_fastpath.h"

#include <string.h>

#define ROUTES 8
#define FILLS 8
#define LAUNCHES 16

static fp_route routes[ROUTES];
static fp_fill fills[FILLS];
static fp_launch launches[LAUNCHES];
static int next_route, next_fill, next_launch;

const fp_route *fp_find_route(PyObject *snapshot, PyObject *dst_device, PyObject *src_device, PyObject *queue) {
  for (int i = 0; i < ROUTES; ++i) {
    const fp_route *r = &routes[i];
    if (r->snapshot == snapshot && r->dst_device == dst_device && r->src_device == src_device && r->queue == queue)
      return r;
  }
  return NULL;
}

const fp_fill *fp_find_fill(PyObject *snapshot, PyObject *queue, uint64_t start, uint64_t end) {
  for (int i = 0; i < FILLS; ++i) {
    const fp_fill *f = &fills[i];
    if (f->snapshot == snapshot && f->queue == queue && f->lo <= start && end <= f->hi) return f;
  }
  return NULL;
}

const fp_launch *fp_find_launch(PyObject *kernel, PyObject *queue, PyObject *device, PyObject *launch) {
  for (int i = 0; i < LAUNCHES; ++i) {
    const fp_launch *l = &launches[i];
    if (l->kernel == kernel && l->queue == queue && l->device == device && l->launch == launch) return l;
  }
  return NULL;
}

static void clear_route(fp_route *r) {
  Py_CLEAR(r->snapshot);
  Py_CLEAR(r->dst_device);
  Py_CLEAR(r->src_device);
  Py_CLEAR(r->queue);
}

static void clear_fill(fp_fill *f) {
  Py_CLEAR(f->snapshot);
  Py_CLEAR(f->queue);
  Py_CLEAR(f->device);
}

static void clear_launch(fp_launch *l) {
  Py_CLEAR(l->kernel);
  Py_CLEAR(l->queue);
  Py_CLEAR(l->device);
  Py_CLEAR(l->launch);
}

static int small_int(PyObject *obj, int lo, int hi, int *out, const char *what) {
  long v = PyLong_Check(obj) ? PyLong_AsLong(obj) : -1;
  if (v < lo || v > hi) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s must be %d..%d, got %R", what, lo, hi, obj);
    return 0;
  }
  *out = (int)v;
  return 1;
}

static int u64_arg(PyObject *obj, uint64_t *out, const char *what) {
  if (fp_u64(obj, out)) return 1;
  if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s must be an int in [0, 2**64), got %R", what, obj);
  return 0;
}

/* publish_route(snapshot, dst_device, src_device, queue, kind, limit, dst_slot, src_slot) */
static PyObject *publish_route(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  (void)m;
  fp_route r;
  if (n != 8) return PyErr_Format(PyExc_TypeError, "publish_route takes 8 arguments, got %zd", n);
  if (!small_int(a[4], ROUTE_MEMMOVE, ROUTE_EXCHANGE, &r.kind, "kind") || !u64_arg(a[5], &r.limit, "limit") ||
      !small_int(a[6], 0, 3, &r.dst_slot, "dst_slot") || !small_int(a[7], 0, 3, &r.src_slot, "src_slot"))
    return NULL;
  fp_route *slot = (fp_route *)fp_find_route(a[0], a[1], a[2], a[3]);
  if (slot == NULL) {
    slot = &routes[next_route];
    next_route = (next_route + 1) % ROUTES;
  }
  clear_route(slot);
  r.snapshot = Py_NewRef(a[0]);
  r.dst_device = Py_NewRef(a[1]);
  r.src_device = Py_NewRef(a[2]);
  r.queue = Py_NewRef(a[3]);
  *slot = r;
  Py_RETURN_NONE;
}

/* publish_fill(snapshot, queue, lo, hi, device) */
static PyObject *publish_fill(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  (void)m;
  fp_fill f;
  if (n != 5) return PyErr_Format(PyExc_TypeError, "publish_fill takes 5 arguments, got %zd", n);
  if (!u64_arg(a[2], &f.lo, "lo") || !u64_arg(a[3], &f.hi, "hi")) return NULL;
  fp_fill *slot = NULL;
  for (int i = 0; i < FILLS && slot == NULL; ++i)
    if (fills[i].snapshot == a[0] && fills[i].queue == a[1] && fills[i].lo == f.lo && fills[i].hi == f.hi) slot = &fills[i];
  if (slot == NULL) {
    slot = &fills[next_fill];
    next_fill = (next_fill + 1) % FILLS;
  }
  clear_fill(slot);
  f.snapshot = Py_NewRef(a[0]);
  f.queue = Py_NewRef(a[1]);
  f.device = Py_NewRef(a[4]);
  *slot = f;
  Py_RETURN_NONE;
}

static int dim3(PyObject *dims, uint32_t out[3]) {
  if (!PyTuple_Check(dims) || PyTuple_GET_SIZE(dims) != 3) return 0;
  for (int i = 0; i < 3; ++i) {
    uint64_t v;
    if (!fp_u64(PyTuple_GET_ITEM(dims, i), &v) || v > UINT32_MAX) return 0;
    out[i] = (uint32_t)v;
  }
  return 1;
}

/* publish_launch(kernel, queue, device, launch, none_ok, min_args, num_groups, group_size,
 * dyn_shared_memory, native): dims that do not fit offload_launch_dims leave the launch to the
 * Python hook (native false). */
static PyObject *publish_launch(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  (void)m;
  fp_launch l;
  uint64_t dyn;
  if (n != 10) return PyErr_Format(PyExc_TypeError, "publish_launch takes 10 arguments, got %zd", n);
  if (!u64_arg(a[5], &l.min_args, "min_args") || !u64_arg(a[8], &dyn, "dyn_shared_memory")) return NULL;
  l.none_ok = PyObject_IsTrue(a[4]);
  l.native = PyObject_IsTrue(a[9]);
  if (l.none_ok < 0 || l.native < 0) return NULL;
  if (!dim3(a[6], l.dims.num_groups) || !dim3(a[7], l.dims.group_size) || dyn > SIZE_MAX) {
    PyErr_Clear();
    l.native = 0;
    memset(&l.dims, 0, sizeof l.dims);
  } else {
    l.dims.dyn_shared_memory = (size_t)dyn;
  }
  fp_launch *slot = (fp_launch *)fp_find_launch(a[0], a[1], a[2], a[3]);
  if (slot == NULL) {
    slot = &launches[next_launch];
    next_launch = (next_launch + 1) % LAUNCHES;
  }
  clear_launch(slot);
  l.kernel = Py_NewRef(a[0]);
  l.queue = Py_NewRef(a[1]);
  l.device = Py_NewRef(a[2]);
  l.launch = Py_NewRef(a[3]);
  *slot = l;
  Py_RETURN_NONE;
}

static PyObject *forget(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  for (int i = 0; i < ROUTES; ++i) clear_route(&routes[i]);
  for (int i = 0; i < FILLS; ++i) clear_fill(&fills[i]);
  for (int i = 0; i < LAUNCHES; ++i) clear_launch(&launches[i]);
  Py_RETURN_NONE;
}

PyMethodDef fp_verdict_methods[] = {
    {"publish_route", (PyCFunction)(void (*)(void))publish_route, METH_FASTCALL,
     "publish_route(snapshot, dst_device, src_device, queue, kind, limit, dst_slot, src_slot)"},
    {"publish_fill", (PyCFunction)(void (*)(void))publish_fill, METH_FASTCALL,
     "publish_fill(snapshot, queue, lo, hi, device)"},
    {"publish_launch", (PyCFunction)(void (*)(void))publish_launch, METH_FASTCALL,
     "publish_launch(kernel, queue, device, launch, none_ok, min_args, num_groups, group_size, dyn_shared_memory, native)"},
    {"forget", forget, METH_NOARGS, "forget(): drop every verdict"},
    {NULL},
};
