/* _tracelaunch.c - the compiled olLaunchKernel's recording of a traced launch (the timeline's
 * compiled recorder, _tracerec.c): whether everything it needs is registered, and the record of
 * the call and its work, timed by the queue's stamp (offload_native.h). */
#include "_tracerec.h"

#include <stddef.h>
#include <time.h>

uint64_t fp_now_ns(void) { /* time.perf_counter_ns's clock on Linux */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


static __thread unsigned long tl_tid;
/* This thread's last launch's lookups (the recorder's dicts hold the kernel and the queue, so
 * their addresses are not reused while its generation lives). */
static __thread struct {
  uint64_t gen;
  PyObject *kernel, *queue;
  uint32_t kernel_iid;
  Py_ssize_t queue_ix;
  uint64_t thread_track;
} tl_last;

/* What recording this launch needs, all known to the recorder (the Python path registers them
 * the first time): 1, or 0 (the traced Python path makes the call). */
int fp_launch_recordable(fp_launch_rec *lr, PyObject *queue, PyObject *kernel, const offload_native_entry_points *ep) {
  if (queue == Py_None || ep == NULL || ep->struct_size < offsetof(offload_native_entry_points, stamp) + sizeof(void *) ||
      ep->stamp == NULL || fp_rec_launch_iid(lr->rec) == 0)
    return 0;
  uint64_t gen = fp_rec_generation(lr->rec);
  if (tl_last.gen == gen && tl_last.kernel == kernel && tl_last.queue == queue) {
    lr->kernel_iid = tl_last.kernel_iid;
    lr->queue_ix = tl_last.queue_ix;
    lr->thread_track = tl_last.thread_track;
    return 1;
  }
  PyObject *iid = PyDict_GetItemWithError(fp_rec_kernels(lr->rec), kernel);
  PyObject *ix = iid == NULL ? NULL : PyDict_GetItemWithError(fp_rec_queue_ix(lr->rec), queue);
  if (tl_tid == 0) tl_tid = (unsigned long)PyThread_get_thread_native_id();
  PyObject *tid = ix == NULL ? NULL : PyLong_FromUnsignedLong(tl_tid);
  PyObject *track = tid == NULL ? NULL : PyDict_GetItemWithError(fp_rec_threads(lr->rec), tid);
  Py_XDECREF(tid);
  if (track == NULL) {
    PyErr_Clear();
    return 0;
  }
  lr->kernel_iid = (uint32_t)PyLong_AsUnsignedLongMask(iid);
  lr->queue_ix = PyLong_AsSsize_t(ix);
  lr->thread_track = (uint64_t)PyLong_AsUnsignedLongLongMask(track);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  tl_last.gen = gen;
  tl_last.kernel = kernel;
  tl_last.queue = queue;
  tl_last.kernel_iid = lr->kernel_iid;
  tl_last.queue_ix = lr->queue_ix;
  tl_last.thread_track = lr->thread_track;
  return 1;
}

static void *launch_work(fp_launch_rec *lr, const offload_launch_dims *dims, size_t args_size, uint64_t *flow) {
  uint64_t handle;
  uint64_t values[6] = {1, (uint64_t)dims->num_groups[0] * dims->num_groups[1] * dims->num_groups[2],
                        2, (uint64_t)dims->group_size[0] * dims->group_size[1] * dims->group_size[2], 3, args_size};
  *flow = fp_rec_flow(lr->rec);
  return fp_rec_work(lr->rec, lr->queue_ix, lr->kernel_iid, 2, lr->begin, 0, *flow, 0, values, 6, &handle);
}

static void launch_slice(fp_launch_rec *lr, uint64_t end, uint64_t flow) {
  if (fp_rec_slice(lr->rec, lr->thread_track, fp_rec_launch_iid(lr->rec), 1, lr->begin, end, flow, 0, NULL, 0) < 0)
    PyErr_Clear(); /* (out of memory) the timeline loses the call; the launch stands */
  fp_rec_maybe_full(lr->rec);
}

/* Makes the launch natively and records it: its API slice, and its work on the queue's FIFO timed
 * by the queue. With launch_kernel_stamped the work is put on the FIFO first and the launch
 * carries its stamp (one submission); otherwise the launch is followed by a stamp (where the
 * backend could not stamp it, the work ends with the call). 1 made, 0 deferred (nothing done). */
int fp_launch_traced(fp_launch_rec *lr, const offload_native_entry_points *ep, offload_native_word dw, offload_native_word qw,
                     offload_native_word kw, const void *data, size_t size, const offload_launch_dims *dims) {
  offload_native_result r;
  uint64_t flow;
  if (ep->struct_size >= offsetof(offload_native_entry_points, launch_kernel_stamped) + sizeof(void *) &&
      ep->launch_kernel_stamped != NULL) {
    void *work = launch_work(lr, dims, size, &flow);
    if (work == NULL) {
      PyErr_Clear(); /* (out of memory) the traced Python path makes it */
      return 0;
    }
    Py_BEGIN_ALLOW_THREADS r = ep->launch_kernel_stamped(dw, qw, kw, data, size, dims, fp_rec_work_end(work));
    Py_END_ALLOW_THREADS
    if (r != OFFLOAD_NATIVE_DONE) {
      fp_rec_work_cancel(work);
      return 0;
    }
    launch_slice(lr, fp_now_ns(), flow);
    return 1;
  }
  Py_BEGIN_ALLOW_THREADS r = ep->launch_kernel(dw, qw, kw, data, size, dims);
  Py_END_ALLOW_THREADS
  if (r != OFFLOAD_NATIVE_DONE) return 0;
  uint64_t end = fp_now_ns();
  void *work = launch_work(lr, dims, size, &flow);
  if (work == NULL) {
    PyErr_Clear(); /* the timeline loses the launch; the call stands */
    return 1;
  }
  Py_BEGIN_ALLOW_THREADS r = ep->stamp(dw, qw, fp_rec_work_end(work));
  Py_END_ALLOW_THREADS
  if (r != OFFLOAD_NATIVE_DONE) __atomic_store_n(fp_rec_work_end(work), end, __ATOMIC_RELEASE);
  launch_slice(lr, end, flow);
  return 1;
}
