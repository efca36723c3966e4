/* _fastpath_ops.c - the operations of the compiled ol* functions.
 *
 * Each one mirrors its Python implementation (_api_kernels, _api_memory, _api_queues,
 * _api_events) for the common case only: live handles of this untraced session, exact ints,
 * ranges inside the segments _ranges.HOT last found safe, a launch whose grid was already found
 * within the device's limits. Anything else answers DEFER before anything was done, and the
 * generated Python function then makes the call (and raises every error). Backend hooks are
 * called as the Python implementation calls them; where the device gave native entry points
 * (offload_native.h), the entry point is called first, without the GIL, and a DEFER from it
 * calls the Python hook.
 */
#include "_fastpath.h"
#include "_tracerec.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

enum { HOT_DEVICE = 0, HOT_READ = 1, HOT_WRITE = 2, HOT_DEVICE_READ = 3 }; /* _ranges' HOT slots */

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

/* ------------------------------------------------------------------------------------ */
/* olLaunchKernel                                                                         */

static int dim3(PyObject *dims, uint32_t out[3]) {
  if (!PyTuple_Check(dims) || PyTuple_GET_SIZE(dims) != 3) return 0;
  for (int i = 0; i < 3; ++i) {
    uint64_t v;
    if (!fp_u64(PyTuple_GET_ITEM(dims, i), &v) || v > UINT32_MAX) return 0;
    out[i] = (uint32_t)v;
  }
  return 1;
}

/* The dims of a launch (cached per Entry: a KernelLaunchSizeArgs is immutable); 0 when they do
 * not fit offload_launch_dims (then the Python hook takes the launch). */
static int launch_dims(Entry *self, PyObject *launch, offload_launch_dims *out) {
  if (launch != self->last_launch) {
    uint64_t dyn;
    PyObject *ng = SLOT(launch, FP.l_num_groups), *gs = SLOT(launch, FP.l_group_size), *d = SLOT(launch, FP.l_dyn);
    self->last_dims_ok = ng != NULL && gs != NULL && d != NULL && dim3(ng, self->last_dims.num_groups) &&
                         dim3(gs, self->last_dims.group_size) && fp_u64(d, &dyn) && dyn <= SIZE_MAX;
    if (self->last_dims_ok) self->last_dims.dyn_shared_memory = (size_t)dyn;
    Py_XSETREF(self->last_launch, Py_NewRef(launch));
  }
  *out = self->last_dims;
  return self->last_dims_ok;
}

