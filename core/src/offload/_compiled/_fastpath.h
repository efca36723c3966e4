/* _fastpath.h - what the C files of offload._compiled._fastpath share.
 *
 * offload._compiled._fastpath is the compiled common case of the per-call ol* functions (see
 * core/DESIGN.md, "The compiled path"). Each compiled function is an `Entry`: it either makes
 * the call exactly as the generated Python function (its `fallback`) would, or calls that
 * fallback with the same arguments. It never raises an error of its own making and decides
 * nothing of its own: it replays the verdicts the Python definitions published (_verdicts.c) and
 * defers every call no verdict covers.
 *
 * What it reads is declared in offload/_compiled/interface.py, versioned: the fields below
 * (FP_FIELDS, found by name in the classes `configure` is given, after an exact class test at
 * every use), the verdict stores, and configure's objects. A change of either side is a change of
 * FP_INTERFACE_VERSION and interface.VERSION together; configure refuses a mismatch.
 */
#ifndef OFFLOAD_FASTPATH_H
#define OFFLOAD_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../include/offload_native.h"

#define FP_INTERFACE_VERSION 2

/* The declared fields, per role (interface.FIELDS, in its order). */
#define FP_FIELDS(X)                                                                              \
  X(state, ctx) X(state, untraced) X(state, recorder)                                             \
  X(session, calls) X(session, allocations) X(session, holds)                                     \
  X(allocation_map, snapshot)                                                                     \
  X(handle, _ctx)                                                                                 \
  X(device, backend) X(device, native) X(device, entry_points) X(device, word)                    \
  X(queue, device) X(queue, native) X(queue, word)                                                \
  X(symbol, native) X(symbol, word)

/* The roles whose class configure is given (the state is an object: its own class). */
#define FP_TYPES(X) X(session) X(allocation_map) X(device) X(queue) X(symbol)

/* A declared field of an object whose exact class was tested: NULL when unset. */
#define FIELD(obj, role, name) (*(PyObject **)((char *)(obj) + FP.off.role##_##name))

typedef struct {
#define FP_OFF(role, name) Py_ssize_t role##_##name;
  FP_FIELDS(FP_OFF)
#undef FP_OFF
} fp_offsets;

typedef struct {
#define FP_TYPE(role) PyTypeObject *role##_t;
  FP_TYPES(FP_TYPE)
#undef FP_TYPE
  PyObject *state;            /* the runtime's state (role "state") */
  PyObject *hot;              /* interface.HOT: ranges found safe, a list of 4 */
  PyObject *offload_error;    /* OffloadError */
  PyObject *as_offload_error; /* as_offload_error(exc, what): a hook's other exception as one */
  /* interned names of the hooks called */
  PyObject *s_launch_kernel, *s_data_submit, *s_data_retrieve, *s_data_fill, *s_synchronize, *s_has_pending_work;
  PyObject *s_data_exchange;
  fp_offsets off;
} fp_config;

extern fp_config FP;
extern int fp_configured;

/* The compiled functions (the Entry objects' kinds). */
enum { FP_LAUNCH_KERNEL, FP_MEMCPY, FP_MEM_FILL, FP_SYNC_QUEUE, FP_QUERY_QUEUE, FP_KINDS };

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int kind;
  PyObject *fallback; /* the generated Python function */
  PyObject *name;     /* what the call registers in ctx.calls (its name; a launch: its kernel) */
  PyObject *dict;     /* __doc__, __wrapped__, ... */
  unsigned long long fast, deferred, native; /* calls made here / by the fallback / by an entry point */
} Entry;

/* The result of an operation: a new reference, NULL with an exception set, or DEFER. */
#define DEFER Py_NotImplemented

/* The session of an untraced, initialised library (borrowed), or NULL. */
PyObject *fp_session(void);
/* Whether `obj` is a live handle of exactly `type` in session `ctx`. */
static inline int fp_live(PyObject *obj, PyTypeObject *type, PyObject *ctx) {
  return Py_TYPE(obj) == type && FIELD(obj, handle, _ctx) == ctx;
}
/* The current snapshot of the session's allocation map (borrowed), or NULL. */
PyObject *fp_snapshot(PyObject *ctx);
/* Registers `entry` in ctx.calls (0, or -1 with an exception set). */
int fp_register(PyObject *ctx, PyObject *entry);
/* Removes `entry` from ctx.calls, keeping any exception set. */
void fp_unregister(PyObject *ctx, PyObject *entry);
/* Holds what a copy checked until it ends (ctx.holds.append(None), as the Python path's
 * ctx.hold()): the list to pass to fp_unhold (a new reference), or NULL with an exception set. */
