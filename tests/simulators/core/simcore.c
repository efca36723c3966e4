/* simcore.c - the vendor-neutral simulator core (see simcore.h for what it models). */
#define _GNU_SOURCE
#include "simcore.h"

#include "gpusim_kernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define SIM_MAX_DEVICES 8

const char *sim_status_name(sim_status status) {
  switch (status) {
  case SIM_OK: return "SIM_OK";
  case SIM_ERR_INVALID_VALUE: return "SIM_ERR_INVALID_VALUE";
  case SIM_ERR_OUT_OF_MEMORY: return "SIM_ERR_OUT_OF_MEMORY";
  case SIM_ERR_NOT_READY: return "SIM_ERR_NOT_READY";
  case SIM_ERR_INVALID_HANDLE: return "SIM_ERR_INVALID_HANDLE";
  case SIM_ERR_NOT_FOUND: return "SIM_ERR_NOT_FOUND";
  case SIM_ERR_LAUNCH_FAILED: return "SIM_ERR_LAUNCH_FAILED";
  case SIM_ERR_OUT_OF_RESOURCES: return "SIM_ERR_OUT_OF_RESOURCES";
  case SIM_ERR_INVALID_IMAGE: return "SIM_ERR_INVALID_IMAGE";
  case SIM_ERR_NOT_SUPPORTED: return "SIM_ERR_NOT_SUPPORTED";
  case SIM_ERR_HOST_CALLBACK: return "SIM_ERR_HOST_CALLBACK";
  case SIM_ERR_ILLEGAL_INSTRUCTION: return "SIM_ERR_ILLEGAL_INSTRUCTION";
  case SIM_ERR_NOT_PERMITTED: return "SIM_ERR_NOT_PERMITTED";
  case SIM_ERR_ILLEGAL_ADDRESS: return "SIM_ERR_ILLEGAL_ADDRESS";
  }
  return "SIM_ERR_?";
}

/* ---- configuration ------------------------------------------------------------------------ */

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int device_count;
static unsigned delay_us;
static unsigned push_buffer = 1024;
static int protect_wanted = 1;
static long fault_after; /* GPUSIM_FAULT_AFTER: the device operation that faults (0: none) */
static long ops_run[SIM_MAX_DEVICES]; /* device operations started, per device */
static sim_device_props props[SIM_MAX_DEVICES];

static long env_long(const char *name, long fallback, long lo, long hi) {
  const char *text = getenv(name);
  if (text == NULL || *text == '\0') return fallback;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (*end != '\0' || value < lo || value > hi) {
    fprintf(stderr, "gpusim: ignoring %s=%s (want an integer in [%ld, %ld])\n", name, text, lo, hi);
    return fallback;
  }
  return value;
}

static void read_config(void) {
  device_count = (int)env_long("GPUSIM_DEVICES", 1, 0, SIM_MAX_DEVICES);
  delay_us = (unsigned)env_long("GPUSIM_DELAY_US", 0, 0, 10 * 1000 * 1000);
  push_buffer = (unsigned)env_long("GPUSIM_PUSH_BUFFER", 1024, 1, 1 << 20);
  protect_wanted = (int)env_long("GPUSIM_PROTECT", 1, 0, 1);
  fault_after = env_long("GPUSIM_FAULT_AFTER", 0, 0, 1L << 40);
  long mib = env_long("GPUSIM_MEMORY_MIB", 1024, 1, 1 << 20);
  for (int i = 0; i < SIM_MAX_DEVICES; ++i) {
    sim_device_props *p = &props[i];
    snprintf(p->name, sizeof p->name, "gpusim device %d", i);
    for (int b = 0; b < 16; ++b) p->uuid[b] = (unsigned char)(0x5a ^ (b * 17) ^ (i * 31));
    p->total_memory = (size_t)mib << 20;
    p->multiprocessors = 132;
    p->clock_khz = 1755000;
    p->memory_clock_khz = 2619000;
    p->memory_bus_width = 5120;
    p->max_threads_per_block = 1024;
    p->max_block_dim = (sim_dim3){1024, 1024, 64};
    p->max_grid_dim = (sim_dim3){2147483647u, 65535, 65535};
    p->shared_per_block = 48 * 1024;
    p->shared_per_block_optin = 227 * 1024;
    p->shared_per_multiprocessor = 228 * 1024;
    p->warp_size = 32;
    p->registers_per_block = 65536;
    p->max_threads_per_multiprocessor = 2048;
    p->l2_cache_bytes = 50 * 1024 * 1024;
    p->pci_bus_id = 0x18 + i;
  }
}

int sim_device_count(void) {
  pthread_once(&config_once, read_config);
  return device_count;
}

const sim_device_props *sim_device(int ordinal) {
  pthread_once(&config_once, read_config);
  return ordinal >= 0 && ordinal < device_count ? &props[ordinal] : NULL;
}

unsigned sim_delay_us(void) {
  pthread_once(&config_once, read_config);
  return delay_us;
}

