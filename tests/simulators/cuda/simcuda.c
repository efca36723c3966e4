/* simcuda.c - the CUDA front of the simulated GPU driver: libcuda.so.1 (a test fixture).
 *
 * Models a CUDA 13.0 driver (cuDriverGetVersion = 13000) with devices of compute capability
 * GPUSIM_CUDA_SM (default 90). Entry points are found through cuGetProcAddress_v2 by (name,
 * version): the entry with the highest version at or below the one asked; the plain exported
 * symbols (cuMemAlloc_v2, ...) serve C programs linked with -lcuda. See ../README.md.
 */
#define _GNU_SOURCE
#include "../core/simcore.h"
#include "cuimage.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct cuctx *CUcontext;
typedef struct custream *CUstream;
typedef struct cuevent *CUevent;
typedef struct cumodule *CUmodule;
typedef struct cufunction *CUfunction;
typedef struct { unsigned char bytes[16]; } CUuuid;
typedef void (*CUhostFn)(void *user_data);
typedef size_t (*CUoccupancyB2DSize)(int block_size);

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
  CUDA_ERROR_TOO_MANY_PEERS = 711,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

#define DRIVER_VERSION 13000
#define MODELLED_PTX_ISA 90 /* PTX ISA 9.0 is what a 13.0 driver's JIT reads */

/* ---- errors ------------------------------------------------------------------------------ */

typedef struct { CUresult code; const char *name, *text; } error_text;
static const error_text errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "cannot set while device is active in this process"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

