/* offload_cuda._native: the CUDA backend's native entry points (offload_native.h), on the driver
 * functions cuda.bindings.cydriver exports in its C API (__pyx_capi__), so a launch from the core's
 * compiled path reaches the driver the bindings loaded without a Python frame. The entry points
 * themselves are offload_native_gpu.h's; here are the adapters over the CUDA calls the Python
 * hooks make (_launch.py, _memory.py, _queue.py) and the context currency of
 * CudaDevice.activate. Every signature is checked at import: on a mismatch `entry_points()` is
 * None and `unavailable` says why (the Python hooks serve). */
#include <stddef.h>
#include <stdint.h>

static int fill(uintptr_t dst, unsigned element, uint32_t value, size_t count, uintptr_t stream);
#define OFFLOAD_GPU_FILL fill /* _memory.fill's one-call case: cuMemsetD8/D16/D32Async */
#include "offload_native_gpu.h"

typedef int CUresult; /* an enum of the driver API: int-sized */
typedef void *CUcontext;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

static CUresult (*cu_ctx_get_current)(CUcontext *);
static CUresult (*cu_ctx_set_current)(CUcontext);
static CUresult (*cu_launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void **, void **);
static CUresult (*cu_memcpy_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*cu_memcpy_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
static CUresult (*cu_memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*cu_memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*cu_memset_d16_async)(CUdeviceptr, unsigned short, size_t, CUstream);
static CUresult (*cu_memset_d32_async)(CUdeviceptr, unsigned int, size_t, CUstream);
static CUresult (*cu_stream_synchronize)(CUstream);
static CUresult (*cu_stream_query)(CUstream);

static const offload_gpu_function functions[] = {
    {"cuCtxGetCurrent", "CUresult (CUcontext *)", (void **)&cu_ctx_get_current},
    {"cuCtxSetCurrent", "CUresult (CUcontext)", (void **)&cu_ctx_set_current},
    {"cuLaunchKernel",
     "CUresult (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
     "unsigned int, CUstream, void **, void **)",
     (void **)&cu_launch_kernel},
    {"cuMemcpyHtoDAsync", "CUresult (CUdeviceptr, void const *, size_t, CUstream)", (void **)&cu_memcpy_htod_async},
    {"cuMemcpyDtoHAsync", "CUresult (void *, CUdeviceptr, size_t, CUstream)", (void **)&cu_memcpy_dtoh_async},
    {"cuMemcpyDtoDAsync", "CUresult (CUdeviceptr, CUdeviceptr, size_t, CUstream)", (void **)&cu_memcpy_dtod_async},
    {"cuMemsetD8Async", "CUresult (CUdeviceptr, unsigned char, size_t, CUstream)", (void **)&cu_memset_d8_async},
    {"cuMemsetD16Async", "CUresult (CUdeviceptr, unsigned short, size_t, CUstream)", (void **)&cu_memset_d16_async},
    {"cuMemsetD32Async", "CUresult (CUdeviceptr, unsigned int, size_t, CUstream)", (void **)&cu_memset_d32_async},
    {"cuStreamSynchronize", "CUresult (CUstream)", (void **)&cu_stream_synchronize},
    {"cuStreamQuery", "CUresult (CUstream)", (void **)&cu_stream_query},
};

/* CudaDevice.activate: the primary context made current unless it is already (asked each time:
 * another library may have made another current since). */
static int activate(const offload_gpu_device *device) {
  CUcontext current = NULL;
  if (cu_ctx_get_current(&current) == 0 && (uintptr_t)current == device->context) return 0;
  return cu_ctx_set_current((CUcontext)device->context);
}

static int launch(uintptr_t function, const offload_launch_dims *dims, uintptr_t stream, void **extra) {
  const uint32_t *g = dims->num_groups, *b = dims->group_size;
  return cu_launch_kernel((CUfunction)function, g[0], g[1], g[2], b[0], b[1], b[2], (unsigned)dims->dyn_shared_memory,
                          (CUstream)stream, NULL, extra);
}
static int submit(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) { return cu_memcpy_htod_async(dst, (const void *)src, n, (CUstream)s); }
static int retrieve(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) { return cu_memcpy_dtoh_async((void *)dst, src, n, (CUstream)s); }
static int exchange(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) { return cu_memcpy_dtod_async(dst, src, n, (CUstream)s); }
static int fill(uintptr_t dst, unsigned element, uint32_t value, size_t count, uintptr_t s) {
  return element == 1   ? cu_memset_d8_async(dst, (unsigned char)value, count, (CUstream)s)
         : element == 2 ? cu_memset_d16_async(dst, (unsigned short)value, count, (CUstream)s)
                        : cu_memset_d32_async(dst, value, count, (CUstream)s);
}
static int stream_sync(uintptr_t stream) { return cu_stream_synchronize((CUstream)stream); }
static int stream_query(uintptr_t stream) { return cu_stream_query((CUstream)stream); }

OFFLOAD_GPU_EXTENSION("offload_cuda._native", "The CUDA backend's native entry points (offload_native.h) on cuda.bindings.cydriver.",
                      "cuda.bindings.cydriver", 600 /* CUDA_ERROR_NOT_READY */,
                      500 /* CUDA_ERROR_NOT_FOUND: what cydriver's functions return having raised (`except ?`) */,
                      0 /* CU_LAUNCH_PARAM_END */, 1 /* queued work makes the context current, as the Python hooks do */)
