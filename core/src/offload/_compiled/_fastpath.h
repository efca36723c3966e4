/* _fastpath.h - what the two C files of offload._compiled._fastpath share.
 *
 * offload._compiled._fastpath is the compiled common case of the per-call ol* functions (see
 * core/DESIGN.md, "The compiled path"). Each compiled function is an `Entry`: it either makes
 * the call exactly as the generated Python function (its `fallback`) would, or calls that
 * fallback with the same arguments. It never raises an error of its own making: every error
 * code and message comes from the Python implementation (or from a backend hook, converted by
 * the same `as_offload_error`).
 *
 * The Python objects it reads are slotted (`__slots__`): their slots are read by offset, found
 * once from the classes' member descriptors by `configure`, after an exact class test.
 */
#ifndef OFFLOAD_FASTPATH_H
#define OFFLOAD_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../include/offload_native.h"

/* A slot of an object whose exact class was tested: NULL when unset. */
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

typedef struct {
  /* classes */
  PyTypeObject *device_t, *queue_t, *symbol_t, *event_t, *launch_t;
  /* objects */
  PyObject *state;            /* _runtime.STATE */
  PyObject *hot;              /* _ranges.HOT: [DEVICE, READ, WRITE] */
  PyObject *offload_error;    /* OffloadError */
  PyObject *as_offload_error; /* _errors.as_offload_error(exc, what) */
  PyObject *partial;          /* functools.partial */
  PyObject *run_host_function; /* _api_queues._run_host_function */
  PyObject *s_main;           /* "main" */
  /* interned names: hooks and attributes */
  PyObject *s_launch_kernel, *s_data_submit, *s_data_retrieve, *s_data_fill, *s_synchronize, *s_has_pending_work;
  PyObject *s_create_event, *s_sync_event, *s_wait_event, *s_event_elapsed_time, *s_enqueue_host_call;
  PyObject *s_find, *s_device, *s_data_exchange, *s_implemented;
  uint64_t big_host_copy;     /* _api_memory._BIG_HOST_COPY */
  /* slot offsets */
  Py_ssize_t st_untraced, st_ctx, st_recorder;
  Py_ssize_t cx_calls, cx_allocations, cx_api_level, cx_holds, am_snapshot;
  Py_ssize_t h_ctx;
  Py_ssize_t d_backend, d_native, d_is_host, d_limits, d_entry_points, d_word;
  Py_ssize_t q_device, q_native, q_id, q_word;
  Py_ssize_t k_launch_device, k_params, k_args_size, k_native, k_word;
  Py_ssize_t e_device, e_native, e_queue, e_queue_id, e_profiling;
  Py_ssize_t l_checked_for, l_num_groups, l_group_size, l_dyn;
} fp_config;

extern fp_config FP;
extern int fp_configured;

/* The compiled functions (the Entry objects' kinds). */
enum {
  FP_LAUNCH_KERNEL,
  FP_MEMCPY,
  FP_MEM_FILL,
  FP_SYNC_QUEUE,
  FP_QUERY_QUEUE,
  FP_CREATE_EVENT,
  FP_SYNC_EVENT,
  FP_WAIT_EVENTS,
  FP_ELAPSED_TIME,
  FP_LAUNCH_HOST_FUNCTION,
  FP_KINDS
};

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int kind;
  PyObject *fallback; /* the generated Python function */
  PyObject *name;     /* what the call registers in ctx.calls (its name; a launch: its kernel) */
  PyObject *dict;     /* __doc__, __wrapped__, ... */
  PyObject *last_launch;         /* olLaunchKernel: the last size object turned into dims */
  offload_launch_dims last_dims; /* ... and its dims (a KernelLaunchSizeArgs is immutable) */
  int last_dims_ok;              /* whether they fit offload_launch_dims */
  unsigned long long fast, deferred, native; /* calls made here / by the fallback / by an entry point */
} Entry;

/* The result of an operation: a new reference, NULL with an exception set, or DEFER. */
#define DEFER Py_NotImplemented