static PyObject *launch_kernel(Entry *self, PyObject *const *a, Py_ssize_t n) {
  if (n < 5 || n > 6 || (n == 6 && a[5] != Py_None)) return DEFER; /* properties: Python */
  PyObject *ctx = fp_session();
  fp_launch_rec lr = {NULL, 0, 0, 0, 0};
  if (ctx == NULL) { /* traced: made here only where the timeline's compiled recorder records it */
    lr.rec = SLOT(FP.state, FP.st_recorder);
    ctx = SLOT(FP.state, FP.st_ctx);
    if (lr.rec == NULL || Py_TYPE(lr.rec) != &fp_recorder_type || ctx == NULL || ctx == Py_None) return DEFER;
    lr.begin = fp_now_ns();
  }
  PyObject *queue = a[0], *device = a[1], *kernel = a[2], *args = a[3], *launch = a[4];
  if (!fp_live(device, FP.device_t, ctx) || !fp_live(kernel, FP.symbol_t, ctx)) return DEFER;
  if (queue != Py_None && (!fp_live(queue, FP.queue_t, ctx) || SLOT(queue, FP.q_device) != device)) return DEFER;
  /* the launch checks' one test (the main order, launch before args, fails it too) */
  PyObject *checked = Py_TYPE(launch) == FP.launch_t ? SLOT(launch, FP.l_checked_for) : NULL;
  if (checked == NULL || checked != SLOT(device, FP.d_limits) || SLOT(kernel, FP.k_launch_device) != device)
    return DEFER;
  Py_buffer view = {0};
  const void *data = NULL;
  size_t size = 0;
  if (args == Py_None) {
    PyObject *params = SLOT(kernel, FP.k_params);
    if (params == NULL || (params != Py_None && (!PyTuple_CheckExact(params) || PyTuple_GET_SIZE(params) > 0)))
      return DEFER;
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
  uint64_t needed;
  PyObject *args_size = SLOT(kernel, FP.k_args_size);
  if (args != Py_None && (args_size == NULL || (args_size != Py_None && (!fp_u64(args_size, &needed) || size < needed)))) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return DEFER;
  }
  if (lr.rec != NULL && (args_size == NULL || args_size == Py_None || !fp_launch_recordable(&lr, queue, kernel, fp_entry_points(device)))) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return DEFER;
  }
  int entered = enter(ctx, kernel);
  if (entered == 1 && SLOT(kernel, FP.h_ctx) != ctx) { /* its program was destroyed meanwhile */
    fp_unregister(ctx, kernel);
    entered = 0;
  }
  if (entered < 1) {
    if (view.obj != NULL) PyBuffer_Release(&view);
    return entered < 0 ? NULL : DEFER;
  }
  PyObject *native_queue = queue == Py_None ? Py_None : SLOT(queue, FP.q_native);
  const offload_native_entry_points *ep = fp_entry_points(device);
  int done = 0;
  /* (an entry point may rely on the buffer covering the kernel's parameters: known ones only) */
  if (ep != NULL && ep->launch_kernel != NULL && args_size != NULL && args_size != Py_None) {
    int okd, okk, okq = 1;
    offload_native_launch_kernel_fn fn = ep->launch_kernel;
    offload_native_word dw = fp_word(device, FP.d_word, &okd), kw = fp_word(kernel, FP.k_word, &okk);
    offload_native_word qw = queue == Py_None ? 0 : fp_word(queue, FP.q_word, &okq);
    offload_launch_dims dims;
    if (okd && okk && okq && launch_dims(self, launch, &dims)) {
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
    PyObject *hargs[5] = {SLOT(device, FP.d_native), native_queue, SLOT(kernel, FP.k_native), args, launch};
    Py_SETREF(result, none_or_null(fp_hook(SLOT(device, FP.d_backend), FP.s_launch_kernel, hargs, 5, self->name)));
  }
  if (view.obj != NULL) PyBuffer_Release(&view);
  fp_unregister(ctx, kernel);
  return result;
}

/* ------------------------------------------------------------------------------------ */
/* olMemcpy, olMemFill                                                                    */

static PyObject *snapshot_of(PyObject *ctx) {
  PyObject *allocations = SLOT(ctx, FP.cx_allocations);
  return allocations == NULL ? NULL : SLOT(allocations, FP.am_snapshot);
}

/* Whether `backend` implements the hook data_exchange (its `implemented` names it). */
static int has_exchange(PyObject *backend) {
  PyObject *implemented = PyObject_GetAttr(backend, FP.s_implemented);
  int has = implemented == NULL ? -1 : PySet_Contains(implemented, FP.s_data_exchange);
  Py_XDECREF(implemented);
  if (has < 0) PyErr_Clear();
  return has == 1;
}

/* olMemcpy between two devices of one backend that has data_exchange (as the Python path's
 * _memcpy_device_to_device): its native entry point, else the hook; anything else (two backends,
 * no data_exchange: a bounce through host memory; a queue of another backend) defers. A native
 * data_exchange that made the copy stands for the hook (its DEFER would call the hook,
 * offload_native.h), so `implemented` is read only when there is none or it deferred. */
