/* _tracefifo.c - the timeline recorder's device work: one FIFO per queue track, in blocks that
 * never move (a backend's stamp writes a work's end from the queue's thread, without the GIL),
 * drawn in enqueue order once complete, a span starting when its call began and the queue's
 * previous span ended (so a queue's spans never overlap). */
#include "_tracerec.h"

#include <stddef.h>
#include <string.h>


uint64_t fp_rec_flow(PyObject *recorder) {
  Recorder *r = (Recorder *)recorder;
  r->flows++;
  return r->seq << 20 | (r->flows & ((1u << 20) - 1));
}

static work_t *fifo_at(fifo_t *f, uint64_t seq) {
  uint64_t i = seq - f->first;
  return &f->blocks[i / BLOCK][i % BLOCK];
}

void *fp_rec_work(PyObject *recorder, Py_ssize_t queue, uint32_t name, uint32_t cat, uint64_t submit, uint64_t flow_out,
                    uint64_t flow_in, uint64_t flow_in2, const uint64_t *values, uint32_t nvalues, uint64_t *handle) {
  Recorder *r = (Recorder *)recorder;
  if (queue < 0 || queue >= r->nfifos) {
    PyErr_SetString(PyExc_IndexError, "Recorder.work: no such queue");
    return NULL;
  }
  fifo_t *f = &r->fifos[queue];
  uint64_t i = f->tail - f->first;
  if (i / BLOCK >= (uint64_t)f->nblocks) {
    if (f->nblocks == f->capblocks) {
      Py_ssize_t cap = f->capblocks ? 2 * f->capblocks : 4;
      work_t **grown = PyMem_Realloc(f->blocks, (size_t)cap * sizeof(work_t *));
      if (grown == NULL) return PyErr_NoMemory();
      f->blocks = grown;
      f->capblocks = cap;
    }
    work_t *block = f->spare != NULL ? f->spare : PyMem_Malloc(BLOCK * sizeof(work_t));
    if (block == NULL) return PyErr_NoMemory();
    f->spare = NULL;
    f->blocks[f->nblocks++] = block;
  }
  work_t *w = fifo_at(f, f->tail);
  w->submit = submit;
  atomic_store_explicit(&w->end, 0, memory_order_relaxed);
  w->flow_out = flow_out;
  w->flow_in = flow_in;
  w->flow_in2 = flow_in2;
  w->name = name;
  w->cat = cat;
  w->nvalues = nvalues;
  w->cancelled = 0;
  if (nvalues) memcpy(w->values, values, nvalues * sizeof(uint64_t));
  if (flow_out) { /* an event record: its waits on other queues end no earlier than it */
    if (r->record_flow == NULL) {
      r->record_flow = PyMem_Calloc(2 * RECORD_SLOTS, sizeof(uint64_t));
      if (r->record_flow == NULL) return PyErr_NoMemory();
      r->record_end = r->record_flow + RECORD_SLOTS;
    }
    r->record_flow[flow_out % RECORD_SLOTS] = flow_out;
    r->record_end[flow_out % RECORD_SLOTS] = 0;
  }
  *handle = (uint64_t)(queue + 1) << SEQ_BITS | f->tail;
  f->tail++;
  return w;
}

uint64_t *fp_rec_work_end(void *work) { return (uint64_t *)&((work_t *)work)->end; }

void fp_rec_work_cancel(void *work) {
  work_t *w = work;
  w->cancelled = 1;
  atomic_store_explicit(&w->end, 1, memory_order_release);
}
PyObject *fp_rec_kernels(PyObject *recorder) { return ((Recorder *)recorder)->kernels; }
PyObject *fp_rec_threads(PyObject *recorder) { return ((Recorder *)recorder)->threads; }
PyObject *fp_rec_queue_ix(PyObject *recorder) { return ((Recorder *)recorder)->queue_ix; }
uint64_t fp_rec_generation(PyObject *recorder) { return ((Recorder *)recorder)->generation; }

uint32_t fp_rec_launch_iid(PyObject *recorder) { return (uint32_t)((Recorder *)recorder)->launch_iid; }

void fp_rec_maybe_full(PyObject *recorder) {
  Recorder *r = (Recorder *)recorder;
  /* (work waiting on a FIFO is bounded by its queue's backpressure: only records count) */
  if (r->on_full == NULL || r->on_full == Py_None || r->limit == 0 || (uint64_t)r->count < r->limit) return;
  PyObject *result = PyObject_CallNoArgs(r->on_full);
  if (result == NULL) PyErr_WriteUnraisable(r->on_full);
  Py_XDECREF(result);
}

