/* _fastpath_ops.c - the operations of the compiled ol* functions.
 *
 * Each one replays a verdict its Python definition published (_verdicts.c), for live handles
 * of this untraced session and exact ints; anything else answers DEFER before anything was done,
 * and the generated Python function then makes the call (and raises every error). The checks
 * here are the verdicts' keys and bounds, never a rule: a call no verdict covers is the Python
 * definition's to accept or refuse. Backend hooks are called as the Python definition calls
 * them; where the device gave native entry points (offload_native.h), the entry point is called
 * first, without the GIL, and a DEFER from it calls the Python hook.
 */
#include "_fastpath.h"
#include "_tracerec.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

/* The part every operation ends with: unregister, count a native call. */
#define RUN_NATIVE(self, call)                  \
  do {                                          \
    offload_native_result r_;                   \
    Py_BEGIN_ALLOW_THREADS r_ = (call);         \
    Py_END_ALLOW_THREADS done = r_ == OFFLOAD_NATIVE_DONE; \
    if (done) (self)->native++;                 \
  } while (0)

static PyObject *none_or_null(PyObject *result) {
  if (result == NULL) return NULL;
  Py_DECREF(result);
  Py_RETURN_NONE;
}

/* Registers `entry` and checks the session is still current; 1 registered, 0 (not registered,
 * DEFER), -1 error. */
static int enter(PyObject *ctx, PyObject *entry) {
  if (fp_register(ctx, entry) < 0) return -1;
  if (fp_still(ctx)) return 1;
  fp_unregister(ctx, entry);
  return 0;
}

#define ENTER(ctx, entry)             \
  switch (enter((ctx), (entry))) {    \
  case -1: return NULL;               \
  case 0: return DEFER;               \
  default: break;                     \
  }

static PyObject *queue_native(PyObject *queue) { return queue == Py_None ? Py_None : FIELD(queue, queue, native); }

static offload_native_word queue_word(PyObject *queue, int *ok) {
  if (queue == Py_None) {
    *ok = 1;
    return 0;
  }
  return fp_word(FIELD(queue, queue, word), ok);
}

/* ------------------------------------------------------------------------------------ */
/* olLaunchKernel: a launch verdict (kernel, queue, device, launch size object)             */