static PyObject *exchange(Entry *self, PyObject *ctx, PyObject *const *a, uint64_t dst, uint64_t src, uint64_t size) {
  PyObject *queue = a[0], *dst_device = a[2], *src_device = a[4];
  PyObject *backend = SLOT(src_device, FP.d_backend);
  if (SLOT(dst_device, FP.d_backend) != backend) return DEFER;
  PyObject *native_queue = Py_None;
  if (queue != Py_None) {
    if (SLOT(SLOT(queue, FP.q_device), FP.d_backend) != backend) return DEFER;
    native_queue = SLOT(queue, FP.q_native);
  }
  const offload_native_entry_points *ep = fp_entry_points(src_device);
  int native = ep != NULL && ep->data_exchange != NULL && fp_entry_points(dst_device) == ep;
  if (!native && !has_exchange(backend)) return DEFER;
  ENTER(ctx, self->name);
  int done = 0;
  if (native) {
    int oks, okd, okq = 1;
    offload_native_data_exchange_fn fn = ep->data_exchange;
    offload_native_word sw = fp_word(src_device, FP.d_word, &oks), dw = fp_word(dst_device, FP.d_word, &okd);
    offload_native_word qw = queue == Py_None ? 0 : fp_word(queue, FP.q_word, &okq);
    if (oks && okd && okq) RUN_NATIVE(self, fn(sw, (uintptr_t)src, dw, (uintptr_t)dst, (size_t)size, qw));
  }
  PyObject *result = Py_NewRef(Py_None);
  if (!done && native && !has_exchange(backend)) { /* (nothing done: the Python path bounces it) */
    Py_SETREF(result, DEFER);
  } else if (!done) {
    PyObject *hargs[6] = {SLOT(src_device, FP.d_native), a[3], SLOT(dst_device, FP.d_native), a[1], a[5], native_queue};
    Py_SETREF(result, none_or_null(fp_hook(backend, FP.s_data_exchange, hargs, 6, self->name)));
  }
  fp_unregister(ctx, self->name);
  return result;
}

/* olMemcpy between host memory and one device (data_submit / data_retrieve): its native entry
 * point, else the hook. */