/* The session of an untraced, initialised library (borrowed), or NULL. */
PyObject *fp_session(void);
/* Whether `obj` is a live handle of exactly `type` in session `ctx`. */
static inline int fp_live(PyObject *obj, PyTypeObject *type, PyObject *ctx) {
  return Py_TYPE(obj) == type && SLOT(obj, FP.h_ctx) == ctx;
}
/* Registers `entry` in ctx.calls (0, or -1 with an exception set). */
int fp_register(PyObject *ctx, PyObject *entry);
/* Removes `entry` from ctx.calls, keeping any exception set. */
void fp_unregister(PyObject *ctx, PyObject *entry);
/* Holds what a copy checked until it ends (_ranges.hold: ctx.holds.append(None)): the list to
 * pass to fp_unhold (a new reference), or NULL with an exception set. */
PyObject *fp_hold(PyObject *ctx);
/* Ends a hold (removes one None from `holds`, keeping any exception set) and drops the list. */
void fp_unhold(PyObject *holds);
/* Whether STATE.ctx is still `ctx` (checked after registering). */
int fp_still(PyObject *ctx);
/* Calls the backend hook `name` of `backend`; a failure other than an OffloadError becomes one
 * (as_offload_error(exc, what)), as the generated functions do. New reference or NULL. */
PyObject *fp_hook(PyObject *backend, PyObject *name, PyObject *const *args, size_t nargs, PyObject *what);
/* The native entry points of a device (NULL: none). */
const offload_native_entry_points *fp_entry_points(PyObject *device);
/* A native word slot: 0 and *ok = 0 when the object has none. */
offload_native_word fp_word(PyObject *obj, Py_ssize_t off, int *ok);
/* Whether the allocation-map snapshot `snapshot` and HOT[slot] cover [start, end) (for `device`). */
int fp_hot_covers(int slot, PyObject *snapshot, uint64_t start, uint64_t end, PyObject *device);
/* A non-negative exact int below 2**64 into *out; 0 (no exception) otherwise. */
int fp_u64(PyObject *obj, uint64_t *out);

/* The timeline's recorder (_tracerec.c): offload._fastpath.Recorder, and one slice appended to
 * it (0, or -1 with an exception set). */
extern PyTypeObject fp_recorder_type;
int fp_rec_slice(PyObject *recorder, uint64_t track, uint32_t name, uint32_t cat, uint64_t begin, uint64_t end,
                 uint64_t flow_out, uint64_t flow_in, const uint64_t *values, uint32_t nvalues);
/* A new flow id of the recorder. */
uint64_t fp_rec_flow(PyObject *recorder);
/* Work on FIFO `queue` (its handle into *handle): the work record, whose `end` the queue's stamp
 * may write (it stays in place until drawn); NULL with an exception set. */
void *fp_rec_work(PyObject *recorder, Py_ssize_t queue, uint32_t name, uint32_t cat, uint64_t submit, uint64_t flow_out,
                  uint64_t flow_in, uint64_t flow_in2, const uint64_t *values, uint32_t nvalues, uint64_t *handle);
/* Where a work record's end (uint64, 0 until known) is: for a backend's stamp entry point. */
uint64_t *fp_rec_work_end(void *work);
/* The recorder's dicts and olLaunchKernel's iid, for the compiled launch. */
PyObject *fp_rec_kernels(PyObject *recorder);
PyObject *fp_rec_threads(PyObject *recorder);
PyObject *fp_rec_queue_ix(PyObject *recorder);
uint32_t fp_rec_launch_iid(PyObject *recorder);
/* A number no other recorder of this process had (never 0). */
uint64_t fp_rec_generation(PyObject *recorder);
/* Calls the recorder's on_full() once it holds `limit` records (the timeline then
 * writes a chunk); its errors are reported as unraisable, never raised. */
void fp_rec_maybe_full(PyObject *recorder);

/* The operations (_fastpath_ops.c): each returns a new reference, NULL or DEFER. */
PyObject *fp_call(Entry *self, PyObject *const *args, Py_ssize_t nargs);

#endif
