/* simcuda.h - what the files of the simulated CUDA driver share (internal; not installed).
 *
 * simcuda.c   errors, init, devices, primary contexts, peers, cuGetProcAddress's table
 * cumem.c     allocations, registered memory, copies and memsets (and their synchronisation)
 * custream.c  handle recycling, streams, events, host functions and stream callbacks
 * cumodule.c  modules (cuimage.c parses them), functions, launches, occupancy
 * culibrary.c context-independent libraries and their kernels (cuLibrary*, cuKernel*)
 * cupool.c    stream-ordered memory pools (cuMemPool*, cuMemAllocAsync, cuMemFreeAsync)
 * simcuda_ext.c created contexts, stream queries and priorities, cuLaunchKernelEx, pointer
 *             attributes, and the entry-point table of those files
 * See ../README.md for what is modelled and where the documentation says so.
 */
#ifndef GPUSIM_SIMCUDA_H
#define GPUSIM_SIMCUDA_H

#include "../core/simcore.h"

#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct cuctx *CUcontext;
typedef struct custream *CUstream;
typedef struct cuevent *CUevent;
typedef struct cumodule *CUmodule;
typedef struct cufunction *CUfunction;
typedef struct culibrary *CUlibrary;
typedef struct cukernel *CUkernel;
typedef struct cumempool *CUmemoryPool;
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
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
  CUDA_ERROR_UNKNOWN = 999,
};

/* The CUDA version the driver reports (cuDriverGetVersion): GPUSIM_CUDA_VERSION, 12000-13000
 * (default 13000). Entry points introduced after it do not exist, and the JIT reads PTX ISA
 * versions up to cu_max_ptx_isa() (8.0 for 12.0 ... 9.0 for 13.0, as 10 * major + minor). */
int cu_driver_version(void);
int cu_max_ptx_isa(void);

/* ---- shared state and checks (simcuda.c) ---------------------------------------------------- */

struct cuctx {
  int device;
  int created;       /* 1 for a cuCtxCreate context (0: the device's primary context) */
  unsigned long long id; /* cuCtxGetId (0 until first asked) */
  int refs;          /* primary-context retain count; active while > 0 */
  unsigned generation; /* bumped when the last release ends the context: its streams/events die */
  unsigned flags;
  int peer[8];       /* peer access enabled towards device i */
  int live_streams;  /* created and not destroyed in this generation (reported at the last release) */
  int live_events;
};

extern int cu_initialized;
/* The primary context of a device (whether active or not). */
struct cuctx *cu_primary(int device);
/* The sim_status of the core as a CUresult. */
CUresult from_sim(sim_status status);
/* The current context, or why there is none usable: after a kernel fault every call that needs
 * the context returns the sticky error ("any further CUDA work will return the same error"). */
CUresult cu_current(struct cuctx **out);
/* GPUSIM_CUDA_SM, the devices' compute capability (default 90). */
int cu_device_sm(void);
/* A device's CONCURRENT_MANAGED_ACCESS (GPUSIM_CUDA_MANAGED_CONCURRENT) and COOPERATIVE_LAUNCH
 * (GPUSIM_CUDA_COOPERATIVE) attributes: 1 unless the knob names 0 for it. */
int cu_concurrent_managed(int dev);
int cu_cooperative_launch(int dev);