static PyObject *move(Entry *self, PyObject *ctx, PyObject *const *a, int dst_host, uint64_t dst, uint64_t src,
                      uint64_t size) {
  PyObject *queue = a[0];
  PyObject *owner = dst_host ? a[4] : a[2];
  /* (a backend without the hook: its bound stand-in raises the UNSUPPORTED that the Python
   * path raises before its range checks, which these ranges pass anyway) */
  PyObject *hook = dst_host ? FP.s_data_retrieve : FP.s_data_submit;
  PyObject *native_queue = Py_None;
  if (queue != Py_None) {
    if (SLOT(SLOT(queue, FP.q_device), FP.d_backend) != SLOT(owner, FP.d_backend)) return DEFER;
    native_queue = SLOT(queue, FP.q_native);
  }
  ENTER(ctx, self->name);
  const offload_native_entry_points *ep = fp_entry_points(owner);
  offload_native_data_move_fn fn = ep == NULL ? NULL : dst_host ? ep->data_retrieve : ep->data_submit;
  int done = 0;
  if (fn != NULL) {
    int okd, okq = 1;
    offload_native_word dw = fp_word(owner, FP.d_word, &okd);
    offload_native_word qw = queue == Py_None ? 0 : fp_word(queue, FP.q_word, &okq);
    if (okd && okq) RUN_NATIVE(self, fn(dw, (uintptr_t)dst, (uintptr_t)src, (size_t)size, qw));
  }
  PyObject *result = Py_NewRef(Py_None);
  if (!done) {
    PyObject *hargs[5] = {SLOT(owner, FP.d_native), a[1], a[3], a[5], native_queue};
    Py_SETREF(result, none_or_null(fp_hook(SLOT(owner, FP.d_backend), hook, hargs, 5, self->name)));
  }
  fp_unregister(ctx, self->name);
  return result;
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
  int dst_host = SLOT(dst_device, FP.d_is_host) == Py_True, src_host = SLOT(src_device, FP.d_is_host) == Py_True;
  PyObject *snapshot = snapshot_of(ctx);
  if (snapshot == NULL || !fp_hot_covers(dst_host ? HOT_WRITE : HOT_DEVICE, snapshot, dst, dst_end, dst_device) ||
      !fp_hot_covers(src_host ? HOT_READ : HOT_DEVICE_READ, snapshot, src, src_end, src_device))
    return DEFER;
  if (dst_host && src_host) { /* a small synchronous host copy is one memmove */
    if (queue != Py_None || size >= FP.big_host_copy) return DEFER;
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
  PyObject *result = !dst_host && !src_host ? exchange(self, ctx, a, dst, src, size)
                                            : move(self, ctx, a, dst_host, dst, src, size);
  fp_unhold(holds);
  return result;
}

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
  PyObject *allocations = SLOT(ctx, FP.cx_allocations);
  if (allocations == NULL) return DEFER;
  /* held before anything is checked: `find` runs Python code, so memory may be retired meanwhile
   * (then the snapshot read after it has changed, and the fill defers) */
  PyObject *holds = fp_hold(ctx);
  if (holds == NULL) return NULL;
  PyObject *found = PyObject_CallMethodOneArg(allocations, FP.s_find, a[1]);
  PyObject *snapshot = snapshot_of(ctx);
  if (found == NULL || snapshot == NULL) {
    PyErr_Clear();
    Py_XDECREF(found);
    fp_unhold(holds);
    return DEFER;
  }
  PyObject *owner = NULL, *device, *native_queue = Py_None;
  if (found != Py_None && (owner = PyObject_GetAttr(found, FP.s_device)) == NULL) PyErr_Clear();
  Py_DECREF(found);
  if (found != Py_None && owner == NULL) {
    fp_unhold(holds);
    return DEFER;
  }
  int ok = 1;
  if (queue != Py_None) {
    device = SLOT(queue, FP.q_device);
    native_queue = SLOT(queue, FP.q_native);
    ok = owner == NULL || owner == device ||
         (SLOT(owner, FP.d_is_host) == Py_True && SLOT(device, FP.d_is_host) == Py_True);
  } else {
    device = owner;
    ok = owner != NULL;
  }
  PyObject *checked = owner == NULL ? device : owner;
  ok = ok && Py_TYPE(checked) == FP.device_t && snapshot == snapshot_of(ctx) &&
       fp_hot_covers(SLOT(checked, FP.d_is_host) == Py_True ? HOT_WRITE : HOT_DEVICE, snapshot, ptr, end, checked);
  int entered = ok ? enter(ctx, self->name) : 0;
  PyObject *result = entered < 0 ? NULL : DEFER;
  if (entered == 1) {
    PyObject *hargs[5] = {SLOT(device, FP.d_native), a[1], pattern, a[3], native_queue};
    result = none_or_null(fp_hook(SLOT(device, FP.d_backend), FP.s_data_fill, hargs, 5, self->name));
    fp_unregister(ctx, self->name);
  }
  Py_XDECREF(owner); /* held until here, as the Python implementation holds its allocation */
  fp_unhold(holds);
  return result;
}

/* ------------------------------------------------------------------------------------ */
/* Queues and events                                                                      */

static PyObject *sync_or_query(Entry *self, PyObject *const *a, Py_ssize_t n, int query) {
  PyObject *ctx = fp_session();
  if (n != 1 || ctx == NULL || !fp_live(a[0], FP.queue_t, ctx)) return DEFER;
  PyObject *queue = a[0], *device = SLOT(queue, FP.q_device);
  ENTER(ctx, self->name);
  const offload_native_entry_points *ep = fp_entry_points(device);
  int done = 0, pending = 1, okd, okq;
  offload_native_word dw = fp_word(device, FP.d_word, &okd), qw = fp_word(queue, FP.q_word, &okq);
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
    PyObject *hargs[2] = {SLOT(device, FP.d_native), SLOT(queue, FP.q_native)};
    PyObject *busy = fp_hook(SLOT(device, FP.d_backend), FP.s_has_pending_work, hargs, 2, self->name);
    int idle = busy == NULL ? -1 : PyObject_Not(busy);
    Py_XDECREF(busy);
    result = idle < 0 ? NULL : PyBool_FromLong(idle);
  } else {
    PyObject *hargs[3] = {SLOT(device, FP.d_native), SLOT(queue, FP.q_native), Py_False};
    result = none_or_null(fp_hook(SLOT(device, FP.d_backend), FP.s_synchronize, hargs, 3, self->name));
  }
  fp_unregister(ctx, self->name);
  return result;
}