unsigned sim_push_buffer(void) {
  pthread_once(&config_once, read_config);
  return push_buffer;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- device memory protection: a memory protection key only workers enable ----------------- */

static pthread_once_t protect_once = PTHREAD_ONCE_INIT;
static int protect_key = -1;
static const char *protect_why = "not yet initialised";
static size_t page_size = 4096;

static void protect_init(void) {
  pthread_once(&config_once, read_config);
  long ps = sysconf(_SC_PAGESIZE);
  if (ps > 0) page_size = (size_t)ps;
  if (!protect_wanted) {
    protect_why = "device memory protection turned off (GPUSIM_PROTECT=0)";
    return;
  }
  /* Every thread's access rights to a new key start as the rights of its creator, and the
   * kernel starts a process with access to every key but 0 disabled: application threads
   * stay denied; the core's workers enable it for themselves. */
  int key = pkey_alloc(0, PKEY_DISABLE_ACCESS);
  if (key < 0) {
    static char why[160];
    snprintf(why, sizeof why, "memory protection keys unavailable (pkey_alloc: %s): a host dereference of device memory is not caught",
             strerror(errno));
    protect_why = why;
    fprintf(stderr, "gpusim: %s\n", why);
    return;
  }
  protect_key = key;
  protect_why = "device memory is protected by a memory protection key";
}

int sim_mem_protected(const char **why) {
  pthread_once(&protect_once, protect_init);
  if (why) *why = protect_why;
  return protect_key >= 0;
}

unsigned sim_device_access_begin(void) {
  pthread_once(&protect_once, protect_init);
  if (protect_key < 0) return 0;
  unsigned previous = (unsigned)pkey_get(protect_key);
  pkey_set(protect_key, 0);
  return previous;
}

void sim_device_access_end(unsigned token) {
  if (protect_key >= 0) pkey_set(protect_key, token);
}

/* Denies the calling thread device access (for application code run on a worker). */
static unsigned device_access_deny(void) {
  if (protect_key < 0) return 0;
  unsigned previous = (unsigned)pkey_get(protect_key);
  pkey_set(protect_key, PKEY_DISABLE_ACCESS);
  return previous;
}

static size_t page_round(size_t size) { return (size + page_size - 1) / page_size * page_size; }

/* Freed device memory stays reserved without access (its pages released) for the next
 * QUARANTINE frees, so a use after free faults instead of touching whatever reused the
 * addresses (a kernel: the device's sticky ILLEGAL_ADDRESS). Then the oldest is unmapped. */
#define QUARANTINE 4096
static struct { void *base; size_t size; } quarantine[QUARANTINE];
static size_t quarantine_next;

static void device_pages_release(void *base, size_t size) { /* caller holds mem_lock */
  size_t len = page_round(size);
  if (mmap(base, len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
    munmap(base, len);
    return;
  }
  size_t at = quarantine_next++ % QUARANTINE;
  if (quarantine[at].base != NULL) munmap(quarantine[at].base, quarantine[at].size);
  quarantine[at].base = base;
  quarantine[at].size = len;
}

/* ---- memory: a sorted array of tracked ranges ---------------------------------------------- */

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_alloc_info *ranges;
static size_t range_count, range_cap;
static size_t used[SIM_MAX_DEVICES];

static int counts_against_limit(sim_mem_kind kind) { return kind != SIM_MEM_REGISTERED && kind != SIM_MEM_GLOBAL; }

/* Index of the first range whose base is > p. Caller holds mem_lock. */
static size_t upper_bound(const void *p) {
  size_t lo = 0, hi = range_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((const char *)ranges[mid].base <= (const char *)p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static sim_status insert_range(int device, sim_mem_kind kind, void *base, size_t size) {
  size_t at = upper_bound(base);
  const char *b = (const char *)base;
  if (at > 0 && (const char *)ranges[at - 1].base + ranges[at - 1].size > b) return SIM_ERR_INVALID_VALUE;
  if (at < range_count && (const char *)ranges[at].base < b + size) return SIM_ERR_INVALID_VALUE;
  if (range_count == range_cap) {
    size_t cap = range_cap ? range_cap * 2 : 64;
    sim_alloc_info *grown = realloc(ranges, cap * sizeof *grown);
    if (grown == NULL) return SIM_ERR_OUT_OF_MEMORY;
    ranges = grown;
    range_cap = cap;
  }
  memmove(&ranges[at + 1], &ranges[at], (range_count - at) * sizeof *ranges);
  ranges[at] = (sim_alloc_info){base, size, device, kind};
  ++range_count;
  return SIM_OK;
}

/* Index of the range with exactly this base, or range_count. */
static size_t find_base(const void *base) {
  size_t at = upper_bound(base);
  return at > 0 && ranges[at - 1].base == base ? at - 1 : range_count;
}

sim_status sim_mem_alloc(int device, sim_mem_kind kind, size_t size, void **out) {
  const sim_device_props *p = sim_device(device);
  if (p == NULL || out == NULL || size == 0 || !counts_against_limit(kind)) return SIM_ERR_INVALID_VALUE;
  pthread_mutex_lock(&mem_lock);
  if (size > p->total_memory - used[device]) {
    pthread_mutex_unlock(&mem_lock);
    return SIM_ERR_OUT_OF_MEMORY;
  }
  void *base = NULL;
  if (kind == SIM_MEM_DEVICE) {
    /* Pages of its own (zero-filled by the kernel), tagged with the protection key. */
    pthread_once(&protect_once, protect_init);
    base = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) base = NULL;
    if (base != NULL && protect_key >= 0 && pkey_mprotect(base, page_round(size), PROT_READ | PROT_WRITE, protect_key) != 0) {
      munmap(base, page_round(size));
      base = NULL;
    }
    if (base == NULL) {
      pthread_mutex_unlock(&mem_lock);
      return SIM_ERR_OUT_OF_MEMORY;
    }
  } else {
    if (posix_memalign(&base, 256, size) != 0) {
      pthread_mutex_unlock(&mem_lock);
      return SIM_ERR_OUT_OF_MEMORY;
    }
    memset(base, 0, size);
  }
  sim_status status = insert_range(device, kind, base, size);
  if (status == SIM_OK) {
    used[device] += size;
    *out = base;
  } else if (kind == SIM_MEM_DEVICE) {
    munmap(base, page_round(size));
  } else {
    free(base);
  }
  pthread_mutex_unlock(&mem_lock);
  return status;
}

sim_status sim_mem_free(void *base, unsigned kind_mask) {
  pthread_mutex_lock(&mem_lock);
  size_t at = find_base(base);
  if (at == range_count || !counts_against_limit(ranges[at].kind) || !(kind_mask & (1u << ranges[at].kind))) {
    pthread_mutex_unlock(&mem_lock);
    return SIM_ERR_INVALID_VALUE;
  }
  used[ranges[at].device] -= ranges[at].size;
  sim_alloc_info gone = ranges[at];
  memmove(&ranges[at], &ranges[at + 1], (range_count - at - 1) * sizeof *ranges);
  --range_count;
  if (gone.kind == SIM_MEM_DEVICE) device_pages_release(base, gone.size);
  pthread_mutex_unlock(&mem_lock);
  if (gone.kind != SIM_MEM_DEVICE) free(base);
  return SIM_OK;
}

sim_status sim_mem_track(int device, sim_mem_kind kind, void *base, size_t size) {
  if (sim_device(device) == NULL || base == NULL || size == 0 || counts_against_limit(kind)) return SIM_ERR_INVALID_VALUE;
  pthread_mutex_lock(&mem_lock);
  sim_status status = insert_range(device, kind, base, size);
  pthread_mutex_unlock(&mem_lock);
  return status;
}

sim_status sim_mem_untrack(void *base) {
  pthread_mutex_lock(&mem_lock);
  size_t at = find_base(base);
  if (at == range_count || counts_against_limit(ranges[at].kind)) {
    pthread_mutex_unlock(&mem_lock);
    return SIM_ERR_INVALID_VALUE;
  }
  memmove(&ranges[at], &ranges[at + 1], (range_count - at - 1) * sizeof *ranges);
  --range_count;
  pthread_mutex_unlock(&mem_lock);
  return SIM_OK;
}

int sim_mem_find(const void *p, sim_alloc_info *out) {
  pthread_mutex_lock(&mem_lock);
  size_t at = upper_bound(p);
  int found = at > 0 && (const char *)p < (const char *)ranges[at - 1].base + ranges[at - 1].size;
  if (found && out != NULL) *out = ranges[at - 1];
  pthread_mutex_unlock(&mem_lock);
  return found;
}

sim_status sim_mem_check(const void *p, size_t size) {
  sim_alloc_info info;
  if (!sim_mem_find(p, &info)) return SIM_ERR_INVALID_VALUE;
  size_t offset = (size_t)((const char *)p - (const char *)info.base);
  return size <= info.size - offset ? SIM_OK : SIM_ERR_INVALID_VALUE;
}

size_t sim_mem_used(int device) {
  if (sim_device(device) == NULL) return 0;
  pthread_mutex_lock(&mem_lock);
  size_t value = used[device];
  pthread_mutex_unlock(&mem_lock);
  return value;
}

size_t sim_mem_report_leaks(int device, unsigned kind_mask, const char *when) {
  static const char *kinds[] = {"device", "host", "managed", "registered", "global"};
  size_t leaks = 0;
  pthread_mutex_lock(&mem_lock);
  for (size_t i = 0; i < range_count; ++i) {
    if (ranges[i].device != device || !(kind_mask & (1u << ranges[i].kind))) continue;
    ++leaks;
    fprintf(stderr, "gpusim: leak at %s of device %d: %zu bytes of %s memory at %p\n", when, device,
            ranges[i].size, kinds[ranges[i].kind], ranges[i].base);
  }
  pthread_mutex_unlock(&mem_lock);
  return leaks;
}

/* ---- streams ------------------------------------------------------------------------------ */

#define SIM_OP_CONTROL 0x100u /* the core's own bookkeeping (waits, event marks): always runs */

typedef struct sim_op {
  sim_op_fn fn;
  void *arg;
  void (*free_arg)(void *);
  unsigned flags;
  struct sim_op *next;
} sim_op;

struct sim_stream {
  int device, blocking, legacy;
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* completions, for waiters (done_waiters of them) */
  pthread_cond_t work_cv; /* new work, for the worker while it sleeps */
  int done_waiters, worker_sleeping;
  sim_op *head, *tail;
  uint64_t submitted, completed; /* completed read without the lock: atomics */
  sim_status error;
  pthread_t thread;
  int started, stopping;
  sim_stream *next_of_device, *prev_of_device;
};

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_stream *device_streams[SIM_MAX_DEVICES];
static sim_stream *legacy_streams[SIM_MAX_DEVICES];

static sim_status device_faults[SIM_MAX_DEVICES]; /* atomics */
static __thread int tls_host_function;

int sim_in_host_function(void) { return tls_host_function; }

sim_status sim_device_fault(int device) {
  if (device < 0 || device >= SIM_MAX_DEVICES) return SIM_OK;
  return (sim_status)__atomic_load_n(&device_faults[device], __ATOMIC_ACQUIRE);
}

void sim_device_set_fault(int device, sim_status fault) {
  if (device < 0 || device >= SIM_MAX_DEVICES || fault == SIM_OK) return;
  sim_status none = SIM_OK;
  __atomic_compare_exchange_n(&device_faults[device], &none, fault, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void sim_device_clear_fault(int device) {
  if (device < 0 || device >= SIM_MAX_DEVICES) return;
  __atomic_store_n(&device_faults[device], SIM_OK, __ATOMIC_RELEASE);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void worker_fault_setup(void);
static void worker_fault_teardown(void);

static __thread sim_stream *tls_stream; /* the stream this worker thread runs */
static sim_use_rule use_rule;

sim_stream *sim_current_stream(void) { return tls_stream; }

void sim_set_use_rule(sim_use_rule rule) { __atomic_store_n(&use_rule, rule, __ATOMIC_RELEASE); }

sim_status sim_use_check(const void *p, size_t size) {
  sim_use_rule rule = __atomic_load_n(&use_rule, __ATOMIC_ACQUIRE);
  return rule == NULL || tls_stream == NULL || size == 0 ? SIM_OK : rule(p, size, tls_stream);
}

static void *stream_worker(void *raw) {
  sim_stream *s = raw;
  tls_stream = s;
  unsigned delay = sim_delay_us();
  (void)sim_device_access_begin(); /* the device's own thread: device memory is its memory */
  worker_fault_setup();
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if (s->head == NULL && !s->stopping) {
      /* Idle: poll briefly before sleeping, so a steady stream of submissions (one every few
       * microseconds) does not pay a wake-up each, as a GPU's queue does not. */
      pthread_mutex_unlock(&s->mu);
      uint64_t until = now_ns() + 50000;
      while (__atomic_load_n(&s->head, __ATOMIC_ACQUIRE) == NULL && !__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE) &&
             now_ns() < until)
        cpu_relax();
      pthread_mutex_lock(&s->mu);
    }
    while (s->head == NULL && !s->stopping) {
      s->worker_sleeping = 1;
      pthread_cond_wait(&s->work_cv, &s->mu);
      s->worker_sleeping = 0;
    }
    if (s->head == NULL) break;
    sim_op *op = s->head;
    pthread_mutex_unlock(&s->mu);
    sim_status status = SIM_OK;
    /* After a sticky fault the device runs nothing more; bookkeeping still completes. */
    int skip = !(op->flags & (SIM_OP_CONTROL | SIM_OP_AFTER_FAULT)) && sim_device_fault(s->device) != SIM_OK;
    if (!skip && fault_after && !(op->flags & (SIM_OP_HOST_FUNCTION | SIM_OP_CONTROL)) &&
        __atomic_add_fetch(&ops_run[s->device], 1, __ATOMIC_ACQ_REL) == fault_after) {
      /* GPUSIM_FAULT_AFTER: this operation faults as a kernel touching unmapped memory would
       * (an injected driver error for tests of error paths); the device is faulted from now on. */
      sim_device_set_fault(s->device, SIM_ERR_ILLEGAL_ADDRESS);
      status = SIM_ERR_ILLEGAL_ADDRESS;
      skip = 1;
    }
    if (!skip) {
      if (delay) usleep(delay);
      if (op->flags & SIM_OP_HOST_FUNCTION) {
        unsigned token = device_access_deny();
        tls_host_function = 1;
        status = op->fn(op->arg);
        tls_host_function = 0;
        sim_device_access_end(token);
      } else {
        status = op->fn(op->arg);
      }
    }
    if (op->free_arg) op->free_arg(op->arg);
    pthread_mutex_lock(&s->mu);
    s->head = op->next;
    if (s->head == NULL) s->tail = NULL;
    if (status != SIM_OK && s->error == SIM_OK) s->error = status;
    __atomic_store_n(&s->completed, s->completed + 1, __ATOMIC_RELEASE);
    if (s->done_waiters) pthread_cond_broadcast(&s->cv);
    free(op);
  }
  pthread_mutex_unlock(&s->mu);
  worker_fault_teardown();
  return NULL;
}

static sim_stream *stream_new(int device, int blocking, int legacy) {
  if (sim_device(device) == NULL) return NULL;
  sim_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->device = device;
  s->blocking = blocking;
  s->legacy = legacy;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  pthread_cond_init(&s->work_cv, NULL);
  pthread_mutex_lock(&streams_lock);
  s->next_of_device = device_streams[device];
  if (s->next_of_device) s->next_of_device->prev_of_device = s;
  device_streams[device] = s;
  pthread_mutex_unlock(&streams_lock);
  return s;
}

sim_stream *sim_stream_create(int device, int blocking) { return stream_new(device, blocking != 0, 0); }

sim_stream *sim_stream_legacy(int device) {
  if (sim_device(device) == NULL) return NULL;
  sim_stream *s = __atomic_load_n(&legacy_streams[device], __ATOMIC_ACQUIRE);
  if (s != NULL) return s;
  static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&legacy_lock);
  s = legacy_streams[device];
  if (s == NULL) {
    s = stream_new(device, 1, 1);
    __atomic_store_n(&legacy_streams[device], s, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&legacy_lock);
  return s;
}

int sim_stream_device(const sim_stream *stream) { return stream->device; }

void sim_stream_destroy(sim_stream *s) {
  if (s == NULL || s->legacy) return;
  pthread_mutex_lock(&s->mu);
  __atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&s->work_cv);
  int started = s->started;
  pthread_mutex_unlock(&s->mu);
  if (started) pthread_join(s->thread, NULL);
  pthread_mutex_lock(&streams_lock);
  if (s->prev_of_device) s->prev_of_device->next_of_device = s->next_of_device;
  else device_streams[s->device] = s->next_of_device;
  if (s->next_of_device) s->next_of_device->prev_of_device = s->prev_of_device;
  pthread_mutex_unlock(&streams_lock);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  pthread_cond_destroy(&s->work_cv);
  free(s);
}

/* Enqueues without legacy-stream ordering; blocks while the push buffer is full. */
static sim_status enqueue(sim_stream *s, sim_op_fn fn, void *arg, void (*free_arg)(void *), unsigned flags) {
  sim_op *op = malloc(sizeof *op);
  if (op == NULL) return SIM_ERR_OUT_OF_MEMORY;
  *op = (sim_op){fn, arg, free_arg, flags, NULL};
  pthread_mutex_lock(&s->mu);
  if (!s->started) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    int rc = pthread_create(&s->thread, &attr, stream_worker, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      pthread_mutex_unlock(&s->mu);
      free(op);
      return SIM_ERR_OUT_OF_MEMORY;
    }
    s->started = 1;
  }
  unsigned limit = sim_push_buffer();
  if (s->submitted - s->completed >= limit) {
    ++s->done_waiters;
    while (s->submitted - s->completed >= limit && !s->stopping) pthread_cond_wait(&s->cv, &s->mu);
    --s->done_waiters;
  }
  if (s->tail) s->tail->next = op;
  else __atomic_store_n(&s->head, op, __ATOMIC_RELEASE);
  s->tail = op;
  ++s->submitted;
  if (s->worker_sleeping) pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  return SIM_OK;
}

/* The payload of a control operation: the stream or event it is about and a count on it (the
 * stream's ticket to wait for, the event's generation to mark or to wait for); NULL when out of
 * memory. The operation's free_arg is free(). */
typedef struct counted {
  void *object;
  uint64_t count;
} counted;

static counted *new_counted(void *object, uint64_t count) {
  counted *c = malloc(sizeof *c);
  if (c != NULL) *c = (counted){object, count};
  return c;
}

static sim_status wait_ticket_op(void *raw) {
  const counted *w = raw;
  sim_stream *other = w->object;
  pthread_mutex_lock(&other->mu);
  ++other->done_waiters;
  while (other->completed < w->count) pthread_cond_wait(&other->cv, &other->mu);
  --other->done_waiters;
  pthread_mutex_unlock(&other->mu);
  return SIM_OK;
}

/* Makes later work of s wait until other has finished what it has now. */
static sim_status order_after(sim_stream *s, sim_stream *other) {
  pthread_mutex_lock(&other->mu);
  uint64_t ticket = other->submitted;
  int pending = other->completed < ticket;
  pthread_mutex_unlock(&other->mu);
  if (!pending) return SIM_OK;
  counted *w = new_counted(other, ticket);
  if (w == NULL) return SIM_ERR_OUT_OF_MEMORY;
  sim_status status = enqueue(s, wait_ticket_op, w, free, SIM_OP_CONTROL);
  if (status != SIM_OK) free(w);
  return status;
}

sim_status sim_stream_submit(sim_stream *s, sim_op_fn fn, void *arg, void (*free_arg)(void *)) {
  return sim_stream_submit_ex(s, fn, arg, free_arg, 0);
}

sim_status sim_stream_submit_ex(sim_stream *s, sim_op_fn fn, void *arg, void (*free_arg)(void *), unsigned flags) {
  if (s == NULL || fn == NULL || (flags & ~(SIM_OP_HOST_FUNCTION | SIM_OP_AFTER_FAULT | SIM_OP_CONTROL)))
    return SIM_ERR_INVALID_VALUE;
  if (tls_host_function) return SIM_ERR_NOT_PERMITTED;
  if (!(flags & SIM_OP_CONTROL)) {
    sim_status fault = sim_device_fault(s->device);
    if (fault != SIM_OK) return fault;
  }
  if (s->legacy) {
    /* The legacy default stream waits for all earlier work of every blocking stream. */
    pthread_mutex_lock(&streams_lock);
    for (sim_stream *o = device_streams[s->device]; o != NULL; o = o->next_of_device) {
      if (o == s || !o->blocking) continue;
      sim_status status = order_after(s, o);
      if (status != SIM_OK) {
        pthread_mutex_unlock(&streams_lock);
        return status;
      }
    }
    pthread_mutex_unlock(&streams_lock);
  } else if (s->blocking) {
    /* A blocking stream waits for the legacy default stream's earlier work. */
    sim_stream *legacy = __atomic_load_n(&legacy_streams[s->device], __ATOMIC_ACQUIRE);
    if (legacy != NULL) {
      sim_status status = order_after(s, legacy);
      if (status != SIM_OK) return status;
    }
  }
  return enqueue(s, fn, arg, free_arg, flags);
}

typedef struct host_call {
  void (*fn)(void *);
  void *user_data;
} host_call;

static sim_status host_call_op(void *raw) {
  host_call *call = raw;
  call->fn(call->user_data);
  return SIM_OK;
}

sim_status sim_stream_submit_host_call(sim_stream *s, void (*fn)(void *), void *user_data) {
  host_call *call = malloc(sizeof *call);
  if (call == NULL) return SIM_ERR_OUT_OF_MEMORY;
  *call = (host_call){fn, user_data};
  /* Application code on the stream's thread: driver calls refused, device memory off limits. */
  sim_status status = sim_stream_submit_ex(s, host_call_op, call, free, SIM_OP_HOST_FUNCTION);
  if (status != SIM_OK) free(call);
  return status;
}

typedef struct fill_op {
  unsigned char *dst;
  size_t pitch, width, height; /* width in bytes */
  unsigned elem;
  uint32_t value;
} fill_op;

static sim_status fill_run(void *raw) {
  fill_op *f = raw;
  sim_status use = sim_use_check(f->dst, f->height ? (f->height - 1) * f->pitch + f->width : 0);
  if (use != SIM_OK) return use;
  for (size_t row = 0; row < f->height; ++row) {
    unsigned char *p = f->dst + row * f->pitch;
    if (f->elem == 1) memset(p, (int)(f->value & 0xff), f->width);
    else
      for (size_t at = 0; at + f->elem <= f->width; at += f->elem) memcpy(p + at, &f->value, f->elem);
  }
  return SIM_OK;
}

sim_status sim_stream_submit_fill(sim_stream *s, void *dst, size_t pitch, size_t width, size_t height, unsigned elem,
                                  uint32_t value) {
  fill_op *f = malloc(sizeof *f);
  if (f == NULL) return SIM_ERR_OUT_OF_MEMORY;
  *f = (fill_op){dst, pitch, width, height, elem, value};
  sim_status status = sim_stream_submit(s, fill_run, f, free);
  if (status != SIM_OK) free(f);
  return status;
}

int sim_stream_busy(sim_stream *s) {
  pthread_mutex_lock(&s->mu);
  int busy = s->completed < s->submitted;
  pthread_mutex_unlock(&s->mu);
  return busy;
}

sim_status sim_stream_sync(sim_stream *s) {
  if (tls_host_function) return SIM_ERR_NOT_PERMITTED;
  pthread_mutex_lock(&s->mu);
  uint64_t ticket = s->submitted;
  ++s->done_waiters;
  while (s->completed < ticket) pthread_cond_wait(&s->cv, &s->mu);
  --s->done_waiters;
  sim_status status = s->error;
  s->error = SIM_OK;
  pthread_mutex_unlock(&s->mu);
  sim_status fault = sim_device_fault(s->device);
  return fault != SIM_OK ? fault : status;
}

void sim_stream_clear_error(sim_stream *s) {
  if (s == NULL) return;
  pthread_mutex_lock(&s->mu);
  s->error = SIM_OK;
  pthread_mutex_unlock(&s->mu);
}

void sim_stream_wait_idle(sim_stream *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t ticket = s->submitted;
  ++s->done_waiters;
  while (s->completed < ticket) pthread_cond_wait(&s->cv, &s->mu);
  --s->done_waiters;
  pthread_mutex_unlock(&s->mu);
}

void sim_device_wait_idle(int device) {
  if (sim_device(device) == NULL) return;
  pthread_mutex_lock(&streams_lock);
  sim_stream *list[256];
  size_t n = 0;
  for (sim_stream *o = device_streams[device]; o != NULL && n < 256; o = o->next_of_device) list[n++] = o;
  pthread_mutex_unlock(&streams_lock);
  for (size_t i = 0; i < n; ++i) sim_stream_wait_idle(list[i]);
}

sim_status sim_device_sync(int device) {
  if (sim_device(device) == NULL) return SIM_ERR_INVALID_VALUE;
  if (tls_host_function) return SIM_ERR_NOT_PERMITTED;
  sim_status first = SIM_OK;
  /* Streams are not destroyed while a front synchronises its own device (front contract). */
  pthread_mutex_lock(&streams_lock);
  sim_stream *list[256];
  size_t n = 0;
  for (sim_stream *o = device_streams[device]; o != NULL && n < 256; o = o->next_of_device) list[n++] = o;
  pthread_mutex_unlock(&streams_lock);
  for (size_t i = 0; i < n; ++i) {
    sim_status status = sim_stream_sync(list[i]);
    if (first == SIM_OK) first = status;
  }
  return first;
}

/* ---- events ------------------------------------------------------------------------------- */

struct sim_event {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int timing, destroyed, refs;
  uint64_t recorded, done; /* generations */
  uint64_t stamp_ns;
};

sim_event *sim_event_create(int timing) {
  sim_event *e = calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  e->timing = timing != 0;
  e->refs = 1;
  return e;
}

static void event_unref_locked(sim_event *e) {
  if (--e->refs == 0) {
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
    return;
  }
  pthread_mutex_unlock(&e->mu);
}

void sim_event_destroy(sim_event *e) {
  if (e == NULL) return;
  pthread_mutex_lock(&e->mu);
  e->destroyed = 1;
  event_unref_locked(e);
}

static sim_status mark_op(void *raw) {
  const counted *m = raw;
  sim_event *e = m->object;
  pthread_mutex_lock(&e->mu);
  if (m->count > e->done) {
    e->done = m->count;
    e->stamp_ns = now_ns();
  }
  pthread_cond_broadcast(&e->cv);
  event_unref_locked(e);
  return SIM_OK;
}

sim_status sim_event_record(sim_event *e, sim_stream *s) {
  if (e == NULL || s == NULL) return SIM_ERR_INVALID_VALUE;
  counted *m = new_counted(e, 0);
  if (m == NULL) return SIM_ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&e->mu);
  m->count = ++e->recorded;
  ++e->refs;
  pthread_mutex_unlock(&e->mu);
  sim_status status = sim_stream_submit_ex(s, mark_op, m, free, SIM_OP_CONTROL);
  if (status != SIM_OK) {
    pthread_mutex_lock(&e->mu);
    --e->recorded;
    event_unref_locked(e);
    free(m);
  }
  return status;
}

sim_status sim_event_query(sim_event *e) {
  pthread_mutex_lock(&e->mu);
  int done = e->done >= e->recorded;
  pthread_mutex_unlock(&e->mu);
  return done ? SIM_OK : SIM_ERR_NOT_READY;
}

sim_status sim_event_sync(sim_event *e) {
  if (tls_host_function) return SIM_ERR_NOT_PERMITTED;
  pthread_mutex_lock(&e->mu);
  uint64_t want = e->recorded;
  while (e->done < want) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  return SIM_OK;
}

sim_status sim_event_elapsed(sim_event *start, sim_event *end, float *ms) {
  if (start == NULL || end == NULL || ms == NULL) return SIM_ERR_INVALID_VALUE;
  if (!start->timing || !end->timing) return SIM_ERR_INVALID_HANDLE;
  sim_status a = sim_event_query(start), b = sim_event_query(end);
  if (a != SIM_OK || b != SIM_OK) return SIM_ERR_NOT_READY;
  pthread_mutex_lock(&start->mu);
  uint64_t t0 = start->stamp_ns, g0 = start->done;
  pthread_mutex_unlock(&start->mu);
  pthread_mutex_lock(&end->mu);
  uint64_t t1 = end->stamp_ns, g1 = end->done;
  pthread_mutex_unlock(&end->mu);
  if (g0 == 0 || g1 == 0) return SIM_ERR_INVALID_HANDLE;
  *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
  return SIM_OK;
}

static sim_status wait_event_op(void *raw) {
  const counted *m = raw;
  sim_event *e = m->object;
  pthread_mutex_lock(&e->mu);
  while (e->done < m->count) pthread_cond_wait(&e->cv, &e->mu);
  event_unref_locked(e);
  return SIM_OK;
}

sim_status sim_stream_wait_event(sim_stream *s, sim_event *e) {
  if (s == NULL || e == NULL) return SIM_ERR_INVALID_VALUE;
  pthread_mutex_lock(&e->mu);
  uint64_t generation = e->recorded;
  if (e->done >= generation) {
    pthread_mutex_unlock(&e->mu);
    return SIM_OK;
  }
  ++e->refs;
  pthread_mutex_unlock(&e->mu);
  counted *m = new_counted(e, generation);
  sim_status status = m == NULL ? SIM_ERR_OUT_OF_MEMORY : sim_stream_submit_ex(s, wait_event_op, m, free, SIM_OP_CONTROL);
  if (status != SIM_OK) {
    free(m);
    pthread_mutex_lock(&e->mu);
    event_unref_locked(e);
  }
  return status;
}

/* ---- launches: blocks of fibers ------------------------------------------------------------ */

#define FIBER_STACK (128 * 1024)
enum { FIBER_READY, FIBER_BARRIER, FIBER_DONE, FIBER_TRAPPED, FIBER_FAULTED };

typedef struct fiber {
  ucontext_t ctx;
  gpusim_thread self;
  int state;
} fiber;

typedef struct launch_op {
  int device;
  sim_kernel_entry entry;
  sim_dim3 grid, block;
  size_t dynamic_shared;
  unsigned char *args;
  void **params;
} launch_op;

/* Per worker thread: its fiber stacks (grown on demand, kept for the thread's life). */
static __thread fiber *tls_fibers;
static __thread char **tls_stacks;
static __thread unsigned tls_stack_count;
static __thread fiber *tls_current;
static __thread ucontext_t tls_scheduler;
static __thread launch_op *tls_launch;
static __thread volatile sig_atomic_t tls_in_kernel; /* a fiber of a kernel runs on this thread */
static __thread void *tls_altstack;

/* ---- memory faults of kernels: SIGSEGV/SIGBUS while a kernel's fiber runs abandons the launch
 * (the device's sticky ILLEGAL_ADDRESS); any other fault goes to the handler that was there
 * before (by default: the process dies, as it would have). ------------------------------------ */

#define ALTSTACK_SIZE (64 * 1024)
static pthread_once_t fault_handler_once = PTHREAD_ONCE_INIT;
static struct sigaction previous_segv, previous_bus;

static void kernel_fault_handler(int sig, siginfo_t *info, void *context) {
  if (tls_in_kernel && tls_current != NULL) {
    tls_in_kernel = 0;
    tls_current->state = FIBER_FAULTED;
    setcontext(&tls_scheduler); /* back to launch_run, which abandons the launch */
  }
  struct sigaction *previous = sig == SIGSEGV ? &previous_segv : &previous_bus;
  if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction != NULL) {
    previous->sa_sigaction(sig, info, context);
    return;
  }
  if (!(previous->sa_flags & SA_SIGINFO) && previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
    previous->sa_handler(sig);
    return;
  }
  /* The default action: restore it; the faulting instruction runs again and ends the process. */
  signal(sig, SIG_DFL);
}

