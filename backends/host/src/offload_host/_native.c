/* _native.c - the native half of offload-host: a persistent worker pool that runs host
 * kernels (offload_host.h) over a grid of work-groups, a thin dlopen/dlsym layer, and raw
 * memory helpers. Handles (pools, libraries, addresses) cross into Python as plain ints;
 * the Python side owns their lifetimes and must never pass a stale or foreign one.
 *
 * Every potentially long operation releases the GIL; nothing here calls back into Python
 * while the GIL is released.
 */
#define _GNU_SOURCE
#include "_native.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h> /* SSE2 (every x86-64): the streaming stores of stream_copy */
#define HAVE_STREAMING_STORES 1
#endif

#define LOCAL_MEM_ALIGN 64
#define MAX_POOL_THREADS 4096
#define MAX_CHUNK 4096 /* groups claimed per atomic operation, at most */
#define POOL_MAGIC 0x6f66666c6f6164ULL

/* ------------------------------------------------------------------------------------ */
/* Argument parsing                                                                       */

int check_nargs(const char *fn, Py_ssize_t nargs, Py_ssize_t expected) {
  if (nargs == expected) return 0;
  PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd arguments (%zd given)", fn, expected,
               nargs);
  return -1;
}

/* A non-negative Python int as uint64; raises TypeError/OverflowError. */
int parse_u64(PyObject *obj, uint64_t *out) {
  if (!PyLong_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "expected an int, got %.100s", Py_TYPE(obj)->tp_name);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(obj);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  *out = (uint64_t)v;
  return 0;
}

/* parse_u64 of at most max; OverflowError `too_big` above it. */
static int parse_at_most(PyObject *obj, uint64_t max, const char *too_big, uint64_t *out) {
  if (parse_u64(obj, out) < 0) return -1;
  if (*out > max) {
    PyErr_SetString(PyExc_OverflowError, too_big);
    return -1;
  }
  return 0;
}

int parse_ptr(PyObject *obj, void **out) {
  uint64_t v;
  if (parse_at_most(obj, UINTPTR_MAX, "address does not fit in a pointer", &v) < 0) return -1;
  *out = (void *)(uintptr_t)v;
  return 0;
}

int parse_size(PyObject *obj, size_t *out) {
  uint64_t v;
  if (parse_at_most(obj, SIZE_MAX, "size does not fit in size_t", &v) < 0) return -1;
  *out = (size_t)v;
  return 0;
}

/* A grid or group dimension: 1 .. UINT32_MAX. */
int parse_dim(PyObject *obj, uint32_t *out) {
  uint64_t v;
  if (parse_at_most(obj, UINT32_MAX, "grid and group dimensions must fit in 32 bits", &v) < 0) return -1;
  if (v == 0) {
    PyErr_SetString(PyExc_ValueError, "grid and group dimensions must be at least 1");
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

void *handle_from(PyObject *obj, uint64_t magic, const char *what) {
  void *p;
  if (parse_ptr(obj, &p) < 0) return NULL;
  if (p == NULL || *(const uint64_t *)p != magic) {
    PyErr_Format(PyExc_ValueError, "not a live %s handle", what);
    return NULL;
  }
  return p;
}

static PyObject *from_ptr(const void *p) {
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)p);
}

/* ------------------------------------------------------------------------------------ */
/* Local memory: one 64-byte aligned buffer per executing thread, grown on demand.        */

typedef struct {
  void *data;
  size_t cap;
} local_buf;

/* Makes buf hold at least size bytes (contents are not preserved); 0 on success. */
static int local_buf_reserve(local_buf *buf, size_t size) {
  if (size <= buf->cap) return 0;
  void *p = NULL;
  if (posix_memalign(&p, LOCAL_MEM_ALIGN, size) != 0) return -1;
  free(buf->data);
  buf->data = p;
  buf->cap = size;
  return 0;
}

static void local_buf_release(local_buf *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->cap = 0;
}

/* ------------------------------------------------------------------------------------ */
/* Jobs: one launch, its groups claimed in chunks from an atomic counter.                 */

typedef struct {
  offload_kernel_fn kernel;
  const void *args;
  offload_dim3_t num_groups;
  offload_dim3_t group_size;
  size_t dyn_mem;
  uint64_t total;           /* number of groups in the grid */
  uint64_t chunk;           /* groups claimed at once, at most (guided: fewer near the end) */
  uint64_t takers;          /* threads that may take part */
  _Atomic uint64_t next;    /* first unclaimed linear group index */
  unsigned refs;            /* workers attached to this job; guarded by the pool lock */
  _Atomic uint64_t cpus;    /* CPUs (those below 64) a thread of this job runs on */
  _Atomic int cancel;       /* set when the caller was interrupted: nobody claims more groups */
  PyThreadState **caller;   /* non-NULL: the launching (main) thread checks for signals between claims */
  uint64_t next_check_ns;   /* when the caller checks next */
  _Atomic uint64_t limit;   /* interruptible jobs: groups a claim may take, sized from measured claims */
  pool_t *pool;             /* guarded jobs (kernels): the pool whose device a fault marks */
} job_t;

static void job_fault(job_t *job, const kernel_fault_t *fault);

#define SIGNAL_CHECK_NS 20000000ull /* a synchronous launch on the main thread sees Ctrl-C this often */
#define CLAIM_TARGET_NS 5000000ull  /* and a claim of an interruptible job lasts about this long at most */

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The launching thread, between two of its claims: every SIGNAL_CHECK_NS it takes the GIL back
 * to run Python's signal handlers; one that raised (Ctrl-C) cancels the rest of the grid. */
static void caller_check_signals(job_t *job) {
  uint64_t now = monotonic_ns();
  if (now < job->next_check_ns) return;
  job->next_check_ns = now + SIGNAL_CHECK_NS;
  PyEval_RestoreThread(*job->caller);
  int interrupted = PyErr_CheckSignals() < 0; /* the exception stays set for the caller */
  *job->caller = PyEval_SaveThread();
  if (interrupted) atomic_store_explicit(&job->cancel, 1, memory_order_relaxed);
}

/* Runs groups [begin, end) of the job with the given local memory; a guarded job's kernel runs
 * under the thread's fault guard (guard: NULL for an unguarded job). */