/* An Event handle made as Event._make makes one (object.__new__, then its slots). */
static PyObject *new_event(PyObject *ctx, PyObject *queue, PyObject *native) {
  PyObject *empty = PyTuple_New(0);
  if (empty == NULL) return NULL;
  PyObject *event = PyBaseObject_Type.tp_new(FP.event_t, empty, NULL);
  Py_DECREF(empty);
  if (event == NULL) return NULL;
  const struct { Py_ssize_t off; PyObject *value; } fields[] = {
      {FP.h_ctx, ctx}, {FP.e_device, SLOT(queue, FP.q_device)}, {FP.e_native, native},
      {FP.e_queue, queue}, {FP.e_queue_id, SLOT(queue, FP.q_id)}, {FP.e_profiling, Py_False},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) Py_XSETREF(SLOT(event, fields[i].off), Py_NewRef(fields[i].value));
  return event;
}

static PyObject *create_event(Entry *self, PyObject *const *a, Py_ssize_t n) {
  PyObject *ctx = fp_session();
  if (n < 1 || n > 2 || (n == 2 && a[1] != Py_None) || ctx == NULL || !fp_live(a[0], FP.queue_t, ctx)) return DEFER;
  PyObject *queue = a[0], *device = SLOT(queue, FP.q_device);
  ENTER(ctx, self->name);
  PyObject *hargs[2] = {SLOT(device, FP.d_native), SLOT(queue, FP.q_native)};
  PyObject *native = fp_hook(SLOT(device, FP.d_backend), FP.s_create_event, hargs, 2, self->name);
  PyObject *event = native == NULL ? NULL : new_event(ctx, queue, native);
  Py_XDECREF(native);
  fp_unregister(ctx, self->name);
  return event;
}

static PyObject *sync_event(Entry *self, PyObject *const *a, Py_ssize_t n) {
  PyObject *ctx = fp_session();
  if (n != 1 || ctx == NULL || !fp_live(a[0], FP.event_t, ctx)) return DEFER;
  PyObject *device = SLOT(a[0], FP.e_device);
  ENTER(ctx, self->name);
  /* sync_event's queue: the one the event was recorded on while it is live, else None */
  PyObject *queue = SLOT(a[0], FP.e_queue);
  PyObject *hargs[3] = {SLOT(device, FP.d_native), SLOT(a[0], FP.e_native),
                        fp_live(queue, FP.queue_t, ctx) ? SLOT(queue, FP.q_native) : Py_None};
  PyObject *result = none_or_null(fp_hook(SLOT(device, FP.d_backend), FP.s_sync_event, hargs, 3, self->name));
  fp_unregister(ctx, self->name);
  return result;
}