/* Draws each queue's completed prefix (in enqueue order, never overlapping) as slices; a wait
 * on an event recorded on another queue waits until that record is drawn and ends no earlier
 * (their stamps come from two queues' threads), so passes repeat while any queue moved on. */
/* The FIFO's head entry when it has completed (its end stamp in *end), else NULL. */
static work_t *fifo_done(fifo_t *f, uint64_t *end) {
  if (f->head == f->tail) return NULL;
  work_t *w = fifo_at(f, f->head);
  *end = atomic_load_explicit(&w->end, memory_order_acquire);
  return *end != 0 ? w : NULL;
}

/* Takes the FIFO's head entry off (it is drawn or settled); a block taken off whole is kept as
 * the spare, or freed: nothing refers to it any more. */
static void fifo_pop(fifo_t *f) {
  f->head++;
  if (f->head - f->first == BLOCK) {
    if (f->spare == NULL) f->spare = f->blocks[0];
    else PyMem_Free(f->blocks[0]);
    memmove(f->blocks, f->blocks + 1, (size_t)(f->nblocks - 1) * sizeof(work_t *));
    f->nblocks--;
    f->first += BLOCK;
  }
}

int fp_rec_place(Recorder *r) {
  for (int moved = 1; moved;) {
    moved = 0;
    for (Py_ssize_t q = 0; q < r->nfifos; ++q) {
      fifo_t *f = &r->fifos[q];
      uint64_t end;
      for (work_t *w; (w = fifo_done(f, &end)) != NULL; fifo_pop(f), moved = 1) {
        if (w->cancelled) continue;
        if (w->flow_in2 && r->record_flow != NULL && r->record_flow[w->flow_in2 % RECORD_SLOTS] == w->flow_in2) {
          uint64_t record = r->record_end[w->flow_in2 % RECORD_SLOTS];
          if (record == 0) break; /* its record is not drawn yet */
          if (end < record) end = record;
        }
        uint64_t begin = w->submit > f->last_end ? w->submit : f->last_end;
        if (end < begin) end = begin;
        f->last_end = end;
        if (fp_rec_slice((PyObject *)r, f->track, w->name, w->cat, begin, end, w->flow_out, w->flow_in, w->values, w->nvalues) < 0)
          return -1;
        r->recs[r->count - 1].flow_in2 = w->flow_in2;
        if (w->flow_out && r->record_flow != NULL && r->record_flow[w->flow_out % RECORD_SLOTS] == w->flow_out)
          r->record_end[w->flow_out % RECORD_SLOTS] = end;
      }
    }
  }
  return 0;
}

PyObject *fp_rec_flow_method(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromUnsignedLongLong(fp_rec_flow(self));
}

PyObject *fp_rec_queue_method(PyObject *self, PyObject *arg) {
  Recorder *r = (Recorder *)self;
  uint64_t track = (uint64_t)PyLong_AsUnsignedLongLongMask(arg);
  if (PyErr_Occurred()) return NULL;
  if (r->nfifos == r->capfifos) {
    Py_ssize_t cap = r->capfifos ? 2 * r->capfifos : 8;
    fifo_t *grown = PyMem_Realloc(r->fifos, (size_t)cap * sizeof(fifo_t));
    if (grown == NULL) return PyErr_NoMemory();
    r->fifos = grown;
    r->capfifos = cap;
  }
  fifo_t *f = &r->fifos[r->nfifos];
  memset(f, 0, sizeof *f);
  f->track = track;
  return PyLong_FromSsize_t(r->nfifos++);
}


PyObject *fp_rec_work_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  uint64_t v[RECORD_ARGS];
  int nvalues = fp_rec_args("work", 4, args, nargs, v);
  if (nvalues < 0) return NULL;
  uint64_t handle;
  if (fp_rec_work(self, (Py_ssize_t)v[0], (uint32_t)v[1], (uint32_t)v[2], v[3], v[4], v[5], v[6], v + 7, (uint32_t)nvalues, &handle) == NULL)
    return NULL;
  return PyLong_FromUnsignedLongLong(handle);
}

PyObject *fp_rec_complete_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  Recorder *r = (Recorder *)self;
  uint64_t handle, end;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "Recorder.complete takes 2 arguments (handle, end_ns)");
    return NULL;
  }
  if (fp_rec_u64(args[0], &handle) < 0 || fp_rec_u64(args[1], &end) < 0) return NULL;
  Py_ssize_t q = (Py_ssize_t)(handle >> SEQ_BITS) - 1;
  uint64_t seq = handle & (((uint64_t)1 << SEQ_BITS) - 1);
  if (q >= 0 && q < r->nfifos) {
    fifo_t *f = &r->fifos[q];
    if (seq >= f->head && seq < f->tail) {
      work_t *w = fifo_at(f, seq);
      uint64_t none = 0;
      atomic_compare_exchange_strong(&w->end, &none, end ? end : 1);
    }
  }
  Py_RETURN_NONE;
}

