/* _native.h - what the C files of offload_host._native share: argument parsing, the worker
 * pool's entry points, and the registration of the native queues (_hostq.c).
 */
#ifndef OFFLOAD_HOST_NATIVE_H
#define OFFLOAD_HOST_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "include/offload_host.h"

typedef struct pool pool_t;

/* The monotonic clock in ns (the clock of time.perf_counter_ns). */
static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One pause of a polling loop. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Argument parsing: 0 on success, -1 with a Python exception set. */
int check_nargs(const char *fn, Py_ssize_t nargs, Py_ssize_t expected);
int parse_u64(PyObject *obj, uint64_t *out);
int parse_ptr(PyObject *obj, void **out);
int parse_size(PyObject *obj, size_t *out);
int parse_dim(PyObject *obj, uint32_t *out);
/* A launch's arguments but the argument buffer, from args[0..nargs): (pool, kernel, <args>, size)
 * with a size object (offload.KernelLaunchSizeArgs or alike: num_groups, group_size,
 * dyn_shared_memory), or (pool, kernel, <args>, ngx, ngy, ngz, gsx, gsy, gsz, dyn_mem): a live
 * pool, a non-NULL kernel, each dimension 1 .. UINT32_MAX. */
typedef struct {
  pool_t *pool;
  offload_kernel_fn kernel;
  offload_dim3_t num_groups;
  offload_dim3_t group_size;
  size_t dyn_mem;
} launch_t;
int parse_launch(PyObject *const *args, Py_ssize_t nargs, launch_t *out);
/* The live object a handle (an int address) points at, or NULL with ValueError "not a live
 * <what> handle": its first member, a uint64_t, holds `magic` while it lives (a pool, an
 * executor). */
void *handle_from(PyObject *obj, uint64_t magic, const char *what);
/* A live pool from its handle, or NULL with ValueError. */
pool_t *pool_from(PyObject *obj);

/* The rest never touch Python: call them with the GIL released. */
size_t pool_threads(const pool_t *pool);
/* Runs kernel once per group of the grid on the pool and the calling thread; returns when every
 * group finished. 0 on success, -1 when local memory cannot be allocated (then nothing ran), -3
 * when the device is faulted: a kernel faulted in this launch (the groups not started are dropped)
 * or before it (then nothing ran). */
int pool_run(pool_t *pool, offload_kernel_fn kernel, const void *args, offload_dim3_t num_groups,
             offload_dim3_t group_size, size_t dyn_mem);
/* pool_run, and when caller is not NULL the calling thread (the main one) takes the GIL back
 * through *caller between its claims to run Python's signal handlers: one that raises cancels
 * the groups not yet claimed, and -2 is returned with the exception set (the caller restores
 * the GIL from *caller). */
int pool_run_interruptible(pool_t *pool, offload_kernel_fn kernel, const void *args, offload_dim3_t num_groups,
                           offload_dim3_t group_size, size_t dyn_mem, PyThreadState **caller);
/* Whether the calling thread is the one that imported the module (the one Python signals). */
int hostq_on_main_thread(void);
/* memmove, split over the pool when big and not overlapping (pool may be NULL). */
void pool_copy(pool_t *pool, void *dst, const void *src, size_t size);
/* Fills size bytes with the repeated pattern (the last copy may be partial), split like pool_copy. */
void pool_fill(pool_t *pool, void *dst, const void *pat, size_t plen, size_t size);
void fill_pattern(unsigned char *dst, const void *pat, size_t plen, size_t size);

/* Adds the Queue and Event types and their functions to the module (_hostq.c). */
int hostq_exec(PyObject *module);

/* --- for the core's native entry points (_hostentry.c); no GIL needed ----------------------- */
/* The local memory limit pool_set_local_limit gave (0 before). */
size_t pool_local_limit(pool_t *pool);
/* Appends a launch to a native queue (the address of a Queue object, from
 * queue_word) when that needs no wait (backpressure), no new worker thread and no error: 0
 * appended, 1 nothing done (the Python hook submits it: waits, starts the worker, or raises).
 * when: NULL, or where the queue stores the time it finished the launch (the timeline's stamp). */
int hostq_submit_launch(void *queue, pool_t *pool, offload_kernel_fn kernel, const void *args, size_t args_size,
                        offload_dim3_t num_groups, offload_dim3_t group_size, size_t dyn_mem, uint64_t *when);