#define REQUIRE_INIT()                                                    \
  do {                                                                    \
    if (!__atomic_load_n(&cu_initialized, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED; \
    if (sim_in_host_function()) return CUDA_ERROR_NOT_PERMITTED;          \
  } while (0)

#define REQUIRE_CTX(var)                   \
  struct cuctx *var;                       \
  do {                                     \
    REQUIRE_INIT();                        \
    CUresult rc_ = cu_current(&var);       \
    if (rc_ != CUDA_SUCCESS) return rc_;   \
    (void)var;                             \
  } while (0)

#define REQUIRE_DEVICE(dev)                                              \
  do {                                                                   \
    REQUIRE_INIT();                                                      \
    if (sim_device(dev) == NULL) return CUDA_ERROR_INVALID_DEVICE;       \
  } while (0)

#define KIND(k) (1u << (k))
#define PTR(d) ((void *)(uintptr_t)(d))

/* ---- handles, streams, events (custream.c) ------------------------------------------------- */

enum { BIN_STREAM, BIN_EVENT, BIN_MODULE };
/* A destroyed handle's memory is kept (magic cleared) and reused for a later handle of the same
 * kind, so using a destroyed handle reads INVALID_HANDLE instead of freed memory. */
void *handle_new(int bin, size_t size);
void handle_delete(int bin, void *h);

#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x45564e54u

struct custream {
  unsigned magic;
  unsigned flags;
  struct cuctx *ctx;
  unsigned generation; /* of ctx when created: a stream dies with its context */
  sim_stream *sim;
  int priority;        /* cuStreamCreateWithPriority (clamped to the context's range) */
  unsigned long long id; /* cuStreamGetId (0 until first asked) */
};

struct cuevent {
  unsigned magic;
  unsigned flags;
  struct cuctx *ctx;
  unsigned generation;
  sim_event *sim;
};

int is_default_stream(CUstream stream);
/* Resolves a stream handle (NULL and CU_STREAM_LEGACY/PER_THREAD mean the current context's
 * legacy default stream); *owner (if not NULL) is the context the stream belongs to. A stream
 * of a context that has since ended is INVALID_HANDLE. */
CUresult resolve_stream_owner(CUstream stream, struct cuctx *ctx, sim_stream **out, struct cuctx **owner);
CUresult resolve_stream(CUstream stream, struct cuctx *ctx, sim_stream **out);

typedef void (*CUstreamCallback)(CUstream stream, CUresult status, void *user_data);

/* ---- modules, functions and libraries (cumodule.c, culibrary.c) ----------------------------- */

#define MODULE_MAGIC 0x4d4f444cu
#define FUNCTION_MAGIC 0x46554e43u
#define KERNEL_MAGIC 0x4b45524eu

/* Loads an image as a module of a device, no context checks (cuModuleLoadData's core). */
CUresult cu_module_load_device(int device, const void *image, CUmodule *out);
/* The same with cuModuleLoadDataEx's JIT options (the logs are written). */
CUresult cu_module_load_options(int device, CUmodule *out, const void *image, unsigned n, int *options, void **values);
unsigned cu_module_kernel_count(CUmodule m);
CUfunction cu_module_kernel(CUmodule m, unsigned index);
/* Function queries without context checks (f must be a live function). */
CUresult cu_func_attribute(CUfunction f, int attribute, int *value);
CUresult cu_func_set_attribute(CUfunction f, int attribute, int value);
CUresult cu_func_param(CUfunction f, size_t index, size_t *offset, size_t *size);
const char *cu_func_name(CUfunction f);
/* A library kernel's function on a device (its module loaded there on first use);
 * INVALID_HANDLE when handle is not a live kernel. */
CUresult cu_kernel_function(void *handle, int device, CUfunction *out);

/* ---- stream-ordered pools (cupool.c) ----------------------------------------------------- */

/* The pool an address was allocated from (NULL: none); cuMemFree of such memory forgets it. */
CUmemoryPool cu_pool_of(CUdeviceptr ptr);
void cu_pool_forget(CUdeviceptr ptr);
/* 1 when a cuMemFreeAsync of ptr is enqueued and has not run yet. */
int cu_pool_free_pending(CUdeviceptr ptr);

/* ---- the entry-point table ------------------------------------------------------------------ */

typedef struct proc_entry {
  const char *name;
  int version; /* the lowest cudaVersion this entry serves */
  void *fn;
} proc_entry;
/* One entry of a table: the exported function fn serving name from cudaVersion version on. */
#define PROC(name, version, fn) {name, version, (void *)fn}

/* ---- the exported driver functions defined outside simcuda.c (for the entry-point table) ---- */

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total);
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size);
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags);
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
EXPORT CUresult cuMemFreeHost(void *p);
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags);
EXPORT CUresult cuMemHostUnregister(void *p);
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr);
EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags);
EXPORT CUresult cuStreamDestroy_v2(CUstream stream);
EXPORT CUresult cuStreamDestroy(CUstream stream);
EXPORT CUresult cuStreamQuery(CUstream stream);
EXPORT CUresult cuStreamSynchronize(CUstream stream);
EXPORT CUresult cuStreamGetFlags(CUstream stream, unsigned *flags);
EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *user_data, unsigned flags);
EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *user_data);
EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags);
EXPORT CUresult cuEventDestroy_v2(CUevent event);
EXPORT CUresult cuEventDestroy(CUevent event);
EXPORT CUresult cuEventRecord(CUevent event, CUstream stream);
EXPORT CUresult cuEventQuery(CUevent event);
EXPORT CUresult cuEventSynchronize(CUevent event);
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end);
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end);
EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags);
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream);
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream);
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
typedef struct {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType; /* CUmemorytype: 1 host, 2 device, 3 array, 4 unified */
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray, *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray, *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p);
EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream stream);
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n, CUstream stream);
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n);
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n);
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n);
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n);
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s);
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s);
EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h);
EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h);
EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h);
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s);
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s);
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s);
EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image);
EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n, int *options, void **values);
EXPORT CUresult cuModuleUnload(CUmodule m);
EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name);
EXPORT CUresult cuModuleGetFunctionCount(unsigned *count, CUmodule m);
typedef struct {
  int type; /* CUmemLocationType: 1 device, 2 host, 3 host NUMA node, 4 the calling thread's NUMA node */
  int id;
} CUmemLocation;
EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation location, unsigned flags,
                                      CUstream stream);
EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned n, CUmodule m);
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name);
EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size);
EXPORT CUresult cuFuncGetName(const char **name, CUfunction f);
EXPORT CUresult cuFuncGetAttribute(int *value, int attribute, CUfunction f);
EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value);
EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx);
EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer);
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx);
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx);
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream stream, void **params, void **extra);
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size, size_t dyn);
EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize to_dyn, size_t dyn, int limit);
/* cupool.c */
typedef struct CUmemPoolProps_st CUmemPoolProps;
typedef struct CUmemAccessDesc_st CUmemAccessDesc;
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream);
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream);
EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props);
EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool);
EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev);
EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev);
EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *out, const CUmemLocation *loc, int type);
EXPORT CUresult cuMemGetMemPool(CUmemoryPool *out, const CUmemLocation *loc, int type);
EXPORT CUresult cuMemSetMemPool(const CUmemLocation *loc, int type, CUmemoryPool pool);
EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value);
EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value);
EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep);
EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
EXPORT CUresult cuMemPoolGetAccess(int *flags, CUmemoryPool pool, const CUmemLocation *loc);
/* culibrary.c */
EXPORT CUresult cuLibraryLoadData(CUlibrary *out, const void *code, int *jit_options, void **jit_values, unsigned n_jit, int *lib_options, void **lib_values, unsigned n_lib);
EXPORT CUresult cuLibraryUnload(CUlibrary lib);
EXPORT CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary lib, const char *name);
EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib);
EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n, CUlibrary lib);
EXPORT CUresult cuLibraryGetModule(CUmodule *out, CUlibrary lib);
EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name);
EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel k);
EXPORT CUresult cuKernelGetLibrary(CUlibrary *out, CUkernel k);
EXPORT CUresult cuKernelGetName(const char **name, CUkernel k);
EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t *offset, size_t *size);
EXPORT CUresult cuKernelGetAttribute(int *value, int attribute, CUkernel k, CUdevice dev);
EXPORT CUresult cuKernelSetAttribute(int attribute, int value, CUkernel k, CUdevice dev);
/* simcuda_ext.c */
typedef struct CUctxCreateParams_st CUctxCreateParams;
typedef struct CUlaunchConfig_st CUlaunchConfig;
EXPORT CUresult cuCtxCreate_v2(CUcontext *out, unsigned flags, CUdevice dev);
EXPORT CUresult cuCtxCreate_v3(CUcontext *out, void *affinity, int n, unsigned flags, CUdevice dev);
EXPORT CUresult cuCtxCreate_v4(CUcontext *out, CUctxCreateParams *params, unsigned flags, CUdevice dev);
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx);
EXPORT CUresult cuCtxGetFlags(unsigned *flags);
EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id);
EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version);
EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest);
EXPORT CUresult cuStreamCreateWithPriority(CUstream *out, unsigned flags, int priority);
EXPORT CUresult cuStreamGetPriority(CUstream stream, int *priority);
EXPORT CUresult cuStreamGetCtx(CUstream stream, CUcontext *out);
EXPORT CUresult cuStreamGetCtx_v2(CUstream stream, CUcontext *out, void **green);
EXPORT CUresult cuStreamGetDevice(CUstream stream, CUdevice *dev);
EXPORT CUresult cuStreamGetId(CUstream stream, unsigned long long *id);
EXPORT CUresult cuStreamIsCapturing(CUstream stream, int *status);
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr);
EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attributes, void **data, CUdeviceptr ptr);

#endif /* GPUSIM_SIMCUDA_H */