EXPORT CUresult cuGetErrorName(CUresult error, const char **out) {
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; ++i)
    if (errors[i].code == error) {
      *out = errors[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **out) {
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; ++i)
    if (errors[i].code == error) {
      *out = errors[i].text;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult from_sim(sim_status status) {
  switch (status) {
  case SIM_OK: return CUDA_SUCCESS;
  case SIM_ERR_INVALID_VALUE: return CUDA_ERROR_INVALID_VALUE;
  case SIM_ERR_OUT_OF_MEMORY: return CUDA_ERROR_OUT_OF_MEMORY;
  case SIM_ERR_NOT_READY: return CUDA_ERROR_NOT_READY;
  case SIM_ERR_INVALID_HANDLE: return CUDA_ERROR_INVALID_HANDLE;
  case SIM_ERR_NOT_FOUND: return CUDA_ERROR_NOT_FOUND;
  case SIM_ERR_LAUNCH_FAILED: return CUDA_ERROR_LAUNCH_FAILED;
  case SIM_ERR_OUT_OF_RESOURCES: return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  case SIM_ERR_INVALID_IMAGE: return CUDA_ERROR_INVALID_IMAGE;
  case SIM_ERR_NOT_SUPPORTED: return CUDA_ERROR_NOT_SUPPORTED;
  case SIM_ERR_HOST_CALLBACK: return CUDA_ERROR_LAUNCH_FAILED;
  case SIM_ERR_ILLEGAL_INSTRUCTION: return CUDA_ERROR_ILLEGAL_INSTRUCTION;
  case SIM_ERR_NOT_PERMITTED: return CUDA_ERROR_NOT_PERMITTED;
  case SIM_ERR_ILLEGAL_ADDRESS: return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_ERROR_UNKNOWN;
}

/* ---- driver state, contexts --------------------------------------------------------------- */

struct cuctx {
  int device;
  int refs;          /* primary-context retain count; active while > 0 */
  unsigned generation; /* bumped when the last release ends the context: its streams/events die */
  unsigned flags;
  int peer[8];       /* peer access enabled towards device i */
};

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct cuctx primary[8];

static __thread CUcontext tls_stack[16];
static __thread int tls_depth; /* tls_stack[tls_depth - 1] is current; depth 0: none */

static int device_sm(void) {
  static int sm;
  if (sm == 0) {
    const char *text = getenv("GPUSIM_CUDA_SM");
    int value = text ? atoi(text) : 90;
    sm = value >= 30 && value <= 199 ? value : 90;
  }
  return sm;
}

#define REQUIRE_INIT()                                                    \
  do {                                                                    \
    if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED; \
    if (sim_in_host_function()) return CUDA_ERROR_NOT_PERMITTED;          \
  } while (0)

/* The current context, or why there is none usable: after a kernel fault every call that needs
 * the context returns the sticky error ("any further CUDA work will return the same error"). */
static CUresult current(struct cuctx **out) {
  if (tls_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext ctx = tls_stack[tls_depth - 1];
  if (ctx == NULL || __atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_status fault = sim_device_fault(ctx->device);
  if (fault != SIM_OK) return from_sim(fault);
  *out = ctx;
  return CUDA_SUCCESS;
}

#define REQUIRE_CTX(var)                   \
  struct cuctx *var;                       \
  do {                                     \
    REQUIRE_INIT();                        \
    CUresult rc_ = current(&var);          \
    if (rc_ != CUDA_SUCCESS) return rc_;   \
    (void)var;                             \
  } while (0)

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device_count() == 0) return CUDA_ERROR_NO_DEVICE;
  pthread_mutex_lock(&state_lock);
  if (!initialized) {
    for (int i = 0; i < 8; ++i) primary[i].device = i;
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&state_lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = DRIVER_VERSION;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  REQUIRE_INIT();
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = sim_device_count();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  REQUIRE_INIT();
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device(ordinal) == NULL) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

#define REQUIRE_DEVICE(dev)                                              \
  do {                                                                   \
    REQUIRE_INIT();                                                      \
    if (sim_device(dev) == NULL) return CUDA_ERROR_INVALID_DEVICE;       \
  } while (0)

EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (name == NULL || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)length, "gpusim CUDA device %d (sm_%d, simulated)", dev, device_sm());
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy(uuid->bytes, sim_device(dev)->uuid, 16);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  *bytes = sim_device(dev)->total_memory;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  const sim_device_props *p = sim_device(dev);
  int v;
  switch (attribute) {
  case 1: v = p->max_threads_per_block; break;             /* MAX_THREADS_PER_BLOCK */
  case 2: v = (int)p->max_block_dim.x; break;
  case 3: v = (int)p->max_block_dim.y; break;
  case 4: v = (int)p->max_block_dim.z; break;
  case 5: v = (int)p->max_grid_dim.x; break;
  case 6: v = (int)p->max_grid_dim.y; break;
  case 7: v = (int)p->max_grid_dim.z; break;
  case 8: v = (int)p->shared_per_block; break;             /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 9: v = 65536; break;                                /* TOTAL_CONSTANT_MEMORY */
  case 10: v = p->warp_size; break;
  case 11: v = 2147483647; break;                          /* MAX_PITCH */
  case 12: v = p->registers_per_block; break;
  case 13: v = p->clock_khz; break;                        /* CLOCK_RATE, kHz */
  case 14: v = 512; break;                                 /* TEXTURE_ALIGNMENT */
  case 15: v = 1; break;                                   /* GPU_OVERLAP */
  case 16: v = p->multiprocessors; break;
  case 17: v = 0; break;                                   /* KERNEL_EXEC_TIMEOUT */
  case 18: v = 0; break;                                   /* INTEGRATED */
  case 19: v = 1; break;                                   /* CAN_MAP_HOST_MEMORY */
  case 20: v = 0; break;                                   /* COMPUTE_MODE default */
  case 31: v = 1; break;                                   /* CONCURRENT_KERNELS */
  case 32: v = 0; break;                                   /* ECC_ENABLED */
  case 33: v = p->pci_bus_id; break;
  case 34: v = 0; break;                                   /* PCI_DEVICE_ID */
  case 35: v = 0; break;                                   /* TCC_DRIVER */
  case 36: v = p->memory_clock_khz; break;
  case 37: v = p->memory_bus_width; break;
  case 38: v = p->l2_cache_bytes; break;
  case 39: v = p->max_threads_per_multiprocessor; break;
  case 40: v = 2; break;                                   /* ASYNC_ENGINE_COUNT */
  case 41: v = 1; break;                                   /* UNIFIED_ADDRESSING */
  case 50: v = 0; break;                                   /* PCI_DOMAIN_ID */
  case 75: v = device_sm() / 10; break;                    /* COMPUTE_CAPABILITY_MAJOR */
  case 76: v = device_sm() % 10; break;                    /* COMPUTE_CAPABILITY_MINOR */
  case 81: v = (int)p->shared_per_multiprocessor; break;
  case 82: v = 65536; break;                               /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  case 83: v = 1; break;                                   /* MANAGED_MEMORY */
  case 84: v = 0; break;                                   /* MULTI_GPU_BOARD */
  case 86: v = 1; break;                                   /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
  case 89: v = 1; break;                                   /* CONCURRENT_MANAGED_ACCESS */
  case 97: v = (int)p->shared_per_block_optin; break;      /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  case 106: v = 32; break;                                 /* MAX_BLOCKS_PER_MULTIPROCESSOR */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  *value = v;
  return CUDA_SUCCESS;
}

/* GPUSIM_PEER: ok (default: every pair can enable peer access), none (no pair can:
 * cuDeviceCanAccessPeer 0, enabling is CUDA_ERROR_PEER_ACCESS_UNSUPPORTED), fail (pairs report
 * they can, but enabling fails with CUDA_ERROR_TOO_MANY_PEERS, as when the peer mapping resources
 * are exhausted). cuMemcpyPeer* works in every mode: it needs no peer access. */
enum { PEER_OK, PEER_NONE, PEER_FAIL };
static int peer_mode(void) {
  static int mode = -1;
  if (mode < 0) {
    const char *text = getenv("GPUSIM_PEER");
    int m = PEER_OK;
    if (text && strcmp(text, "none") == 0) m = PEER_NONE;
    else if (text && strcmp(text, "fail") == 0) m = PEER_FAIL;
    else if (text && *text && strcmp(text, "ok") != 0) fprintf(stderr, "gpusim: ignoring GPUSIM_PEER=%s (ok, none or fail)\n", text);
    mode = m;
  }
  return mode;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
  REQUIRE_DEVICE(dev);
  if (sim_device(peer) == NULL) return CUDA_ERROR_INVALID_DEVICE;
  if (can == NULL) return CUDA_ERROR_INVALID_VALUE;
  *can = dev != peer && peer_mode() != PEER_NONE;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&state_lock);
  __atomic_add_fetch(&primary[dev].refs, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&state_lock);
  *ctx = &primary[dev];
  return CUDA_SUCCESS;
}

static void release_context_resources(int dev);

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  REQUIRE_DEVICE(dev);
  pthread_mutex_lock(&state_lock);
  if (primary[dev].refs <= 0) {
    pthread_mutex_unlock(&state_lock);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  int last = __atomic_sub_fetch(&primary[dev].refs, 1, __ATOMIC_ACQ_REL) == 0;
  if (last) __atomic_add_fetch(&primary[dev].generation, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&state_lock);
  if (last) release_context_resources(dev);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags) {
  REQUIRE_DEVICE(dev);
  if (flags & ~0x1fu) return CUDA_ERROR_INVALID_VALUE;
  primary[dev].flags = flags;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned flags) { return cuDevicePrimaryCtxSetFlags_v2(dev, flags); }

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active) {
  REQUIRE_DEVICE(dev);
  if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
  *flags = primary[dev].flags;
  *active = __atomic_load_n(&primary[dev].refs, __ATOMIC_ACQUIRE) > 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  REQUIRE_INIT();
  if (ctx != NULL && __atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (tls_depth == 0) {
    if (ctx == NULL) return CUDA_SUCCESS;
    tls_depth = 1;
  }
  tls_stack[tls_depth - 1] = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
  REQUIRE_INIT();
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *ctx = tls_depth ? tls_stack[tls_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  REQUIRE_INIT();
  if (ctx == NULL || ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (tls_depth == 16) return CUDA_ERROR_INVALID_VALUE;
  tls_stack[tls_depth++] = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
  REQUIRE_INIT();
  if (tls_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = tls_stack[--tls_depth];
  if (ctx) *ctx = top;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
  REQUIRE_CTX(ctx);
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  *dev = ctx->device;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx) {
  REQUIRE_INIT();
  if (ctx == NULL) return cuCtxGetDevice(dev);
  if (ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  *dev = ctx->device;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
  REQUIRE_CTX(ctx);
  return from_sim(sim_device_sync(ctx->device));
}

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  REQUIRE_INIT();
  if (ctx == NULL) return cuCtxSynchronize();
  if (ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  return from_sim(sim_device_sync(ctx->device));
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (peer == NULL || peer->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (peer->device == ctx->device) return CUDA_ERROR_INVALID_DEVICE;
  if (ctx->peer[peer->device]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  if (peer_mode() == PEER_NONE) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (peer_mode() == PEER_FAIL) return CUDA_ERROR_TOO_MANY_PEERS;
  ctx->peer[peer->device] = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  REQUIRE_CTX(ctx);
  if (peer == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx->peer[peer->device]) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  ctx->peer[peer->device] = 0;
  return CUDA_SUCCESS;
}

/* ---- memory -------------------------------------------------------------------------------- */

#define KIND(k) (1u << (k))

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  REQUIRE_CTX(ctx);
  if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  *total = sim_device(ctx->device)->total_memory;
  *free_bytes = *total - sim_mem_used(ctx->device);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  REQUIRE_CTX(ctx);
  if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  CUresult rc = from_sim(sim_mem_alloc(ctx->device, SIM_MEM_DEVICE, size, &p));
  if (rc != CUDA_SUCCESS) return rc;
  unsigned access = sim_device_access_begin(); /* device memory: the driver's own write */
  memset(p, 0xA5, size); /* cuMemAlloc does not clear memory: make reads of it visible */
  sim_device_access_end(access);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return rc;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size) {
  REQUIRE_CTX(ctx);
  if (pp == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return from_sim(sim_mem_alloc(ctx->device, SIM_MEM_HOST, size, pp));
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (dptr == NULL || size == 0 || (flags != 1 && flags != 2)) return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  CUresult rc = from_sim(sim_mem_alloc(ctx->device, SIM_MEM_MANAGED, size, &p));
  if (rc == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  REQUIRE_CTX(ctx);
  if (dptr == 0) return CUDA_SUCCESS;
  /* cuMemFree synchronises with the device (as the driver does for non-async frees). */
  sim_alloc_info info;
  if (sim_mem_find((void *)(uintptr_t)dptr, &info)) sim_device_wait_idle(info.device);
  return from_sim(sim_mem_free((void *)(uintptr_t)dptr, KIND(SIM_MEM_DEVICE) | KIND(SIM_MEM_MANAGED)));
}

EXPORT CUresult cuMemFreeHost(void *p) {
  REQUIRE_CTX(ctx);
  sim_alloc_info info;
  if (sim_mem_find(p, &info)) sim_device_wait_idle(info.device);
  return from_sim(sim_mem_free(p, KIND(SIM_MEM_HOST)));
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (p == NULL || size == 0 || (flags & ~0xfu)) return CUDA_ERROR_INVALID_VALUE;
  sim_status status = sim_mem_track(ctx->device, SIM_MEM_REGISTERED, p, size);
  return status == SIM_ERR_INVALID_VALUE ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : from_sim(status);
}

EXPORT CUresult cuMemHostUnregister(void *p) {
  REQUIRE_CTX(ctx);
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  return sim_mem_untrack(p) == SIM_OK ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr) {
  REQUIRE_CTX(ctx);
  sim_alloc_info info;
  if (!sim_mem_find((void *)(uintptr_t)dptr, &info)) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = (CUdeviceptr)(uintptr_t)info.base;
  if (size) *size = info.size;
  return CUDA_SUCCESS;
}

/* ---- handle recycling: a destroyed handle's memory is kept (magic cleared) and reused for a
 * later handle of the same kind, so using a destroyed handle reads INVALID_HANDLE instead of
 * freed memory (the driver's behaviour for stale handles is undefined). */

static pthread_mutex_t recycle_lock = PTHREAD_MUTEX_INITIALIZER;
static void *recycle_bins[3];

/* Every handle struct starts with its magic (unsigned) followed by at least 8 more bytes; a
 * recycled one keeps magic 0 and holds the bin's link at offset 8. */
static void *handle_new(int bin, size_t size) {
  pthread_mutex_lock(&recycle_lock);
  void *h = recycle_bins[bin];
  if (h) memcpy(&recycle_bins[bin], (char *)h + 8, sizeof(void *));
  pthread_mutex_unlock(&recycle_lock);
  if (h == NULL) return calloc(1, size);
  memset(h, 0, size);
  return h;
}

static void handle_delete(int bin, void *h) {
  *(unsigned *)h = 0;
  pthread_mutex_lock(&recycle_lock);
  memcpy((char *)h + 8, &recycle_bins[bin], sizeof(void *));
  recycle_bins[bin] = h;
  pthread_mutex_unlock(&recycle_lock);
}

enum { BIN_STREAM, BIN_EVENT, BIN_MODULE };

/* ---- streams -------------------------------------------------------------------------------- */

#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x45564e54u

struct custream {
  unsigned magic;
  unsigned flags;
  struct cuctx *ctx;
  unsigned generation; /* of ctx when created: a stream dies with its context */
  sim_stream *sim;
};

struct cuevent {
  unsigned magic;
  unsigned flags;
  struct cuctx *ctx;
  unsigned generation;
  sim_event *sim;
};

static int is_default_stream(CUstream stream) {
  return stream == NULL || stream == (CUstream)0x1 || stream == (CUstream)0x2;
}

/* Resolves a stream handle (NULL and CU_STREAM_LEGACY/PER_THREAD mean the current context's
 * legacy default stream); *owner (if not NULL) is the context the stream belongs to. A stream
 * of a context that has since ended is INVALID_HANDLE. */
static CUresult resolve_stream_owner(CUstream stream, struct cuctx *ctx, sim_stream **out, struct cuctx **owner) {
  if (is_default_stream(stream)) {
    *out = sim_stream_legacy(ctx->device);
    if (owner) *owner = ctx;
    return CUDA_SUCCESS;
  }
  if (stream->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&stream->ctx->generation, __ATOMIC_ACQUIRE) != stream->generation) return CUDA_ERROR_INVALID_HANDLE;
  *out = stream->sim;
  if (owner) *owner = stream->ctx;
  return CUDA_SUCCESS;
}

static CUresult resolve_stream(CUstream stream, struct cuctx *ctx, sim_stream **out) {
  return resolve_stream_owner(stream, ctx, out, NULL);
}

EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (out == NULL || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  struct custream *s = handle_new(BIN_STREAM, sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  s->sim = sim_stream_create(ctx->device, flags == 0);
  if (s->sim == NULL) {
    handle_delete(BIN_STREAM, s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s->magic = STREAM_MAGIC;
  s->flags = flags;
  s->ctx = ctx;
  s->generation = __atomic_load_n(&ctx->generation, __ATOMIC_ACQUIRE);
  *out = s;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  REQUIRE_INIT();
  if (is_default_stream(stream) || stream->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&stream->ctx->generation, __ATOMIC_ACQUIRE) != stream->generation) return CUDA_ERROR_INVALID_HANDLE;
  sim_status fault = sim_device_fault(stream->ctx->device);
  if (fault != SIM_OK) return from_sim(fault);
  stream->magic = 0;
  sim_stream_destroy(stream->sim);
  handle_delete(BIN_STREAM, stream);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }

EXPORT CUresult cuStreamQuery(CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return sim_stream_busy(s) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return from_sim(sim_stream_sync(s));
}

EXPORT CUresult cuStreamGetFlags(CUstream stream, unsigned *flags) {
  REQUIRE_CTX(ctx);
  if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  *flags = (stream == NULL || (uintptr_t)stream <= 2) ? 0 : stream->flags;
  return CUDA_SUCCESS;
}

typedef struct host_call {
  CUhostFn fn;
  void *user_data;
} host_call;

static sim_status host_call_op(void *raw) {
  host_call *call = raw;
  call->fn(call->user_data);
  return SIM_OK;
}

typedef void (*CUstreamCallback)(CUstream stream, CUresult status, void *user_data);

typedef struct stream_callback {
  CUstreamCallback fn;
  CUstream stream;
  int device;
  void *user_data;
} stream_callback;

static sim_status stream_callback_op(void *raw) {
  stream_callback *cb = raw;
  /* cuStreamAddCallback: the callback receives CUDA_SUCCESS or the error of the stream (it runs
   * even after a sticky fault, unlike a host function). */
  cb->fn(cb->stream, from_sim(sim_device_fault(cb->device)), cb->user_data);
  return SIM_OK;
}

EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *user_data, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (fn == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  stream_callback *cb = malloc(sizeof *cb);
  if (cb == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *cb = (stream_callback){fn, stream, sim_stream_device(s), user_data};
  rc = from_sim(sim_stream_submit_ex(s, stream_callback_op, cb, free, SIM_OP_HOST_FUNCTION | SIM_OP_AFTER_FAULT));
  if (rc != CUDA_SUCCESS) free(cb);
  return rc;
}

EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *user_data) {
  REQUIRE_CTX(ctx);
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  host_call *call = malloc(sizeof *call);
  if (call == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *call = (host_call){fn, user_data};
  /* Application code on the stream's thread: driver calls refused, device memory off limits. */
  rc = from_sim(sim_stream_submit_ex(s, host_call_op, call, free, SIM_OP_HOST_FUNCTION));
  if (rc != CUDA_SUCCESS) free(call);
  return rc;
}

/* ---- events --------------------------------------------------------------------------------- */

EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (out == NULL || (flags & ~0x7u) || ((flags & 0x4) && !(flags & 0x2))) return CUDA_ERROR_INVALID_VALUE;
  struct cuevent *e = handle_new(BIN_EVENT, sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->sim = sim_event_create(!(flags & 0x2));
  if (e->sim == NULL) {
    handle_delete(BIN_EVENT, e);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  e->magic = EVENT_MAGIC;
  e->flags = flags;
  e->ctx = ctx;
  e->generation = __atomic_load_n(&ctx->generation, __ATOMIC_ACQUIRE);
  *out = e;
  return CUDA_SUCCESS;
}

#define REQUIRE_EVENT(e)                                                                                  \
  do {                                                                                                    \
    if ((e) == NULL || (e)->magic != EVENT_MAGIC) return CUDA_ERROR_INVALID_HANDLE;                       \
    if (__atomic_load_n(&(e)->ctx->generation, __ATOMIC_ACQUIRE) != (e)->generation) return CUDA_ERROR_INVALID_HANDLE; \
  } while (0)

EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  REQUIRE_INIT();
  REQUIRE_EVENT(event);
  sim_status fault = sim_device_fault(event->ctx->device);
  if (fault != SIM_OK) return from_sim(fault);
  event->magic = 0;
  sim_event_destroy(event->sim);
  handle_delete(BIN_EVENT, event);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(CUevent event) { return cuEventDestroy_v2(event); }

EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc != CUDA_SUCCESS) return rc;
  /* cuEventRecord: "hEvent and hStream must be from the same context otherwise
   * CUDA_ERROR_INVALID_HANDLE is returned". */
  if (owner != event->ctx) return CUDA_ERROR_INVALID_HANDLE;
  return from_sim(sim_event_record(event->sim, s));
}

EXPORT CUresult cuEventQuery(CUevent event) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  return from_sim(sim_event_query(event->sim));
}

EXPORT CUresult cuEventSynchronize(CUevent event) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  CUresult rc = from_sim(sim_event_sync(event->sim));
  sim_status fault = sim_device_fault(event->ctx->device);
  return fault != SIM_OK ? from_sim(fault) : rc;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(start);
  REQUIRE_EVENT(end);
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (start->ctx != end->ctx) return CUDA_ERROR_INVALID_HANDLE; /* events of two devices */
  return from_sim(sim_event_elapsed(start->sim, end->sim, ms));
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return cuEventElapsedTime_v2(ms, start, end); }

EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return from_sim(sim_stream_wait_event(s, event->sim));
}

/* ---- copies and fills ------------------------------------------------------------------------- */

typedef struct copy_op {
  void *dst;
  const void *src;
  size_t size;
  void *staging; /* owned copy of a pageable source */
} copy_op;

static sim_status copy_run(void *raw) {
  copy_op *c = raw;
  memmove(c->dst, c->staging ? c->staging : c->src, c->size);
  return SIM_OK;
}

static void copy_free(void *raw) {
  copy_op *c = raw;
  free(c->staging);
  free(c);
}

/* A device-side range: inside one tracked allocation (device, managed, pinned, global). */
static CUresult check_device_range(const void *p, size_t size) {
  return sim_mem_check(p, size) == SIM_OK ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A host-side range: pageable (untracked, returns 0) or pinned/managed (tracked: must fit,
 * returns 1). -1 when it starts inside a tracked allocation but runs past its end. */
static int host_range_kind(const void *p, size_t size) {
  sim_alloc_info info;
  if (!sim_mem_find(p, &info)) return 0;
  return sim_mem_check(p, size) == SIM_OK ? 1 : -1;
}

/* Device memory for the synchronisation rules: what only the device reaches (cuMemAlloc
 * memory, module globals) and managed memory; pinned host memory is host memory. */
static int is_device_kind(sim_mem_kind kind) {
  return kind == SIM_MEM_DEVICE || kind == SIM_MEM_GLOBAL || kind == SIM_MEM_MANAGED;
}

enum { DIR_HTOD, DIR_DTOH, DIR_DTOD };

static CUresult copy_enqueue(struct cuctx *ctx, void *dst, const void *src, size_t size, CUstream stream, int dir,
                             int synchronous) {
  if (size == 0) return CUDA_SUCCESS;
  if (dst == NULL || src == NULL) return CUDA_ERROR_INVALID_VALUE;
  int src_pinned = 1, dst_pinned = 1;
  if (dir == DIR_HTOD || dir == DIR_DTOD) {
    if (check_device_range(dst, size) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  }
  if (dir == DIR_DTOH || dir == DIR_DTOD) {
    if (check_device_range(src, size) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  }
  if (dir == DIR_HTOD && (src_pinned = host_range_kind(src, size)) < 0) return CUDA_ERROR_INVALID_VALUE;
  if (dir == DIR_DTOH && (dst_pinned = host_range_kind(dst, size)) < 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  copy_op *c = malloc(sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (copy_op){dst, src, size, NULL};
  if (!src_pinned) {
    /* Pageable source: the driver waits for the stream, then stages the data before
     * returning; the caller may reuse its buffer at once. */
    sim_stream_wait_idle(s);
    c->staging = malloc(size);
    if (c->staging == NULL) {
      free(c);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(c->staging, src, size);
  }
  rc = from_sim(sim_stream_submit(s, copy_run, c, copy_free));
  if (rc != CUDA_SUCCESS) {
    copy_free(c);
    return rc;
  }
  /* "API synchronization behavior", synchronous copies: from pageable host memory the call
   * returns once the data is staged (above), the DMA may still be pending; from pinned host
   * memory it is synchronous; to host memory it returns once the copy has completed; device to
   * device does no host-side synchronisation at all. Asynchronous copies into pageable memory
   * also return once done ("might be synchronous"). */
  int wait = dir == DIR_DTOH ? (synchronous || !dst_pinned) : dir == DIR_HTOD ? (synchronous && src_pinned) : 0;
  if (wait) sim_stream_wait_idle(s);
  return CUDA_SUCCESS;
}

#define PTR(d) ((void *)(uintptr_t)(d))

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), src, n, stream, DIR_HTOD, 0);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, dst, PTR(src), n, stream, DIR_DTOH, 0);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, DIR_DTOD, 0);
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), src, n, NULL, DIR_HTOD, 1);
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, dst, PTR(src), n, NULL, DIR_DTOH, 1);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, NULL, DIR_DTOD, 1);
}

/* Unified copies (the kind inferred from the pointers): each side is device memory when it lies
 * in device or managed memory, host memory otherwise (pinned or pageable). */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  sim_alloc_info d, s;
  int dst_dev = sim_mem_find(PTR(dst), &d) && is_device_kind(d.kind);
  int src_dev = sim_mem_find(PTR(src), &s) && is_device_kind(s.kind);
  int dir = dst_dev && src_dev ? DIR_DTOD : dst_dev ? DIR_HTOD : src_dev ? DIR_DTOH : -1;
  if (dir < 0) {
    /* host to host: fully synchronous, in stream order */
    if (n == 0) return CUDA_SUCCESS;
    sim_stream *q;
    CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &q);
    if (rc != CUDA_SUCCESS) return rc;
    sim_stream_wait_idle(q);
    memmove(PTR(dst), PTR(src), n);
    return CUDA_SUCCESS;
  }
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, dir, synchronous);
}
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  return unified_copy(dst, src, n, stream, 0);
}
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return unified_copy(dst, src, n, NULL, 1); }