static PyObject *wait_events(Entry *self, PyObject *const *a, Py_ssize_t n) {
  PyObject *ctx = fp_session();
  if (n != 2 || ctx == NULL || !fp_live(a[0], FP.queue_t, ctx)) return DEFER;
  if (!PyList_CheckExact(a[1]) && !PyTuple_CheckExact(a[1])) return DEFER;
  PyObject *queue = a[0], *device = SLOT(queue, FP.q_device);
  PyObject *events = PySequence_Tuple(a[1]); /* a copy: a list may change under a hook */
  if (events == NULL) return NULL;
  Py_ssize_t count = PyTuple_GET_SIZE(events);
  for (Py_ssize_t i = 0; i < count; ++i) { /* every event checked before anything is enqueued */
    PyObject *event = PyTuple_GET_ITEM(events, i);
    if (!fp_live(event, FP.event_t, ctx) || SLOT(SLOT(event, FP.e_device), FP.d_backend) != SLOT(device, FP.d_backend)) {
      Py_DECREF(events);
      return DEFER; /* a dead event, or one of another backend: Python */
    }
  }
  switch (enter(ctx, self->name)) {
  case -1: Py_DECREF(events); return NULL;
  case 0: Py_DECREF(events); return DEFER;
  default: break;
  }
  PyObject *result = Py_NewRef(Py_None);
  for (Py_ssize_t i = 0; result != NULL && i < count; ++i) {
    PyObject *event = PyTuple_GET_ITEM(events, i);
    int same = PyObject_RichCompareBool(SLOT(event, FP.e_queue_id), SLOT(queue, FP.q_id), Py_EQ);
    if (same < 0) Py_CLEAR(result);
    if (same) continue; /* in-order queue: already waited for */
    PyObject *hargs[3] = {SLOT(device, FP.d_native), SLOT(queue, FP.q_native), SLOT(event, FP.e_native)};
    PyObject *r = fp_hook(SLOT(device, FP.d_backend), FP.s_wait_event, hargs, 3, self->name);
    if (r == NULL) Py_CLEAR(result);
    Py_XDECREF(r);
  }
  Py_DECREF(events);
  fp_unregister(ctx, self->name);
  return result;
}

static PyObject *elapsed_time(Entry *self, PyObject *const *a, Py_ssize_t n) {
  PyObject *ctx = fp_session();
  if (n != 2 || ctx == NULL || !fp_live(a[0], FP.event_t, ctx) || !fp_live(a[1], FP.event_t, ctx)) return DEFER;
  PyObject *start = a[0], *end = a[1], *device = SLOT(start, FP.e_device);
  PyObject *level = SLOT(ctx, FP.cx_api_level);
  int profiled = SLOT(start, FP.e_profiling) == Py_True && SLOT(end, FP.e_profiling) == Py_True;
  if (level == NULL || !PyUnicode_CheckExact(level) || (!profiled && PyUnicode_Compare(level, FP.s_main) == 0)) {
    PyErr_Clear();
    return DEFER;
  }
  if (SLOT(end, FP.e_device) != device) return DEFER;
  ENTER(ctx, self->name);
  PyObject *hargs[3] = {SLOT(device, FP.d_native), SLOT(start, FP.e_native), SLOT(end, FP.e_native)};
  PyObject *ms = fp_hook(SLOT(device, FP.d_backend), FP.s_event_elapsed_time, hargs, 3, self->name);
  PyObject *result = ms == NULL ? NULL : PyNumber_Float(ms);
  Py_XDECREF(ms);
  fp_unregister(ctx, self->name);
  return result;
}

static PyObject *launch_host_function(Entry *self, PyObject *const *a, Py_ssize_t n) {
  PyObject *ctx = fp_session();
  if (n < 2 || n > 3 || ctx == NULL || !fp_live(a[0], FP.queue_t, ctx) || a[1] == Py_None || !PyCallable_Check(a[1]))
    return DEFER;
  PyObject *queue = a[0], *device = SLOT(queue, FP.q_device), *native_queue = SLOT(queue, FP.q_native);
  ENTER(ctx, self->name);
  PyObject *pargs[5] = {FP.run_host_function, device, native_queue, a[1], n == 3 ? a[2] : Py_None};
  PyObject *call = PyObject_Vectorcall(FP.partial, pargs, 5, NULL);
  PyObject *result = NULL;
  if (call != NULL) {
    PyObject *hargs[3] = {SLOT(device, FP.d_native), native_queue, call};
    result = none_or_null(fp_hook(SLOT(device, FP.d_backend), FP.s_enqueue_host_call, hargs, 3, self->name));
    Py_DECREF(call);
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
  case FP_CREATE_EVENT: return create_event(self, args, nargs);
  case FP_SYNC_EVENT: return sync_event(self, args, nargs);
  case FP_WAIT_EVENTS: return wait_events(self, args, nargs);
  case FP_ELAPSED_TIME: return elapsed_time(self, args, nargs);
  case FP_LAUNCH_HOST_FUNCTION: return launch_host_function(self, args, nargs);
  default: return DEFER;
  }
}
