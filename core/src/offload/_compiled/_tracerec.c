/* _tracerec.c - offload._compiled._fastpath.Recorder: the timeline's slices as fixed-size records, encoded
 * as Perfetto TrackEvent packets only when a chunk is taken (see _trace/perfetto.py, whose PyRecorder is
 * the pure-Python twin: same methods, byte-identical output).
 *
 * A record is 128 bytes: track uuid, begin and end (perf_counter ns), flow out and in, name and
 * category iids, and up to RECORD_VALUES (annotation name iid, unsigned value) pairs. Recording
 * appends one under the GIL (no lock; a record is complete when the call returns); take() encodes
 * them all (relative to the origin, on the sequence's clock 64) and empties the recorder.
 */
#include "_tracerec.h"

#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* --- encoding ------------------------------------------------------------------------------ */

typedef struct {
  unsigned char *p;
} out_t;

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v > 0x7F) {
    v >>= 7;
    ++n;
  }
  return n;
}

static void put_varint(out_t *o, uint64_t v) {
  while (v > 0x7F) {
    *o->p++ = (unsigned char)((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *o->p++ = (unsigned char)v;
}

static void put_vfield(out_t *o, unsigned field, uint64_t v) {
  put_varint(o, (uint64_t)field << 3);
  put_varint(o, v);
}

static size_t vfield_size(unsigned field, uint64_t v) { return varint_size((uint64_t)field << 3) + varint_size(v); }

static uint64_t rel(const Recorder *r, uint64_t t) { return t > r->origin ? t - r->origin : 0; }

/* The TrackEvent of a begin (its size first, so the length prefixes can be written). */
static size_t begin_event_size(const rec_t *x) {
  size_t n = vfield_size(9, 1) + vfield_size(11, x->track) + vfield_size(3, x->cat);
  if (x->name) n += vfield_size(10, x->name);
  for (uint32_t i = 0; i + 1 < x->nvalues; i += 2) {
    size_t body = vfield_size(1, x->values[i]) + vfield_size(3, x->values[i + 1]);
    n += 1 + varint_size(body) + body;
  }
  if (x->flow_out) n += vfield_size(47, x->flow_out);
  if (x->flow_in) n += vfield_size(48, x->flow_in);
  if (x->flow_in2) n += vfield_size(48, x->flow_in2);
  return n;
}


/* A TracePacket's head (field 1): its size, timestamp (8) and sequence (10), then the head of its
   TrackEvent (11) of ``ev`` bytes, which the caller writes next. */
static void put_event_head(out_t *o, uint64_t ts, uint64_t seq, size_t ev) {
  size_t body = vfield_size(8, ts) + vfield_size(10, seq) + 1 + varint_size(ev) + ev;
  *o->p++ = 0x0A;
  put_varint(o, body);
  put_vfield(o, 8, ts);
  put_vfield(o, 10, seq);
  *o->p++ = (11 << 3) | 2;
  put_varint(o, ev);
}

static void encode(const Recorder *r, const rec_t *x, out_t *o) {
  uint64_t b = rel(r, x->begin), e = rel(r, x->end > x->begin ? x->end : x->begin);
  put_event_head(o, b, r->seq, begin_event_size(x));
  put_vfield(o, 9, 1);
  put_vfield(o, 11, x->track);
  if (x->name) put_vfield(o, 10, x->name);
  put_vfield(o, 3, x->cat);
  for (uint32_t i = 0; i + 1 < x->nvalues; i += 2) {
    size_t ab = vfield_size(1, x->values[i]) + vfield_size(3, x->values[i + 1]);
    *o->p++ = (4 << 3) | 2;
    put_varint(o, ab);
    put_vfield(o, 1, x->values[i]);
    put_vfield(o, 3, x->values[i + 1]);
  }
  if (x->flow_out) put_vfield(o, 47, x->flow_out);
  if (x->flow_in) put_vfield(o, 48, x->flow_in);
  if (x->flow_in2) put_vfield(o, 48, x->flow_in2);
  put_event_head(o, e, r->seq, vfield_size(9, 2) + vfield_size(11, x->track));
  put_vfield(o, 9, 2);
  put_vfield(o, 11, x->track);
}


/* --- recording ----------------------------------------------------------------------------- */

int fp_rec_slice(PyObject *recorder, uint64_t track, uint32_t name, uint32_t cat, uint64_t begin, uint64_t end,
                 uint64_t flow_out, uint64_t flow_in, const uint64_t *values, uint32_t nvalues) {
  Recorder *r = (Recorder *)recorder;
  if (r->count == r->cap) {
    Py_ssize_t cap = r->cap ? 2 * r->cap : 1024;
    rec_t *grown = PyMem_Realloc(r->recs, (size_t)cap * sizeof(rec_t));
    if (grown == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    r->recs = grown;
    r->cap = cap;
  }
  rec_t *x = &r->recs[r->count++];
  x->track = track;
  x->begin = begin;
  x->end = end;
  x->flow_out = flow_out;
  x->flow_in = flow_in;
  x->flow_in2 = 0;
  x->name = name;
  x->cat = cat;
  x->nvalues = nvalues;
  x->pad = 0;
  if (nvalues) memcpy(x->values, values, nvalues * sizeof(uint64_t));
  return 0;
}


int fp_rec_u64(PyObject *o, uint64_t *out) {
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "Recorder.slice takes ints, got %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  *out = (uint64_t)PyLong_AsUnsignedLongLongMask(o);
  return PyErr_Occurred() ? -1 : 0;
}

int fp_rec_args(const char *method, Py_ssize_t least, PyObject *const *args, Py_ssize_t nargs, uint64_t *v) {
  if (nargs < least || nargs > RECORD_ARGS) {
    PyErr_Format(PyExc_TypeError, "Recorder.%s takes %zd to %d arguments (%zd given)", method, least, RECORD_ARGS, nargs);
    return -1;
  }
  memset(v, 0, RECORD_ARGS * sizeof *v);
  for (Py_ssize_t i = 0; i < nargs; ++i)
    if (fp_rec_u64(args[i], &v[i]) < 0) return -1;
  return nargs > 7 ? (int)(nargs - 7) : 0;
}

static PyObject *rec_slice(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  uint64_t v[RECORD_ARGS];
  int nvalues = fp_rec_args("slice", 5, args, nargs, v);
  if (nvalues < 0) return NULL;
  if (fp_rec_slice(self, v[0], (uint32_t)v[1], (uint32_t)v[2], v[3], v[4], v[5], v[6], v + 7, (uint32_t)nvalues) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *rec_take(PyObject *self, PyObject *unused) {
  (void)unused;
  Recorder *r = (Recorder *)self;
  if (fp_rec_place(r) < 0) return NULL;
  /* one pass: room for the largest record (two packets of at most 8 varints and RECORD_VALUES
   * annotations, each varint at most 10 bytes), trimmed after */
  size_t bound = (size_t)r->count * (2 * 3 * 11 + 2 * 8 * 11 + RECORD_VALUES * 3 * 11 + 64);
  PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
  if (bytes == NULL) return NULL;
  out_t o = {(unsigned char *)PyBytes_AS_STRING(bytes)};
  for (Py_ssize_t i = 0; i < r->count; ++i) encode(r, &r->recs[i], &o);
  r->count = 0;
  if (_PyBytes_Resize(&bytes, (Py_ssize_t)(o.p - (unsigned char *)PyBytes_AS_STRING(bytes))) < 0) return NULL;
  if (r->cap > 8192) { /* a burst grew it: give the memory back */
    PyMem_Free(r->recs);
    r->recs = NULL;
    r->cap = 0;
  }
  return bytes;
}

/* write_to(fd): the slices encoded and written to the file descriptor in blocks of a reused
 * buffer (no bytes object of the chunk's size, whose fresh pages cost more than the encoding),
 * the GIL released while writing; the bytes written. OSError on a failed write. */
#define WRITE_BLOCK (256 * 1024)
static unsigned char *write_buffer;

static int write_all(int fd, const unsigned char *p, size_t n) {
  int failed = 0;
  Py_BEGIN_ALLOW_THREADS while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      failed = errno;
      break;
    }
    p += w;
    n -= (size_t)w;
  }
  Py_END_ALLOW_THREADS if (failed) {
    errno = failed;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
  }
  return 0;
}

static PyObject *rec_write_to(PyObject *self, PyObject *arg) {
  Recorder *r = (Recorder *)self;
  int fd = PyObject_AsFileDescriptor(arg);
  if (fd < 0) return NULL;
  if (fp_rec_place(r) < 0) return NULL;
  const size_t record_max = 2 * 3 * 11 + 2 * 8 * 11 + RECORD_VALUES * 3 * 11 + 64;
  if (write_buffer == NULL && (write_buffer = PyMem_RawMalloc(WRITE_BLOCK)) == NULL) return PyErr_NoMemory();
  out_t o = {write_buffer};
  unsigned long long total = 0;
  for (Py_ssize_t i = 0; i < r->count; ++i) {
    if ((size_t)(o.p - write_buffer) + record_max > WRITE_BLOCK) {
      size_t n = (size_t)(o.p - write_buffer);
      if (write_all(fd, write_buffer, n) < 0) return NULL; /* (the records are kept: a later write retries) */
      total += n;
      o.p = write_buffer;
    }
    encode(r, &r->recs[i], &o);
  }
  size_t n = (size_t)(o.p - write_buffer);
  if (n > 0 && write_all(fd, write_buffer, n) < 0) return NULL;
  total += n;
  r->count = 0;
  if (r->cap > 65536) {
    PyMem_Free(r->recs);
    r->recs = NULL;
    r->cap = 0;
  }
  return PyLong_FromUnsignedLongLong(total);
}

static Py_ssize_t rec_len(PyObject *self) { return ((Recorder *)self)->count; }

static int rec_init(PyObject *self, PyObject *args, PyObject *kwds) {
  Recorder *r = (Recorder *)self;
  unsigned long long seq, origin;
  static char *names[] = {"seq", "origin_ns", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "KK", names, &seq, &origin)) return -1;
  static uint64_t generations;
  r->seq = seq;
  r->origin = origin;
  r->generation = ++generations;
  if (r->kernels == NULL && (r->kernels = PyDict_New()) == NULL) return -1;
  if (r->threads == NULL && (r->threads = PyDict_New()) == NULL) return -1;
  if (r->queue_ix == NULL && (r->queue_ix = PyDict_New()) == NULL) return -1;
  return 0;
}

static void rec_dealloc(PyObject *self) {
  Recorder *r = (Recorder *)self;
  PyMem_Free(r->recs);
  fp_rec_free_fifos(r);
  Py_XDECREF(r->kernels);
  Py_XDECREF(r->threads);
  Py_XDECREF(r->queue_ix);
  Py_XDECREF(r->on_full);
  Py_TYPE(self)->tp_free(self);
}

static PyMemberDef rec_members[] = {
    {"launch_iid", T_ULONGLONG, offsetof(Recorder, launch_iid), 0, "olLaunchKernel's name iid (for the compiled path)"},
    {"kernels", T_OBJECT_EX, offsetof(Recorder, kernels), READONLY, "kernel -> name iid (for the compiled path)"},
    {"threads", T_OBJECT_EX, offsetof(Recorder, threads), READONLY, "native thread id -> track uuid (for the compiled path)"},
    {"queue_ix", T_OBJECT_EX, offsetof(Recorder, queue_ix), READONLY, "queue -> FIFO index (for the compiled path)"},
    {"base", T_ULONGLONG, offsetof(Recorder, seq), READONLY, "the sequence id"},
    {"limit", T_ULONGLONG, offsetof(Recorder, limit), 0, "records (or waiting work) at which the compiled path calls on_full"},
    {"on_full", T_OBJECT, offsetof(Recorder, on_full), 0, "called by the compiled path at `limit` (the timeline writes a chunk)"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef rec_methods[] = {
    {"slice", (PyCFunction)(void (*)(void))rec_slice, METH_FASTCALL,
     "slice(track, name_iid, cat_iid, begin_ns, end_ns, flow_out=0, flow_in=0, *values): record one slice"},
    {"flow", fp_rec_flow_method, METH_NOARGS, "flow() -> a new flow id"},
    {"queue", fp_rec_queue_method, METH_O, "queue(track) -> the index of a new FIFO drawing on track"},
    {"work", (PyCFunction)(void (*)(void))fp_rec_work_method, METH_FASTCALL,
     "work(queue, name_iid, cat_iid, submit_ns, flow_out=0, flow_in=0, flow_in2=0, *values) -> handle"},
    {"complete", (PyCFunction)(void (*)(void))fp_rec_complete_method, METH_FASTCALL, "complete(handle, end_ns): the work ended then"},
    {"stamps", fp_rec_stamps_method, METH_O, "stamps(entry_points) -> bool: whether the backend's queues stamp work (offload_native.h)"},
    {"stamp", (PyCFunction)(void (*)(void))fp_rec_stamp_method, METH_FASTCALL,
     "stamp(handle, entry_points, device_word, queue_word) -> bool: the queue stamps the open work's end (offload_native.h)"},
    {"settle", fp_rec_settle_method, METH_NOARGS, "settle() -> [(handle, end_ns)]: completed work taken off the FIFOs, not drawn"},
    {"unfinished", fp_rec_unfinished_method, METH_NOARGS, "unfinished() -> work not completed yet"},
    {"write_to", rec_write_to, METH_O, "write_to(fd) -> int: take(), written to a file descriptor without building the bytes"},
    {"take", rec_take, METH_NOARGS, "take() -> bytes: the recorded slices as Perfetto packets; the recorder is then empty"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods rec_as_sequence = {.sq_length = rec_len};

PyTypeObject fp_recorder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload._compiled._fastpath.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Recorder(seq, origin_ns): the timeline's slices as fixed records, encoded when taken (_perfetto.PyRecorder's twin)",
    .tp_new = PyType_GenericNew,
    .tp_init = rec_init,
    .tp_dealloc = rec_dealloc,
    .tp_methods = rec_methods,
    .tp_members = rec_members,
    .tp_as_sequence = &rec_as_sequence,
};