static void run_range(const job_t *job, uint64_t begin, uint64_t end, void *local_mem, fault_guard_t *guard) {
  const uint64_t nx = job->num_groups.x, ny = job->num_groups.y;
  offload_group_t group = {
      .num_groups = job->num_groups,
      .group_size = job->group_size,
      .local_mem = local_mem,
      .local_mem_size = job->dyn_mem,
  };
  uint64_t x = begin % nx, rest = begin / nx;
  uint64_t y = rest % ny, z = rest / ny;
  fault_tls_guard = guard; /* only while kernel code runs: a fault elsewhere is not the kernel's */
  for (uint64_t i = begin; i < end; ++i) {
    group.group_id.x = (uint32_t)x;
    group.group_id.y = (uint32_t)y;
    group.group_id.z = (uint32_t)z;
    job->kernel(job->args, &group);
    if (++x == nx) {
      x = 0;
      if (++y == ny) {
        y = 0;
        ++z;
      }
    }
  }
  fault_tls_guard = NULL;
}

/* Claims and runs chunks until the grid is exhausted. The caller has reserved dyn_mem
 * bytes in buf. */
__attribute__((always_inline)) static inline void run_share(job_t *job, local_buf *buf, int is_caller,
                                                            fault_guard_t *guard) {
  void *local_mem = job->dyn_mem ? buf->data : NULL;
  for (;;) {
    if (atomic_load_explicit(&job->cancel, memory_order_relaxed)) return;
    if (is_caller && job->caller != NULL) caller_check_signals(job);
    /* Guided: a quarter of each taker's share of what is left, at most `chunk`, so that the
     * last claims are small and a thread that is preempted holding one delays little. */
    uint64_t begin = atomic_load_explicit(&job->next, memory_order_relaxed), n;
    /* An interruptible job's claims start at one group and are then sized from the time the
     * groups take (about CLAIM_TARGET_NS), so a cancel is seen within a claim by every taker. */
    uint64_t limit = job->caller != NULL ? atomic_load_explicit(&job->limit, memory_order_relaxed) : job->chunk;
    do {
      if (begin >= job->total) return;
      n = (job->total - begin) / (4 * job->takers);
      n = n < 1 ? 1 : n > limit ? limit : n;
    } while (!atomic_compare_exchange_weak_explicit(&job->next, &begin, begin + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    uint64_t end = begin + n;
    if (job->caller == NULL) {
      run_range(job, begin, end, local_mem, guard);
      continue;
    }
    uint64_t start = monotonic_ns();
    run_range(job, begin, end, local_mem, guard);
    uint64_t per_group = (monotonic_ns() - start) / n + 1;
    uint64_t fit = CLAIM_TARGET_NS / per_group;
    atomic_store_explicit(&job->limit, fit < 1 ? 1 : fit > job->chunk ? job->chunk : fit, memory_order_relaxed);
  }
}

/* run_share, a guarded job's kernel under a fault guard of this thread: a fault ends this
 * thread's share and cancels the rest of the grid (job_fault). One FAULT_SETJMP per thread and
 * launch (a few instructions, no system call). */
static void run_share_guarded(job_t *job, local_buf *buf, int is_caller) {
  if (job->pool == NULL) {
    run_share(job, buf, is_caller, NULL);
    return;
  }
  fault_thread_ready();
  fault_guard_t guard;
  if (FAULT_SETJMP(guard.env) != 0) {
    fault_after_jump();
    guard.fault.kernel = job->kernel;
    job_fault(job, &guard.fault);
    return;
  }
  run_share(job, buf, is_caller, &guard);
}

/* ------------------------------------------------------------------------------------ */
/* Pools                                                                                  */

typedef struct {
  pool_t *pool;
  pthread_t thread;
  local_buf buf;
} worker_t;

struct pool {
  uint64_t magic;
  pthread_mutex_t launch_lock; /* serializes launches (and destruction) on this pool */
  pthread_mutex_t lock;        /* guards job, generation, stop, job->refs */
  pthread_cond_t work_cv;      /* a new job was published, or stop was set */
  pthread_cond_t done_cv;      /* an attached worker detached from its job */
  job_t *job;                  /* the published job, NULL between launches */
  uint64_t generation;         /* bumped once per published job */
  int stop;
  local_buf caller_buf;        /* the launching thread's local memory; under launch_lock */
  _Atomic size_t local_limit;  /* the device's local memory limit (launches beyond it: Python) */
  _Atomic int fault_claimed;   /* a kernel faulted: its thread writes `fault`, then sets faulted */
  _Atomic int faulted;         /* sticky: nothing more runs on this device */
  char fault_message[768];     /* the first fault, described; read once faulted is set */
  PyObject *on_fault;          /* pool_on_fault's callable, called once with the first fault error (GIL) */
  int fault_reported;          /* on_fault was called (GIL) */
  size_t nthreads;
  worker_t workers[];
};

#define POOL_SPIN_NS 300000 /* a worker polls this long for the next launch before sleeping: longer
                             * than the gap between back-to-back launch + sync cycles after a big
                             * kernel (its launch call runs from cold caches: 20-100 us) */

/* CPU placement. A worker woken for a job may be put on a CPU that already runs a thread of the
 * job: a guest kernel treats an idle vCPU that its hypervisor has descheduled as busy, and puts
 * the wakee next to its waker rather than wake that vCPU; the two then share one CPU for the
 * whole launch (measured: every other big launch after an idle spell took twice as long on 2
 * vCPUs). Such a worker moves itself to a CPU of its affinity mask that no thread of the job
 * has: it narrows its mask to that CPU (the kernel migrates it before the call returns) and
 * widens it again at once, so it is never pinned. Only CPUs 0..63 are tracked. */
static uint64_t cpu_bit(int cpu) { return cpu >= 0 && cpu < 64 ? (uint64_t)1 << cpu : 0; }

static void job_note_cpu(job_t *job) {
  atomic_fetch_or_explicit(&job->cpus, cpu_bit(sched_getcpu()), memory_order_relaxed);
}

/* Claims the current CPU for the job, or moves to a CPU that no thread of the job has. */
static void job_spread(job_t *job) {
  uint64_t bit = cpu_bit(sched_getcpu());
  if (bit == 0 || !(atomic_fetch_or_explicit(&job->cpus, bit, memory_order_relaxed) & bit)) return;
  cpu_set_t mask;
  if (pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) != 0) return;
  uint64_t taken = atomic_load_explicit(&job->cpus, memory_order_relaxed);
  for (int cpu = 0; cpu < 64; ++cpu) {
    uint64_t mine = (uint64_t)1 << cpu;
    if (!CPU_ISSET(cpu, &mask) || (taken & mine)) continue;
    taken = atomic_fetch_or_explicit(&job->cpus, mine, memory_order_relaxed);
    if (taken & mine) continue; /* another worker claimed it meanwhile */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0)
      pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
    return;
  }
}

