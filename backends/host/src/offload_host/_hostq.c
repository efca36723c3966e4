/* _hostq.c - the native in-order queues and events of offload-host.
 *
 * A queue is a FIFO of operations run one at a time, in submission order, by whichever thread
 * holds the queue's runner token:
 *   - the device's executor: one native thread per device that runs the native work
 *     (launches, copies, fills, event records, satisfied event waits) of queues that have no
 *     worker, so that work progresses without anyone waiting for it;
 *   - the queue's worker: a Python thread, started by _queue.py at the first host function or
 *     unsatisfied event wait, that lives inside Queue.work() with the GIL released and takes the
 *     GIL only to run a host function; from then on it runs all of the queue's work;
 *   - a waiting caller (Queue.sync, Event.wait): instead of sleeping it runs native work up to
 *     what it waits for itself, and hands the queue back at the first host function or
 *     unsatisfied event wait.
 * So host functions always run on the worker thread, in queue order, and a sync of native work
 * needs no thread wake-up at all.
 *
 * Errors of operations are kept with their position (host functions: the exception; native
 * operations: a MemoryError, or the device's DeviceFaulted for the first launch of the queue that
 * faulted or found the device faulted) and handed out, all of them, by the next sync that covers
 * them (a queue sync, or the sync of a later event). Once the device is faulted (_fault.c) its
 * launches, copies and fills are not run, submissions are refused, and every sync of its queues
 * raises the fault (a release only reports it if the queue had not). Waits slice their sleep so that the main thread
 * sees Ctrl-C (PyErr_CheckSignals) within WAIT_SLICE_NS; a waiter that is running an operation
 * itself sees it when that operation ends.
 *
 * Backpressure: a queue holds at most MAX_PENDING submitted but unfinished ops; a submission
 * beyond that waits (helping, like a sync, and as interruptible by Ctrl-C) until at most half
 * of them are left, so a launch loop cannot run minutes ahead of its device and Ctrl-C stops it
 * within a slice. A host function enqueueing work is never held back (its own queue cannot
 * progress while it runs). A waiter on the main thread helps at most HELP_BATCH ops at a time
 * and checks for signals between batches after each WAIT_SLICE_NS.
 *
 * Release: no more submissions (they fail with QueueReleased, an OffloadError INVALID_QUEUE);
 * what is queued still runs (or, with discard, is dropped unstarted), the worker leaves work().
 *
 * Locking: q->mu, then exec->mu, then an event's mu; the GIL is never requested while one of
 * them is held.
 */
#define _GNU_SOURCE
#include "_native.h"

#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_SLICE_NS 20000000L /* 20 ms between checks for a pending signal */
#define INLINE_ARGS 64          /* kernel argument bytes kept inside the op */
#define MAX_PENDING 1024        /* submitted, unfinished ops a queue holds before a submission waits */
#define HELP_BATCH 64           /* ops a helping waiter takes at once */

static __thread int in_host_function; /* this thread is running a host function (a queue worker) */

static pthread_t main_thread; /* the thread that imported the module: the one Python signals */

int hostq_on_main_thread(void) { return pthread_equal(pthread_self(), main_thread); }

/* Waits on cv (mu held) for at most WAIT_SLICE_NS. */
static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += WAIT_SLICE_NS;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(cv, mu, &ts);
}

/* Critical sections here are a few pointer moves: a contended lock spins a little first. */
static void init_mutex(pthread_mutex_t *mu) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
#ifdef PTHREAD_MUTEX_ADAPTIVE_NP
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  pthread_mutex_init(mu, &attr);
  pthread_mutexattr_destroy(&attr);
}

/* Takes a queue's lock. Its critical sections are a few pointer moves, so a contended lock is
 * polled for up to LOCK_SPIN tries (about 15 us) before sleeping: a waiter that sleeps costs a
 * futex wake-up, and where the waiting CPU then idles (a virtual machine's vCPU halts) waking it
 * again takes tens of microseconds, which a submitter meeting the executor once every few
 * batches paid as a third of its time per launch. */
#define LOCK_SPIN 1000
static void lock_spin(pthread_mutex_t *mu) {
  if (pthread_mutex_trylock(mu) == 0) return;
  for (int i = 0; i < LOCK_SPIN; ++i) {
    cpu_relax();
    if (pthread_mutex_trylock(mu) == 0) return;
  }
  pthread_mutex_lock(mu);
}

static void init_cond(pthread_cond_t *cv) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &attr);
  pthread_condattr_destroy(&attr);
}

/* ------------------------------------------------------------------------------------ */
/* Event state: shared by the Event object and the ops that record or wait for it.       */

typedef struct {
  _Atomic long refs;
  _Atomic int done;
  uint64_t timestamp_ns; /* written before done is set */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} ev_t;

static ev_t *ev_new(void) {
  ev_t *ev = calloc(1, sizeof(ev_t));
  if (ev == NULL) return NULL;
  atomic_init(&ev->refs, 1);
  pthread_mutex_init(&ev->mu, NULL);
  init_cond(&ev->cv);
  return ev;
}

static void ev_ref(ev_t *ev) { atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed); }

static void ev_unref(ev_t *ev) {
  if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_cond_destroy(&ev->cv);
  pthread_mutex_destroy(&ev->mu);
  free(ev);
}

static void ev_complete(ev_t *ev) {
  pthread_mutex_lock(&ev->mu);
  if (!atomic_load_explicit(&ev->done, memory_order_relaxed)) {
    ev->timestamp_ns = now_ns();
    atomic_store_explicit(&ev->done, 1, memory_order_release);
    pthread_cond_broadcast(&ev->cv);
  }
  pthread_mutex_unlock(&ev->mu);
}

static int ev_is_done(ev_t *ev) { return atomic_load_explicit(&ev->done, memory_order_acquire); }

/* Blocks until done; no Python involved (a worker waiting for another queue's event). */
static void ev_wait_native(ev_t *ev) {
  if (ev_is_done(ev)) return;
  pthread_mutex_lock(&ev->mu);
  while (!atomic_load_explicit(&ev->done, memory_order_relaxed)) pthread_cond_wait(&ev->cv, &ev->mu);
  pthread_mutex_unlock(&ev->mu);
}

/* Called with the GIL held; waits with it released, checking for signals on the main thread.
 * 0 when done, -1 with the signal handler's exception set. */
static int ev_wait_interruptible(ev_t *ev) {
  int is_main = pthread_equal(pthread_self(), main_thread);
  while (!ev_is_done(ev)) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ev->mu);
    if (!atomic_load_explicit(&ev->done, memory_order_relaxed)) {
      if (is_main)
        timed_wait(&ev->cv, &ev->mu);
      else
        pthread_cond_wait(&ev->cv, &ev->mu);
    }
    pthread_mutex_unlock(&ev->mu);
    Py_END_ALLOW_THREADS
    if (is_main && PyErr_CheckSignals() < 0) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Operations                                                                             */

enum { OP_LAUNCH, OP_COPY, OP_FILL, OP_RECORD, OP_WAIT, OP_CALL, OP_STAMP };

typedef struct op {
  struct op *next;
  uint64_t seq; /* 1 for the queue's first op */
  int kind;
  pool_t *pool;
  union {
    struct {
      offload_kernel_fn kernel;
      offload_dim3_t num_groups, group_size;
      size_t dyn_mem;
      void *args; /* NULL, inline_args, or a malloc'd copy */
      _Atomic uint64_t *stamp; /* the timeline's stamp (hostq_submit_stamp): set when it ran, or NULL */
    } launch;
    struct {
      void *dst;
      const void *src;
      size_t size;
    } copy;
    struct {
      void *dst;
      size_t size, plen;
      void *pattern; /* inline_args or a malloc'd copy */
    } fill;
    ev_t *ev;
    PyObject *call;
    _Atomic uint64_t *stamp; /* OP_STAMP: where the time it was reached goes */
  } u;
  unsigned char inline_args[INLINE_ARGS];
} op_t;