static const offload_native_entry_points *stamping(PyObject *capsule) {
  const offload_native_entry_points *ep = PyCapsule_GetPointer(capsule, OFFLOAD_NATIVE_CAPSULE_NAME);
  if (ep == NULL) return NULL;
  if (ep->abi_version != OFFLOAD_NATIVE_ABI_VERSION || ep->struct_size < offsetof(offload_native_entry_points, stamp) + sizeof(void *) ||
      ep->stamp == NULL)
    return NULL;
  return ep;
}

/* stamps(entry_points) -> bool: whether the backend's queues can stamp work (a stamp entry point). */
PyObject *fp_rec_stamps_method(PyObject *self, PyObject *capsule) {
  (void)self;
  const offload_native_entry_points *ep = stamping(capsule);
  if (ep == NULL && PyErr_Occurred()) return NULL;
  return PyBool_FromLong(ep != NULL);
}

/* stamp(handle, entry_points, device_word, queue_word) -> bool: the queue stamps the work of
 * handle (still open) when it reaches it, through the backend's stamp entry point; False (nothing
 * done) where the capsule has none or the backend deferred. */
PyObject *fp_rec_stamp_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  Recorder *r = (Recorder *)self;
  uint64_t handle, dw, qw;
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "Recorder.stamp takes 4 arguments (handle, entry_points, device_word, queue_word)");
    return NULL;
  }
  if (fp_rec_u64(args[0], &handle) < 0 || fp_rec_u64(args[2], &dw) < 0 || fp_rec_u64(args[3], &qw) < 0) return NULL;
  const offload_native_entry_points *ep = stamping(args[1]);
  if (ep == NULL && PyErr_Occurred()) return NULL;
  if (ep == NULL || qw == 0) Py_RETURN_FALSE;
  Py_ssize_t q = (Py_ssize_t)(handle >> SEQ_BITS) - 1;
  uint64_t seq = handle & (((uint64_t)1 << SEQ_BITS) - 1);
  if (q < 0 || q >= r->nfifos || seq < r->fifos[q].head || seq >= r->fifos[q].tail) Py_RETURN_FALSE;
  work_t *w = fifo_at(&r->fifos[q], seq);
  if (atomic_load_explicit(&w->end, memory_order_acquire) != 0) Py_RETURN_FALSE;
  offload_native_result done;
  Py_BEGIN_ALLOW_THREADS done = ep->stamp((offload_native_word)dw, (offload_native_word)qw, (uint64_t *)&w->end);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(done == OFFLOAD_NATIVE_DONE);
}

/* settle() -> [(handle, end_ns)]: each queue's completed prefix taken off its FIFO without
 * drawing it (the JSON timeline reads its stamped work's ends so; withdrawn work is left out). */
PyObject *fp_rec_settle_method(PyObject *self, PyObject *unused) {
  (void)unused;
  Recorder *r = (Recorder *)self;
  PyObject *out = PyList_New(0);
  if (out == NULL) return NULL;
  for (Py_ssize_t q = 0; q < r->nfifos; ++q) {
    fifo_t *f = &r->fifos[q];
    uint64_t end;
    for (work_t *w; (w = fifo_done(f, &end)) != NULL; fifo_pop(f)) {
      if (!w->cancelled) {
        PyObject *item = Py_BuildValue("(KK)", (unsigned long long)((uint64_t)(q + 1) << SEQ_BITS | f->head), (unsigned long long)end);
        if (item == NULL || PyList_Append(out, item) < 0) {
          Py_XDECREF(item);
          Py_DECREF(out);
          return NULL;
        }
        Py_DECREF(item);
      }
    }
  }
  return out;
}

PyObject *fp_rec_unfinished_method(PyObject *self, PyObject *unused) {
  (void)unused;
  Recorder *r = (Recorder *)self;
  uint64_t n = 0;
  for (Py_ssize_t q = 0; q < r->nfifos; ++q) n += r->fifos[q].tail - r->fifos[q].head;
  return PyLong_FromUnsignedLongLong(n);
}

void fp_rec_free_fifos(Recorder *r) {
  for (Py_ssize_t q = 0; q < r->nfifos; ++q) {
    fifo_t *f = &r->fifos[q];
    if (f->head != f->tail) continue; /* work a queue may still stamp: its blocks are left alone */
    for (Py_ssize_t b = 0; b < f->nblocks; ++b) PyMem_Free(f->blocks[b]);
    PyMem_Free(f->blocks);
    PyMem_Free(f->spare);
  }
  PyMem_Free(r->fifos);
  PyMem_Free(r->record_flow);
}