static void *worker_main(void *arg) {
  worker_t *self = arg;
  pool_t *pool = self->pool;
  pthread_setname_np(pthread_self(), "offload-pool"); /* as top -H and perf show it */
  fault_thread_setup(); /* its kernels' faults end their launch, not the process */

  uint64_t seen = 0;
  int worked = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    if (worked && !pool->stop && pool->generation == seen) {
      /* Poll a moment before sleeping: back-to-back launches then find their workers awake. */
      pthread_mutex_unlock(&pool->lock);
      uint64_t start = now_ns();
      while (__atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE) == seen &&
             !__atomic_load_n(&pool->stop, __ATOMIC_RELAXED) && now_ns() - start < POOL_SPIN_NS)
        cpu_relax();
      pthread_mutex_lock(&pool->lock);
    }
    while (!pool->stop && (pool->job == NULL || pool->generation == seen))
      pthread_cond_wait(&pool->work_cv, &pool->lock);
    if (pool->stop) break;
    seen = pool->generation;
    job_t *job = pool->job;
    job->refs++;
    pthread_mutex_unlock(&pool->lock);

    /* A worker that cannot get local memory simply does not take part; the launching
     * thread, which always has its memory, finishes the grid. */
    if (local_buf_reserve(&self->buf, job->dyn_mem) == 0) {
      job_spread(job);
      run_share_guarded(job, &self->buf, 0);
    }
    worked = 1;

    pthread_mutex_lock(&pool->lock);
    if (--job->refs == 0) pthread_cond_signal(&pool->done_cv);
  }
  pthread_mutex_unlock(&pool->lock);
  local_buf_release(&self->buf);
  return NULL;
}

/* Stops and joins the first `started` workers. Requires that no launch is running. */
static void pool_stop_workers(pool_t *pool, size_t started) {
  pthread_mutex_lock(&pool->lock);
  __atomic_store_n(&pool->stop, 1, __ATOMIC_RELAXED); /* polled without the lock */
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->lock);
  for (size_t i = 0; i < started; ++i) pthread_join(pool->workers[i].thread, NULL);
}

static void pool_free(pool_t *pool) {
  pthread_cond_destroy(&pool->done_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->launch_lock);
  local_buf_release(&pool->caller_buf);
  Py_CLEAR(pool->on_fault); /* every caller holds the GIL */
  pool->magic = 0;
  free(pool);
}

pool_t *pool_from(PyObject *obj) { return handle_from(obj, POOL_MAGIC, "pool"); }

static PyObject *py_pool_create(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  uint64_t n;
  if (check_nargs("pool_create", nargs, 1) < 0 || parse_u64(args[0], &n) < 0) return NULL;
  if (n > MAX_POOL_THREADS) {
    PyErr_Format(PyExc_ValueError, "a pool has at most %d threads", MAX_POOL_THREADS);
    return NULL;
  }
  if (fault_install() != 0) return PyErr_SetFromErrno(PyExc_OSError);
  pool_t *pool = calloc(1, sizeof(pool_t) + (size_t)n * sizeof(worker_t));
  if (pool == NULL) return PyErr_NoMemory();
  pool->magic = POOL_MAGIC;
  pool->nthreads = (size_t)n;
  atomic_store(&pool->local_limit, 0); /* until pool_set_local_limit: every dynamic size defers */
  pthread_mutex_init(&pool->launch_lock, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);

  /* Workers start with every signal blocked so that signals reach Python's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  size_t started = 0;
  int err = 0;
  for (; started < pool->nthreads; ++started) {
    worker_t *w = &pool->workers[started];
    w->pool = pool;
    err = pthread_create(&w->thread, NULL, worker_main, w);
    if (err != 0) break;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);

  if (err != 0) {
    Py_BEGIN_ALLOW_THREADS
    pool_stop_workers(pool, started);
    Py_END_ALLOW_THREADS
    pool_free(pool);
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return from_ptr(pool);
}

static PyObject *py_pool_destroy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  pool_t *pool;
  if (check_nargs("pool_destroy", nargs, 1) < 0 || (pool = pool_from(args[0])) == NULL)
    return NULL;
  /* Waits for a launch in progress on another thread, then joins every worker. */
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&pool->launch_lock);
  pool_stop_workers(pool, pool->nthreads);
  pthread_mutex_unlock(&pool->launch_lock);
  Py_END_ALLOW_THREADS
  pool_free(pool);
  Py_RETURN_NONE;
}

/* Runs the whole grid on the calling thread. 0 on success, -1 if out of memory. */
static int launch_inline(job_t *job) {
  local_buf buf = {NULL, 0};
  if (local_buf_reserve(&buf, job->dyn_mem) < 0) return -1;
  run_share_guarded(job, &buf, 1);
  local_buf_release(&buf);
  return 0;
}

/* Runs the grid on the pool's workers and the calling thread; returns once every group
 * finished. 0 on success, -1 if the caller's local memory cannot be allocated (then no
 * group has run). */
static int launch_pooled(pool_t *pool, job_t *job) {
  int rc = -1;
  pthread_mutex_lock(&pool->launch_lock);
  if (local_buf_reserve(&pool->caller_buf, job->dyn_mem) == 0) {
    job_note_cpu(job);
    pthread_mutex_lock(&pool->lock);
    pool->job = job;
    __atomic_store_n(&pool->generation, pool->generation + 1, __ATOMIC_RELEASE); /* polled unlocked */
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->lock);

    run_share_guarded(job, &pool->caller_buf, 1);

    /* Retract the job so late wakers skip it, then wait for attached workers: every
     * claimed group was claimed by the caller or by one of them. */
    pthread_mutex_lock(&pool->lock);
    pool->job = NULL;
    while (job->refs > 0) pthread_cond_wait(&pool->done_cv, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    rc = 0;
  }
  pthread_mutex_unlock(&pool->launch_lock);
  return rc;
}

size_t pool_threads(const pool_t *pool) { return pool->nthreads; }

size_t pool_local_limit(pool_t *pool) { return atomic_load(&pool->local_limit); }

static PyObject *py_pool_set_local_limit(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  size_t limit;
  if (check_nargs("pool_set_local_limit", nargs, 2) < 0) return NULL;
  pool_t *pool = pool_from(args[0]);
  if (pool == NULL || parse_size(args[1], &limit) < 0) return NULL;
  atomic_store(&pool->local_limit, limit);
  Py_RETURN_NONE;
}

/* ---- the device's fault: the first kernel fault of any launch on the pool, sticky -------------- */

static void pool_note_fault(pool_t *pool, const kernel_fault_t *fault);