/* A private copy of len bytes for the op: inside it when small. NULL when out of memory. */
static void *op_keep(op_t *op, const void *data, size_t len) {
  void *p = len <= INLINE_ARGS ? op->inline_args : malloc(len);
  if (p != NULL) memcpy(p, data, len);
  return p;
}

/* Op nodes are recycled: a burst of submissions then reuses memory instead of growing the heap
 * (whose fresh pages fault, and which glibc trims again after each burst). Runners give nodes
 * back onto a lock-free stack (pushes only, so no ABA); submitters take the whole stack at once
 * into their own list, under a lock only submitters use. So a submitter and the thread running
 * its ops never wait for each other here. At most about OP_POOL_MAX nodes (2.5 MiB) are kept. */
#define OP_POOL_MAX 16384
static op_t *_Atomic op_returned;        /* given back, not yet taken over */
static _Atomic size_t op_kept;           /* nodes in op_returned and op_spare together */
static pthread_mutex_t op_spare_mu = PTHREAD_MUTEX_INITIALIZER;
static op_t *op_spare;                   /* taken over by submitters; under op_spare_mu */

static op_t *op_take(void) {
  pthread_mutex_lock(&op_spare_mu);
  op_t *op = op_spare;
  if (op == NULL) op = atomic_exchange_explicit(&op_returned, NULL, memory_order_acquire);
  if (op != NULL) {
    op_spare = op->next;
    atomic_fetch_sub_explicit(&op_kept, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&op_spare_mu);
  return op != NULL ? op : malloc(sizeof(op_t));
}

/* Gives back the nodes of a NULL-terminated list (their resources already released). */
static void op_give_list(op_t *first) {
  if (first == NULL) return;
  op_t *last = first;
  size_t n = 1;
  while (last->next != NULL) {
    last = last->next;
    n++;
  }
  if (atomic_load_explicit(&op_kept, memory_order_relaxed) + n <= OP_POOL_MAX) {
    atomic_fetch_add_explicit(&op_kept, n, memory_order_relaxed);
    op_t *top = atomic_load_explicit(&op_returned, memory_order_relaxed);
    do last->next = top;
    while (!atomic_compare_exchange_weak_explicit(&op_returned, &top, first, memory_order_release,
                                                  memory_order_relaxed));
    return;
  }
  while (first != NULL) {
    op_t *next = first->next;
    free(first);
    first = next;
  }
}

static void op_give(op_t *op) {
  op->next = NULL;
  op_give_list(op);
}

/* Releases what an op that needs no Python holds (every kind but OP_CALL), not the node. */
static void op_clear_native(op_t *op) {
  switch (op->kind) {
  case OP_LAUNCH:
    if (op->u.launch.args != NULL && op->u.launch.args != op->inline_args) free(op->u.launch.args);
    break;
  case OP_FILL:
    if (op->u.fill.pattern != op->inline_args) free(op->u.fill.pattern);
    break;
  case OP_RECORD:
  case OP_WAIT: ev_unref(op->u.ev); break;
  default: break;
  }
}

/* Frees an op that needs no Python. */
static void op_free_native(op_t *op) {
  op_clear_native(op);
  op_give(op);
}

/* Runs a native op; 0 on success, -1 on failure (out of memory), -3 when the device is faulted
 * (a launch that faulted, or a launch, copy or fill that was not run because it is). */
static void stamp_now(_Atomic uint64_t *when) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  atomic_store_explicit(when, now ? now : 1, memory_order_release);
}

static int op_run_native(op_t *op) {
  switch (op->kind) {
  case OP_LAUNCH: {
    int rc = pool_run(op->pool, op->u.launch.kernel, op->u.launch.args, op->u.launch.num_groups,
                      op->u.launch.group_size, op->u.launch.dyn_mem);
    if (op->u.launch.stamp != NULL) stamp_now(op->u.launch.stamp);
    return rc;
  }
  case OP_COPY:
    if (op->pool != NULL && pool_faulted(op->pool)) return -3;
    pool_copy(op->pool, op->u.copy.dst, op->u.copy.src, op->u.copy.size);
    return 0;
  case OP_FILL:
    if (op->pool != NULL && pool_faulted(op->pool)) return -3;
    pool_fill(op->pool, op->u.fill.dst, op->u.fill.pattern, op->u.fill.plen, op->u.fill.size);
    return 0;
  case OP_RECORD: return 0; /* completed by finish_op, once counted */
  case OP_WAIT: ev_wait_native(op->u.ev); return 0;
  case OP_STAMP: stamp_now(op->u.stamp); return 0;
  default: return 0;
  }
}

/* ------------------------------------------------------------------------------------ */
/* Queues                                                                                 */

enum { WORKER_NONE, WORKER_WANTED, WORKER_EXITED };

typedef struct QueueObject QueueObject;

/* The executor of a device: one native thread that runs the native work of queues that have
 * no worker thread (a queue gets one only for host functions and event waits), so that native
 * work progresses without anyone syncing. Refcounted: its device and every queue using it. */
typedef struct {
  uint64_t magic;
  _Atomic long refs;
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* the service thread: a queue became ready, or stop */
  pthread_cond_t idle_cv; /* `current` changed */
  QueueObject *ready_head, *ready_tail; /* queues with native work to run, each once */
  QueueObject *current; /* the queue being serviced */
  int sleeping, stop, started;
  pthread_t thread;
} exec_t;

#define EXEC_MAGIC 0x6f6c65786563ULL
#define SPIN_NS 30000 /* a waiter polls a running queue this long before sleeping */
#define EXEC_TURN 256 /* ops the service thread runs of one queue before the next queue */
#define EXEC_DELAY_NS 50000 /* a ready queue is serviced this long after it became ready: the
                             * submitter fills it meanwhile without contention, the executor then
                             * takes a run at once (a waiting caller helps itself without delay) */

struct QueueObject {
  PyObject_HEAD
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the worker: work arrived, the runner token came free, release */
  pthread_cond_t done_cv; /* waiters: an op completed, the token came free, the worker exited */
  op_t *head, *tail;
  uint64_t submitted, completed; /* op counts; completed <= submitted */
  int running;                   /* an op is being run by `runner` */
  int runner_is_worker;
  pthread_t runner;
  int worker;          /* WORKER_*: WANTED from the first submission until work() returns */
  int worker_sleeping; /* the worker waits on work_cv */
  int waiters;         /* threads waiting on done_cv */
  uint64_t wake_at;    /* the smallest `completed` a waiter waits for (UINT64_MAX: none) */
  int released;        /* no more submissions; the worker ends once the queue is empty */
  uint64_t *failed;    /* seqs of native ops that failed, not yet reported (mu); FAULT_BIT: the fault */
  size_t nfailed, capfailed;
  int fault_noted;     /* the device's fault was kept for this queue once (mu) */
  pool_t *pool;        /* the device's pool: its fault (NULL: a queue without a device) */
  const _Atomic int *faulted; /* pool_fault_flag(pool), read inline by q_push_native */
  PyObject *errors;    /* [(seq, exception)] of host functions, not yet reported (GIL) */
  exec_t *exec;        /* NULL: native work waits for the worker or a sync */
  QueueObject *ready_next; /* in exec's ready list; guarded by exec->mu */
  uint64_t ready_since;    /* when it entered the ready list; guarded by exec->mu */
  int in_ready;            /* written under exec->mu; read without it by exec_push */
};