static void install_fault_handler(void) {
  struct sigaction sa = {.sa_sigaction = kernel_fault_handler, .sa_flags = SA_SIGINFO | SA_ONSTACK};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &previous_segv);
  sigaction(SIGBUS, &sa, &previous_bus);
}

/* Each worker handles its kernels' faults on a stack of its own (a fiber's stack may be what
 * overflowed). */
static void worker_fault_setup(void) {
  pthread_once(&fault_handler_once, install_fault_handler);
  tls_altstack = malloc(ALTSTACK_SIZE);
  if (tls_altstack == NULL) return;
  stack_t ss = {.ss_sp = tls_altstack, .ss_flags = 0, .ss_size = ALTSTACK_SIZE};
  if (sigaltstack(&ss, NULL) != 0) {
    free(tls_altstack);
    tls_altstack = NULL;
  }
}

static void worker_fault_teardown(void) {
  if (tls_altstack == NULL) return;
  stack_t ss = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
  sigaltstack(&ss, NULL);
  free(tls_altstack);
  tls_altstack = NULL;
}

static const gpusim_thread *rt_self(void) { return &tls_current->self; }

static void rt_syncthreads(void) {
  fiber *f = tls_current;
  f->state = FIBER_BARRIER;
  swapcontext(&f->ctx, &tls_scheduler);
}

