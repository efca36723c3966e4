/* simcuda.c - the CUDA front of the simulated GPU driver: libcuda.so.1 (a test fixture).
 *
 * Models a CUDA 13.0 driver (cuDriverGetVersion = 13000; GPUSIM_CUDA_VERSION an older 12.x one)
 * with devices of compute capability GPUSIM_CUDA_SM (default 90). Entry points are found through
 * cuGetProcAddress_v2 by (name, version): the entry with the highest version at or below the one
 * asked, among those the reported driver version has; the plain exported
 * symbols (cuMemAlloc_v2, ...) serve C programs linked with -lcuda. This file: errors, init,
 * devices, primary contexts, peers and the entry-point table; simcuda.h lists the others.
 * See ../README.md.
 */
#define _GNU_SOURCE
#include "simcuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "invalid cluster size"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* cuGetErrorName / cuGetErrorString: the name (or the text) of a known result, else NULL and
 * CUDA_ERROR_INVALID_VALUE. */
static CUresult error_text_of(CUresult error, const char **out, int text) {
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; ++i)
    if (errors[i].code == error) {
      *out = text ? errors[i].text : errors[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **out) { return error_text_of(error, out, 0); }

EXPORT CUresult cuGetErrorString(CUresult error, const char **out) { return error_text_of(error, out, 1); }

CUresult from_sim(sim_status status) {
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

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
int cu_initialized;
static struct cuctx primary[8];

static __thread CUcontext tls_stack[16];
static __thread int tls_depth; /* tls_stack[tls_depth - 1] is current; depth 0: none */

struct cuctx *cu_primary(int device) { return &primary[device]; }

/* GPUSIM_CUDA_VERSION: the CUDA version this driver reports, 12000-13000 in steps of 10 (CUDA
 * 12.0, R525, to 13.0, R580); anything else is refused on stderr and 13000 used. */
int cu_driver_version(void) {
  static int version;
  if (version == 0) {
    const char *text = getenv("GPUSIM_CUDA_VERSION");
    char *end = NULL;
    long value = text ? strtol(text, &end, 10) : 13000;
    if (text && (end == text || *end != '\0' || value < 12000 || value > 13000 || value % 10 != 0)) {
      fprintf(stderr, "gpusim: ignoring GPUSIM_CUDA_VERSION=%s (want 12000-13000, a multiple of 10); reporting 13000\n", text);
      value = 13000;
    }
    version = (int)value;
  }
  return version;
}

/* The newest PTX ISA the JIT of that driver reads (PTX ISA "Release Notes": ISA 8.0 came with
 * CUDA 12.0, 8.1-8.5 with 12.1-12.5, 8.5 still with 12.6, 8.7 with 12.8, 8.8 with 12.9, 9.0 with 13.0). */
int cu_max_ptx_isa(void) {
  static const int isa[][2] = {{12000, 80}, {12010, 81}, {12020, 82}, {12030, 83}, {12040, 84}, {12050, 85},
                               {12060, 85}, {12080, 87}, {12090, 88}, {13000, 90}};
  int best = 80, version = cu_driver_version();
  for (size_t i = 0; i < sizeof isa / sizeof *isa; ++i)
    if (isa[i][0] <= version) best = isa[i][1];
  return best;
}

int cu_device_sm(void) {
  static int sm;
  if (sm == 0) {
    const char *text = getenv("GPUSIM_CUDA_SM");
    int value = text ? atoi(text) : 90;
    sm = value >= 30 && value <= 199 ? value : 90;
  }
  return sm;
}

/* A per-device knob: the ordinal-th comma-separated entry of the variable `name` (an integer that
 * `valid` accepts), else `fallback` (a device not named, or an entry refused on stderr). */
static int device_knob(const char *name, int dev, int fallback, int (*valid)(long)) {
  const char *text = getenv(name);
  for (int i = 0; text && *text; ++i) {
    char *end;
    long value = strtol(text, &end, 10);
    if (i == dev) {
      if (end != text && (*end == ',' || *end == '\0') && valid(value)) return (int)value;
      fprintf(stderr, "gpusim: ignoring %s entry %d\n", name, i);
      return fallback;
    }
    text = strchr(text, ',');
    if (text) ++text;
  }
  return fallback;
}

/* GPUSIM_COMPUTE_MODE: each device's CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, comma-separated by
 * ordinal (0 DEFAULT, 2 PROHIBITED, 3 EXCLUSIVE_PROCESS); devices not named are DEFAULT. */
enum { CU_COMPUTEMODE_DEFAULT = 0, CU_COMPUTEMODE_PROHIBITED = 2, CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3 };
static int valid_mode(long m) {
  return m == CU_COMPUTEMODE_DEFAULT || m == CU_COMPUTEMODE_PROHIBITED || m == CU_COMPUTEMODE_EXCLUSIVE_PROCESS;
}
static int compute_mode(int dev) { return device_knob("GPUSIM_COMPUTE_MODE", dev, CU_COMPUTEMODE_DEFAULT, valid_mode); }

/* GPUSIM_CUDA_MANAGED_CONCURRENT and GPUSIM_CUDA_COOPERATIVE: each device's
 * CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS / CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH (0 or 1,
 * comma-separated by ordinal; devices not named have 1, as an H100 on Linux). 0 is a GPU on
 * Windows/WSL or an older one: prefetching to it or on its streams is refused (cumem.c), and so is
 * a cooperative launch (simcuda_ext.c). */
static int valid_flag(long v) { return v == 0 || v == 1; }
int cu_concurrent_managed(int dev) { return device_knob("GPUSIM_CUDA_MANAGED_CONCURRENT", dev, 1, valid_flag); }
int cu_cooperative_launch(int dev) { return device_knob("GPUSIM_CUDA_COOPERATIVE", dev, 1, valid_flag); }

/* The current context, or why there is none usable: after a kernel fault every call that needs
 * the context returns the sticky error ("any further CUDA work will return the same error"). */
CUresult cu_current(struct cuctx **out) {
  if (tls_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext ctx = tls_stack[tls_depth - 1];
  if (ctx == NULL || __atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_status fault = sim_device_fault(ctx->device);
  if (fault != SIM_OK) return from_sim(fault);
  *out = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (sim_device_count() == 0) return CUDA_ERROR_NO_DEVICE;
  pthread_mutex_lock(&state_lock);
  if (!cu_initialized) {
    for (int i = 0; i < 8; ++i) primary[i].device = i;
    __atomic_store_n(&cu_initialized, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&state_lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = cu_driver_version();
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

EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  if (name == NULL || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)length, "gpusim CUDA device %d (sm_%d, simulated)", dev, cu_device_sm());
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
  case 20: v = compute_mode(dev); break;                    /* COMPUTE_MODE (GPUSIM_COMPUTE_MODE) */
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
  case 75: v = cu_device_sm() / 10; break;                    /* COMPUTE_CAPABILITY_MAJOR */
  case 76: v = cu_device_sm() % 10; break;                    /* COMPUTE_CAPABILITY_MINOR */
  case 81: v = (int)p->shared_per_multiprocessor; break;
  case 82: v = 65536; break;                               /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  case 83: v = 1; break;                                   /* MANAGED_MEMORY */
  case 84: v = 0; break;                                   /* MULTI_GPU_BOARD */
  case 86: v = 1; break;                                   /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
  case 89: v = cu_concurrent_managed(dev); break;          /* CONCURRENT_MANAGED_ACCESS (GPUSIM_CUDA_MANAGED_CONCURRENT) */
  case 97: v = (int)p->shared_per_block_optin; break;      /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  case 95: v = cu_cooperative_launch(dev); break;          /* COOPERATIVE_LAUNCH (GPUSIM_CUDA_COOPERATIVE) */
  case 102: v = 0; break;                                  /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: VMM not modelled */
  case 106: v = 32; break;                                 /* MAX_BLOCKS_PER_MULTIPROCESSOR */
  case 115: v = 1; break;                                  /* MEMORY_POOLS_SUPPORTED (cupool.c) */
  case 119: v = 0; break;                                  /* MEMPOOL_SUPPORTED_HANDLE_TYPES: no IPC pools */
  case 120: v = cu_device_sm() >= 90; break;               /* CLUSTER_LAUNCH */
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
  /* cuDevicePrimaryCtxRetain: "Retaining the primary context for the first time will fail with
   * CUDA_ERROR_UNKNOWN if the compute mode of the device is CU_COMPUTEMODE_PROHIBITED." */
  if (primary[dev].refs == 0 && compute_mode(dev) == CU_COMPUTEMODE_PROHIBITED) {
    pthread_mutex_unlock(&state_lock);
    return CUDA_ERROR_UNKNOWN;
  }
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

/* ---- context release: leaks ---------------------------------------------------------------- */

static void release_context_resources(int dev) {
  sim_device_wait_idle(dev);
  sim_device_clear_fault(dev); /* the context is gone, and its sticky error with it */
  sim_stream_clear_error(sim_stream_legacy(dev)); /* (the device's legacy stream outlives it, not its error) */
  unsigned kinds = KIND(SIM_MEM_DEVICE) | KIND(SIM_MEM_HOST) | KIND(SIM_MEM_MANAGED);
  size_t leaks = sim_mem_report_leaks(dev, kinds, "primary context release");
  if (leaks) fprintf(stderr, "gpusim: %zu allocation(s) leaked at primary context release of device %d\n", leaks, dev);
  /* The reset destroys the context's streams and events too; one never destroyed is reported as
   * a leak (with a primary context shared by another library, no reset comes and it stays). */
  int streams = __atomic_exchange_n(&primary[dev].live_streams, 0, __ATOMIC_ACQ_REL);
  int events = __atomic_exchange_n(&primary[dev].live_events, 0, __ATOMIC_ACQ_REL);
  if (streams) fprintf(stderr, "gpusim: leak at primary context release of device %d: %d stream(s) never destroyed\n", dev, streams);
  if (events) fprintf(stderr, "gpusim: leak at primary context release of device %d: %d event(s) never destroyed\n", dev, events);
}

/* ---- the simulator's own queries (not driver API: for tests of the simulator) ------------------ */

/* 1 when a host dereference of device memory faults here; else 0 and *why says why. */
EXPORT int gpusim_memory_protected(const char **why) { return sim_mem_protected(why); }

/* ---- entry points ---------------------------------------------------------------------------- */

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags);

static const proc_entry procs[] = {
    /* bindings 12.x ask the driver for its own lookup first (cuGetProcAddress at 12000: the _v2
     * with the status argument, CUDA 12.0; the 11.3 one without it) */
    PROC("cuGetProcAddress", 11030, cuGetProcAddress),
    PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    PROC("cuGetErrorName", 6000, cuGetErrorName),
    PROC("cuGetErrorString", 6000, cuGetErrorString),
    PROC("cuInit", 2000, cuInit),
    PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
    PROC("cuDeviceGet", 2000, cuDeviceGet),
    PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
    PROC("cuDeviceGetName", 2000, cuDeviceGetName),
    PROC("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    PROC("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    PROC("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    PROC("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    PROC("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    PROC("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    PROC("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
    PROC("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
    PROC("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    PROC("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    PROC("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
    PROC("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),
    PROC("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    PROC("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    PROC("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),
    PROC("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
    PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    PROC("cuMemAllocManaged", 6000, cuMemAllocManaged),
    PROC("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2),
    PROC("cuMemFree", 3020, cuMemFree_v2),
    PROC("cuMemFreeHost", 2000, cuMemFreeHost),
    PROC("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    PROC("cuMemHostUnregister", 4000, cuMemHostUnregister),
    PROC("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    PROC("cuMemcpy", 4000, cuMemcpy),
    PROC("cuMemcpyAsync", 4000, cuMemcpyAsync),
    PROC("cuMemcpy3D", 3020, cuMemcpy3D_v2),
    PROC("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2),
    PROC("cuMemcpyPeer", 4000, cuMemcpyPeer),
    PROC("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    PROC("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    PROC("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    PROC("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    PROC("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    PROC("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    PROC("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    PROC("cuMemsetD8", 3020, cuMemsetD8_v2),
    PROC("cuMemsetD16", 3020, cuMemsetD16_v2),
    PROC("cuMemsetD32", 3020, cuMemsetD32_v2),
    PROC("cuMemsetD2D8", 3020, cuMemsetD2D8_v2),
    PROC("cuMemsetD2D16", 3020, cuMemsetD2D16_v2),
    PROC("cuMemsetD2D32", 3020, cuMemsetD2D32_v2),
    PROC("cuMemsetD8Async", 3020, cuMemsetD8Async),
    PROC("cuMemsetD16Async", 3020, cuMemsetD16Async),
    PROC("cuMemsetD32Async", 3020, cuMemsetD32Async),
    PROC("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async),
    PROC("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async),
    PROC("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async),
    PROC("cuStreamCreate", 2000, cuStreamCreate),
    PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    PROC("cuStreamQuery", 2000, cuStreamQuery),
    PROC("cuStreamSynchronize", 2000, cuStreamSynchronize),
    PROC("cuStreamGetFlags", 5050, cuStreamGetFlags),
    PROC("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    PROC("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
    PROC("cuStreamAddCallback", 5000, cuStreamAddCallback),
    PROC("cuEventCreate", 2000, cuEventCreate),
    PROC("cuEventDestroy", 4000, cuEventDestroy_v2),
    PROC("cuEventRecord", 2000, cuEventRecord),
    PROC("cuEventQuery", 2000, cuEventQuery),
    PROC("cuEventSynchronize", 2000, cuEventSynchronize),
    PROC("cuEventElapsedTime", 2000, cuEventElapsedTime),
    PROC("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    PROC("cuModuleLoadData", 2000, cuModuleLoadData),
    PROC("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    PROC("cuModuleUnload", 2000, cuModuleUnload),
    PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
    PROC("cuModuleGetFunctionCount", 12040, cuModuleGetFunctionCount),
    PROC("cuModuleEnumerateFunctions", 12040, cuModuleEnumerateFunctions),
    PROC("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    PROC("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    PROC("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
    PROC("cuFuncGetName", 12030, cuFuncGetName),
    PROC("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    PROC("cuLaunchKernel", 4000, cuLaunchKernel),
    PROC("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    PROC("cuOccupancyMaxPotentialBlockSize", 6050, cuOccupancyMaxPotentialBlockSize),
    /* cupool.c (stream-ordered memory and pools) */
    PROC("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PROC("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PROC("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PROC("cuMemPoolCreate", 11020, cuMemPoolCreate),
    PROC("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    PROC("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    PROC("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    PROC("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    PROC("cuMemGetDefaultMemPool", 13000, cuMemGetDefaultMemPool),
    PROC("cuMemGetMemPool", 13000, cuMemGetMemPool),
    PROC("cuMemSetMemPool", 13000, cuMemSetMemPool),
    PROC("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    PROC("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    PROC("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    PROC("cuMemPoolSetAccess", 11020, cuMemPoolSetAccess),
    PROC("cuMemPoolGetAccess", 11020, cuMemPoolGetAccess),
    /* culibrary.c (libraries and kernels) */
    PROC("cuLibraryLoadData", 12000, cuLibraryLoadData),
    PROC("cuLibraryUnload", 12000, cuLibraryUnload),
    PROC("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    PROC("cuLibraryGetKernelCount", 12040, cuLibraryGetKernelCount),
    PROC("cuLibraryEnumerateKernels", 12040, cuLibraryEnumerateKernels),
    PROC("cuLibraryGetModule", 12000, cuLibraryGetModule),
    PROC("cuLibraryGetGlobal", 12000, cuLibraryGetGlobal),
    PROC("cuKernelGetFunction", 12000, cuKernelGetFunction),
    PROC("cuKernelGetLibrary", 12050, cuKernelGetLibrary),
    PROC("cuKernelGetName", 12030, cuKernelGetName),
    PROC("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo),
    PROC("cuKernelGetAttribute", 12000, cuKernelGetAttribute),
    PROC("cuKernelSetAttribute", 12000, cuKernelSetAttribute),
    /* simcuda_ext.c (contexts, stream queries, cuLaunchKernelEx, pointer attributes) */
    PROC("cuCtxCreate", 3020, cuCtxCreate_v2),
    PROC("cuCtxCreate", 11040, cuCtxCreate_v3),
    PROC("cuCtxCreate", 12050, cuCtxCreate_v4),
    PROC("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    PROC("cuCtxGetFlags", 7000, cuCtxGetFlags),
    PROC("cuCtxGetId", 12000, cuCtxGetId),
    PROC("cuCtxGetApiVersion", 3020, cuCtxGetApiVersion),
    PROC("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange),
    PROC("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
    PROC("cuStreamGetPriority", 5050, cuStreamGetPriority),
    PROC("cuStreamGetCtx", 9020, cuStreamGetCtx),
    PROC("cuStreamGetCtx", 12050, cuStreamGetCtx_v2),
    PROC("cuStreamGetDevice", 12080, cuStreamGetDevice),
    PROC("cuStreamGetId", 12000, cuStreamGetId),
    PROC("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    PROC("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    PROC("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    PROC("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
};

/* cuGetProcAddress ("Driver Entry Point Access"): the entry "for the requested CUDA version", the
 * highest at or below it; status 1 = symbol not found, 2 = version not sufficient. Entries
 * introduced after the reported driver version (GPUSIM_CUDA_VERSION) are not in this driver: an
 * older driver asked for a newer ABI answers with the newest it has, as the 13.0 one does for
 * cuLaunchHostFunc at 13020 (so bindings 13 on a 12.x driver get mismatched entries: callers must
 * check cuDriverGetVersion first). */
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  (void)flags;
  int driver = cu_driver_version();
  const proc_entry *best = NULL;
  int known = 0;
  for (const proc_entry *e = procs; e < procs + sizeof procs / sizeof *procs; ++e) {
    if (e->version > driver || strcmp(e->name, symbol) != 0) continue;
    known = 1;
    if (e->version <= version && (best == NULL || e->version > best->version)) best = e;
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


/* cuGetExportTable (declared in cuda.h, undocumented): the driver's private tables for NVIDIA's
 * own libraries. NVRTC asks it of an already loaded libcuda.so.1 (and crashes on a missing
 * symbol), so the simulator exports it and has no table: CUDA_ERROR_NOT_SUPPORTED. */
EXPORT CUresult cuGetExportTable(const void **table, const void *table_id) {
  (void)table_id;
  if (table == NULL) return CUDA_ERROR_INVALID_VALUE;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}