PyObject *fp_hold(PyObject *ctx);
/* Ends a hold (removes one None from `holds`, keeping any exception set) and drops the list. */
void fp_unhold(PyObject *holds);
/* Whether the state's session is still `ctx` (checked after registering). */
int fp_still(PyObject *ctx);
/* Calls the backend hook `name` of `backend`; a failure other than an OffloadError becomes one
 * (as_offload_error(exc, what)), as the generated functions do. New reference or NULL. */
PyObject *fp_hook(PyObject *backend, PyObject *name, PyObject *const *args, size_t nargs, PyObject *what);
/* The native entry points of a device (NULL: none). */
const offload_native_entry_points *fp_entry_points(PyObject *device);
/* A handle's native word (the field `word` of its role): 0 and *ok = 0 when it has none. */
offload_native_word fp_word(PyObject *word, int *ok);
/* Whether HOT[slot], found in `snapshot`, covers [start, end) for `device`. */
int fp_hot_covers(int slot, PyObject *snapshot, uint64_t start, uint64_t end, PyObject *device);
/* A non-negative exact int below 2**64 into *out; 0 (no exception) otherwise. */
int fp_u64_slow(PyObject *obj, uint64_t *out);
static inline int fp_u64(PyObject *obj, uint64_t *out) {
  if (!PyLong_CheckExact(obj)) return 0;
#if PY_VERSION_HEX < 0x030C0000 && PYLONG_BITS_IN_DIGIT == 30
  /* (3.11's layout: the sign in the size, 30-bit digits, no leading zero digit; a conversion
   * call per argument was a tenth of a queued copy's time) */
  const digit *d = ((PyLongObject *)obj)->ob_digit;
  switch (Py_SIZE(obj)) {
  case 0: *out = 0; return 1;
  case 1: *out = d[0]; return 1;
  case 2: *out = (uint64_t)d[0] | (uint64_t)d[1] << 30; return 1;
  case 3:
    if (d[2] >> 4) return 0; /* 2**64 and beyond */
    *out = (uint64_t)d[0] | (uint64_t)d[1] << 30 | (uint64_t)d[2] << 60;
    return 1;
  default: return 0; /* negative, or 2**90 and beyond */
  }
#else
  return fp_u64_slow(obj, out);
#endif
}
/* Drops what fp_hot_covers and fp_entry_points keep (the session ended). */
void fp_forget_cached(void);

/* ------------------------------------------------------------------------------------ */
/* The verdict stores (_verdicts.c; interface.py says what each verdict states). Lookups return
 * a borrowed entry, valid while the GIL is held; NULL when no verdict covers the call. */

enum { ROUTE_MEMMOVE, ROUTE_SUBMIT, ROUTE_RETRIEVE, ROUTE_EXCHANGE };

/* The objects a verdict holds, strong references (NULL where unused): its key first. */
typedef struct {
  PyObject *ref[4];
} fp_refs;

typedef struct {
  fp_refs refs; /* the key: snapshot, dst_device, src_device, queue (Py_None: synchronous) */
  int kind, dst_slot, src_slot;
  uint64_t limit; /* sizes below it */
} fp_route;

typedef struct {
  fp_refs refs; /* the key: snapshot, queue; then the device whose data_fill serves it */
  uint64_t lo, hi;
} fp_fill;
#define FP_FILL_DEVICE(fill) ((fill)->refs.ref[2])

typedef struct {
  fp_refs refs;      /* the key: kernel, queue, device, launch size object */
  int none_ok;       /* accepted without arguments */
  uint64_t min_args; /* ... and with a buffer of at least this many bytes */
  int native;        /* the device's launch entry point may take it */
  offload_launch_dims dims;
} fp_launch;

const fp_route *fp_find_route(PyObject *snapshot, PyObject *dst_device, PyObject *src_device, PyObject *queue);
const fp_fill *fp_find_fill(PyObject *snapshot, PyObject *queue, uint64_t start, uint64_t end);
const fp_launch *fp_find_launch(PyObject *kernel, PyObject *queue, PyObject *device, PyObject *launch);
extern PyMethodDef fp_verdict_methods[]; /* publish_route, publish_fill, publish_launch, forget */
extern PyMethodDef fp_config_methods[];  /* configure, fields (_config.c) */

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