__attribute__((noreturn)) static void rt_trap(void) {
  fiber *f = tls_current;
  f->state = FIBER_TRAPPED;
  swapcontext(&f->ctx, &tls_scheduler); /* the scheduler abandons the launch: never resumed */
  abort();
}

static gpusim_runtime runtime = {GPUSIM_RUNTIME_ABI, rt_self, rt_syncthreads, rt_trap};

static void fiber_main(void) {
  tls_launch->entry(tls_launch->params);
  tls_current->state = FIBER_DONE;
}

/* Out of line: getcontext returns twice, which must not touch the scheduler's frame. */
__attribute__((noinline)) static void fiber_prepare(fiber *f, char *stack) {
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = stack;
  f->ctx.uc_stack.ss_size = FIBER_STACK;
  f->ctx.uc_link = &tls_scheduler;
  makecontext(&f->ctx, fiber_main, 0);
}

static int ensure_stacks(unsigned n) {
  if (n <= tls_stack_count) return 1;
  fiber *fibers = realloc(tls_fibers, n * sizeof *fibers);
  char **stacks = realloc(tls_stacks, n * sizeof *stacks);
  if (fibers) tls_fibers = fibers;
  if (stacks) tls_stacks = stacks;
  if (!fibers || !stacks) return 0;
  for (unsigned i = tls_stack_count; i < n; ++i) {
    void *stack = mmap(NULL, FIBER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) return 0;
    mprotect(stack, 4096, PROT_NONE); /* guard page */
    tls_stacks[i] = stack;
    tls_stack_count = i + 1;
  }
  return 1;
}