static CUresult peer_copy(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                          CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  if (dst_ctx == NULL || src_ctx == NULL || dst_ctx->refs <= 0 || src_ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_alloc_info d, s;
  if (n == 0) return CUDA_SUCCESS;
  if (!sim_mem_find(PTR(dst), &d) || !sim_mem_find(PTR(src), &s)) return CUDA_ERROR_INVALID_VALUE;
  if (d.device != dst_ctx->device || s.device != src_ctx->device) return CUDA_ERROR_INVALID_VALUE;
  /* No peer access needed (the driver stages the copy). cuMemcpyPeer is serialised with all
   * pending and future work of the current, source and destination contexts; modelled as
   * fully synchronous ("exhibits synchronous behavior for most use cases"). */
  if (synchronous) {
    sim_device_wait_idle(ctx->device);
    sim_device_wait_idle(src_ctx->device);
    sim_device_wait_idle(dst_ctx->device);
  }
  CUresult rc = copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, DIR_DTOD, synchronous);
  if (rc == CUDA_SUCCESS && synchronous) sim_stream_wait_idle(sim_stream_legacy(ctx->device));
  return rc;
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                  CUstream stream) {
  return peer_copy(dst, dst_ctx, src, src_ctx, n, stream, 0);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n) {
  return peer_copy(dst, dst_ctx, src, src_ctx, n, NULL, 1);
}