static void job_fault(job_t *job, const kernel_fault_t *fault) {
  atomic_store_explicit(&job->cancel, 1, memory_order_relaxed); /* nobody claims more groups */
  pool_note_fault(job->pool, fault);
}

/* Keeps the pool's first fault and marks its device faulted. */
static void pool_note_fault(pool_t *pool, const kernel_fault_t *fault) {
  int none = 0;
  if (atomic_compare_exchange_strong(&pool->fault_claimed, &none, 1)) {
    /* described now, after the jump (not in the handler): the kernel's program is loaded while
     * its launch runs, and the allocation it ran past is not freed yet */
    fault_describe(fault, pool->fault_message, sizeof pool->fault_message);
    atomic_store_explicit(&pool->faulted, 1, memory_order_release);
  }
}

int pool_faulted(pool_t *pool) { return atomic_load_explicit(&pool->faulted, memory_order_acquire); }

const _Atomic int *pool_fault_flag(pool_t *pool) { return &pool->faulted; }

static PyObject *DeviceFaulted; /* _native.DeviceFaulted: offload.OffloadError(BACKEND_FAILURE, ...) */
static PyObject *BackendFailure;

PyObject *device_faulted_type(void) { return DeviceFaulted; }

/* The device's fault as a DeviceFaulted error (GIL held; the device is faulted). The first one
 * made is handed to pool_on_fault's callable (the backend tells the core: offload.backend_support.
 * report_device_fault); an exception of that call is unraisable, never this error's. */
PyObject *pool_fault_error(pool_t *pool) {
  PyObject *error = PyObject_CallFunction(DeviceFaulted, "Os", BackendFailure, pool->fault_message);
  if (error != NULL && !pool->fault_reported && pool->on_fault != NULL) {
    pool->fault_reported = 1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *result = PyObject_CallOneArg(pool->on_fault, error);
    if (result == NULL) PyErr_WriteUnraisable(pool->on_fault);
    Py_XDECREF(result);
    PyErr_Restore(type, value, tb);
  }
  return error;
}

PyObject *pool_raise_fault(pool_t *pool) {
  PyObject *error = pool_fault_error(pool);
  if (error != NULL) {
    PyErr_SetObject(DeviceFaulted, error);
    Py_DECREF(error);
  }
  return NULL;
}

/* One call of a kernel under a fault guard of the calling thread (no GIL): 1 when it faulted (the
 * pool's device is then faulted), else 0. */
static int call_guarded(pool_t *pool, offload_kernel_fn kernel, const void *args, const offload_group_t *group) {
  fault_thread_ready();
  fault_guard_t guard;
  if (FAULT_SETJMP(guard.env) != 0) {
    fault_after_jump();
    guard.fault.kernel = kernel;
    pool_note_fault(pool, &guard.fault);
    return 1;
  }
  fault_tls_guard = &guard;
  kernel(args, group);
  fault_tls_guard = NULL;
  return 0;
}

/* call_guarded(pool, kernel, args, group): a cooperative launch's group (_cooperative.py), with the
 * GIL released; raises DeviceFaulted when it faults, or when the device is faulted already. */
static PyObject *py_call_guarded(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  pool_t *pool;
  void *kernel, *kargs, *group;
  if (check_nargs("call_guarded", nargs, 4) < 0 || (pool = pool_from(args[0])) == NULL ||
      parse_ptr(args[1], &kernel) < 0 || parse_ptr(args[2], &kargs) < 0 || parse_ptr(args[3], &group) < 0)
    return NULL;
  if (kernel == NULL || group == NULL) {
    PyErr_SetString(PyExc_ValueError, "kernel and group must not be NULL");
    return NULL;
  }
  if (pool_faulted(pool)) return pool_raise_fault(pool);
  int faulted;
  Py_BEGIN_ALLOW_THREADS
  faulted = call_guarded(pool, (offload_kernel_fn)(uintptr_t)kernel, kargs, group);
  Py_END_ALLOW_THREADS
  if (faulted) return pool_raise_fault(pool);
  Py_RETURN_NONE;
}

static PyObject *py_pool_on_fault(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  pool_t *pool;
  if (check_nargs("pool_on_fault", nargs, 2) < 0 || (pool = pool_from(args[0])) == NULL) return NULL;
  if (!PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "pool_on_fault: the listener must be callable");
    return NULL;
  }
  Py_XSETREF(pool->on_fault, Py_NewRef(args[1]));
  Py_RETURN_NONE;
}

static PyObject *py_pool_fault(PyObject *m, PyObject *arg) {
  (void)m;
  pool_t *pool = pool_from(arg);
  if (pool == NULL) return NULL;
  if (!pool_faulted(pool)) Py_RETURN_NONE;
  return pool_fault_error(pool);
}

PyObject *offload_error_class(const char *name, const char *doc, const char *code_name, PyObject **code) {
  PyObject *base = NULL, *codes = NULL, *offload = PyImport_ImportModule("offload");
  if (offload != NULL) {
    base = PyObject_GetAttrString(offload, "OffloadError");
    codes = PyObject_GetAttrString(offload, "ErrorCode");
    Py_DECREF(offload);
  }
  if (base == NULL || codes == NULL) {
    PyErr_Clear();
    Py_XDECREF(base);
    Py_XDECREF(codes);
    base = Py_NewRef(PyExc_RuntimeError);
    codes = NULL;
  }
  *code = codes ? PyObject_GetAttrString(codes, code_name) : Py_NewRef(Py_None);
  Py_XDECREF(codes);
  PyObject *type = *code == NULL ? NULL : PyErr_NewExceptionWithDoc(name, doc, base, NULL);
  Py_DECREF(base);
  return type;
}

/* The device's exception class: DeviceFaulted, an offload.OffloadError(BACKEND_FAILURE, ...). */
static int fault_exec(PyObject *module) {
  DeviceFaulted = offload_error_class("offload_host._native.DeviceFaulted",
                                      "A kernel of the host device faulted (BACKEND_FAILURE); the device "
                                      "stays faulted until olShutDown.",
                                      "BACKEND_FAILURE", &BackendFailure);
  if (DeviceFaulted == NULL) return -1;
  return PyModule_AddObjectRef(module, "DeviceFaulted", DeviceFaulted);
}

int pool_run(pool_t *pool, offload_kernel_fn kernel, const void *args, offload_dim3_t num_groups,
             offload_dim3_t group_size, size_t dyn_mem) {
  return pool_run_interruptible(pool, kernel, args, num_groups, group_size, dyn_mem, NULL);
}