static sim_status launch_run(void *raw) {
  launch_op *l = raw;
  unsigned n = l->block.x * l->block.y * l->block.z;
  if (!ensure_stacks(n)) return SIM_ERR_OUT_OF_RESOURCES;
  void *shared = NULL;
  if (l->dynamic_shared && (shared = calloc(1, l->dynamic_shared)) == NULL) return SIM_ERR_OUT_OF_RESOURCES;
  tls_launch = l;
  int trapped = 0;
  for (unsigned bz = 0; bz < l->grid.z && !trapped; ++bz)
    for (unsigned by = 0; by < l->grid.y && !trapped; ++by)
      for (unsigned bx = 0; bx < l->grid.x && !trapped; ++bx) {
        for (unsigned i = 0; i < n; ++i) {
          fiber *f = &tls_fibers[i];
          f->self.thread_idx = (gpusim_uint3){i % l->block.x, (i / l->block.x) % l->block.y, i / (l->block.x * l->block.y)};
          f->self.block_idx = (gpusim_uint3){bx, by, bz};
          f->self.block_dim = (gpusim_uint3){l->block.x, l->block.y, l->block.z};
          f->self.grid_dim = (gpusim_uint3){l->grid.x, l->grid.y, l->grid.z};
          f->self.dynamic_shared = shared;
          f->self.dynamic_shared_size = l->dynamic_shared;
          f->state = FIBER_READY;
          fiber_prepare(f, tls_stacks[i]);
        }
        while (!trapped) {
          for (unsigned i = 0; i < n && !trapped; ++i) {
            if (tls_fibers[i].state != FIBER_READY) continue;
            tls_current = &tls_fibers[i];
            tls_in_kernel = 1;
            swapcontext(&tls_scheduler, &tls_fibers[i].ctx);
            tls_in_kernel = 0;
            trapped = tls_fibers[i].state == FIBER_TRAPPED || tls_fibers[i].state == FIBER_FAULTED;
          }
          if (trapped) break;
          /* Every fiber is now at the barrier or done: release the barrier. */
          unsigned waiting = 0;
          for (unsigned i = 0; i < n; ++i)
            if (tls_fibers[i].state == FIBER_BARRIER) {
              tls_fibers[i].state = FIBER_READY;
              ++waiting;
            }
          if (waiting == 0) break;
        }
      }
  tls_current = NULL;
  free(shared);
  if (trapped) {
    /* A trap or a memory fault aborts the launch and leaves the device faulted (sticky). */
    sim_status fault = SIM_ERR_ILLEGAL_INSTRUCTION;
    for (unsigned i = 0; i < n; ++i)
      if (tls_fibers[i].state == FIBER_FAULTED) fault = SIM_ERR_ILLEGAL_ADDRESS;
    sim_device_set_fault(l->device, fault);
    return fault;
  }
  return SIM_OK;
}

