/* simcuda_ext.c - what other CUDA libraries (cuda.core) need of the simulated driver beyond the
 * backend's calls (see simcuda.h): created (non-primary) contexts and context queries, stream
 * priorities and queries, cuLaunchKernelEx with its launch attributes, pointer attributes.
 * See ../README.md for the documentation of each rule.
 */
#define _GNU_SOURCE
#include "simcuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- contexts ---------------------------------------------------------------------------------- */

#define CTX_FLAGS_MASK 0x1fu /* scheduling flags and MAP_HOST, LMEM_RESIZE_TO_MAX */
static unsigned long long next_id = 100; /* ids of created contexts and streams */

static unsigned long long new_id(void) { return __atomic_fetch_add(&next_id, 1, __ATOMIC_ACQ_REL); }

/* cuCtxCreate: a new context on dev, with refs 1, pushed on the calling thread's stack. Its
 * streams and events are its own (they die with it); its memory is the device's (see README). */
static CUresult ctx_create(CUcontext *out, unsigned flags, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (out == NULL || (flags & ~CTX_FLAGS_MASK)) return CUDA_ERROR_INVALID_VALUE;
  struct cuctx *ctx = calloc(1, sizeof *ctx); /* never freed: a destroyed context's handle stays readable */
  if (ctx == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx->device = dev;
  ctx->created = 1;
  ctx->flags = flags;
  ctx->id = new_id();
  ctx->refs = 1;
  CUresult rc = cuCtxPushCurrent_v2(ctx);
  if (rc != CUDA_SUCCESS) {
    free(ctx);
    return rc;
  }
  *out = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *out, unsigned flags, CUdevice dev) { return ctx_create(out, flags, dev); }

/* v3: execution-affinity parameters (SM counts) are not modelled; none may be given. */
EXPORT CUresult cuCtxCreate_v3(CUcontext *out, void *affinity, int n, unsigned flags, CUdevice dev) {
  if (n < 0 || (n > 0 && affinity == NULL)) return CUDA_ERROR_INVALID_VALUE;
  if (n > 0) return CUDA_ERROR_NOT_SUPPORTED;
  return ctx_create(out, flags, dev);
}

/* v4: CUctxCreateParams {execAffinityParams, numExecAffinityParams, cigParams}; only NULL or
 * an empty one is modelled. */
struct CUctxCreateParams_st { void *affinity; int n; void *cig; };
EXPORT CUresult cuCtxCreate_v4(CUcontext *out, CUctxCreateParams *params, unsigned flags, CUdevice dev) {
  if (params != NULL && (params->n != 0 || params->cig != NULL)) return CUDA_ERROR_NOT_SUPPORTED;
  return ctx_create(out, flags, dev);
}

/* "Destroys the CUDA context specified by ctx ... regardless of how many threads it is current
 * to"; popped from the calling thread's stack if current there; a primary context is not
 * destroyed this way (INVALID_CONTEXT: it is released with cuDevicePrimaryCtxRelease). */
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  REQUIRE_INIT();
  if (ctx == NULL || !ctx->created || __atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_device_wait_idle(ctx->device); /* its work finishes first */
  CUcontext current = NULL;
  cuCtxGetCurrent(&current);
  if (current == ctx) cuCtxPopCurrent_v2(NULL);
  __atomic_add_fetch(&ctx->generation, 1, __ATOMIC_ACQ_REL); /* its streams and events die */
  __atomic_store_n(&ctx->refs, 0, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetFlags(unsigned *flags) {
  REQUIRE_CTX(ctx);
  if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) {
  REQUIRE_INIT();
  if (id == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == NULL) {
    CUresult rc = cu_current(&ctx);
    if (rc != CUDA_SUCCESS) return rc;
  }
  if (__atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  unsigned long long none = 0, fresh = new_id();
  __atomic_compare_exchange_n(&ctx->id, &none, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  *id = ctx->id;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version) {
  REQUIRE_INIT();
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == NULL && cu_current(&ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020; /* the context API version of every context since CUDA 3.2 */
  return CUDA_SUCCESS;
}

/* Stream priorities: lower numbers are higher priorities; 0 is the default and the least. */
#define PRIORITY_LEAST 0
#define PRIORITY_GREATEST (-5)

EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  REQUIRE_CTX(ctx);
  if (least == NULL && greatest == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (least) *least = PRIORITY_LEAST;
  if (greatest) *greatest = PRIORITY_GREATEST;
  return CUDA_SUCCESS;
}

/* ---- streams ------------------------------------------------------------------------------------ */

/* "Priorities outside the range ... are clamped"; the priority is kept and reported, the
 * simulator's scheduling ignores it (streams run on their own workers). */
EXPORT CUresult cuStreamCreateWithPriority(CUstream *out, unsigned flags, int priority) {
  CUresult rc = cuStreamCreate(out, flags);
  if (rc != CUDA_SUCCESS) return rc;
  (*out)->priority = priority > PRIORITY_LEAST ? PRIORITY_LEAST : priority < PRIORITY_GREATEST ? PRIORITY_GREATEST : priority;
  return CUDA_SUCCESS;
}

/* A stream handle of the current context's or another live context's (NULL/LEGACY/PER_THREAD:
 * the current context's default stream, whose owner is the current context). */
static CUresult stream_owner(CUstream stream, struct cuctx **owner) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  return resolve_stream_owner(stream, ctx, &s, owner);
}

/* The stream getters' common start: the stream's owner as `owner`, then the output pointer `out`
 * checked (an unknown stream is refused before a NULL output). */
#define STREAM_GETTER(stream, owner, out)                 \
  struct cuctx *owner;                                    \
  do {                                                    \
    CUresult rc_ = stream_owner(stream, &owner);          \
    if (rc_ != CUDA_SUCCESS) return rc_;                  \
    if (out == NULL) return CUDA_ERROR_INVALID_VALUE;     \
  } while (0)

EXPORT CUresult cuStreamGetPriority(CUstream stream, int *priority) {
  STREAM_GETTER(stream, owner, priority);
  *priority = is_default_stream(stream) ? 0 : stream->priority;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetCtx(CUstream stream, CUcontext *out) {
  STREAM_GETTER(stream, owner, out);
  *out = owner;
  return CUDA_SUCCESS;
}

/* v2 (12.5): also the green context (none: green contexts are not modelled). */
EXPORT CUresult cuStreamGetCtx_v2(CUstream stream, CUcontext *out, void **green) {
  if (out == NULL && green == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  CUresult rc = cuStreamGetCtx(stream, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (out) *out = ctx;
  if (green) *green = NULL;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetDevice(CUstream stream, CUdevice *dev) {
  STREAM_GETTER(stream, owner, dev);
  *dev = owner->device;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetId(CUstream stream, unsigned long long *id) {
  STREAM_GETTER(stream, owner, id);
  if (is_default_stream(stream)) {
    *id = (uintptr_t)stream == 0x2 ? 2 : 1; /* the per-thread and the legacy default stream */
    return CUDA_SUCCESS;
  }
  unsigned long long none = 0, fresh = new_id();
  __atomic_compare_exchange_n(&stream->id, &none, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  *id = stream->id;
  return CUDA_SUCCESS;
}

/* Capture is not modelled: no stream is ever capturing (CU_STREAM_CAPTURE_STATUS_NONE). */
EXPORT CUresult cuStreamIsCapturing(CUstream stream, int *status) {
  STREAM_GETTER(stream, owner, status);
  *status = 0;
  return CUDA_SUCCESS;
}

/* ---- cuLaunchKernelEx ------------------------------------------------------------------------------ */

typedef struct {
  int id;
  int pad;
  union {
    unsigned char bytes[64];
    int cooperative;
    struct { unsigned x, y, z; } cluster;
    int priority;
  } value;
} CUlaunchAttribute;

struct CUlaunchConfig_st {
  unsigned grid[3], block[3], shared;
  CUstream stream;
  CUlaunchAttribute *attrs;
  unsigned n_attrs;
};

enum {
  ATTR_IGNORE = 0, ATTR_ACCESS_POLICY_WINDOW = 1, ATTR_COOPERATIVE = 2, ATTR_SYNCHRONIZATION_POLICY = 3,
  ATTR_CLUSTER_DIMENSION = 4, ATTR_CLUSTER_SCHEDULING_POLICY = 5, ATTR_PROGRAMMATIC_SERIALIZATION = 6,
  ATTR_PRIORITY = 8, ATTR_MEM_SYNC_DOMAIN_MAP = 9, ATTR_MEM_SYNC_DOMAIN = 10, ATTR_SHARED_CARVEOUT = 14,
  ATTR_LAST_KNOWN_TO_13_0 = 14,
};

#define PORTABLE_CLUSTER 8  /* blocks; "portable cluster size" */
#define MAX_CLUSTER 16      /* non-portable, sm_90, with NON_PORTABLE_CLUSTER_SIZE_ALLOWED */

/* Cluster dimensions: sm_90 and newer; each grid dimension a multiple of the cluster's; at most
 * 8 blocks (16 where the function allows non-portable sizes). */
static CUresult check_cluster(const CUlaunchConfig *c, CUfunction f, unsigned x, unsigned y, unsigned z) {
  if (cu_device_sm() < 90) return CUDA_ERROR_NOT_SUPPORTED;
  if (x == 0 || y == 0 || z == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (c->grid[0] % x || c->grid[1] % y || c->grid[2] % z) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  int non_portable = 0;
  CUresult rc = cuFuncGetAttribute(&non_portable, 14, f);
  if (rc != CUDA_SUCCESS) return rc;
  if ((unsigned long long)x * y * z > (non_portable ? MAX_CLUSTER : PORTABLE_CLUSTER)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  return CUDA_SUCCESS;
}

/* A cooperative launch: "The device on which this kernel is invoked must have a non-zero value for
 * the device attribute CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH" (cuLaunchCooperativeKernel; no error
 * code is named: CUDA_ERROR_NOT_SUPPORTED, "the attempted operation is not supported on the current
 * system or device", GPUSIM_CUDA_COOPERATIVE=0), and the grid must be co-resident: at most max
 * active blocks per SM times the SMs. */
static CUresult check_cooperative(const CUlaunchConfig *c, CUfunction f) {
  struct cuctx *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (!cu_cooperative_launch(ctx->device)) return CUDA_ERROR_NOT_SUPPORTED;
  int per_sm = 0;
  rc = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, (int)(c->block[0] * c->block[1] * c->block[2]), c->shared);
  if (rc != CUDA_SUCCESS) return rc;
  unsigned long long blocks = (unsigned long long)c->grid[0] * c->grid[1] * c->grid[2];
  return blocks > (unsigned long long)per_sm * sim_device(ctx->device)->multiprocessors ? CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
                                                                                        : CUDA_SUCCESS;
}

/* The launch of cuLaunchKernel described by a CUlaunchConfig, after its attributes are checked:
 * hints that do not change what a kernel computes are accepted (priority, access policy,
 * synchronisation policy, memory sync domains, carveout, scheduling preferences, programmatic
 * serialisation: running serially is allowed); cooperative launches are checked for co-residency;
 * clusters for their shape; attributes whose semantics are not modelled (programmatic and launch
 * completion events, device-updatable graph nodes, preferred cluster dimensions) are
 * NOT_SUPPORTED; ids unknown to a 13.0 driver are INVALID_VALUE. */
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) {
  REQUIRE_CTX(ctx);
  if (config == NULL || (config->n_attrs > 0 && config->attrs == NULL)) return CUDA_ERROR_INVALID_VALUE;
  if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < config->n_attrs; ++i) {
    const CUlaunchAttribute *a = &config->attrs[i];
    CUresult rc = CUDA_SUCCESS;
    switch (a->id) {
    case ATTR_IGNORE: case ATTR_ACCESS_POLICY_WINDOW: case ATTR_SYNCHRONIZATION_POLICY: case ATTR_CLUSTER_SCHEDULING_POLICY:
    case ATTR_PROGRAMMATIC_SERIALIZATION: case ATTR_PRIORITY: case ATTR_MEM_SYNC_DOMAIN_MAP: case ATTR_MEM_SYNC_DOMAIN:
    case ATTR_SHARED_CARVEOUT:
      break;
    case ATTR_COOPERATIVE:
      if (a->value.cooperative) rc = check_cooperative(config, f);
      break;
    case ATTR_CLUSTER_DIMENSION:
      rc = check_cluster(config, f, a->value.cluster.x, a->value.cluster.y, a->value.cluster.z);
      break;
    default:
      rc = a->id > ATTR_LAST_KNOWN_TO_13_0 || a->id < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (rc != CUDA_SUCCESS) return rc;
  }
  const unsigned *g = config->grid, *b = config->block;
  return cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], config->shared, config->stream, params, extra);
}

/* ---- pointer attributes ---------------------------------------------------------------------------- */

enum { MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2 };

/* One CUpointer_attribute of a tracked allocation (unified addressing: a device pointer is its
 * address; managed memory is device memory with IS_MANAGED). INVALID_VALUE for an address the
 * driver does not know (pageable host memory) or an attribute not modelled. */
static CUresult pointer_attribute(void *data, int attribute, CUdeviceptr ptr, int known, const sim_alloc_info *info) {
  if (!known) return CUDA_ERROR_INVALID_VALUE;
  int host_visible = info->kind != SIM_MEM_DEVICE && info->kind != SIM_MEM_GLOBAL;
  switch (attribute) {
  case 1: *(CUcontext *)data = cu_primary(info->device); break; /* CONTEXT */
  case 2: /* MEMORY_TYPE */
    *(unsigned *)data = info->kind == SIM_MEM_HOST || info->kind == SIM_MEM_REGISTERED ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
    break;
  case 3: *(CUdeviceptr *)data = ptr; break; /* DEVICE_POINTER */
  case 4: /* HOST_POINTER */
    if (!host_visible) return CUDA_ERROR_INVALID_VALUE;
    *(void **)data = PTR(ptr);
    break;
  case 6: *(int *)data = 0; break;                                             /* SYNC_MEMOPS */
  case 7: case 20: *(unsigned long long *)data = (uintptr_t)info->base; break;  /* BUFFER_ID, MEMORY_BLOCK_ID */
  case 8: *(int *)data = info->kind == SIM_MEM_MANAGED; break;                  /* IS_MANAGED */
  case 9: *(int *)data = info->device; break;                                  /* DEVICE_ORDINAL */
  case 10: *(int *)data = info->kind == SIM_MEM_DEVICE && cu_pool_of((uintptr_t)info->base) == NULL; break;
  case 11: *(CUdeviceptr *)data = (uintptr_t)info->base; break;                /* RANGE_START_ADDR */
  case 12: *(size_t *)data = info->size; break;                                /* RANGE_SIZE */
  case 13: *(int *)data = 1; break;                                            /* MAPPED */
  case 14: *(unsigned long long *)data = 0; break;                             /* ALLOWED_HANDLE_TYPES */
  case 15: *(int *)data = 0; break;                                            /* IS_GPU_DIRECT_RDMA_CAPABLE */
  case 16: *(unsigned long long *)data = 3; break;                             /* ACCESS_FLAGS: read-write */
  case 17: *(CUmemoryPool *)data = cu_pool_of((uintptr_t)info->base); break;   /* MEMPOOL_HANDLE */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
  REQUIRE_INIT();
  if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_alloc_info info;
  int known = sim_mem_find(PTR(ptr), &info);
  return pointer_attribute(data, attribute, ptr, known, &info);
}

/* "Unlike cuPointerGetAttribute, this function will not return an error when the ptr encountered
 * is not a valid CUDA pointer. Instead, the attributes are assigned default NULL values." */
EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attributes, void **data, CUdeviceptr ptr) {
  REQUIRE_INIT();
  if (n == 0 || attributes == NULL || data == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_alloc_info info;
  int known = sim_mem_find(PTR(ptr), &info);
  for (unsigned i = 0; i < n; ++i) {
    if (data[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!known) {
      int a = attributes[i];
      int is_int = a == 2 || a == 6 || a == 8 || a == 9 || a == 10 || a == 13 || a == 15;
      memset(data[i], 0, is_int ? sizeof(int) : sizeof(void *));
      continue;
    }
    CUresult rc = pointer_attribute(data[i], attributes[i], ptr, known, &info);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}