static inline int pool_run_job(pool_t *pool, offload_kernel_fn kernel, const void *args, offload_dim3_t num_groups,
                               offload_dim3_t group_size, size_t dyn_mem, PyThreadState **caller, int guarded);

int pool_run_interruptible(pool_t *pool, offload_kernel_fn kernel, const void *args, offload_dim3_t num_groups,
                           offload_dim3_t group_size, size_t dyn_mem, PyThreadState **caller) {
  if (pool_faulted(pool)) return -3;
  int rc = pool_run_job(pool, kernel, args, num_groups, group_size, dyn_mem, caller, 1);
  return rc != -1 && pool_faulted(pool) ? -3 : rc; /* a fault cancels the grid too: not an interrupt */
}

/* Runs a job; guarded: a kernel (its faults mark the device), else the pool's own copies. */
__attribute__((always_inline)) static inline int pool_run_job(pool_t *pool, offload_kernel_fn kernel, const void *args,
                                                              offload_dim3_t num_groups, offload_dim3_t group_size,
                                                              size_t dyn_mem, PyThreadState **caller, int guarded) {
  job_t job = {
      .pool = guarded ? pool : NULL,
      .kernel = kernel,
      .args = args,
      .num_groups = num_groups,
      .group_size = group_size,
      .dyn_mem = dyn_mem,
      .total = (uint64_t)num_groups.x * num_groups.y * num_groups.z,
      .limit = 1,
  };
  if (caller != NULL && job.total > 1) { /* one group has nothing to cancel between claims */
    job.caller = caller;
    job.next_check_ns = monotonic_ns() + SIGNAL_CHECK_NS;
  }
  if (pool->nthreads == 0 || job.total == 1) {
    job.chunk = job.total;
    job.takers = 1;
    int rc = launch_inline(&job);
    return rc == 0 && atomic_load(&job.cancel) ? -2 : rc;
  }
  /* About 16 claims per taking thread balance the load; small grids go one group a claim. */
  uint64_t chunk = job.total / ((uint64_t)(pool->nthreads + 1) * 16);
  job.chunk = chunk < 1 ? 1 : chunk > MAX_CHUNK ? MAX_CHUNK : chunk;
  job.takers = pool->nthreads + 1;
  int rc = launch_pooled(pool, &job);
  return rc == 0 && atomic_load(&job.cancel) ? -2 : rc;
}

/* Sets the grid from d = (ngx, ngy, ngz, gsx, gsy, gsz). Refuses (OverflowError) a dimension
 * of more than 2**32 work-items, whose global ids would not fit offload_host.h's uint32_t, and
 * 2**64 groups or more. */
static int set_grid(launch_t *out, const uint32_t d[6]) {
  for (int i = 0; i < 3; ++i) {
    uint64_t items = (uint64_t)d[i] * d[3 + i];
    if (items > ((uint64_t)1 << 32)) {
      PyErr_Format(PyExc_OverflowError,
                   "NumGroups.%c * GroupSize.%c = %u * %u = %llu work-items: their global ids do not "
                   "fit the host kernels' 32-bit ids (at most 2**32)",
                   "xyz"[i], "xyz"[i], (unsigned)d[i], (unsigned)d[3 + i], (unsigned long long)items);
      return -1;
    }
  }
  uint64_t total;
  if (__builtin_mul_overflow((uint64_t)d[0] * d[1], (uint64_t)d[2], &total)) {
    PyErr_SetString(PyExc_OverflowError, "grid has too many groups");
    return -1;
  }
  out->num_groups = (offload_dim3_t){d[0], d[1], d[2]};
  out->group_size = (offload_dim3_t){d[3], d[4], d[5]};
  return 0;
}

/* The grid of a size object (offload.KernelLaunchSizeArgs, or anything with its num_groups,
 * group_size and dyn_shared_memory attributes) into out. */
static int parse_size_object(PyObject *size, launch_t *out) {
  static const char *const names[2] = {"num_groups", "group_size"};
  uint32_t d[6];
  for (int k = 0; k < 2; ++k) {
    PyObject *dims = PyObject_GetAttrString(size, names[k]);
    if (dims == NULL) return -1;
    PyObject *seq = PySequence_Fast(dims, "launch dimensions must be a sequence of 3 ints");
    Py_DECREF(dims);
    if (seq == NULL) return -1;
    int ok = PySequence_Fast_GET_SIZE(seq) == 3;
    if (!ok) PyErr_Format(PyExc_ValueError, "%s must have 3 extents", names[k]);
    for (int i = 0; ok && i < 3; ++i) ok = parse_dim(PySequence_Fast_GET_ITEM(seq, i), &d[3 * k + i]) == 0;
    Py_DECREF(seq);
    if (!ok) return -1;
  }
  PyObject *dyn = PyObject_GetAttrString(size, "dyn_shared_memory");
  if (dyn == NULL) return -1;
  int rc = parse_size(dyn, &out->dyn_mem);
  Py_DECREF(dyn);
  if (rc < 0) return -1;
  return set_grid(out, d);
}

/* offload.KernelLaunchSizeArgs is immutable, so the grid of the last one seen is kept with a
 * reference to it: a loop launching with one size object parses it once. Under the GIL. */
static PyTypeObject *size_type; /* NULL until looked up; then the type, or Py_None's on failure */
static PyObject *cached_size;
static launch_t cached_grid;

static int parse_grid(PyObject *size, launch_t *out) {
  if (size == cached_size) {
    out->num_groups = cached_grid.num_groups;
    out->group_size = cached_grid.group_size;
    out->dyn_mem = cached_grid.dyn_mem;
    return 0;
  }
  if (parse_size_object(size, out) < 0) return -1;
  if (size_type == NULL) {
    PyObject *offload = PyImport_ImportModule("offload");
    PyObject *type = offload ? PyObject_GetAttrString(offload, "KernelLaunchSizeArgs") : NULL;
    Py_XDECREF(offload);
    if (type == NULL || !PyType_Check(type)) { /* used without the core: nothing is cached */
      PyErr_Clear();
      Py_XDECREF(type);
      type = Py_NewRef((PyObject *)Py_TYPE(Py_None));
    }
    size_type = (PyTypeObject *)type;
  }
  if (Py_TYPE(size) == size_type) {
    Py_XSETREF(cached_size, Py_NewRef(size));
    cached_grid = *out;
  }
  return 0;
}