static void launch_free(void *raw) {
  launch_op *l = raw;
  free(l->args);
  free(l->params);
  free(l);
}

sim_status sim_launch(sim_stream *s, const sim_launch_desc *d) {
  if (s == NULL || d == NULL || d->entry == NULL) return SIM_ERR_INVALID_VALUE;
  const sim_device_props *p = sim_device(s->device);
  if (d->grid.x == 0 || d->grid.y == 0 || d->grid.z == 0 || d->block.x == 0 || d->block.y == 0 || d->block.z == 0)
    return SIM_ERR_INVALID_VALUE;
  if (d->grid.x > p->max_grid_dim.x || d->grid.y > p->max_grid_dim.y || d->grid.z > p->max_grid_dim.z)
    return SIM_ERR_INVALID_VALUE;
  if (d->block.x > p->max_block_dim.x || d->block.y > p->max_block_dim.y || d->block.z > p->max_block_dim.z)
    return SIM_ERR_INVALID_VALUE;
  if ((uint64_t)d->block.x * d->block.y * d->block.z > (uint64_t)p->max_threads_per_block)
    return SIM_ERR_INVALID_VALUE;
  if (d->dynamic_shared > p->shared_per_block_optin) return SIM_ERR_INVALID_VALUE;
  launch_op *l = calloc(1, sizeof *l);
  if (l == NULL) return SIM_ERR_OUT_OF_MEMORY;
  *l = (launch_op){s->device, d->entry, d->grid, d->block, d->dynamic_shared, NULL, NULL};
  l->args = malloc(d->args_size ? d->args_size : 1);
  l->params = malloc((d->param_count ? d->param_count : 1) * sizeof *l->params);
  if (l->args == NULL || l->params == NULL) {
    launch_free(l);
    return SIM_ERR_OUT_OF_MEMORY;
  }
  if (d->args_size) memcpy(l->args, d->args, d->args_size);
  for (unsigned i = 0; i < d->param_count; ++i) {
    if (d->param_offsets[i] >= d->args_size && d->args_size != 0) {
      launch_free(l);
      return SIM_ERR_INVALID_VALUE;
    }
    l->params[i] = l->args + d->param_offsets[i];
  }
  sim_status status = sim_stream_submit(s, launch_run, l, launch_free);
  if (status != SIM_OK) launch_free(l);
  return status;
}

