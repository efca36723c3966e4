/* cupool.c - the simulated CUDA driver's stream-ordered memory allocator (see simcuda.h):
 * memory pools (cuMemPoolCreate/Destroy, attributes, access, trimming), every device's default
 * and current pool, cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync.
 *
 * Modelled (CUDA Driver API, "Stream Ordered Memory Allocator" and the functions' entries): an
 * allocation comes from the device's current pool (the default one until cuDeviceSetMemPool);
 * cuMemFreeAsync frees when the stream reaches it, so later use faults or is refused (freed
 * device memory stays reserved without access, see the core); a second free of the same
 * allocation is INVALID_VALUE; the pool keeps freed memory up to its release threshold
 * (RESERVED_MEM_* vs USED_MEM_* attributes; trimmed by cuMemPoolTrimTo); a pool's maxSize bounds
 * it; a destroyed pool is released once its last allocation is freed; the default pool cannot
 * be destroyed; a copy or fill on another stream before the allocating stream reached the
 * allocation faults (use_rule). Not modelled: reuse of freed memory (every allocation is fresh memory), the
 * release at the next synchronisation (it happens when the free runs), IPC pools, host and
 * managed pools.
 */
#define _GNU_SOURCE
#include "simcuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAGIC 0x504f4f4cu

enum { ATTR_FOLLOW = 1, ATTR_OPPORTUNISTIC, ATTR_INTERNAL, ATTR_THRESHOLD, ATTR_RESERVED, ATTR_RESERVED_HIGH,
       ATTR_USED, ATTR_USED_HIGH, ATTR_ALLOC_TYPE, ATTR_HANDLE_TYPES, ATTR_LOCATION_ID, ATTR_LOCATION_TYPE,
       ATTR_MAX_SIZE, ATTR_HW_DECOMPRESS };
enum { LOCATION_DEVICE = 1, LOCATION_HOST = 2, ALLOC_PINNED = 1, ALLOC_MANAGED = 2, ACCESS_RW = 3 };