int parse_launch(PyObject *const *args, Py_ssize_t nargs, launch_t *out) {
  if (nargs != 4 && nargs != 10) {
    PyErr_Format(PyExc_TypeError, "launch() takes 4 or 10 arguments (%zd given)", nargs);
    return -1;
  }
  if ((out->pool = pool_from(args[0])) == NULL) return -1;
  void *kernel;
  if (parse_ptr(args[1], &kernel) < 0) return -1;
  if (kernel == NULL) {
    PyErr_SetString(PyExc_ValueError, "kernel address is NULL");
    return -1;
  }
  out->kernel = (offload_kernel_fn)(uintptr_t)kernel;
  if (nargs == 4) return parse_grid(args[3], out);
  uint32_t d[6];
  for (int i = 0; i < 6; ++i)
    if (parse_dim(args[3 + i], &d[i]) < 0) return -1;
  if (set_grid(out, d) < 0) return -1;
  return parse_size(args[9], &out->dyn_mem);
}

static PyObject *py_launch(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  launch_t l;
  if (parse_launch(args, nargs, &l) < 0) return NULL;

  Py_buffer view = {0};
  int have_view = args[2] != Py_None;
  if (have_view && PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) return NULL;
  const void *kargs = have_view && view.len > 0 ? view.buf : NULL;

  /* On the main thread the launch sees Ctrl-C between its claims of groups (every
   * SIGNAL_CHECK_NS): the groups not started are dropped and the handler's exception raised. */
  PyThreadState *ts = PyEval_SaveThread();
  int rc = pool_run_interruptible(l.pool, l.kernel, kargs, l.num_groups, l.group_size, l.dyn_mem,
                                  hostq_on_main_thread() ? &ts : NULL);
  PyEval_RestoreThread(ts);
  if (have_view) PyBuffer_Release(&view);
  if (rc == -2) return NULL;
  if (rc == -3) return pool_raise_fault(l.pool);
  if (rc < 0) return PyErr_NoMemory();
  Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------ */
/* Big copies and fills, split over a pool                                                */

#define SPLIT_MIN (4u << 20)      /* below this one memmove/memset beats waking the pool */
#define SPLIT_MIN_CHUNK (1u << 20) /* bytes per work-group of a split copy or fill, at least */
#define STREAM_MIN (16u << 20)    /* copies this big bypass the caches (stream_copy) */

typedef struct {
  unsigned char *dst;
  const unsigned char *src; /* copy source, or the fill pattern */
  size_t size;
  size_t chunk; /* bytes per group: a multiple of plen */
  size_t plen;  /* fill pattern length */
  int stream;   /* copy with stream_copy */
} split_args;

/* memcpy of two ranges that do not overlap, storing with non-temporal (streaming) stores where
 * the CPU has them: a copy bigger than the caches would only evict what they hold, and a store
 * that bypasses them skips reading each destination line first (64 MiB here: 21 -> 28 GB/s).
 * The fence makes the stores visible before whatever the caller does next (a completion flag). */
static void stream_copy(unsigned char *d, const unsigned char *s, size_t n) {
#ifdef HAVE_STREAMING_STORES
  size_t head = (16 - ((uintptr_t)d & 15)) & 15;
  if (head > n) head = n;
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  size_t body = n & ~(size_t)63;
  for (size_t i = 0; i < body; i += 64) {
    __m128i x0 = _mm_loadu_si128((const __m128i *)(s + i)), x1 = _mm_loadu_si128((const __m128i *)(s + i + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(s + i + 32)), x3 = _mm_loadu_si128((const __m128i *)(s + i + 48));
    _mm_stream_si128((__m128i *)(d + i), x0);
    _mm_stream_si128((__m128i *)(d + i + 16), x1);
    _mm_stream_si128((__m128i *)(d + i + 32), x2);
    _mm_stream_si128((__m128i *)(d + i + 48), x3);
  }
  _mm_sfence();
  memcpy(d + body, s + body, n - body);
#else
  memcpy(d, s, n);
#endif
}

static void copy_part(const void *args, const offload_group_t *group) {
  const split_args *a = args;
  size_t begin = (size_t)group->group_id.x * a->chunk;
  size_t n = a->size - begin < a->chunk ? a->size - begin : a->chunk;
  if (a->stream)
    stream_copy(a->dst + begin, a->src + begin, n);
  else
    memcpy(a->dst + begin, a->src + begin, n);
}

static void fill_part(const void *args, const offload_group_t *group) {
  const split_args *a = args;
  size_t begin = (size_t)group->group_id.x * a->chunk;
  size_t n = a->size - begin < a->chunk ? a->size - begin : a->chunk;
  fill_pattern(a->dst + begin, a->src, a->plen, n);
}

/* Eight parts per taking thread (at least SPLIT_MIN_CHUNK each): few enough that each is one
 * long memcpy, enough that a thread preempted holding one delays the rest little. -1 when the
 * pattern does not fit a part (then the caller does it alone). */
static int split_over(pool_t *pool, offload_kernel_fn part, split_args *a, size_t plen) {
  size_t chunk = a->size / (8 * (pool->nthreads + 1));
  if (chunk < SPLIT_MIN_CHUNK) chunk = SPLIT_MIN_CHUNK;
  chunk = (chunk + 4095) & ~(size_t)4095;
  chunk -= chunk % plen;
  if (chunk == 0) return -1;
  a->chunk = chunk;
  uint64_t groups = (a->size + chunk - 1) / chunk;
  if (groups > UINT32_MAX) return -1;
  return pool_run_job(pool, part, a, (offload_dim3_t){(uint32_t)groups, 1, 1}, (offload_dim3_t){1, 1, 1}, 0,
                      NULL, 0);
}

void pool_copy(pool_t *pool, void *dst, const void *src, size_t size) {
  const unsigned char *d = dst, *s = src;
  int overlap = d < s + size && s < d + size;
  int stream = size >= STREAM_MIN && !overlap;
  if (pool != NULL && pool->nthreads > 0 && size >= SPLIT_MIN && !overlap) {
    split_args a = {.dst = dst, .src = src, .size = size, .stream = stream};
    if (split_over(pool, copy_part, &a, 1) == 0) return;
  }
  if (stream)
    stream_copy(dst, src, size);
  else if (size)
    memmove(dst, src, size);
}

void pool_fill(pool_t *pool, void *dst, const void *pat, size_t plen, size_t size) {
  const unsigned char *d = dst, *p = pat;
  int overlap = p < d + size && d < p + plen; /* the pattern lives inside the destination */
  if (pool != NULL && pool->nthreads > 0 && size >= SPLIT_MIN && !overlap) {
    split_args a = {.dst = dst, .src = pat, .size = size, .plen = plen};
    if (split_over(pool, fill_part, &a, plen) == 0) return;
  }
  fill_pattern(dst, pat, plen, size);
}

/* ------------------------------------------------------------------------------------ */
/* Dynamic libraries                                                                      */

/* Raises OSError with dlerror()'s text (decoded like a file name), or fallback. */
static PyObject *set_dl_error(const char *msg, const char *fallback) {
  PyObject *text = PyUnicode_DecodeFSDefault(msg ? msg : fallback);
  if (text != NULL) {
    PyErr_SetObject(PyExc_OSError, text);
    Py_DECREF(text);
  }
  return NULL;
}

static PyObject *py_dl_open(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  PyObject *path = NULL;
  if (check_nargs("dl_open", nargs, 1) < 0 || !PyUnicode_FSConverter(args[0], &path))
    return NULL;
  void *handle;
  const char *err = NULL;
  /* dlerror() is per thread, so it is read on the thread that called dlopen. */
  Py_BEGIN_ALLOW_THREADS
  handle = dlopen(PyBytes_AS_STRING(path), RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) err = dlerror();
  Py_END_ALLOW_THREADS
  Py_DECREF(path);
  if (handle == NULL) return set_dl_error(err, "dlopen failed");
  return from_ptr(handle);
}

static PyObject *py_dl_close(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *handle;
  if (check_nargs("dl_close", nargs, 1) < 0 || parse_ptr(args[0], &handle) < 0) return NULL;
  /* The handle must come from dl_open and be closed once: glibc cannot detect reuse. */
  int rc;
  const char *err = NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = dlclose(handle); /* runs the library's destructors when this was the last reference */
  if (rc != 0) err = dlerror();
  Py_END_ALLOW_THREADS
  if (rc != 0) return set_dl_error(err, "dlclose failed");
  Py_RETURN_NONE;
}

static PyObject *py_dl_symbol(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *handle;
  if (check_nargs("dl_symbol", nargs, 2) < 0 || parse_ptr(args[0], &handle) < 0) return NULL;
  const char *name = PyUnicode_AsUTF8(args[1]);
  if (name == NULL) return NULL;
  dlerror(); /* clear a stale error */
  void *addr = dlsym(handle, name);
  if (addr == NULL) Py_RETURN_NONE;

  /* dlsym also searches the library's dependencies (libc's "system", "environ"): only a
   * definition inside the library itself counts. */
  struct link_map *own = NULL, *defining = NULL;
  Dl_info info;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &own) != 0 || own == NULL ||
      dladdr1(addr, &info, (void **)&defining, RTLD_DL_LINKMAP) == 0 || defining != own)
    Py_RETURN_NONE;

  const ElfW(Sym) *sym = NULL;
  unsigned long long size = 0;
  int kind = 2;
  if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL) {
    size = (unsigned long long)sym->st_size;
    switch (sym->st_info & 0xf) { /* ELF{32,64}_ST_TYPE */
    case STT_FUNC: kind = 0; break;
    case STT_OBJECT:
    case STT_COMMON: kind = 1; break;
    default: kind = 2; break;
    }
  }
  return Py_BuildValue("(NKi)", from_ptr(addr), size, kind);
}