/* ---- host builds ---------------------------------------------------------------------------- */

struct sim_hostlib {
  void *handle;
};

uint64_t sim_image_hash(const void *image, size_t size) {
  const unsigned char *p = image;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

sim_status sim_hostlib_open(const void *image, size_t size, sim_hostlib **out) {
  const char *dir = getenv("GPUSIM_KERNELS");
  if (dir == NULL || *dir == '\0') return SIM_ERR_NOT_FOUND;
  char path[4096], copy[] = "/tmp/gpusim-hostlib-XXXXXX";
  snprintf(path, sizeof path, "%s/%016llx.so", dir, (unsigned long long)sim_image_hash(image, size));
  int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return SIM_ERR_NOT_FOUND;
  int fd = mkstemp(copy);
  if (fd < 0) {
    close(in);
    return SIM_ERR_OUT_OF_RESOURCES;
  }
  char buf[65536];
  ssize_t got;
  int ok = 1;
  while ((got = read(in, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)got) != got) ok = 0;
  if (got < 0) ok = 0;
  close(in);
  close(fd);
  void *handle = ok ? dlopen(copy, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (handle == NULL && ok) fprintf(stderr, "gpusim: dlopen of the host build %s failed: %s\n", path, dlerror());
  unlink(copy);
  if (handle == NULL) return SIM_ERR_OUT_OF_RESOURCES;
  gpusim_runtime **rt = dlsym(handle, "gpusim_rt");
  sim_hostlib *lib = malloc(sizeof *lib);
  if (rt == NULL || lib == NULL) {
    if (rt == NULL) fprintf(stderr, "gpusim: %s has no gpusim_rt (not a gpusim host build)\n", path);
    dlclose(handle);
    free(lib);
    return rt == NULL ? SIM_ERR_NOT_FOUND : SIM_ERR_OUT_OF_MEMORY;
  }
  *rt = &runtime;
  lib->handle = handle;
  *out = lib;
  return SIM_OK;
}

sim_kernel_entry sim_hostlib_kernel(sim_hostlib *lib, const char *name) {
  char symbol[1024];
  snprintf(symbol, sizeof symbol, "gpusim_kernel_%s", name);
  sim_kernel_entry entry;
  *(void **)&entry = dlsym(lib->handle, symbol);
  return entry;
}

void *sim_hostlib_global(sim_hostlib *lib, const char *name) { return dlsym(lib->handle, name); }

void sim_hostlib_close(sim_hostlib *lib) {
  if (lib == NULL) return;
  dlclose(lib->handle);
  free(lib);
}

/* ---- ELF64 ---------------------------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int in_bounds(size_t size, uint64_t offset, uint64_t length) { return offset <= size && length <= size - offset; }

sim_status sim_elf_open(const void *data, size_t size, sim_elf *out) {
  const unsigned char *p = data;
  if (p == NULL || size < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 /* ELFCLASS64 */ || p[5] != 1 /* LE */)
    return SIM_ERR_INVALID_IMAGE;
  sim_elf e = {p, size, rd16(p + 18), rd32(p + 48), p[8], rd16(p + 60), rd64(p + 40), rd16(p + 62)};
  if (rd16(p + 58) != 64 || !in_bounds(size, e.shoff, (uint64_t)e.shnum * 64) || e.shstrndx >= e.shnum)
    return SIM_ERR_INVALID_IMAGE;
  *out = e;
  sim_elf_section strtab;
  return sim_elf_section_at(out, e.shstrndx, &strtab);
}