static PyObject *launch_kernel(Entry *self, PyObject *const *a, Py_ssize_t n) {
  if (n < 5 || n > 6 || (n == 6 && a[5] != Py_None)) return DEFER; /* properties: Python */
  PyObject *ctx = fp_session();
  fp_launch_rec lr = {NULL, 0, 0, 0, 0};
  if (ctx == NULL) { /* traced: made here only where the timeline's compiled recorder records it */
    lr.rec = FIELD(FP.state, state, recorder);
    ctx = FIELD(FP.state, state, ctx);
    if (lr.rec == NULL || Py_TYPE(lr.rec) != &fp_recorder_type || ctx == NULL || Py_TYPE(ctx) != FP.session_t) return DEFER;
    lr.begin = fp_now_ns();
  }
  PyObject *queue = a[0], *device = a[1], *kernel = a[2], *args = a[3];
  if (!fp_live(device, FP.device_t, ctx) || !fp_live(kernel, FP.symbol_t, ctx)) return DEFER;
  if (queue != Py_None && !fp_live(queue, FP.queue_t, ctx)) return DEFER;
  const fp_launch *verdict = fp_find_launch(kernel, queue, device, a[4]);
  if (verdict == NULL) return DEFER;
  /* (copied: Python code run from here on, a buffer's export, may publish over the verdict) */
  const int native_ok = verdict->native, none_ok = verdict->none_ok;
  const uint64_t min_args = verdict->min_args;
  const offload_launch_dims dims = verdict->dims;
  Py_buffer view = {0};
  const void *data = NULL;
  size_t size = 0;
  if (args == Py_None) {
    if (!none_ok) return DEFER;
  } else if (PyBytes_CheckExact(args)) {
    data = PyBytes_AS_STRING(args);
    size = (size_t)PyBytes_GET_SIZE(args);
  } else if (PyList_Check(args) || PyTuple_Check(args)) {
    return DEFER; /* per-argument values: packed by Python */
  } else {
    if (PyObject_GetBuffer(args, &view, PyBUF_C_CONTIGUOUS) < 0) {
      PyErr_Clear();
      return DEFER;
    }
    data = view.buf;
    size = (size_t)view.len;
  }
  if (args != Py_None && size < min_args) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return DEFER;
  }
  if (lr.rec != NULL && (!native_ok || !fp_launch_recordable(&lr, queue, kernel, fp_entry_points(device)))) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return DEFER;
  }
  int entered = enter(ctx, kernel);
  if (entered == 1 && FIELD(kernel, handle, _ctx) != ctx) { /* its program was destroyed meanwhile */
    fp_unregister(ctx, kernel);
    entered = 0;
  }
  if (entered < 1) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return entered < 0 ? NULL : DEFER;
  }
  const offload_native_entry_points *ep = fp_entry_points(device);
  int done = 0;
  if (native_ok && ep != NULL && ep->launch_kernel != NULL) {
    int okd, okk, okq;
    offload_native_launch_kernel_fn fn = ep->launch_kernel;
    offload_native_word dw = fp_word(FIELD(device, device, word), &okd), kw = fp_word(FIELD(kernel, symbol, word), &okk);
    offload_native_word qw = queue_word(queue, &okq);
    if (okd && okk && okq) {
      if (lr.rec != NULL) self->native += (unsigned)(done = fp_launch_traced(&lr, ep, dw, qw, kw, data, size, &dims));
      else RUN_NATIVE(self, fn(dw, qw, kw, data, size, &dims));
    }
  }
  if (lr.rec != NULL && !done) { /* not made natively: nothing was done, the traced path makes it */
    if (view.obj != NULL) PyBuffer_Release(&view);
    fp_unregister(ctx, kernel);
    return DEFER;
  }
  PyObject *result = Py_NewRef(Py_None);
  if (!done) {
    PyObject *hargs[5] = {FIELD(device, device, native), queue_native(queue), FIELD(kernel, symbol, native), args, a[4]};
    Py_SETREF(result, none_or_null(fp_hook(FIELD(device, device, backend), FP.s_launch_kernel, hargs, 5, self->name)));
  }
  if (view.obj != NULL) PyBuffer_Release(&view);
  fp_unregister(ctx, kernel);
  return result;
}

/* ------------------------------------------------------------------------------------ */
/* olMemcpy: a copy route (snapshot, devices, queue) and the ranges found safe (HOT)         */

/* data_exchange between two devices of one backend: its native entry point (both devices
 * having the same one), else the hook. A native data_exchange that made the copy stands for the
 * hook (offload_native.h). */
static PyObject *exchange(Entry *self, PyObject *const *a, uint64_t dst, uint64_t src, uint64_t size) {
  PyObject *queue = a[0], *dst_device = a[2], *src_device = a[4];
  const offload_native_entry_points *ep = fp_entry_points(src_device);
  int done = 0;
  if (ep != NULL && ep->data_exchange != NULL && fp_entry_points(dst_device) == ep) {
    int oks, okd, okq;
    offload_native_data_exchange_fn fn = ep->data_exchange;
    offload_native_word sw = fp_word(FIELD(src_device, device, word), &oks), dw = fp_word(FIELD(dst_device, device, word), &okd);
    offload_native_word qw = queue_word(queue, &okq);
    if (oks && okd && okq) RUN_NATIVE(self, fn(sw, (uintptr_t)src, dw, (uintptr_t)dst, (size_t)size, qw));
  }
  if (done) Py_RETURN_NONE;
  PyObject *hargs[6] = {FIELD(src_device, device, native), a[3], FIELD(dst_device, device, native), a[1], a[5], queue_native(queue)};
  return none_or_null(fp_hook(FIELD(src_device, device, backend), FP.s_data_exchange, hargs, 6, self->name));
}

/* data_submit / data_retrieve of the one device of a host <-> device copy: its native entry
 * point, else the hook. */