/* The load base (link_map l_addr) of a library: symbol values of the library are relative
 * to it. */
static PyObject *py_dl_base(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *handle;
  if (check_nargs("dl_base", nargs, 1) < 0 || parse_ptr(args[0], &handle) < 0) return NULL;
  struct link_map *map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL)
    return set_dl_error(dlerror(), "dlinfo failed");
  return PyLong_FromUnsignedLongLong((unsigned long long)map->l_addr);
}

/* ------------------------------------------------------------------------------------ */
/* Memory                                                                                 */

static PyObject *py_mem_alloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  size_t size;
  if (check_nargs("mem_alloc", nargs, 1) < 0 || parse_size(args[0], &size) < 0) return NULL;
  void *p = NULL;
  /* A zero-size allocation still returns a unique, freeable address. */
  if (posix_memalign(&p, LOCAL_MEM_ALIGN, size ? size : 1) != 0) return PyErr_NoMemory();
  return from_ptr(p);
}

static PyObject *py_mem_free(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *p;
  if (check_nargs("mem_free", nargs, 1) < 0 || parse_ptr(args[0], &p) < 0) return NULL;
  free(p);
  Py_RETURN_NONE;
}

/* Device memory of the host device: pages of its own per allocation, so that a freed
 * allocation is unmapped (never left in the C heap, where a use after free would corrupt
 * other data unnoticed) and the core's mapping check refuses it. */
#define HUGE_PAGE ((size_t)2 << 20)

/* Anonymous pages for one allocation. From HUGE_PAGE bytes on they start on a HUGE_PAGE
 * boundary and are advised for transparent huge pages (as numpy does for its large arrays):
 * streaming kernels then walk 512x fewer page-table entries, which a virtual machine's nested
 * paging makes costly. The alignment slack is unmapped again, so munmap(p, size) frees it all.
 * NULL when out of memory. */
static void *pages_map(size_t size) {
  size_t span = size >= HUGE_PAGE ? size + HUGE_PAGE : size;
  if (span < size) return NULL;
  unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (span == size) return p;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *start = (unsigned char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  unsigned char *end = start + ((size + page - 1) & ~(page - 1));
  if (start > p) munmap(p, (size_t)(start - p));
  if (p + span > end) munmap(end, (size_t)(p + span - end));
#ifdef MADV_HUGEPAGE
  madvise(start, (size_t)(end - start), MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
  return start;
}

/* A new mapping of size bytes: its address as an int, or (p NULL) NULL with MemoryError
 * "mmap of <size> bytes (<size in hex>) <failed>". */
static PyObject *mapping(void *p, size_t size, const char *failed) {
  if (p != NULL) return from_ptr(p);
  char why[200];
  snprintf(why, sizeof why, "mmap of %zu bytes (%#zx) %s", size, size, failed);
  PyErr_SetString(PyExc_MemoryError, why);
  return NULL;
}

static PyObject *py_pages_alloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  size_t size;
  if (check_nargs("pages_alloc", nargs, 1) < 0 || parse_size(args[0], &size) < 0) return NULL;
  char why[160];
  if (size > SIZE_MAX / 2) {
    snprintf(why, sizeof why, "%zu bytes (%#zx) is more than the address space holds", size, size);
    PyErr_SetString(PyExc_MemoryError, why);
    return NULL;
  }
  void *p;
  int err = 0;
  Py_BEGIN_ALLOW_THREADS
  p = pages_map(size ? size : 1);
  err = errno;
  Py_END_ALLOW_THREADS
  if (p == NULL) snprintf(why, sizeof why, "failed: %s", strerror(err));
  return mapping(p, size, why);
}

static PyObject *py_pages_free(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *p;
  size_t size;
  if (check_nargs("pages_free", nargs, 2) < 0 || parse_ptr(args[0], &p) < 0 ||
      parse_size(args[1], &size) < 0)
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = munmap(p, size ? size : 1);
  Py_END_ALLOW_THREADS
  if (rc != 0) return PyErr_SetFromErrno(PyExc_OSError);
  Py_RETURN_NONE;
}

static PyObject *py_checked_alloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  size_t size, alignment;
  if (check_nargs("checked_alloc", nargs, 2) < 0 || parse_size(args[0], &size) < 0 || parse_size(args[1], &alignment) < 0)
    return NULL;
  if (alignment == 0 || (alignment & (alignment - 1))) {
    PyErr_SetString(PyExc_ValueError, "alignment must be a power of two");
    return NULL;
  }
  return mapping(checked_alloc(size, alignment), size, "and a guard page failed");
}