sim_status sim_elf_section_at(const sim_elf *e, unsigned index, sim_elf_section *out) {
  if (index >= e->shnum) return SIM_ERR_INVALID_IMAGE;
  const unsigned char *h = e->data + e->shoff + (uint64_t)index * 64;
  uint32_t type = rd32(h + 4);
  uint64_t offset = rd64(h + 24), size = rd64(h + 32);
  if (type != 8 /* NOBITS */ && !in_bounds(e->size, offset, size)) return SIM_ERR_INVALID_IMAGE;
  /* the name, from the section-name string table */
  const unsigned char *sh = e->data + e->shoff + (uint64_t)e->shstrndx * 64;
  uint64_t str_off = rd64(sh + 24), str_size = rd64(sh + 32), name = rd32(h);
  if (!in_bounds(e->size, str_off, str_size) || name >= str_size || memchr(e->data + str_off + name, 0, str_size - name) == NULL)
    return SIM_ERR_INVALID_IMAGE;
  out->name = (const char *)e->data + str_off + name;
  out->type = type;
  out->flags = rd64(h + 8);
  out->data = type == 8 ? NULL : e->data + offset;
  out->size = size;
  out->link = rd32(h + 40);
  out->info = rd32(h + 44);
  out->entsize = rd64(h + 56);
  return SIM_OK;
}

int sim_elf_symbols(const sim_elf *e, int (*fn)(const sim_elf_symbol *sym, void *ctx), void *ctx) {
  for (unsigned i = 0; i < e->shnum; ++i) {
    sim_elf_section sec, str;
    if (sim_elf_section_at(e, i, &sec) != SIM_OK) return -(int)SIM_ERR_INVALID_IMAGE;
    if (sec.type != 2 /* SYMTAB */) continue;
    if (sim_elf_section_at(e, sec.link, &str) != SIM_OK || str.data == NULL || sec.data == NULL)
      return -(int)SIM_ERR_INVALID_IMAGE;
    for (uint64_t at = 0; at + 24 <= sec.size; at += 24) {
      const unsigned char *s = sec.data + at;
      uint32_t name = rd32(s);
      if (name >= str.size || memchr(str.data + name, 0, str.size - name) == NULL) return -(int)SIM_ERR_INVALID_IMAGE;
      sim_elf_symbol sym = {(const char *)str.data + name, s[4], s[5], rd16(s + 6), rd64(s + 8), rd64(s + 16)};
      int rc = fn(&sym, ctx);
      if (rc) return rc;
    }
  }
  return 0;
}
