/* _tracerec.c - offload._fastpath.Recorder: the timeline's slices as fixed-size records, encoded
 * as Perfetto TrackEvent packets only when a chunk is taken (see _perfetto.py, whose PyRecorder is
 * the pure-Python twin: same methods, byte-identical output).
 *
 * A record is 128 bytes: track uuid, begin and end (perf_counter ns), flow out and in, name and
 * category iids, and up to RECORD_VALUES (annotation name iid, unsigned value) pairs. Recording
 * appends one under the GIL (no lock; a record is complete when the call returns); take() encodes
 * them all (relative to the origin, on the sequence's clock 64) and empties the recorder.
 */
#include "_fastpath.h"

#include <string.h>

#define RECORD_VALUES 4

typedef struct {
  uint64_t track, begin, end, flow_out, flow_in;
  uint32_t name, cat, nvalues, pad;
  uint64_t values[2 * RECORD_VALUES];
} rec_t;

typedef struct {
  PyObject_HEAD
  uint64_t seq, origin;
  rec_t *recs;
  Py_ssize_t count, cap;
} Recorder;

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
  return n;
}

static size_t packet_size(size_t body) { return 1 + varint_size(body) + body; }

static void encode(const Recorder *r, const rec_t *x, out_t *o) {
  uint64_t b = rel(r, x->begin), e = rel(r, x->end > x->begin ? x->end : x->begin);
  size_t ev = begin_event_size(x);
  size_t body = vfield_size(8, b) + vfield_size(10, r->seq) + 1 + varint_size(ev) + ev;
  *o->p++ = 0x0A;
  put_varint(o, body);
  put_vfield(o, 8, b);
  put_vfield(o, 10, r->seq);
  *o->p++ = (11 << 3) | 2;
  put_varint(o, ev);
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
  size_t ev2 = vfield_size(9, 2) + vfield_size(11, x->track);
  size_t body2 = vfield_size(8, e) + vfield_size(10, r->seq) + 1 + varint_size(ev2) + ev2;
  *o->p++ = 0x0A;
  put_varint(o, body2);
  put_vfield(o, 8, e);
  put_vfield(o, 10, r->seq);
  *o->p++ = (11 << 3) | 2;
  put_varint(o, ev2);
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
  x->name = name;
  x->cat = cat;
  x->nvalues = nvalues;
  x->pad = 0;
  if (nvalues) memcpy(x->values, values, nvalues * sizeof(uint64_t));
  return 0;
}

static int u64_arg(PyObject *o, uint64_t *out) {
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "Recorder.slice takes ints, got %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  *out = (uint64_t)PyLong_AsUnsignedLongLongMask(o);
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject *rec_slice(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 5 || nargs > 7 + 2 * RECORD_VALUES) {
    PyErr_Format(PyExc_TypeError, "Recorder.slice takes 5 to %d arguments (%zd given)", 7 + 2 * RECORD_VALUES, nargs);
    return NULL;
  }
  uint64_t v[7 + 2 * RECORD_VALUES] = {0};
  for (Py_ssize_t i = 0; i < nargs; ++i)
    if (u64_arg(args[i], &v[i]) < 0) return NULL;
  uint32_t nvalues = nargs > 7 ? (uint32_t)(nargs - 7) : 0;
  if (fp_rec_slice(self, v[0], (uint32_t)v[1], (uint32_t)v[2], v[3], v[4], v[5], v[6], v + 7, nvalues) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *rec_take(PyObject *self, PyObject *unused) {
  (void)unused;
  Recorder *r = (Recorder *)self;
  size_t bound = 0;
  for (Py_ssize_t i = 0; i < r->count; ++i) {
    const rec_t *x = &r->recs[i];
    uint64_t b = rel(r, x->begin), e = rel(r, x->end > x->begin ? x->end : x->begin);
    size_t ev = begin_event_size(x);
    bound += packet_size(vfield_size(8, b) + vfield_size(10, r->seq) + 1 + varint_size(ev) + ev);
    size_t ev2 = vfield_size(9, 2) + vfield_size(11, x->track);
    bound += packet_size(vfield_size(8, e) + vfield_size(10, r->seq) + 1 + varint_size(ev2) + ev2);
  }
  PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
  if (bytes == NULL) return NULL;
  out_t o = {(unsigned char *)PyBytes_AS_STRING(bytes)};
  for (Py_ssize_t i = 0; i < r->count; ++i) encode(r, &r->recs[i], &o);
  r->count = 0;
  if (r->cap > 8192) { /* a burst grew it: give the memory back */
    PyMem_Free(r->recs);
    r->recs = NULL;
    r->cap = 0;
  }
  return bytes;
}

static Py_ssize_t rec_len(PyObject *self) { return ((Recorder *)self)->count; }

static int rec_init(PyObject *self, PyObject *args, PyObject *kwds) {
  Recorder *r = (Recorder *)self;
  unsigned long long seq, origin;
  static char *names[] = {"seq", "origin_ns", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "KK", names, &seq, &origin)) return -1;
  r->seq = seq;
  r->origin = origin;
  return 0;
}

static void rec_dealloc(PyObject *self) {
  PyMem_Free(((Recorder *)self)->recs);
  Py_TYPE(self)->tp_free(self);
}

static PyMethodDef rec_methods[] = {
    {"slice", (PyCFunction)(void (*)(void))rec_slice, METH_FASTCALL,
     "slice(track, name_iid, cat_iid, begin_ns, end_ns, flow_out=0, flow_in=0, *values): record one slice"},
    {"take", rec_take, METH_NOARGS, "take() -> bytes: the recorded slices as Perfetto packets; the recorder is then empty"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods rec_as_sequence = {.sq_length = rec_len};

PyTypeObject fp_recorder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload._fastpath.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Recorder(seq, origin_ns): the timeline's slices as fixed records, encoded when taken (_perfetto.PyRecorder's twin)",
    .tp_new = PyType_GenericNew,
    .tp_init = rec_init,
    .tp_dealloc = rec_dealloc,
    .tp_methods = rec_methods,
    .tp_as_sequence = &rec_as_sequence,
};
