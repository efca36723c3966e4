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
 * small and replaced round robin: a verdict published again for the same key replaces itself.
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

static int keyed(const fp_refs *refs, PyObject *const *key, int n) {
  for (int i = 0; i < n; ++i)
    if (refs->ref[i] != key[i]) return 0;
  return 1;
}

static void drop(fp_refs *refs) {
  for (int i = 0; i < 4; ++i) Py_CLEAR(refs->ref[i]);
}

/* `refs` made to hold the first `n` of `objects`; what it held before is returned, for the caller
 * to drop once the verdict is whole (dropping may run Python code, which may publish again). */
static fp_refs hold(fp_refs *refs, PyObject *const *objects, int n) {
  fp_refs old = *refs;
  for (int i = 0; i < 4; ++i) refs->ref[i] = i < n ? Py_NewRef(objects[i]) : NULL;
  return old;
}

/* The index a new verdict replaces (round robin). */
static int claim(int *next, int count) {
  int i = *next;
  *next = (i + 1) % count;
  return i;
}

const fp_route *fp_find_route(PyObject *snapshot, PyObject *dst_device, PyObject *src_device, PyObject *queue) {
  PyObject *key[4] = {snapshot, dst_device, src_device, queue};
  for (int i = 0; i < ROUTES; ++i)
    if (keyed(&routes[i].refs, key, 4)) return &routes[i];
  return NULL;
}

const fp_fill *fp_find_fill(PyObject *snapshot, PyObject *queue, uint64_t start, uint64_t end) {
  PyObject *key[2] = {snapshot, queue};
  for (int i = 0; i < FILLS; ++i)
    if (keyed(&fills[i].refs, key, 2) && fills[i].lo <= start && end <= fills[i].hi) return &fills[i];
  return NULL;
}

const fp_launch *fp_find_launch(PyObject *kernel, PyObject *queue, PyObject *device, PyObject *launch) {
  PyObject *key[4] = {kernel, queue, device, launch};
  for (int i = 0; i < LAUNCHES; ++i)
    if (keyed(&launches[i].refs, key, 4)) return &launches[i];
  return NULL;
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

static int arity(const char *name, Py_ssize_t n, Py_ssize_t want) {
  if (n == want) return 1;
  PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", name, want, n);
  return 0;
}

/* publish_route(snapshot, dst_device, src_device, queue, kind, limit, dst_slot, src_slot) */
static PyObject *publish_route(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  (void)m;
  int kind, dst_slot, src_slot;
  uint64_t limit;
  if (!arity("publish_route", n, 8) || !small_int(a[4], ROUTE_MEMMOVE, ROUTE_EXCHANGE, &kind, "kind") ||
      !u64_arg(a[5], &limit, "limit") || !small_int(a[6], 0, 3, &dst_slot, "dst_slot") ||
      !small_int(a[7], 0, 3, &src_slot, "src_slot"))
    return NULL;
  fp_route *r = (fp_route *)fp_find_route(a[0], a[1], a[2], a[3]);
  if (r == NULL) r = &routes[claim(&next_route, ROUTES)];
  fp_refs old = hold(&r->refs, a, 4);
  r->kind = kind;
  r->limit = limit;
  r->dst_slot = dst_slot;
  r->src_slot = src_slot;
  drop(&old);
  Py_RETURN_NONE;
}

/* publish_fill(snapshot, queue, lo, hi, device) */
static PyObject *publish_fill(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  (void)m;
  uint64_t lo, hi;
  if (!arity("publish_fill", n, 5) || !u64_arg(a[2], &lo, "lo") || !u64_arg(a[3], &hi, "hi")) return NULL;
  fp_fill *found = NULL;
  PyObject *key[2] = {a[0], a[1]};
  for (int i = 0; i < FILLS && found == NULL; ++i)
    if (keyed(&fills[i].refs, key, 2) && fills[i].lo == lo && fills[i].hi == hi) found = &fills[i];
  fp_fill *f = found != NULL ? found : &fills[claim(&next_fill, FILLS)];
  PyObject *objects[3] = {a[0], a[1], a[4]};
  fp_refs old = hold(&f->refs, objects, 3);
  f->lo = lo;
  f->hi = hi;
  drop(&old);
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
  uint64_t min_args, dyn;
  if (!arity("publish_launch", n, 10) || !u64_arg(a[5], &min_args, "min_args") ||
      !u64_arg(a[8], &dyn, "dyn_shared_memory"))
    return NULL;
  int none_ok = PyObject_IsTrue(a[4]), native = PyObject_IsTrue(a[9]);
  if (none_ok < 0 || native < 0) return NULL;
  offload_launch_dims dims = {{0}, {0}, 0};
  if (!dim3(a[6], dims.num_groups) || !dim3(a[7], dims.group_size) || dyn > SIZE_MAX) {
    PyErr_Clear();
    native = 0;
    memset(&dims, 0, sizeof dims);
  } else {
    dims.dyn_shared_memory = (size_t)dyn;
  }
  fp_launch *l = (fp_launch *)fp_find_launch(a[0], a[1], a[2], a[3]);
  if (l == NULL) l = &launches[claim(&next_launch, LAUNCHES)];
  fp_refs old = hold(&l->refs, a, 4);
  l->none_ok = none_ok;
  l->min_args = min_args;
  l->native = native;
  l->dims = dims;
  drop(&old);
  Py_RETURN_NONE;
}

static PyObject *forget(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  for (int i = 0; i < ROUTES; ++i) { fp_refs old = hold(&routes[i].refs, NULL, 0); drop(&old); }
  for (int i = 0; i < FILLS; ++i) { fp_refs old = hold(&fills[i].refs, NULL, 0); drop(&old); }
  for (int i = 0; i < LAUNCHES; ++i) { fp_refs old = hold(&launches[i].refs, NULL, 0); drop(&old); }
  fp_forget_cached();
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