/* Whether a native queue has work queued or running (Queue.pending). */
int hostq_pending(void *queue);
/* The timeline's stamp (offload_native.h): a marker storing CLOCK_MONOTONIC ns into *when once
 * the queue reaches it; 0 appended, 1 not (the caller times the work otherwise). */
int hostq_submit_stamp(void *queue, uint64_t *when);
/* --- faults of kernels and the checking mode's allocations (_fault.c) --------------------------- */
typedef struct {
  offload_kernel_fn kernel; /* the kernel that faulted */
  int sig, code;            /* the signal and its si_code */
  void *addr;               /* the faulting address (or instruction, for SIGFPE and SIGILL) */
  int write;                /* 1 a write, 0 a read, -1 unknown */
} kernel_fault_t;
/* The guard's jump: GCC's __builtin_setjmp saves three words (a few instructions, where glibc's
 * sigsetjmp costs ~5 ns a launch), and its longjmp from the handler lands like siglongjmp
 * (the signal mask is fixed by fault_after_jump either way). With shadow stacks (CET's SHSTK,
 * __CET__ & 2) only glibc's siglongjmp unwinds the shadow stack too: it is used there. */
#if (defined(__GNUC__) || defined(__clang__)) && !(defined(__CET__) && (__CET__ & 2))
typedef void *fault_jmp_buf[5];
#define FAULT_SETJMP(env) __builtin_setjmp(env)
#define FAULT_LONGJMP(env) __builtin_longjmp(env, 1)
#else
typedef sigjmp_buf fault_jmp_buf;
#define FAULT_SETJMP(env) sigsetjmp(env, 0)
#define FAULT_LONGJMP(env) siglongjmp(env, 1)
#endif
typedef struct {
  fault_jmp_buf env; /* FAULT_SETJMP by the thread that runs kernel code */
  kernel_fault_t fault;
} fault_guard_t;
/* The running thread's guard while kernel code runs on it, else NULL. */
extern __thread fault_guard_t *fault_tls_guard __attribute__((tls_model("initial-exec")));
/* Installs the signal handlers (once; the handlers found are chained to). 0, or -1 with errno. */
int fault_install(void);
/* Makes the calling thread able to survive its kernels' faults (alternate stack, signals unblocked). */
void fault_thread_setup(void);
extern __thread int fault_tls_ready __attribute__((tls_model("initial-exec")));
static inline void fault_thread_ready(void) { /* fault_thread_setup once per thread */
  if (__builtin_expect(!fault_tls_ready, 0)) fault_thread_setup();
}
/* After a siglongjmp from the handler: the fault signals are unblocked again. */
void fault_after_jump(void);
/* The message of a fault (the kernel's name, the signal, the address, a checked allocation). */
void fault_describe(const kernel_fault_t *fault, char *out, size_t n);
/* OFFLOAD_HOST_CHECK's allocations (_checkmem.c): right-aligned against a PROT_NONE page (NULL when
 * out of memory). */
void *checked_alloc(size_t size, size_t alignment);
int checked_free(void *address); /* 0, or -1 with errno */
/* Writes where address lies relative to a checked allocation (": N bytes past the end of ..."), or
 * nothing (out untouched) when it is near none. */
void checked_describe(const void *address, char *out, size_t n);

/* --- the device's fault (_native.c) --- */
/* Whether a kernel of the pool's device faulted (then nothing more runs on it). */
int pool_faulted(pool_t *pool);
/* The flag pool_faulted reads (an acquire load of it is pool_faulted, inline where it is hot). */
const _Atomic int *pool_fault_flag(pool_t *pool);
/* Sets the Python exception of the pool's fault (DeviceFaulted); returns NULL. */
PyObject *pool_raise_fault(pool_t *pool);
PyObject *device_faulted_type(void); /* _native.DeviceFaulted (borrowed) */
/* _native.DeviceFaulted (an offload.OffloadError, BACKEND_FAILURE) made with the fault's message. */
PyObject *pool_fault_error(pool_t *pool);

/* A new exception class offload_host._native.<name> (``name`` is the full dotted name) deriving
 * offload.OffloadError, with ``*code`` set to a new reference to offload.ErrorCode.<code_name>; where
 * the core cannot be imported (the module used on its own), a RuntimeError with ``*code`` None.
 * NULL (an exception set) on failure (_native.c). */
PyObject *offload_error_class(const char *name, const char *doc, const char *code_name, PyObject **code);

/* Adds ENTRY_POINTS (the capsule of offload_native.h) to the module (_hostentry.c). */
int hostentry_exec(PyObject *module);

#endif