static PyObject *py_checked_free(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *p;
  if (check_nargs("checked_free", nargs, 1) < 0 || parse_ptr(args[0], &p) < 0) return NULL;
  if (checked_free(p) != 0) return PyErr_SetFromErrno(PyExc_OSError);
  Py_RETURN_NONE;
}

/* Fills size bytes at dst with the repeated pattern; the last copy may be partial. */
void fill_pattern(unsigned char *dst, const void *pat, size_t plen, size_t size) {
  if (plen == 1) {
    memset(dst, *(const unsigned char *)pat, size);
    return;
  }
  size_t done = plen < size ? plen : size;
  memmove(dst, pat, done); /* the pattern may live inside the destination */
  while (done < size) {    /* dst[0, done) is whole patterns: double it */
    size_t n = size - done < done ? size - done : done;
    memcpy(dst + done, dst, n);
    done += n;
  }
}

static PyObject *py_fill(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *dst;
  size_t size;
  if (check_nargs("fill", nargs, 3) < 0 || parse_ptr(args[0], &dst) < 0 ||
      parse_size(args[2], &size) < 0)
    return NULL;
  Py_buffer pat;
  if (PyObject_GetBuffer(args[1], &pat, PyBUF_SIMPLE) < 0) return NULL;
  if (pat.len == 0) {
    PyBuffer_Release(&pat);
    PyErr_SetString(PyExc_ValueError, "fill pattern is empty");
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS
  fill_pattern(dst, pat.buf, (size_t)pat.len, size);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&pat);
  Py_RETURN_NONE;
}

static PyObject *py_copy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  void *dst, *src;
  size_t size;
  if (check_nargs("copy", nargs, 3) < 0 || parse_ptr(args[0], &dst) < 0 ||
      parse_ptr(args[1], &src) < 0 || parse_size(args[2], &size) < 0)
    return NULL;
  if (size == 0) Py_RETURN_NONE;
  Py_BEGIN_ALLOW_THREADS
  memmove(dst, src, size);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------ */

#define FASTCALL(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

static PyMethodDef native_methods[] = {
    FASTCALL(pool_create, "pool_create(nthreads) -> handle\n\n"
                          "Start a pool of nthreads persistent worker threads (0: caller only)."),
    FASTCALL(pool_destroy, "pool_destroy(handle)\n\n"
                           "Wait for a running launch, stop and join every worker, free the pool."),
    FASTCALL(pool_set_local_limit, "pool_set_local_limit(pool, limit)\n\n"
                                   "The device's local memory limit, which the native entry points read."),
    FASTCALL(pool_on_fault, "pool_on_fault(pool, listener)\n\n"
                            "listener(error) is called once, with the first DeviceFaulted error made for the pool."),
    {"pool_fault", (PyCFunction)py_pool_fault, METH_O,
     "pool_fault(pool) -> DeviceFaulted | None\n\nThe error of the pool's device once a kernel faulted on it."},
    FASTCALL(call_guarded, "call_guarded(pool, kernel, args, group)\n\n"
                           "kernel(args, group) under a fault guard, the GIL released (a cooperative group)."),
    FASTCALL(checked_alloc, "checked_alloc(size, alignment) -> address\n\n"
                            "OFFLOAD_HOST_CHECK's allocation: right-aligned against a PROT_NONE guard page."),
    FASTCALL(checked_free, "checked_free(address)\n\nUnmap an allocation of checked_alloc."),
    FASTCALL(launch, "launch(pool, kernel, args, size | ngx, ngy, ngz, gsx, gsy, gsz, dyn_mem)\n\n"
                     "Run kernel once per work-group of the grid on the pool and the calling\n"
                     "thread, with the GIL released; returns when every group finished."),
    FASTCALL(dl_open, "dl_open(path) -> handle\n\n"
                      "dlopen(path, RTLD_NOW | RTLD_LOCAL); OSError with dlerror() on failure."),
    FASTCALL(dl_close, "dl_close(handle)\n\ndlclose; OSError with dlerror() on failure."),
    FASTCALL(dl_symbol, "dl_symbol(handle, name) -> (address, size, kind) | None\n\n"
                        "A symbol the library itself defines (None for one of its dependencies').\n"
                        "kind: 0 function, 1 data object, 2 other."),
    FASTCALL(dl_base, "dl_base(handle) -> address\n\nThe load base (l_addr) of the library."),
    FASTCALL(mem_alloc, "mem_alloc(size) -> address\n\n64-byte aligned allocation."),
    FASTCALL(mem_free, "mem_free(address)\n\nFree memory from mem_alloc."),
    FASTCALL(pages_alloc, "pages_alloc(size) -> address\n\n"
                          "Anonymous pages of their own (page-aligned, zeroed) for one allocation."),
    FASTCALL(pages_free, "pages_free(address, size)\n\nUnmap memory from pages_alloc(size)."),
    FASTCALL(fill, "fill(address, pattern, size)\n\n"
                   "Fill size bytes with the repeated pattern (the last copy may be partial)."),
    FASTCALL(copy, "copy(dst, src, size)\n\nmemmove with the GIL released."),
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot native_slots[] = {
    {Py_mod_exec, (void *)fault_exec},     /* DeviceFaulted */
    {Py_mod_exec, (void *)hostq_exec},     /* the native queues and events */
    {Py_mod_exec, (void *)hostentry_exec}, /* the core's native entry points */
    {0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "offload_host._native",
    .m_doc = "Native worker pool, queues, dynamic loading and memory helpers of offload-host.",
    .m_size = 0,
    .m_methods = native_methods,
    .m_slots = native_slots,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModuleDef_Init(&native_module); }