static void exec_unref(exec_t *ex) {
  if (atomic_fetch_sub_explicit(&ex->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_cond_destroy(&ex->idle_cv);
  pthread_cond_destroy(&ex->cv);
  pthread_mutex_destroy(&ex->mu);
  ex->magic = 0;
  free(ex);
}

/* Puts q in the ready list (q->mu held). 0 on success, -1 if the executor has stopped. */
static int exec_push(exec_t *ex, QueueObject *q) {
  int rc = 0;
  /* Already waiting its turn (the common case while a batch is submitted): the service thread
   * takes it later, under q->mu, so it sees the op just appended. No lock needed to know. */
  if (__atomic_load_n(&q->in_ready, __ATOMIC_RELAXED)) return 0;
  lock_spin(&ex->mu);
  if (ex->stop) {
    rc = -1;
  } else if (!q->in_ready) {
    __atomic_store_n(&q->in_ready, 1, __ATOMIC_RELAXED);
    q->ready_next = NULL;
    q->ready_since = now_ns();
    if (ex->ready_tail) ex->ready_tail->ready_next = q;
    else ex->ready_head = q;
    ex->ready_tail = q;
    if (ex->sleeping) pthread_cond_signal(&ex->cv);
  }
  pthread_mutex_unlock(&ex->mu);
  return rc;
}

/* Takes q out of the ready list and waits until the service thread is not inside it (q->mu
 * not held): afterwards the executor never touches q again unless q is pushed anew. */
static void exec_forget(exec_t *ex, QueueObject *q) {
  lock_spin(&ex->mu);
  if (q->in_ready) {
    QueueObject **link = &ex->ready_head, *prev = NULL;
    while (*link != q) {
      prev = *link;
      link = &(*link)->ready_next;
    }
    *link = q->ready_next;
    if (ex->ready_tail == q) ex->ready_tail = prev;
    __atomic_store_n(&q->in_ready, 0, __ATOMIC_RELAXED);
  }
  while (ex->current == q) pthread_cond_wait(&ex->idle_cv, &ex->mu);
  pthread_mutex_unlock(&ex->mu);
}

static PyObject *SubmitError;   /* _native.QueueReleased, an offload.OffloadError */
static PyObject *InvalidQueue;  /* offload.ErrorCode.INVALID_QUEUE */

static exec_t *exec_from(PyObject *obj);

static int q_init(QueueObject *self, PyObject *args, PyObject *kwds) {
  PyObject *executor = Py_None, *pool = Py_None;
  if ((kwds && PyDict_GET_SIZE(kwds)) || !PyArg_UnpackTuple(args, "Queue", 0, 2, &executor, &pool)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Queue() takes no keyword arguments");
    return -1;
  }
  if (self->errors != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "Queue is already initialised");
    return -1;
  }
  exec_t *ex = NULL;
  if (executor != Py_None && (ex = exec_from(executor)) == NULL) return -1;
  if (pool != Py_None && (self->pool = pool_from(pool)) == NULL) return -1;
  if (self->pool != NULL) self->faulted = pool_fault_flag(self->pool);
  if (ex != NULL) atomic_fetch_add_explicit(&ex->refs, 1, memory_order_relaxed);
  self->exec = ex;
  self->wake_at = UINT64_MAX;
  self->errors = PyList_New(0);
  if (self->errors == NULL) return -1;
  init_mutex(&self->mu);
  init_cond(&self->work_cv);
  init_cond(&self->done_cv);
  return 0;
}

/* Frees a detached list of ops; the GIL is held (host functions are dropped unrun). */
static void free_ops(op_t *op) {
  while (op != NULL) {
    op_t *next = op->next;
    if (op->kind == OP_CALL) {
      Py_DECREF(op->u.call);
      op_give(op);
    } else {
      if (op->kind == OP_RECORD) ev_complete(op->u.ev); /* nobody waits forever for dropped work */
      op_free_native(op);
    }
    op = next;
  }
}

/* Set in a child made by fork(): the parent's executor and workers do not exist there, and a
 * lock one of them held at the fork stays held forever, so queues and events made before the
 * fork are freed without touching them (their memory leaks in the child; the core refuses every
 * call there anyway). */
static int forked_child;
static void note_forked_child(void) { forked_child = 1; }

static void q_dealloc(QueueObject *self) {
  if (forked_child) {
    Py_TYPE(self)->tp_free((PyObject *)self);
    return;
  }
  if (self->errors != NULL) { /* initialised: no worker is left, it holds a reference */
    if (self->exec != NULL) {
      Py_BEGIN_ALLOW_THREADS
      exec_forget(self->exec, self);
      Py_END_ALLOW_THREADS
      exec_unref(self->exec);
    }
    free_ops(self->head);
    Py_CLEAR(self->errors);
    free(self->failed);
    pthread_cond_destroy(&self->done_cv);
    pthread_cond_destroy(&self->work_cv);
    pthread_mutex_destroy(&self->mu);
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int q_ready(QueueObject *self) {
  if (self->errors != NULL) return 0;
  PyErr_SetString(PyExc_RuntimeError, "Queue.__init__ was not called");
  return -1;
}

static int helpable(const op_t *op);

/* Makes sure someone runs the head op when nobody is running (q->mu held): the worker when
 * there is one, else the executor. -1 when neither can (then a worker must be started). */
static int kick(QueueObject *q) {
  if (q->head == NULL || q->running) return 0;
  if (q->worker == WORKER_WANTED) {
    if (q->worker_sleeping) pthread_cond_signal(&q->work_cv);
    return 0;
  }
  if (q->worker == WORKER_NONE && helpable(q->head)) return q->exec ? exec_push(q->exec, q) : -1;
  return 0;
}

static int wait_until(QueueObject *self, uint64_t target);

/* Appends op. Returns 1 when the caller must start the worker (Queue.work on a new thread),
 * 0 otherwise, -1 (op freed, QueueReleased or the signal handler's exception set) when the
 * queue was released or Ctrl-C interrupted the wait of a full queue. GIL held. */
static int q_push(QueueObject *self, op_t *op) {
  op->next = NULL;
  int start = 0;
  if (self->pool != NULL && pool_faulted(self->pool)) { /* as CUDA refuses work after an illegal address */
    if (op->kind == OP_CALL) {
      Py_DECREF(op->u.call);
      op_give(op);
    } else {
      op_free_native(op);
    }
    pool_raise_fault(self->pool);
    return -1;
  }
  lock_spin(&self->mu);
  if (!in_host_function && !self->released && self->submitted - self->completed >= MAX_PENDING) {
    uint64_t target = self->submitted - MAX_PENDING / 2; /* then room for half a queue more */
    int running_here = self->running && pthread_equal(self->runner, pthread_self());
    pthread_mutex_unlock(&self->mu);
    if (!running_here && wait_until(self, target) < 0) {
      if (op->kind == OP_CALL) {
        Py_DECREF(op->u.call);
        op_give(op);
      } else {
        op_free_native(op);
      }
      return -1;
    }
    lock_spin(&self->mu);
  }
  if (self->released) {
    pthread_mutex_unlock(&self->mu);
    if (op->kind == OP_CALL) {
      Py_DECREF(op->u.call);
      op_give(op);
    } else {
      op_free_native(op);
    }
    PyObject *error = PyObject_CallFunction(SubmitError, "Os", InvalidQueue,
                                            "the queue was destroyed while this work was submitted");
    if (error != NULL) {
      PyErr_SetObject(SubmitError, error);
      Py_DECREF(error);
    }
    return -1;
  }
  if (self->tail) self->tail->next = op;
  else self->head = op;
  self->tail = op;
  op->seq = ++self->submitted;
  /* Host functions and event waits need the worker thread; native work only needs someone. */
  int blocking = op->kind == OP_CALL || (op->kind == OP_WAIT && !ev_is_done(op->u.ev));
  if (self->worker != WORKER_NONE) {
    kick(self);
  } else if (blocking || kick(self) < 0) {
    self->worker = WORKER_WANTED;
    start = 1;
  }
  pthread_mutex_unlock(&self->mu);
  return start;
}

/* q_push for the core's native entry points, without the GIL: appends op only when that needs
 * no wait (a full queue), no new worker thread and no error (a released queue). 0 appended; 1
 * not appended (op untouched): the Python hook then submits it, waiting, starting the worker
 * or raising as q_push does. */
static int q_push_native(QueueObject *self, op_t *op) {
  op->next = NULL;
  lock_spin(&self->mu);
  if (self->released || (!in_host_function && self->submitted - self->completed >= MAX_PENDING) ||
      (self->worker == WORKER_NONE && self->exec == NULL) ||
      (self->faulted != NULL && atomic_load_explicit(self->faulted, memory_order_acquire))) {
    pthread_mutex_unlock(&self->mu);
    return 1;
  }
  op_t *prev = self->tail;
  if (prev) prev->next = op;
  else self->head = op;
  self->tail = op;
  op->seq = ++self->submitted;
  if (self->worker != WORKER_NONE) {
    kick(self);
  } else if (kick(self) < 0) { /* the executor stopped: nobody saw op, take it back */
    if (prev) prev->next = NULL;
    else self->head = NULL;
    self->tail = prev;
    --self->submitted;
    pthread_mutex_unlock(&self->mu);
    return 1;
  }
  pthread_mutex_unlock(&self->mu);
  return 0;
}

int hostq_submit_launch(void *queue, pool_t *pool, offload_kernel_fn kernel, const void *args, size_t args_size,
                        offload_dim3_t num_groups, offload_dim3_t group_size, size_t dyn_mem, uint64_t *when) {
  op_t *op = op_take();
  if (op == NULL) return 1;
  op->kind = OP_LAUNCH;
  op->pool = pool;
  op->u.launch.kernel = kernel;
  op->u.launch.num_groups = num_groups;
  op->u.launch.group_size = group_size;
  op->u.launch.dyn_mem = dyn_mem;
  op->u.launch.args = NULL; /* copied, as q_launch does: the caller may reuse its buffer */
  op->u.launch.stamp = (_Atomic uint64_t *)when;
  if (args_size > 0 && (op->u.launch.args = op_keep(op, args, args_size)) == NULL) {
    op_give(op);
    return 1;
  }
  if (q_push_native((QueueObject *)queue, op) == 0) return 0;
  op_free_native(op);
  return 1;
}

int hostq_submit_stamp(void *queue, uint64_t *when) {
  /* the common case costs no op: the launch just queued (still waiting) stamps itself when run */
  QueueObject *self = queue;
  lock_spin(&self->mu);
  op_t *tail = self->tail;
  if (tail != NULL && tail->kind == OP_LAUNCH && tail->u.launch.stamp == NULL && !self->released) {
    tail->u.launch.stamp = (_Atomic uint64_t *)when;
    pthread_mutex_unlock(&self->mu);
    return 0;
  }
  pthread_mutex_unlock(&self->mu);
  op_t *op = op_take();
  if (op == NULL) return 1;
  op->kind = OP_STAMP;
  op->pool = NULL;
  op->u.stamp = (_Atomic uint64_t *)when;
  if (q_push_native((QueueObject *)queue, op) == 0) return 0;
  op_free_native(op);
  return 1;
}

int hostq_pending(void *queue) {
  QueueObject *self = queue;
  lock_spin(&self->mu);
  int pending = self->completed != self->submitted || self->running;
  pthread_mutex_unlock(&self->mu);
  return pending;
}

static PyObject *push_result(QueueObject *self, op_t *op) {
  int rc = q_push(self, op);
  if (rc < 0) return NULL;
  return PyBool_FromLong(rc);
}

static op_t *op_new(int kind, pool_t *pool) {
  op_t *op = op_take();
  if (op == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  op->kind = kind;
  op->pool = pool;
  op->next = NULL;
  return op;
}

static PyObject *q_launch(QueueObject *self, PyObject *const *args, Py_ssize_t nargs) {
  launch_t l;
  if (q_ready(self) < 0 || parse_launch(args, nargs, &l) < 0) return NULL;
  op_t *op = op_new(OP_LAUNCH, l.pool);
  if (op == NULL) return NULL;
  op->u.launch.kernel = l.kernel;
  op->u.launch.num_groups = l.num_groups;
  op->u.launch.group_size = l.group_size;
  op->u.launch.dyn_mem = l.dyn_mem;
  op->u.launch.args = NULL;
  op->u.launch.stamp = NULL;
  if (args[2] != Py_None) { /* copied: the caller may reuse its buffer once we return */
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
      op_give(op);
      return NULL;
    }
    if (view.len > 0 && (op->u.launch.args = op_keep(op, view.buf, (size_t)view.len)) == NULL) {
      PyBuffer_Release(&view);
      op_give(op);
      return PyErr_NoMemory();
    }
    PyBuffer_Release(&view);
  }
  return push_result(self, op);
}

/* (pool | None, dst, src, size): the arguments of a copy, queued or not. */
typedef struct {
  pool_t *pool;
  void *dst, *src;
  size_t size;
} copy_args_t;

/* pool | None: the live pool, or NULL for None; -1 with an exception for anything else. */
static int parse_pool_or_none(PyObject *obj, pool_t **out) {
  *out = obj == Py_None ? NULL : pool_from(obj);
  return *out == NULL && obj != Py_None ? -1 : 0;
}

static int parse_copy(const char *fn, PyObject *const *args, Py_ssize_t nargs, copy_args_t *out) {
  if (check_nargs(fn, nargs, 4) < 0 || parse_pool_or_none(args[0], &out->pool) < 0) return -1;
  if (parse_ptr(args[1], &out->dst) < 0 || parse_ptr(args[2], &out->src) < 0) return -1;
  return parse_size(args[3], &out->size);
}

/* (pool | None, dst, pattern, size): the arguments of a fill; on success the caller releases
 * out->pattern. */
typedef struct {
  pool_t *pool;
  void *dst;
  size_t size;
  Py_buffer pattern;
} fill_args_t;

static int parse_fill(const char *fn, PyObject *const *args, Py_ssize_t nargs, fill_args_t *out) {
  if (check_nargs(fn, nargs, 4) < 0 || parse_pool_or_none(args[0], &out->pool) < 0) return -1;
  if (parse_ptr(args[1], &out->dst) < 0 || parse_size(args[3], &out->size) < 0) return -1;
  if (PyObject_GetBuffer(args[2], &out->pattern, PyBUF_SIMPLE) < 0) return -1;
  if (out->pattern.len == 0) {
    PyBuffer_Release(&out->pattern);
    PyErr_SetString(PyExc_ValueError, "fill pattern is empty");
    return -1;
  }
  return 0;
}

static PyObject *q_copy(QueueObject *self, PyObject *const *args, Py_ssize_t nargs) {
  copy_args_t c;
  if (q_ready(self) < 0 || parse_copy("copy", args, nargs, &c) < 0) return NULL;
  op_t *op = op_new(OP_COPY, c.pool);
  if (op == NULL) return NULL;
  op->u.copy.dst = c.dst;
  op->u.copy.src = c.src;
  op->u.copy.size = c.size;
  return push_result(self, op);
}

static PyObject *q_fill(QueueObject *self, PyObject *const *args, Py_ssize_t nargs) {
  fill_args_t f;
  if (q_ready(self) < 0 || parse_fill("fill", args, nargs, &f) < 0) return NULL;
  op_t *op = op_new(OP_FILL, f.pool);
  if (op == NULL) {
    PyBuffer_Release(&f.pattern);
    return NULL;
  }
  op->u.fill.dst = f.dst;
  op->u.fill.size = f.size;
  op->u.fill.plen = (size_t)f.pattern.len;
  op->u.fill.pattern = op_keep(op, f.pattern.buf, (size_t)f.pattern.len);
  PyBuffer_Release(&f.pattern);
  if (op->u.fill.pattern == NULL) {
    op_give(op);
    return PyErr_NoMemory();
  }
  return push_result(self, op);
}

static PyObject *q_call(QueueObject *self, PyObject *callable) {
  if (q_ready(self) < 0) return NULL;
  if (!PyCallable_Check(callable)) {
    PyErr_Format(PyExc_TypeError, "expected a callable, got %.100s", Py_TYPE(callable)->tp_name);
    return NULL;
  }
  op_t *op = op_new(OP_CALL, NULL);
  if (op == NULL) return NULL;
  Py_INCREF(callable);
  op->u.call = callable;
  return push_result(self, op);
}

/* ------------------------------------------------------------------------------------ */
/* Events (the Python type)                                                               */

typedef struct {
  PyObject_HEAD
  ev_t *ev;
  QueueObject *queue; /* the queue it was recorded on */
  uint64_t seq;       /* the ops of that queue before it: 1..seq */
} EventObject;

static PyTypeObject EventType;
static PyObject *take_errors(QueueObject *self, uint64_t limit, int sticky);
static int wait_until(QueueObject *self, uint64_t target);

static void e_dealloc(EventObject *self) {
  if (forked_child) {
    Py_TYPE(self)->tp_free((PyObject *)self);
    return;
  }
  if (self->ev != NULL) ev_unref(self->ev);
  Py_XDECREF(self->queue);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *e_is_complete(EventObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(ev_is_done(self->ev));
}

static PyObject *e_wait(EventObject *self, PyObject *unused) {
  (void)unused;
  /* Help the queue up to the event's record op (seq + 1); a dropped record completes too. */
  if (!ev_is_done(self->ev) && wait_until(self->queue, self->seq + 1) < 0) return NULL;
  if (ev_wait_interruptible(self->ev) < 0) return NULL;
  return take_errors(self->queue, self->seq, 1);
}

static PyObject *e_queue(EventObject *self, void *closure) {
  (void)closure;
  return Py_NewRef((PyObject *)self->queue);
}

static PyObject *e_timestamp(EventObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLongLong(ev_is_done(self->ev) ? self->ev->timestamp_ns : 0);
}

static PyMethodDef event_methods[] = {
    {"is_complete", (PyCFunction)e_is_complete, METH_NOARGS, "Whether the event was reached."},
    {"wait", (PyCFunction)e_wait, METH_NOARGS,
     "wait() -> list | None\n\nBlock until the event is reached (Ctrl-C interrupts the wait, not\n"
     "the work); take the kept errors of the operations before it."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef event_getset[] = {
    {"timestamp_ns", (getter)e_timestamp, NULL, "When the event was reached (perf_counter_ns clock); 0 before.",
     NULL},
    {"queue", (getter)e_queue, NULL, "The queue the event was recorded on.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload_host._native.Event",
    .tp_basicsize = sizeof(EventObject),
    .tp_dealloc = (destructor)e_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A point in a queue: complete once every operation submitted before it has run.",
    .tp_methods = event_methods,
    .tp_getset = event_getset,
};

static PyObject *q_record(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (q_ready(self) < 0) return NULL;
  if (self->pool != NULL && pool_faulted(self->pool)) return pool_raise_fault(self->pool);
  EventObject *event = PyObject_New(EventObject, &EventType);
  if (event == NULL) return NULL;
  event->queue = (QueueObject *)Py_NewRef((PyObject *)self);
  if ((event->ev = ev_new()) == NULL) {
    Py_DECREF(event);
    return PyErr_NoMemory();
  }
  lock_spin(&self->mu);
  int idle = self->completed == self->submitted && !self->running;
  event->seq = self->submitted;
  pthread_mutex_unlock(&self->mu);
  int start = 0;
  if (idle) {
    ev_complete(event->ev);
  } else {
    op_t *op = op_new(OP_RECORD, NULL);
    if (op == NULL) {
      Py_DECREF(event);
      return NULL;
    }
    ev_ref(event->ev);
    op->u.ev = event->ev;
    if ((start = q_push(self, op)) < 0) {
      Py_DECREF(event);
      return NULL;
    }
  }
  return Py_BuildValue("(NO)", (PyObject *)event, start ? Py_True : Py_False);
}

static PyObject *q_wait_event(QueueObject *self, PyObject *arg) {
  if (q_ready(self) < 0) return NULL;
  if (!PyObject_TypeCheck(arg, &EventType)) {
    PyErr_Format(PyExc_TypeError, "expected an Event, got %.100s", Py_TYPE(arg)->tp_name);
    return NULL;
  }
  ev_t *ev = ((EventObject *)arg)->ev;
  if (ev_is_done(ev)) Py_RETURN_FALSE;
  op_t *op = op_new(OP_WAIT, NULL);
  if (op == NULL) return NULL;
  ev_ref(ev);
  op->u.ev = ev;
  return push_result(self, op);
}

/* ------------------------------------------------------------------------------------ */
/* Running: the worker and helping waiters                                                */

/* Whether a waiting caller may run op (no Python, no blocking). */
static int helpable(const op_t *op) {
  return op->kind != OP_CALL && (op->kind != OP_WAIT || ev_is_done(op->u.ev));
}

/* Counts a run op as complete; mu held on entry and exit. An event is reached only once its
 * record op counts as complete, so whoever sees the event complete sees the queue idle. */
static void note_failure(QueueObject *self, const op_t *op, int rc);

static void finish_op(QueueObject *self, op_t *op, int rc) {
  __atomic_store_n(&self->completed, self->completed + 1, __ATOMIC_RELEASE); /* polled unlocked */
  if (rc < 0) note_failure(self, op, rc);
  if (op->kind == OP_RECORD) ev_complete(op->u.ev);
  if (self->waiters && self->completed >= self->wake_at) { /* no wake-up per op of a batch */
    self->wake_at = UINT64_MAX;
    pthread_cond_broadcast(&self->done_cv);
  }
}

#define FAULT_BIT ((uint64_t)1 << 63)

/* Keeps the position of a native op that failed (mu held): rc -1 out of memory, -3 the device's
 * fault (kept once per queue: the ops after it were simply not run). */
static void note_failure(QueueObject *self, const op_t *op, int rc) {
  if (rc == -3) {
    if (self->fault_noted) return;
    self->fault_noted = 1;
  }
  if (self->nfailed == self->capfailed) {
    size_t cap = self->capfailed ? 2 * self->capfailed : 8;
    uint64_t *grown = realloc(self->failed, cap * sizeof(uint64_t));
    if (grown != NULL) {
      self->failed = grown;
      self->capfailed = cap;
    }
  }
  if (self->nfailed < self->capfailed) self->failed[self->nfailed++] = op->seq | (rc == -3 ? FAULT_BIT : 0);
}

/* Wakes every waiter (mu held): the runner token came free, or the worker exited. */
static void wake_all(QueueObject *self) {
  if (!self->waiters) return;
  self->wake_at = UINT64_MAX;
  pthread_cond_broadcast(&self->done_cv);
}

/* Waits on done_cv (mu held) until `completed` reaches target or the state changes. */
static void wait_for(QueueObject *self, uint64_t target, int timed) {
  if (target < self->wake_at) self->wake_at = target;
  self->waiters++;
  if (timed) timed_wait(&self->done_cv, &self->mu);
  else pthread_cond_wait(&self->done_cv, &self->mu);
  self->waiters--;
}

static op_t *pop(QueueObject *self) {
  op_t *op = self->head;
  self->head = op->next;
  if (self->head == NULL) self->tail = NULL;
  return op;
}

/* A waiting caller runs helpable ops until `target` ops completed or the head is not helpable.
 * mu held on entry and exit, GIL released, running == 0 on entry. */
static void help(QueueObject *self, uint64_t target, uint64_t deadline) {
  __atomic_store_n(&self->running, 1, __ATOMIC_RELAXED);
  self->runner_is_worker = 0;
  self->runner = pthread_self();
  while (self->completed < target && self->head != NULL && helpable(self->head)) {
    /* Take a run of helpable ops at once (up to target, ending at an event record), run them
     * without the lock, and count them complete together: two lock round trips per run. */
    op_t *first = self->head, *last = first;
    uint64_t n = 1;
    while (last->kind != OP_RECORD && last->next != NULL && helpable(last->next) &&
           self->completed + n < target && n < HELP_BATCH) {
      last = last->next;
      n++;
    }
    self->head = last->next;
    if (self->head == NULL) self->tail = NULL;
    last->next = NULL;
    pthread_mutex_unlock(&self->mu);
    for (op_t *op = first; op != NULL; op = op->next) {
      int rc = op_run_native(op);
      if (rc < 0) {
        lock_spin(&self->mu);
        note_failure(self, op, rc);
        pthread_mutex_unlock(&self->mu);
      }
    }
    lock_spin(&self->mu);
    __atomic_store_n(&self->completed, self->completed + n - 1, __ATOMIC_RELEASE);
    finish_op(self, last, 0); /* the last one: completes a record, wakes who waits */
    for (op_t *op = first; op != NULL; op = op->next) op_clear_native(op);
    pthread_mutex_unlock(&self->mu);
    op_give_list(first); /* outside the queue's lock */
    lock_spin(&self->mu);
    if (deadline && now_ns() >= deadline) break; /* the main thread checks for signals */
  }
  __atomic_store_n(&self->running, 0, __ATOMIC_RELAXED);
  if (self->worker_sleeping && self->released) pthread_cond_signal(&self->work_cv);
  kick(self);
  wake_all(self);
}

/* The worker's loop: Queue.work(), on the thread _queue.py started for it. Returns once the
 * queue is released and empty. Host functions run here, with the GIL, in queue order. */
static PyObject *q_work(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (q_ready(self) < 0) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  lock_spin(&self->mu);
  for (;;) {
    while (self->head == NULL || self->running) {
      if (self->released && self->head == NULL && !self->running) goto out;
      self->worker_sleeping = 1;
      pthread_cond_wait(&self->work_cv, &self->mu);
      self->worker_sleeping = 0;
    }
    __atomic_store_n(&self->running, 1, __ATOMIC_RELAXED);
    self->runner_is_worker = 1;
    self->runner = pthread_self();
    while (self->head != NULL) {
      op_t *op = pop(self);
      pthread_mutex_unlock(&self->mu);
      int failed = 0; /* op_run_native's result */
      if (op->kind == OP_CALL) {
        PyEval_RestoreThread(ts);
        in_host_function = 1;
        PyObject *result = PyObject_CallNoArgs(op->u.call);
        in_host_function = 0;
        if (result == NULL) {
          PyObject *type, *value, *tb;
          PyErr_Fetch(&type, &value, &tb);
          PyErr_NormalizeException(&type, &value, &tb);
          if (value != NULL) {
            if (tb != NULL) PyException_SetTraceback(value, tb);
            PyObject *entry = Py_BuildValue("(KO)", (unsigned long long)op->seq, value);
            if (entry == NULL || PyList_Append(self->errors, entry) < 0) PyErr_Clear();
            Py_XDECREF(entry);
          }
          Py_XDECREF(type);
          Py_XDECREF(value);
          Py_XDECREF(tb);
        } else {
          Py_DECREF(result);
        }
        Py_DECREF(op->u.call);
        op->u.call = NULL;
        ts = PyEval_SaveThread();
      } else {
        failed = op_run_native(op);
      }
      lock_spin(&self->mu);
      finish_op(self, op, failed);
      if (op->kind == OP_CALL) op_give(op);
      else op_free_native(op);
    }
    __atomic_store_n(&self->running, 0, __ATOMIC_RELAXED);
    wake_all(self);
  }
out:
  self->worker = WORKER_EXITED;
  pthread_cond_broadcast(&self->done_cv);
  pthread_mutex_unlock(&self->mu);
  PyEval_RestoreThread(ts);
  Py_RETURN_NONE;
}

/* The error of a native op that failed: a MemoryError, or the device's DeviceFaulted. */
static PyObject *native_error(QueueObject *self, uint64_t failure) {
  if (failure & FAULT_BIT) return pool_fault_error(self->pool);
  return PyObject_CallFunction(PyExc_MemoryError, "s", "a queued launch could not allocate its local memory");
}

/* Moves out the kept errors of ops 1..limit, in queue order: a list (a host function's
 * exception, a MemoryError for a native op that failed, the device's fault), or None when there
 * are none. sticky: once the device is faulted the list has its fault, kept or not (a sync of a
 * faulted device fails, as on CUDA). GIL held. */
static PyObject *take_errors_of(QueueObject *self, uint64_t limit);

static PyObject *take_errors(QueueObject *self, uint64_t limit, int sticky) {
  PyObject *errors = take_errors_of(self, limit);
  if (errors == NULL || !sticky || self->pool == NULL || !pool_faulted(self->pool)) return errors;
  if (errors != Py_None)
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(errors); ++i)
      if (PyObject_TypeCheck(PyList_GET_ITEM(errors, i), (PyTypeObject *)device_faulted_type())) return errors;
  PyObject *fault = pool_fault_error(self->pool);
  if (fault == NULL) {
    Py_DECREF(errors);
    return NULL;
  }
  if (errors == Py_None) {
    Py_DECREF(errors);
    errors = PyList_New(0);
  }
  if (errors == NULL || PyList_Append(errors, fault) < 0) Py_CLEAR(errors);
  Py_DECREF(fault);
  return errors;
}

static PyObject *take_errors_of(QueueObject *self, uint64_t limit) {
  uint64_t *failed = NULL;
  size_t nfailed = 0;
  lock_spin(&self->mu);
  if (self->nfailed) {
    failed = malloc(self->nfailed * sizeof(uint64_t));
    if (failed != NULL) {
      size_t kept = 0;
      for (size_t i = 0; i < self->nfailed; ++i) {
        if ((self->failed[i] & ~FAULT_BIT) <= limit) failed[nfailed++] = self->failed[i];
        else self->failed[kept++] = self->failed[i];
      }
      self->nfailed = kept;
    }
  }
  pthread_mutex_unlock(&self->mu);
  Py_ssize_t n = PyList_GET_SIZE(self->errors);
  if (nfailed == 0 && n == 0) {
    free(failed);
    Py_RETURN_NONE;
  }
  PyObject *out = PyList_New(0), *rest = PyList_New(0);
  if (out == NULL || rest == NULL) goto fail;
  size_t f = 0;
  for (Py_ssize_t i = 0; i <= n; ++i) {
    PyObject *entry = i < n ? PyList_GET_ITEM(self->errors, i) : NULL;
    unsigned long long seq = entry ? PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(entry, 0)) : UINT64_MAX;
    for (; f < nfailed && ((failed[f] & ~FAULT_BIT) < seq || entry == NULL); ++f) { /* native failures first */
      PyObject *error = native_error(self, failed[f]);
      if (error == NULL || PyList_Append(out, error) < 0) {
        Py_XDECREF(error);
        goto fail;
      }
      Py_DECREF(error);
    }
    if (entry == NULL) break;
    if (PyList_Append(seq <= limit ? out : rest, seq <= limit ? PyTuple_GET_ITEM(entry, 1) : entry) < 0)
      goto fail;
  }
  free(failed);
  Py_SETREF(self->errors, rest);
  if (PyList_GET_SIZE(out) == 0) {
    Py_DECREF(out);
    Py_RETURN_NONE;
  }
  return out;
fail:
  free(failed);
  Py_XDECREF(out);
  Py_XDECREF(rest);
  return NULL;
}

/* From inside Py_BEGIN_ALLOW_THREADS (*save: its thread state) with self->mu held: run Python's
 * signal handlers with the GIL taken back and self->mu dropped meanwhile; 1 when one raised (its
 * exception set), else 0. */
static int signal_raised(QueueObject *self, PyThreadState **save) {
  pthread_mutex_unlock(&self->mu);
  PyEval_RestoreThread(*save);
  int raised = PyErr_CheckSignals() < 0;
  *save = PyEval_SaveThread();
  lock_spin(&self->mu);
  return raised;
}

/* Waits (GIL held on entry and exit, released meanwhile) until `target` ops completed, helping
 * while the head op needs no Python. 0 when reached, -1 with the exception of a signal handler
 * (Ctrl-C on the main thread: the queue keeps going, nothing is lost). */
static int wait_until(QueueObject *self, uint64_t target) {
  int is_main = pthread_equal(pthread_self(), main_thread);
  int interrupted = 0;
  Py_BEGIN_ALLOW_THREADS
  lock_spin(&self->mu);
  int spun = 0;
  while (self->completed < target) {
    if (!self->running && self->head != NULL && helpable(self->head)) {
      help(self, target, is_main ? now_ns() + WAIT_SLICE_NS : 0);
      if (is_main && self->completed < target && (interrupted = signal_raised(self, &_save))) break;
      continue;
    }
    if (!spun && self->running) { /* the runner is at it: a short poll beats sleeping */
      spun = 1;
      pthread_mutex_unlock(&self->mu);
      uint64_t start = now_ns();
      while (__atomic_load_n(&self->completed, __ATOMIC_ACQUIRE) < target &&
             __atomic_load_n(&self->running, __ATOMIC_RELAXED) && now_ns() - start < SPIN_NS)
        cpu_relax();
      lock_spin(&self->mu);
      continue;
    }
    wait_for(self, target, is_main);
    if (is_main && self->completed < target && (interrupted = signal_raised(self, &_save))) break;
  }
  pthread_mutex_unlock(&self->mu);
  Py_END_ALLOW_THREADS
  return interrupted ? -1 : 0;
}

/* Queue.sync(): wait for every op submitted so far (helping), then take their kept errors (and the
 * device's fault, once it is faulted: sticky). Queue.drain(): the same without the device's
 * fault, unless this queue kept it (a queue being released). */
static PyObject *sync_queue(QueueObject *self, int sticky) {
  if (q_ready(self) < 0) return NULL;
  lock_spin(&self->mu);
  uint64_t target = self->submitted;
  pthread_mutex_unlock(&self->mu);
  if (wait_until(self, target) < 0) return NULL;
  return take_errors(self, target, sticky);
}

static PyObject *q_sync(QueueObject *self, PyObject *unused) {
  (void)unused;
  return sync_queue(self, 1);
}

static PyObject *q_drain(QueueObject *self, PyObject *unused) {
  (void)unused;
  return sync_queue(self, 0);
}

/* Queue.release(discard): no more submissions. Without discard the worker first runs what is
 * queued; with it the ops not yet started are dropped (events among them complete). Waits for
 * the worker to leave work() unless called from the worker itself (a host function: the worker
 * leaves after it). Returns the errors like sync. */
static PyObject *q_release(QueueObject *self, PyObject *discard_obj) {
  if (q_ready(self) < 0) return NULL;
  int discard = PyObject_IsTrue(discard_obj);
  if (discard < 0) return NULL;
  op_t *dropped = NULL;
  lock_spin(&self->mu);
  self->released = 1;
  if (discard && self->head != NULL) {
    dropped = self->head;
    self->head = self->tail = NULL;
    __atomic_store_n(&self->completed, self->submitted - (self->running ? 1 : 0), __ATOMIC_RELEASE);
  }
  int on_worker = self->running && self->runner_is_worker && pthread_equal(self->runner, pthread_self());
  pthread_cond_broadcast(&self->work_cv);
  pthread_cond_broadcast(&self->done_cv);
  pthread_mutex_unlock(&self->mu);
  free_ops(dropped);
  if (!on_worker) {
    Py_BEGIN_ALLOW_THREADS
    lock_spin(&self->mu);
    while (self->completed < self->submitted || self->worker == WORKER_WANTED) {
      if (!self->running && self->head != NULL && helpable(self->head)) {
        help(self, self->submitted, 0);
        continue;
      }
      wait_for(self, self->worker == WORKER_WANTED ? 0 : self->submitted, 0);
    }
    pthread_mutex_unlock(&self->mu);
    if (self->exec != NULL) exec_forget(self->exec, self);
    Py_END_ALLOW_THREADS
  }
  return take_errors(self, UINT64_MAX, 0);
}

/* The worker could not be started: the next submission asks again. */
static PyObject *q_worker_failed(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (q_ready(self) < 0) return NULL;
  lock_spin(&self->mu);
  if (self->worker == WORKER_WANTED) self->worker = WORKER_NONE;
  pthread_cond_broadcast(&self->done_cv);
  pthread_mutex_unlock(&self->mu);
  Py_RETURN_NONE;
}

static PyObject *q_pending(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (q_ready(self) < 0) return NULL;
  lock_spin(&self->mu);
  int pending = self->completed != self->submitted || self->running;
  pthread_mutex_unlock(&self->mu);
  return PyBool_FromLong(pending);
}

/* The word of the core's native entry points for this queue: its address (None: not initialised). */
static PyObject *q_word(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (self->errors == NULL) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(self);
}

/* Whether the calling thread is this queue's worker running a host function right now. */
static PyObject *q_on_worker(QueueObject *self, PyObject *unused) {
  (void)unused;
  if (q_ready(self) < 0) return NULL;
  lock_spin(&self->mu);
  int mine = self->running && self->runner_is_worker && pthread_equal(self->runner, pthread_self());
  pthread_mutex_unlock(&self->mu);
  return PyBool_FromLong(mine);
}

#define QMETHOD(name, flags, doc) {#name, (PyCFunction)(void (*)(void))q_##name, flags, doc}

static PyMethodDef queue_methods[] = {
    QMETHOD(launch, METH_FASTCALL,
            "launch(pool, kernel, args, size | ngx, ngy, ngz, gsx, gsy, gsz, dyn_mem) -> start_worker\n\n"
            "Enqueue a kernel launch (args copied). True: start a thread running work()."),
    QMETHOD(copy, METH_FASTCALL, "copy(pool | None, dst, src, size) -> start_worker\n\nEnqueue a memmove."),
    QMETHOD(fill, METH_FASTCALL,
            "fill(pool | None, dst, pattern, size) -> start_worker\n\nEnqueue a pattern fill."),
    QMETHOD(call, METH_O, "call(callable) -> start_worker\n\nEnqueue callable() (run on the worker)."),
    QMETHOD(record, METH_NOARGS,
            "record() -> (Event, start_worker)\n\nAn event complete once the work so far is done."),
    QMETHOD(wait_event, METH_O,
            "wait_event(event) -> start_worker\n\nLater work waits until event is complete."),
    QMETHOD(work, METH_NOARGS, "work()\n\nThe worker's loop; returns once released and empty."),
    QMETHOD(sync, METH_NOARGS,
            "sync() -> list | None\n\nWait for the work so far (helping); take the kept errors."),
    QMETHOD(drain, METH_NOARGS,
            "drain() -> list | None\n\nsync() without the device's fault unless this queue kept it."),
    QMETHOD(release, METH_O,
            "release(discard) -> list | None\n\nRefuse more work, end the worker; take the errors."),
    QMETHOD(worker_failed, METH_NOARGS, "worker_failed()\n\nThe worker thread could not start."),
    QMETHOD(pending, METH_NOARGS, "pending() -> bool\n\nWhether work is queued or running."),
    QMETHOD(word, METH_NOARGS, "word() -> int | None\n\nThe queue's word for the core's native entry points (its address)."),
    QMETHOD(on_worker, METH_NOARGS,
            "on_worker() -> bool\n\nWhether the caller is this queue's worker inside a host function."),
    {NULL, NULL, 0, NULL},
};

static PyTypeObject QueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload_host._native.Queue",
    .tp_basicsize = sizeof(QueueObject),
    .tp_dealloc = (destructor)q_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A native in-order queue (see _hostq.c); offload_host._queue.HostQueue extends it.",
    .tp_methods = queue_methods,
    .tp_init = (initproc)q_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------------------ */
/* The executor's service thread and handle                                               */

static void *exec_main(void *arg) {
  exec_t *ex = arg;
  pthread_setname_np(pthread_self(), "offload-exec"); /* as top -H and perf show it */
  /* SCHED_BATCH: same CPU share, but its wake-ups never preempt a running thread. Woken by a
   * submission, it would otherwise take the CPU from the very thread that is about to sync and
   * run the work itself (or from a pool worker running a kernel); it runs at the next
   * scheduling point instead, at once where a CPU is idle. */
  struct sched_param none = {0};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &none); /* a hint: failure changes nothing */
  lock_spin(&ex->mu);
  /* Woken after idling longer than EXEC_DELAY_NS: the queue's first work after a pause (a
   * launch its submitter may sync at once). The wake-up itself was delay enough: waiting again
   * would only wake this thread twice, once in the middle of the launch the sync is running. */
  int rested = 0;
  for (;;) {
    if (ex->ready_head == NULL && !ex->stop) {
      uint64_t idle_since = now_ns();
      while (ex->ready_head == NULL && !ex->stop) {
        ex->sleeping = 1;
        pthread_cond_wait(&ex->cv, &ex->mu);
        ex->sleeping = 0;
      }
      rested = now_ns() - idle_since >= EXEC_DELAY_NS;
    }
    if (ex->stop) break;
    QueueObject *q = ex->ready_head;
    uint64_t due = q->ready_since + EXEC_DELAY_NS;
    if (!rested && now_ns() < due) {
      /* Not yet due: sleep until then (queues listed meanwhile are due later still). q stays
       * listed, so its submitter appends without telling us again; it may be forgotten
       * (exec_forget) meanwhile, so it is looked up again. Sleeping, not polling, leaves the
       * CPU to the threads running kernels, which a waiting caller helps with anyway. */
      struct timespec at = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
      pthread_cond_timedwait(&ex->cv, &ex->mu, &at);
      continue;
    }
    rested = 0;
    ex->ready_head = q->ready_next;
    if (ex->ready_head == NULL) ex->ready_tail = NULL;
    __atomic_store_n(&q->in_ready, 0, __ATOMIC_RELAXED);
    ex->current = q; /* q stays alive: exec_forget (release, dealloc) waits for us */
    pthread_mutex_unlock(&ex->mu);

    lock_spin(&q->mu);
    /* One turn: the ops queued by now, at most EXEC_TURN, so that a queue fed without pause
     * cannot starve the others. Work that arrives meanwhile waits for the next turn (help()
     * puts the queue back at the end of the list): a submitter busy filling the queue then
     * meets the service thread once a batch, not once an op. */
    uint64_t turn_end = q->submitted < q->completed + EXEC_TURN ? q->submitted : q->completed + EXEC_TURN;
    if (!q->running && q->head != NULL && helpable(q->head)) help(q, turn_end, 0);
    pthread_mutex_unlock(&q->mu);

    lock_spin(&ex->mu);
    ex->current = NULL;
    pthread_cond_broadcast(&ex->idle_cv);
  }
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

static exec_t *exec_from(PyObject *obj) { return handle_from(obj, EXEC_MAGIC, "executor"); }

static PyObject *py_executor_create(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  exec_t *ex = calloc(1, sizeof(exec_t));
  if (ex == NULL) return PyErr_NoMemory();
  ex->magic = EXEC_MAGIC;
  atomic_init(&ex->refs, 1);
  init_mutex(&ex->mu);
  init_cond(&ex->cv);
  init_cond(&ex->idle_cv);
  sigset_t all, old; /* signals go to Python's threads, never to this one */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&ex->thread, NULL, exec_main, ex);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    exec_unref(ex);
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  ex->started = 1;
  return PyLong_FromVoidPtr(ex);
}

static PyObject *py_executor_destroy(PyObject *m, PyObject *arg) {
  (void)m;
  exec_t *ex = exec_from(arg);
  if (ex == NULL) return NULL;
  lock_spin(&ex->mu);
  int first = !ex->stop;
  ex->stop = 1;
  pthread_cond_broadcast(&ex->cv);
  pthread_mutex_unlock(&ex->mu);
  if (!first) {
    PyErr_SetString(PyExc_ValueError, "executor already destroyed");
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS
  pthread_join(ex->thread, NULL);
  Py_END_ALLOW_THREADS
  ex->magic = 0; /* queues still holding it find it stopped; the last one frees it */
  exec_unref(ex);
  Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------ */
/* The synchronous counterparts of the queued copy and fill                               */

static PyObject *py_copy_on(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  copy_args_t c;
  if (parse_copy("copy_on", args, nargs, &c) < 0) return NULL;
  if (c.pool != NULL && pool_faulted(c.pool)) return pool_raise_fault(c.pool);
  if (c.size == 0) Py_RETURN_NONE;
  Py_BEGIN_ALLOW_THREADS
  pool_copy(c.pool, c.dst, c.src, c.size);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject *py_fill_on(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  (void)m;
  fill_args_t f;
  if (parse_fill("fill_on", args, nargs, &f) < 0) return NULL;
  if (f.pool != NULL && pool_faulted(f.pool)) {
    PyBuffer_Release(&f.pattern);
    return pool_raise_fault(f.pool);
  }
  Py_BEGIN_ALLOW_THREADS
  pool_fill(f.pool, f.dst, f.pattern.buf, (size_t)f.pattern.len, f.size);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&f.pattern);
  Py_RETURN_NONE;
}

static PyMethodDef hostq_functions[] = {
    {"executor_create", (PyCFunction)py_executor_create, METH_NOARGS,
     "executor_create() -> handle\n\nStart a device's executor: the thread running native queue work."},
    {"executor_destroy", (PyCFunction)py_executor_destroy, METH_O,
     "executor_destroy(handle)\n\nStop and join the executor's thread (queues stop using it)."},
    {"copy_on", (PyCFunction)(void (*)(void))py_copy_on, METH_FASTCALL,
     "copy_on(pool | None, dst, src, size)\n\nmemmove, big copies split over the pool; GIL released."},
    {"fill_on", (PyCFunction)(void (*)(void))py_fill_on, METH_FASTCALL,
     "fill_on(pool | None, dst, pattern, size)\n\nPattern fill, big fills split over the pool."},
    {NULL, NULL, 0, NULL},
};

int hostq_exec(PyObject *module) {
  static int atfork_registered;
  if (!atfork_registered) {
    if (pthread_atfork(NULL, NULL, note_forked_child) != 0) {
      PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
      return -1;
    }
    atfork_registered = 1;
  }
  if (PyModule_AddFunctions(module, hostq_functions) < 0) return -1;
  main_thread = pthread_self();
  if (PyType_Ready(&QueueType) < 0 || PyType_Ready(&EventType) < 0) return -1;
  /* QueueReleased is an offload.OffloadError(INVALID_QUEUE, ...); a RuntimeError(None, ...)
   * where the core cannot be imported (the module used on its own). */
  SubmitError = offload_error_class("offload_host._native.QueueReleased",
                                    "Work submitted to a released queue (INVALID_QUEUE).", "INVALID_QUEUE", &InvalidQueue);
  if (SubmitError == NULL) return -1;
  if (PyModule_AddObjectRef(module, "QueueReleased", SubmitError) < 0 ||
      PyModule_AddObjectRef(module, "Queue", (PyObject *)&QueueType) < 0 ||
      PyModule_AddObjectRef(module, "Event", (PyObject *)&EventType) < 0)
    return -1;
  return 0;
}