typedef struct fill_op {
  unsigned char *dst;
  size_t pitch, width, height; /* width in elements */
  unsigned elem;
  uint32_t value;
} fill_op;

static sim_status fill_run(void *raw) {
  fill_op *f = raw;
  for (size_t row = 0; row < f->height; ++row) {
    unsigned char *p = f->dst + row * f->pitch;
    for (size_t i = 0; i < f->width; ++i) {
      if (f->elem == 1) p[i] = (unsigned char)f->value;
      else if (f->elem == 2) ((uint16_t *)p)[i] = (uint16_t)f->value;
      else ((uint32_t *)p)[i] = f->value;
    }
  }
  return SIM_OK;
}

static CUresult fill(CUdeviceptr dst, size_t pitch, uint32_t value, size_t width, size_t height, unsigned elem,
                     CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (dst % elem != 0 || (height > 1 && (pitch < width * elem))) return CUDA_ERROR_INVALID_VALUE;
  size_t extent = (height - 1) * pitch + width * elem;
  if (check_device_range(PTR(dst), extent) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  /* "API synchronization behavior": the synchronous memsets are asynchronous with respect to
   * the host except when the target is pinned host memory or a Unified Memory region. */
  sim_alloc_info target;
  sim_mem_find(PTR(dst), &target);
  synchronous = synchronous && (target.kind == SIM_MEM_HOST || target.kind == SIM_MEM_REGISTERED ||
                                target.kind == SIM_MEM_MANAGED);
  sim_stream *s;
  CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  fill_op *f = malloc(sizeof *f);
  if (f == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *f = (fill_op){PTR(dst), height > 1 ? pitch : width * elem, width, height, elem, value};
  rc = from_sim(sim_stream_submit(s, fill_run, f, free));
  if (rc != CUDA_SUCCESS) {
    free(f);
    return rc;
  }
  if (synchronous) sim_stream_wait_idle(s);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return fill(d, 0, v, n, 1, 1, NULL, 1); }
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return fill(d, 0, v, n, 1, 2, NULL, 1); }
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { return fill(d, 0, v, n, 1, 4, NULL, 1); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 1, s, 0); }
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 2, s, 0); }
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 4, s, 0); }
EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 1, NULL, 1);
}
EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 2, NULL, 1);
}
EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 4, NULL, 1);
}
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 1, s, 0);
}
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 2, s, 0);
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 4, s, 0);
}