struct CUmemPoolProps_st {
  int allocType, handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
struct CUmemAccessDesc_st { CUmemLocation location; int flags; };

struct cumempool {
  unsigned magic;
  int device, is_default, destroyed;
  int reuse[3];                       /* REUSE_* attributes (default enabled) */
  unsigned long long threshold;       /* RELEASE_THRESHOLD */
  size_t max_size;                    /* CUmemPoolProps.maxSize (0: the device's memory) */
  unsigned long long used, cached, used_high, reserved_high;
  size_t live;                        /* allocations not yet freed */
  int access[8];                      /* CUmemAccess_flags per device */
};

typedef struct pool_alloc {
  CUdeviceptr ptr;
  size_t size;
  struct cumempool *pool; /* NULL: a cuMemAlloc allocation freed with cuMemFreeAsync */
  int free_pending;       /* cuMemFreeAsync enqueued, not yet run */
  struct pool_alloc *next;
  sim_stream *stream;     /* the allocating stream, while it has not reached the allocation (else NULL) */
  unsigned long long id;  /* unique: what the stream's "reached" operation finds it by */
} pool_alloc;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t unreached;             /* allocations whose stream has not reached them (the rule's fast path) */
static unsigned long long next_id = 1;
static struct cumempool default_pool[8];
static struct cumempool *current_pool[8];
static pool_alloc *allocs;

static void pool_init(struct cumempool *p, int device, int is_default) {
  memset(p, 0, sizeof *p);
  p->device = device;
  p->is_default = is_default;
  p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
  p->access[device] = ACCESS_RW;
  p->magic = POOL_MAGIC;
}

/* The device's default pool (made on first use). Caller holds pool_lock. */
static struct cumempool *default_of(int device) {
  if (default_pool[device].magic != POOL_MAGIC) pool_init(&default_pool[device], device, 1);
  return &default_pool[device];
}

static struct cumempool *current_of(int device) {
  return current_pool[device] ? current_pool[device] : default_of(device);
}

static int pool_usable(const struct cumempool *p) { return p != NULL && p->magic == POOL_MAGIC && !p->destroyed; }

static void account(struct cumempool *p) {
  if (p->used > p->used_high) p->used_high = p->used;
  if (p->used + p->cached > p->reserved_high) p->reserved_high = p->used + p->cached;
}

/* A destroyed pool is released with its last allocation. Caller holds pool_lock. */
static void maybe_release(struct cumempool *p) {
  if (p->destroyed && p->live == 0 && !p->is_default) p->magic = 0; /* the struct stays: stale handles read it */
}

static pool_alloc *find_alloc(CUdeviceptr ptr) {
  for (pool_alloc *a = allocs; a; a = a->next)
    if (a->ptr == ptr) return a;
  return NULL;
}

static void unlink_alloc(pool_alloc *gone) {
  for (pool_alloc **a = &allocs; *a; a = &(*a)->next)
    if (*a == gone) {
      *a = gone->next;
      return;
    }
}

/* Bookkeeping of a pool allocation's end (the free ran, or cuMemFree took it). Caller holds
 * pool_lock. Freed memory stays reserved by the pool up to its release threshold. */
static void pool_free_bookkeeping(pool_alloc *a) {
  struct cumempool *p = a->pool;
  unlink_alloc(a);
  if (a->stream != NULL) --unreached;
  if (p != NULL) {
    p->used -= a->size;
    p->cached += a->size;
    unsigned long long keep = p->threshold > p->used ? p->threshold - p->used : 0;
    if (p->cached > keep) p->cached = keep;
    p->live--;
    account(p);
    maybe_release(p);
  }
  free(a);
}

CUmemoryPool cu_pool_of(CUdeviceptr ptr) {
  pthread_mutex_lock(&pool_lock);
  pool_alloc *a = find_alloc(ptr);
  CUmemoryPool p = a ? a->pool : NULL;
  pthread_mutex_unlock(&pool_lock);
  return p;
}

void cu_pool_forget(CUdeviceptr ptr) {
  pthread_mutex_lock(&pool_lock);
  pool_alloc *a = find_alloc(ptr);
  if (a != NULL && !a->free_pending) pool_free_bookkeeping(a);
  pthread_mutex_unlock(&pool_lock);
}

/* 1 when ptr is a pool allocation whose free is pending (cuMemFree of it is a double free). */
int cu_pool_free_pending(CUdeviceptr ptr) {
  pthread_mutex_lock(&pool_lock);
  pool_alloc *a = find_alloc(ptr);
  int pending = a != NULL && a->free_pending;
  pthread_mutex_unlock(&pool_lock);
  return pending;
}

/* ---- allocation and free ------------------------------------------------------------------- */

/* Stream order of an allocation (CUDA Programming Guide, Stream Ordered Memory Allocator: the
 * allocation may be used "in the stream it was allocated in, or in any other stream provided the
 * accesses are ordered after the allocation operation", e.g. by cuStreamWaitEvent on an event
 * recorded after it): until the allocating stream reaches cuMemAllocAsync, a copy or fill on
 * another stream that touches it faults as an access to unmapped device memory does (sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS). Kernels are not checked (they reach memory directly). */
typedef struct reach_op {
  CUdeviceptr ptr;
  unsigned long long id;
} reach_op;

static sim_status reach_run(void *raw) {
  reach_op *r = raw;
  pthread_mutex_lock(&pool_lock);
  pool_alloc *a = find_alloc(r->ptr);
  if (a != NULL && a->id == r->id && a->stream != NULL) {
    a->stream = NULL;
    --unreached;
  }
  pthread_mutex_unlock(&pool_lock);
  return SIM_OK;
}

static sim_status use_rule(const void *p, size_t size, sim_stream *stream) {
  if (__atomic_load_n(&unreached, __ATOMIC_ACQUIRE) == 0) return SIM_OK;
  CUdeviceptr lo = (CUdeviceptr)(uintptr_t)p, hi = lo + size;
  int device = -1;
  pthread_mutex_lock(&pool_lock);
  for (pool_alloc *a = allocs; a; a = a->next)
    if (a->stream != NULL && a->stream != stream && lo < a->ptr + a->size && a->ptr < hi) {
      device = sim_stream_device(stream);
      break;
    }
  pthread_mutex_unlock(&pool_lock);
  if (device < 0) return SIM_OK;
  sim_device_set_fault(device, SIM_ERR_ILLEGAL_ADDRESS);
  return SIM_ERR_ILLEGAL_ADDRESS;
}

static pthread_once_t rule_once = PTHREAD_ONCE_INIT;
static void install_rule(void) { sim_set_use_rule(use_rule); }

static CUresult alloc_from(struct cumempool *p, CUdeviceptr *dptr, size_t size, CUstream stream, struct cuctx *ctx) {
  if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&pool_lock);
  if (p == NULL) p = current_of(owner->device);
  if (!pool_usable(p)) {
    pthread_mutex_unlock(&pool_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  /* maxSize bounds what the pool holds (in use plus kept) */
  if (p->max_size && p->used + size > p->max_size) {
    pthread_mutex_unlock(&pool_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pool_alloc *a = calloc(1, sizeof *a);
  void *mem = NULL;
  rc = a ? from_sim(sim_mem_alloc(p->device, SIM_MEM_DEVICE, size, &mem)) : CUDA_ERROR_OUT_OF_MEMORY;
  if (rc != CUDA_SUCCESS) {
    free(a);
    pthread_mutex_unlock(&pool_lock);
    return rc;
  }
  unsigned access = sim_device_access_begin(); /* not cleared by the driver, as cuMemAlloc's */
  memset(mem, 0xA5, size);
  sim_device_access_end(access);
  *a = (pool_alloc){(CUdeviceptr)(uintptr_t)mem, size, p, 0, allocs, s, next_id++};
  allocs = a;
  ++unreached;
  p->cached = p->cached > size ? p->cached - size : 0;
  p->used += size;
  p->live++;
  account(p);
  reach_op *r = malloc(sizeof *r);
  CUdeviceptr ptr = a->ptr;
  if (r != NULL) *r = (reach_op){ptr, a->id};
  pthread_mutex_unlock(&pool_lock);
  pthread_once(&rule_once, install_rule);
  /* the allocation is reached when its stream gets here (without memory for the marker: at once) */
  if (r == NULL || sim_stream_submit_ex(s, reach_run, r, free, SIM_OP_AFTER_FAULT) != SIM_OK) {
    pthread_mutex_lock(&pool_lock);
    pool_alloc *mine = find_alloc(ptr);
    if (mine != NULL && mine->stream != NULL) {
      mine->stream = NULL;
      --unreached;
    }
    pthread_mutex_unlock(&pool_lock);
    free(r);
  }
  *dptr = ptr;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream) {
  REQUIRE_CTX(ctx);
  return alloc_from(NULL, dptr, size, stream, ctx);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream) {
  REQUIRE_CTX(ctx);
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  return alloc_from(pool, dptr, size, stream, ctx);
}

static sim_status free_run(void *raw) {
  pool_alloc *a = raw;
  sim_status status = sim_mem_free(PTR(a->ptr), KIND(SIM_MEM_DEVICE));
  pthread_mutex_lock(&pool_lock);
  pool_free_bookkeeping(a);
  pthread_mutex_unlock(&pool_lock);
  return status;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&pool_lock);
  pool_alloc *a = find_alloc(dptr);
  if (a == NULL) {
    /* a cuMemAlloc allocation (its base) may be freed in stream order too */
    sim_alloc_info info;
    if (!sim_mem_find(PTR(dptr), &info) || info.kind != SIM_MEM_DEVICE || info.base != PTR(dptr) ||
        (a = calloc(1, sizeof *a)) == NULL) {
      pthread_mutex_unlock(&pool_lock);
      return CUDA_ERROR_INVALID_VALUE;
    }
    *a = (pool_alloc){dptr, info.size, NULL, 0, allocs};
    allocs = a;
  } else if (a->free_pending) {
    pthread_mutex_unlock(&pool_lock);
    return CUDA_ERROR_INVALID_VALUE; /* freed twice */
  }
  a->free_pending = 1;
  pthread_mutex_unlock(&pool_lock);
  rc = from_sim(sim_stream_submit(s, free_run, a, NULL));
  if (rc != CUDA_SUCCESS) {
    pthread_mutex_lock(&pool_lock);
    a->free_pending = 0;
    pthread_mutex_unlock(&pool_lock);
  }
  return rc;
}

/* ---- pools ----------------------------------------------------------------------------------- */

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props) {
  REQUIRE_INIT();
  if (out == NULL || props == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (props->allocType == ALLOC_MANAGED) return CUDA_ERROR_NOT_SUPPORTED; /* not modelled */
  if (props->allocType != ALLOC_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (props->location.type == LOCATION_HOST) return CUDA_ERROR_NOT_SUPPORTED; /* host pools: not modelled */
  if (props->location.type != LOCATION_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device(props->location.id) == NULL) return CUDA_ERROR_INVALID_DEVICE;
  if (props->handleTypes != 0) return CUDA_ERROR_NOT_SUPPORTED; /* IPC: not modelled */
  struct cumempool *p = malloc(sizeof *p);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pool_init(p, props->location.id, 0);
  p->max_size = props->maxSize;
  *out = p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  REQUIRE_INIT();
  pthread_mutex_lock(&pool_lock);
  CUresult rc = CUDA_SUCCESS;
  if (!pool_usable(pool) || pool->is_default) {
    rc = CUDA_ERROR_INVALID_VALUE; /* a device's default pool cannot be destroyed */
  } else {
    /* "Destroying the current mempool of a device sets the default mempool of that device as
     * the current mempool"; outstanding allocations keep it until they are freed */
    if (current_pool[pool->device] == pool) current_pool[pool->device] = NULL;
    pool->destroyed = 1;
    maybe_release(pool);
  }
  pthread_mutex_unlock(&pool_lock);
  return rc;
}

/* cuDeviceGetDefaultMemPool / cuDeviceGetMemPool: the device's pool that `of` names. */
static CUresult device_pool(CUmemoryPool *out, CUdevice dev, CUmemoryPool (*of)(CUdevice)) {
  REQUIRE_DEVICE(dev);
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_lock);
  *out = of(dev);
  pthread_mutex_unlock(&pool_lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev) { return device_pool(out, dev, default_of); }

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev) { return device_pool(out, dev, current_of); }

EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  REQUIRE_DEVICE(dev);
  pthread_mutex_lock(&pool_lock);
  CUresult rc = !pool_usable(pool) || pool->device != dev ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS) current_pool[dev] = pool->is_default ? NULL : pool;
  pthread_mutex_unlock(&pool_lock);
  return rc;
}

/* CUDA 13's location-based forms: device locations of pinned pools only. */
static CUresult location_device(const CUmemLocation *loc, int type, int *dev) {
  if (loc == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (type == ALLOC_MANAGED || loc->type == LOCATION_HOST) return CUDA_ERROR_NOT_SUPPORTED;
  if (type != ALLOC_PINNED || loc->type != LOCATION_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device(loc->id) == NULL) return CUDA_ERROR_INVALID_DEVICE;
  *dev = loc->id;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *out, const CUmemLocation *loc, int type) {
  REQUIRE_INIT();
  int dev;
  CUresult rc = location_device(loc, type, &dev);
  return rc != CUDA_SUCCESS ? rc : cuDeviceGetDefaultMemPool(out, dev);
}

EXPORT CUresult cuMemGetMemPool(CUmemoryPool *out, const CUmemLocation *loc, int type) {
  REQUIRE_INIT();
  int dev;
  CUresult rc = location_device(loc, type, &dev);
  return rc != CUDA_SUCCESS ? rc : cuDeviceGetMemPool(out, dev);
}

EXPORT CUresult cuMemSetMemPool(const CUmemLocation *loc, int type, CUmemoryPool pool) {
  REQUIRE_INIT();
  int dev;
  CUresult rc = location_device(loc, type, &dev);
  return rc != CUDA_SUCCESS ? rc : cuDeviceSetMemPool(dev, pool);
}

/* Under pool_lock, of a usable pool: read or write one attribute (CUDA_ERROR_INVALID_VALUE for one
 * that is unknown, or read-only). */
static CUresult get_attribute(CUmemoryPool pool, int attr, void *value) {
  if (attr >= ATTR_FOLLOW && attr <= ATTR_INTERNAL) {
    *(int *)value = pool->reuse[attr - 1];
  } else if (attr >= ATTR_THRESHOLD && attr <= ATTR_USED_HIGH) {
    unsigned long long v[] = {pool->threshold, pool->used + pool->cached, pool->reserved_high, pool->used, pool->used_high};
    *(unsigned long long *)value = v[attr - ATTR_THRESHOLD];
  } else if (attr == ATTR_MAX_SIZE) {
    *(unsigned long long *)value = pool->max_size;
  } else if (attr >= ATTR_ALLOC_TYPE && attr <= ATTR_HW_DECOMPRESS) {
    int v[] = {ALLOC_PINNED, 0, pool->device, LOCATION_DEVICE, 0, 0};
    *(int *)value = v[attr - ATTR_ALLOC_TYPE];
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult set_attribute(CUmemoryPool pool, int attr, void *value) {
  if (attr >= ATTR_FOLLOW && attr <= ATTR_INTERNAL) {
    pool->reuse[attr - 1] = *(int *)value != 0;
  } else if (attr == ATTR_THRESHOLD) {
    pool->threshold = *(unsigned long long *)value;
  } else if ((attr == ATTR_RESERVED_HIGH || attr == ATTR_USED_HIGH) && *(unsigned long long *)value == 0) {
    /* the high watermarks may only be reset ("It is illegal to set this attribute to a non-zero value") */
    if (attr == ATTR_RESERVED_HIGH) pool->reserved_high = pool->used + pool->cached;
    else pool->used_high = pool->used;
  } else {
    return CUDA_ERROR_INVALID_VALUE; /* read-only, or a non-zero high watermark */
  }
  return CUDA_SUCCESS;
}

static CUresult pool_attribute(CUmemoryPool pool, int attr, void *value,
                               CUresult (*access)(CUmemoryPool, int, void *)) {
  REQUIRE_INIT();
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_lock);
  CUresult rc = pool_usable(pool) ? access(pool, attr, value) : CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_unlock(&pool_lock);
  return rc;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value) {
  return pool_attribute(pool, attr, value, get_attribute);
}

EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value) {
  return pool_attribute(pool, attr, value, set_attribute);
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  REQUIRE_INIT();
  pthread_mutex_lock(&pool_lock);
  CUresult rc = pool_usable(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && pool->used + pool->cached > keep)
    pool->cached = keep > pool->used ? keep - pool->used : 0; /* memory in use is never trimmed */
  pthread_mutex_unlock(&pool_lock);
  return rc;
}

EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
  REQUIRE_INIT();
  if (map == NULL && count > 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_lock);
  CUresult rc = pool_usable(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < count; ++i) {
    const CUmemAccessDesc *d = &map[i];
    int can = 0;
    if (d->location.type != LOCATION_DEVICE || (d->flags != 0 && d->flags != 1 && d->flags != ACCESS_RW)) rc = CUDA_ERROR_INVALID_VALUE;
    else if (sim_device(d->location.id) == NULL) rc = CUDA_ERROR_INVALID_DEVICE;
    else if (d->location.id == pool->device) rc = d->flags == ACCESS_RW ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    else if ((rc = cuDeviceCanAccessPeer(&can, d->location.id, pool->device)) == CUDA_SUCCESS && !can) rc = CUDA_ERROR_INVALID_DEVICE;
  }
  for (size_t i = 0; rc == CUDA_SUCCESS && i < count; ++i) pool->access[map[i].location.id] = map[i].flags;
  pthread_mutex_unlock(&pool_lock);
  return rc;
}

EXPORT CUresult cuMemPoolGetAccess(int *flags, CUmemoryPool pool, const CUmemLocation *loc) {
  REQUIRE_INIT();
  if (flags == NULL || loc == NULL || loc->type != LOCATION_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device(loc->id) == NULL) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&pool_lock);
  CUresult rc = pool_usable(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *flags = pool->access[loc->id];
  pthread_mutex_unlock(&pool_lock);
  return rc;
}
