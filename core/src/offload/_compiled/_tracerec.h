/* _tracerec.h - what the timeline recorder's two files share: _tracerec.c (the Recorder type,
 * its slice records and their encoding as Perfetto packets) and _tracefifo.c (device work on
 * per-queue FIFOs, drawn as slices once complete). */
#ifndef OFFLOAD_TRACEREC_H
#define OFFLOAD_TRACEREC_H

#include "_fastpath.h"

#include <stdatomic.h>

#define RECORD_VALUES 4

typedef struct {
  uint64_t track, begin, end, flow_out, flow_in, flow_in2;
  uint32_t name, cat, nvalues, pad;
  uint64_t values[2 * RECORD_VALUES];
} rec_t;

/* A piece of device work waiting on its queue's FIFO until its end is known (written by
 * complete(), or by the queue itself through a backend's stamp entry point: hence atomic, and
 * never moved while it waits: FIFOs grow by blocks). */
typedef struct {
  uint64_t submit;
  _Atomic uint64_t end;
  uint64_t flow_out, flow_in, flow_in2;
  uint32_t name, cat, nvalues, cancelled; /* cancelled: its launch deferred, never drawn */
  uint64_t values[2 * RECORD_VALUES];
} work_t;

#define BLOCK 1024
#define SEQ_BITS 40
#define RECORD_SLOTS 4096 /* event records remembered by flow (direct-mapped): a wait ends no earlier than its record */

typedef struct {
  uint64_t track, last_end;
  work_t **blocks;
  Py_ssize_t nblocks, capblocks;
  uint64_t first, head, tail; /* seq of blocks[0][0], of the first waiting work, of the next one */
  work_t *spare;              /* a drawn block kept for the next one (no fresh pages per block) */
} fifo_t;

typedef struct {
  PyObject_HEAD
  uint64_t seq, origin, flows, generation;
  rec_t *recs;
  Py_ssize_t count, cap;
  fifo_t *fifos;
  Py_ssize_t nfifos, capfifos;
  unsigned long long launch_iid, limit;
  PyObject *kernels, *threads, *queue_ix; /* dicts the Python side fills for the compiled path */
  PyObject *on_full;                       /* called (by the compiled path) at `limit` records */
  uint64_t *record_flow, *record_end;      /* RECORD_SLOTS each (lazily): an event record's flow, its drawn end (0: not yet) */
} Recorder;

/* Draws each queue's completed prefix as slices (0, or -1 with an exception set). */
int fp_rec_place(Recorder *r);
/* Frees the FIFOs (those with work a queue may still stamp are left alone). */
void fp_rec_free_fifos(Recorder *r);
/* An int argument as uint64 (a negative one modulo 2**64); -1 with TypeError otherwise. */
int fp_rec_u64(PyObject *o, uint64_t *out);
/* The most arguments of Recorder.slice and Recorder.work: 7 fields, then name/value pairs. */
#define RECORD_ARGS (7 + 2 * RECORD_VALUES)
/* The ints of Recorder.<method>(least..RECORD_ARGS arguments) into v[RECORD_ARGS] (zero-filled):
   how many name/value words follow the 7 fields, or -1 with TypeError. */
int fp_rec_args(const char *method, Py_ssize_t least, PyObject *const *args, Py_ssize_t nargs, uint64_t *v);
/* The Recorder's FIFO methods (flow, queue, work, complete, stamps, stamp, settle, unfinished). */
PyObject *fp_rec_flow_method(PyObject *self, PyObject *unused);
PyObject *fp_rec_queue_method(PyObject *self, PyObject *arg);
PyObject *fp_rec_work_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fp_rec_complete_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fp_rec_unfinished_method(PyObject *self, PyObject *unused);
PyObject *fp_rec_stamp_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fp_rec_stamps_method(PyObject *self, PyObject *capsule);
PyObject *fp_rec_settle_method(PyObject *self, PyObject *unused);

/* The compiled launch's recording (_tracelaunch.c). */
typedef struct {
  PyObject *rec; /* the session's Recorder (NULL: the session is not traced) */
  uint64_t thread_track, begin;
  uint32_t kernel_iid;
  Py_ssize_t queue_ix;
} fp_launch_rec;
/* CLOCK_MONOTONIC in ns: time.perf_counter_ns's clock on Linux. */
uint64_t fp_now_ns(void);
/* Whether the launch can be recorded here: the backend stamps, and the recorder knows its
 * thread, queue and kernel (the traced Python path registers them the first time); 1 or 0. */
int fp_launch_recordable(fp_launch_rec *lr, PyObject *queue, PyObject *kernel, const offload_native_entry_points *ep);
/* Makes the launch natively (launch_kernel_stamped where the backend has it, else launch_kernel
 * and stamp) and records its API slice and its work: 1, or 0 when deferred (nothing done). */
int fp_launch_traced(fp_launch_rec *lr, const offload_native_entry_points *ep, offload_native_word dw, offload_native_word qw,
                     offload_native_word kw, const void *data, size_t size, const offload_launch_dims *dims);
/* Withdraws work whose launch deferred (it is never drawn; it may not be the FIFO's last). */
void fp_rec_work_cancel(void *work);

#endif