static PyObject *move(Entry *self, PyObject *const *a, int retrieve, uint64_t dst, uint64_t src, uint64_t size) {
  PyObject *queue = a[0], *owner = retrieve ? a[4] : a[2];
  const offload_native_entry_points *ep = fp_entry_points(owner);
  offload_native_data_move_fn fn = ep == NULL ? NULL : retrieve ? ep->data_retrieve : ep->data_submit;
  int done = 0;
  if (fn != NULL) {
    int okd, okq;
    offload_native_word dw = fp_word(FIELD(owner, device, word), &okd), qw = queue_word(queue, &okq);
    if (okd && okq) RUN_NATIVE(self, fn(dw, (uintptr_t)dst, (uintptr_t)src, (size_t)size, qw));
  }
  if (done) Py_RETURN_NONE;
  PyObject *hargs[5] = {FIELD(owner, device, native), a[1], a[3], a[5], queue_native(queue)};
  return none_or_null(fp_hook(FIELD(owner, device, backend), retrieve ? FP.s_data_retrieve : FP.s_data_submit, hargs, 5, self->name));
}

static PyObject *memcpy_op(Entry *self, PyObject *const *a, Py_ssize_t n) {
  if (n != 6) return DEFER;
  PyObject *ctx = fp_session();
  if (ctx == NULL) return DEFER;
  PyObject *queue = a[0], *dst_device = a[2], *src_device = a[4];
  uint64_t dst, src, size, dst_end, src_end;
  if (!fp_live(dst_device, FP.device_t, ctx) || !fp_live(src_device, FP.device_t, ctx)) return DEFER;
  if (queue != Py_None && !fp_live(queue, FP.queue_t, ctx)) return DEFER;
  if (!fp_u64(a[1], &dst) || !fp_u64(a[3], &src) || !fp_u64(a[5], &size) || !dst || !src || !size) return DEFER;
  if (__builtin_add_overflow(dst, size, &dst_end) || __builtin_add_overflow(src, size, &src_end)) return DEFER;
  PyObject *snapshot = fp_snapshot(ctx);
  const fp_route *route = snapshot == NULL ? NULL : fp_find_route(snapshot, dst_device, src_device, queue);
  if (route == NULL || size >= route->limit) return DEFER;
  const int kind = route->kind, dst_slot = route->dst_slot, src_slot = route->src_slot;
  if (!fp_hot_covers(dst_slot, snapshot, dst, dst_end, dst_device) || !fp_hot_covers(src_slot, snapshot, src, src_end, src_device) ||
      fp_snapshot(ctx) != snapshot) /* (still the snapshot: fp_hot_covers may drop an old one) */
    return DEFER;
  if (kind == ROUTE_MEMMOVE) {
    ENTER(ctx, self->name);
    /* (the GIL is held from the check to the end: nothing can give the memory back meanwhile) */
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)size);
    fp_unregister(ctx, self->name);
    Py_RETURN_NONE;
  }
  /* the hook or entry point may let other threads run: hold what was checked until it returns
   * (no Python code ran since the check, so nothing was retired in between) */
  PyObject *holds = fp_hold(ctx);
  if (holds == NULL) return NULL;
  PyObject *result;
  switch (enter(ctx, self->name)) {
  case -1: result = NULL; break;
  case 0: result = DEFER; break;
  default:
    result = kind == ROUTE_EXCHANGE ? exchange(self, a, dst, src, size) : move(self, a, kind == ROUTE_RETRIEVE, dst, src, size);
    fp_unregister(ctx, self->name);
  }
  fp_unhold(holds);
  return result;
}

/* ------------------------------------------------------------------------------------ */
/* olMemFill: a fill verdict (snapshot, queue, the allocation's range)                      */