/* ---- modules -------------------------------------------------------------------------------- */

struct cufunction {
  struct cumodule *module;
  cu_kernel_info info;
  sim_kernel_entry entry;
  int max_dynamic_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

struct cumodule {
  unsigned magic;
  int device;
  sim_hostlib *lib;
  cu_image image;
  struct cufunction *functions;
  void **global_storage; /* per global: tracked address */
  int *global_owned;     /* 1 when the front allocated it (no host build) */
};

#define MODULE_MAGIC 0x4d4f444cu

static void module_free(struct cumodule *m) {
  for (unsigned i = 0; i < m->image.global_count; ++i) {
    if (m->global_storage[i] == NULL) continue;
    sim_mem_untrack(m->global_storage[i]);
    if (m->global_owned[i]) free(m->global_storage[i]);
  }
  sim_hostlib_close(m->lib);
  cu_image_release(&m->image);
  free(m->functions);
  free(m->global_storage);
  free(m->global_owned);
  handle_delete(BIN_MODULE, m);
}

static CUresult module_load(CUmodule *out, const void *image) {
  REQUIRE_CTX(ctx);
  if (out == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct cumodule *m = handle_new(BIN_MODULE, sizeof *m);
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  m->device = ctx->device;
  size_t image_size = 0;
  CUresult rc = cu_image_parse(image, device_sm(), MODELLED_PTX_ISA, &m->image, &image_size);
  if (rc != CUDA_SUCCESS) {
    handle_delete(BIN_MODULE, m);
    return rc;
  }
  sim_status found = sim_hostlib_open(image, image_size, &m->lib);
  if (found != SIM_OK && found != SIM_ERR_NOT_FOUND) {
    cu_image_release(&m->image);
    handle_delete(BIN_MODULE, m);
    return from_sim(found);
  }
  m->functions = calloc(m->image.kernel_count ? m->image.kernel_count : 1, sizeof *m->functions);
  m->global_storage = calloc(m->image.global_count ? m->image.global_count : 1, sizeof *m->global_storage);
  m->global_owned = calloc(m->image.global_count ? m->image.global_count : 1, sizeof *m->global_owned);
  if (!m->functions || !m->global_storage || !m->global_owned) {
    module_free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (unsigned i = 0; i < m->image.kernel_count; ++i) {
    struct cufunction *f = &m->functions[i];
    f->module = m;
    f->info = m->image.kernels[i];
    f->entry = m->lib ? sim_hostlib_kernel(m->lib, f->info.name) : NULL;
    f->max_dynamic_shared = (int)(sim_device(m->device)->shared_per_block - f->info.static_shared);
  }
  for (unsigned i = 0; i < m->image.global_count; ++i) {
    const cu_global_info *g = &m->image.globals[i];
    if (g->size == 0) continue;
    void *address = m->lib ? sim_hostlib_global(m->lib, g->name) : NULL;
    if (address == NULL) {
      address = calloc(1, g->size);
      if (address == NULL) {
        module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (g->init) memcpy(address, g->init, g->size);
      m->global_owned[i] = 1;
    }
    if (sim_mem_track(m->device, SIM_MEM_GLOBAL, address, g->size) != SIM_OK) {
      if (m->global_owned[i]) free(address);
      module_free(m);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    m->global_storage[i] = address;
  }
  m->magic = MODULE_MAGIC;
  *out = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) { return module_load(out, image); }
enum {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_NUM_OPTIONS_MODELLED = 40, /* option ids at or above are unknown (INVALID_VALUE) */
};

/* Writes text into a JIT log buffer option pair (capped at its size, NUL included) and stores
 * the bytes written back into the size option's value, as the driver does ("OUT: Amount of log
 * buffer filled with messages"). */
static void jit_log_out(unsigned n, const int *options, void **values, int buffer_option, int size_option, const char *text) {
  char *buffer = NULL;
  int size_at = -1;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == buffer_option) buffer = values[i];
    if (options[i] == size_option) size_at = (int)i;
  }
  if (buffer == NULL || size_at < 0) return;
  size_t capacity = (size_t)(unsigned)(uintptr_t)values[size_at];
  if (capacity == 0) return;
  size_t len = strlen(text);
  if (len >= capacity) len = capacity - 1;
  memcpy(buffer, text, len);
  buffer[len] = '\0';
  values[size_at] = (void *)(uintptr_t)(len ? len + 1 : 0);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n, int *options, void **values) {
  if (n > 0 && (options == NULL || values == NULL)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (options[i] < 0 || options[i] >= CU_JIT_NUM_OPTIONS_MODELLED) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = module_load(out, image);
  const char *log = rc == CUDA_SUCCESS ? "" : cu_image_jit_log();
  jit_log_out(n, options, values, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log);
  jit_log_out(n, options, values, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
  return rc;
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  REQUIRE_INIT();
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  sim_device_wait_idle(m->device); /* kernels of the module may still be running */
  module_free(m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  REQUIRE_CTX(ctx);
  if (out == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->image.kernel_count; ++i)
    if (strcmp(m->functions[i].info.name, name) == 0) {
      *out = &m->functions[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  REQUIRE_CTX(ctx);
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->image.global_count; ++i)
    if (strcmp(m->image.globals[i].name, name) == 0 && m->global_storage[i] != NULL) {
      if (dptr) *dptr = (CUdeviceptr)(uintptr_t)m->global_storage[i];
      if (bytes) *bytes = m->image.globals[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

#define REQUIRE_FUNC(f) \
  do { if ((f) == NULL || (f)->module == NULL || (f)->module->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE; } while (0)

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (index >= f->info.param_count) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = f->info.params[index].offset;
  if (size) *size = f->info.params[index].size;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
  REQUIRE_INIT();
  REQUIRE_FUNC(f);
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  *name = f->info.name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attribute, CUfunction f) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case 0: *value = sim_device(f->module->device)->max_threads_per_block; break;
  case 1: *value = (int)f->info.static_shared; break;
  case 2: *value = 0; break;
  case 3: *value = 0; break;
  case 4: *value = (int)f->info.registers; break;
  case 5: *value = f->module->image.ptx_version ? (int)f->module->image.ptx_version : device_sm(); break;
  case 6: *value = (int)f->module->image.sm; break;
  case 7: *value = 0; break;
  case 8: *value = f->max_dynamic_shared; break;
  case 9: *value = -1; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (attribute == 8) {
    size_t limit = sim_device(f->module->device)->shared_per_block_optin - f->info.static_shared;
    if (value < 0 || (size_t)value > limit) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  }
  if (attribute == 9) return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_VALUE;
}

#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (f->module->device != ctx->device) return CUDA_ERROR_INVALID_HANDLE;
  if (params != NULL && extra != NULL) return CUDA_ERROR_INVALID_VALUE;
  const cu_kernel_info *k = &f->info;
  const void *buffer = NULL;
  size_t buffer_size = 0;
  unsigned char packed[4096];
  if (extra != NULL) {
    int have_pointer = 0, have_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (i > 64) return CUDA_ERROR_INVALID_VALUE;
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
        have_pointer = 1;
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        if (extra[i + 1] == NULL) return CUDA_ERROR_INVALID_VALUE;
        buffer_size = *(size_t *)extra[i + 1];
        have_size = 1;
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (!have_pointer || !have_size || (buffer == NULL && buffer_size != 0)) return CUDA_ERROR_INVALID_VALUE;
    /* The buffer's size must be the parameters' extent (the last one's offset + size, no tail
     * padding): smaller is INVALID_VALUE, larger is "too many resources requested for launch"
     * (llvm-project #143323, fixed in liboffload by #172249). */
    if (buffer_size < k->param_bytes) return CUDA_ERROR_INVALID_VALUE;
    if (buffer_size > k->param_bytes) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  } else if (k->param_count > 0) {
    if (params == NULL || k->param_bytes > sizeof packed) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < k->param_count; ++i) {
      if (params[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
      memcpy(packed + k->params[i].offset, params[i], k->params[i].size);
    }
    buffer = packed;
    buffer_size = k->param_bytes;
  }
  const sim_device_props *p = sim_device(ctx->device);
  if (shared > (unsigned)f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t)bx * by * bz * (k->registers ? k->registers : 1) > (uint64_t)p->registers_per_block)
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (f->entry == NULL) {
    fprintf(stderr, "gpusim: kernel %s has no registered host build (GPUSIM_KERNELS); launch refused\n", k->name);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc != CUDA_SUCCESS) return rc;
  /* "A kernel launch will fail if it is issued to a stream that is not associated to the current
   * device" (Programming Guide, Stream and Event Behavior). */
  if (owner != ctx) return CUDA_ERROR_INVALID_HANDLE;
  size_t offsets[CU_MAX_PARAMS];
  for (unsigned i = 0; i < k->param_count; ++i) offsets[i] = k->params[i].offset;
  sim_launch_desc desc = {f->entry, {gx, gy, gz}, {bx, by, bz}, shared, buffer, buffer_size, offsets, k->param_count};
  return from_sim(sim_launch(s, &desc));
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size, size_t dyn) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (blocks == NULL || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  const sim_device_props *p = sim_device(f->module->device);
  int warps = (block_size + p->warp_size - 1) / p->warp_size;
  int by_threads = p->max_threads_per_multiprocessor / (warps * p->warp_size);
  int regs = (int)(f->info.registers ? f->info.registers : 1);
  int by_regs = 65536 / (regs * warps * p->warp_size);
  size_t shared = f->info.static_shared + dyn;
  int by_shared = shared ? (int)(p->shared_per_multiprocessor / shared) : 32;
  int n = by_threads < by_regs ? by_threads : by_regs;
  if (by_shared < n) n = by_shared;
  if (n > 32) n = 32;
  *blocks = n < 0 ? 0 : n;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize to_dyn,
                                                 size_t dyn, int limit) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (min_grid == NULL || block == NULL) return CUDA_ERROR_INVALID_VALUE;
  const sim_device_props *p = sim_device(f->module->device);
  int max = p->max_threads_per_block;
  if (limit > 0 && limit < max) max = limit;
  int best_block = 0, best_threads = -1, best_blocks = 0;
  for (int b = max - max % p->warp_size; b >= p->warp_size; b -= p->warp_size) {
    int n = 0;
    size_t need = to_dyn ? to_dyn(b) : dyn;
    if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, b, need) != CUDA_SUCCESS) continue;
    if (n * b > best_threads) {
      best_threads = n * b;
      best_block = b;
      best_blocks = n;
    }
  }
  if (best_threads <= 0) {
    *block = 0;
    *min_grid = 0;
    return CUDA_SUCCESS;
  }
  *block = best_block;
  *min_grid = best_blocks * p->multiprocessors;
  return CUDA_SUCCESS;
}

/* ---- context release: leaks ---------------------------------------------------------------- */

static void release_context_resources(int dev) {
  sim_device_wait_idle(dev);
  sim_device_clear_fault(dev); /* the context is gone, and its sticky error with it */
  unsigned kinds = KIND(SIM_MEM_DEVICE) | KIND(SIM_MEM_HOST) | KIND(SIM_MEM_MANAGED);
  size_t leaks = sim_mem_report_leaks(dev, kinds, "primary context release");
  if (leaks) fprintf(stderr, "gpusim: %zu allocation(s) leaked at primary context release of device %d\n", leaks, dev);
}

/* ---- the simulator's own queries (not driver API: for tests of the simulator) ------------------ */

/* 1 when a host dereference of device memory faults here; else 0 and *why says why. */
EXPORT int gpusim_memory_protected(const char **why) { return sim_mem_protected(why); }

/* ---- entry points ---------------------------------------------------------------------------- */

typedef struct proc_entry {
  const char *name;
  int version; /* the lowest cudaVersion this entry serves */
  void *fn;
} proc_entry;

#define E(name, version, fn) {name, version, (void *)fn}
static const proc_entry procs[] = {
    E("cuGetErrorName", 6000, cuGetErrorName),
    E("cuGetErrorString", 6000, cuGetErrorString),
    E("cuInit", 2000, cuInit),
    E("cuDriverGetVersion", 2020, cuDriverGetVersion),
    E("cuDeviceGet", 2000, cuDeviceGet),
    E("cuDeviceGetCount", 2000, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, cuDeviceGetName),
    E("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    E("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    E("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    E("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
    E("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
    E("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    E("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    E("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    E("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    E("cuCtxGetDevice", 2000, cuCtxGetDevice),
    E("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize),
    E("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    E("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    E("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, cuMemAlloc_v2),
    E("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    E("cuMemAllocManaged", 6000, cuMemAllocManaged),
    E("cuMemFree", 3020, cuMemFree_v2),
    E("cuMemFreeHost", 2000, cuMemFreeHost),
    E("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    E("cuMemHostUnregister", 4000, cuMemHostUnregister),
    E("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    E("cuMemcpy", 4000, cuMemcpy),
    E("cuMemcpyAsync", 4000, cuMemcpyAsync),
    E("cuMemcpyPeer", 4000, cuMemcpyPeer),
    E("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    E("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    E("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    E("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    E("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    E("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    E("cuMemsetD8", 3020, cuMemsetD8_v2),
    E("cuMemsetD16", 3020, cuMemsetD16_v2),
    E("cuMemsetD32", 3020, cuMemsetD32_v2),
    E("cuMemsetD2D8", 3020, cuMemsetD2D8_v2),
    E("cuMemsetD2D16", 3020, cuMemsetD2D16_v2),
    E("cuMemsetD2D32", 3020, cuMemsetD2D32_v2),
    E("cuMemsetD8Async", 3020, cuMemsetD8Async),
    E("cuMemsetD16Async", 3020, cuMemsetD16Async),
    E("cuMemsetD32Async", 3020, cuMemsetD32Async),
    E("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async),
    E("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async),
    E("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async),
    E("cuStreamCreate", 2000, cuStreamCreate),
    E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    E("cuStreamQuery", 2000, cuStreamQuery),
    E("cuStreamSynchronize", 2000, cuStreamSynchronize),
    E("cuStreamGetFlags", 5050, cuStreamGetFlags),
    E("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    E("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
    E("cuStreamAddCallback", 5000, cuStreamAddCallback),
    E("cuEventCreate", 2000, cuEventCreate),
    E("cuEventDestroy", 4000, cuEventDestroy_v2),
    E("cuEventRecord", 2000, cuEventRecord),
    E("cuEventQuery", 2000, cuEventQuery),
    E("cuEventSynchronize", 2000, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    E("cuModuleLoadData", 2000, cuModuleLoadData),
    E("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    E("cuModuleUnload", 2000, cuModuleUnload),
    E("cuModuleGetFunction", 2000, cuModuleGetFunction),
    E("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    E("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    E("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
    E("cuFuncGetName", 12030, cuFuncGetName),
    E("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    E("cuLaunchKernel", 4000, cuLaunchKernel),
    E("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    E("cuOccupancyMaxPotentialBlockSize", 6050, cuOccupancyMaxPotentialBlockSize),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  /* status: 0 success, 1 symbol not found, 2 version not sufficient */
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  (void)flags;
  const proc_entry *best = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof procs / sizeof *procs; ++i) {
    if (strcmp(procs[i].name, symbol) != 0) continue;
    known = 1;
    if (procs[i].version <= version && (best == NULL || procs[i].version > best->version)) best = &procs[i];
  }
  if (best == NULL) {
    *pfn = NULL;
    if (status) *status = known ? 2 : 1;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->fn;
  if (status) *status = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