static PyObject *mem_fill(Entry *self, PyObject *const *a, Py_ssize_t n) {
  if (n != 4) return DEFER;
  PyObject *ctx = fp_session();
  if (ctx == NULL) return DEFER;
  PyObject *queue = a[0], *pattern = a[2];
  uint64_t ptr, size, end;
  if (queue != Py_None && !fp_live(queue, FP.queue_t, ctx)) return DEFER;
  if (!fp_u64(a[1], &ptr) || !fp_u64(a[3], &size) || !ptr || !size || __builtin_add_overflow(ptr, size, &end)) return DEFER;
  if (!PyBytes_CheckExact(pattern) || PyBytes_GET_SIZE(pattern) == 0 || size % (uint64_t)PyBytes_GET_SIZE(pattern))
    return DEFER;
  /* held before the snapshot is read, as the Python definition holds before it checks */
  PyObject *holds = fp_hold(ctx);
  if (holds == NULL) return NULL;
  PyObject *snapshot = fp_snapshot(ctx);
  const fp_fill *verdict = snapshot == NULL ? NULL : fp_find_fill(snapshot, queue, ptr, end);
  PyObject *result = DEFER;
  if (verdict != NULL) {
    PyObject *device = Py_NewRef(FP_FILL_DEVICE(verdict)); /* (kept: a publish may replace the verdict) */
    switch (enter(ctx, self->name)) {
    case -1: result = NULL; break;
    case 0: break;
    default: {
      const offload_native_entry_points *ep = fp_entry_points(device);
      int done = 0;
      if (ep != NULL && ep->struct_size >= offsetof(offload_native_entry_points, data_fill) + sizeof(void *) &&
          ep->data_fill != NULL) { /* (data_fill: a later, optional member) */
        int okd, okq;
        offload_native_data_fill_fn fn = ep->data_fill;
        offload_native_word dw = fp_word(FIELD(device, device, word), &okd), qw = queue_word(queue, &okq);
        const void *bytes = PyBytes_AS_STRING(pattern); /* (the caller's bytes: kept, immutable) */
        size_t pattern_size = (size_t)PyBytes_GET_SIZE(pattern);
        if (okd && okq) RUN_NATIVE(self, fn(dw, (uintptr_t)ptr, bytes, pattern_size, (size_t)size, qw));
      }
      if (done) {
        result = Py_NewRef(Py_None);
      } else {
        PyObject *hargs[5] = {FIELD(device, device, native), a[1], pattern, a[3], queue_native(queue)};
        result = none_or_null(fp_hook(FIELD(device, device, backend), FP.s_data_fill, hargs, 5, self->name));
      }
      fp_unregister(ctx, self->name);
    }
    }
    Py_DECREF(device);
  }
  fp_unhold(holds);
  return result;
}

/* ------------------------------------------------------------------------------------ */
/* olSyncQueue, olQueryQueue: a live queue is all they take                                */

static PyObject *sync_or_query(Entry *self, PyObject *const *a, Py_ssize_t n, int query) {
  PyObject *ctx = fp_session();
  if (n != 1 || ctx == NULL || !fp_live(a[0], FP.queue_t, ctx)) return DEFER;
  PyObject *queue = a[0], *device = FIELD(queue, queue, device);
  ENTER(ctx, self->name);
  const offload_native_entry_points *ep = fp_entry_points(device);
  int done = 0, pending = 1, okd, okq;
  offload_native_word dw = fp_word(FIELD(device, device, word), &okd), qw = queue_word(queue, &okq);
  if (ep != NULL && okd && okq) {
    offload_native_synchronize_fn sync = ep->synchronize;
    offload_native_has_pending_work_fn has = ep->has_pending_work;
    if (query && has != NULL) RUN_NATIVE(self, has(dw, qw, &pending));
    else if (!query && sync != NULL) RUN_NATIVE(self, sync(dw, qw));
  }
  PyObject *result;
  if (done) {
    result = query ? PyBool_FromLong(!pending) : Py_NewRef(Py_None);
  } else if (query) {
    PyObject *hargs[2] = {FIELD(device, device, native), FIELD(queue, queue, native)};
    PyObject *busy = fp_hook(FIELD(device, device, backend), FP.s_has_pending_work, hargs, 2, self->name);
    int idle = busy == NULL ? -1 : PyObject_Not(busy);
    Py_XDECREF(busy);
    result = idle < 0 ? NULL : PyBool_FromLong(idle);
  } else {
    PyObject *hargs[3] = {FIELD(device, device, native), FIELD(queue, queue, native), Py_False};
    result = none_or_null(fp_hook(FIELD(device, device, backend), FP.s_synchronize, hargs, 3, self->name));
  }
  fp_unregister(ctx, self->name);
  return result;
}

PyObject *fp_call(Entry *self, PyObject *const *args, Py_ssize_t nargs) {
  switch (self->kind) {
  case FP_LAUNCH_KERNEL: return launch_kernel(self, args, nargs);
  case FP_MEMCPY: return memcpy_op(self, args, nargs);
  case FP_MEM_FILL: return mem_fill(self, args, nargs);
  case FP_SYNC_QUEUE: return sync_or_query(self, args, nargs, 0);
  case FP_QUERY_QUEUE: return sync_or_query(self, args, nargs, 1);
  default: return DEFER;
  }
}
