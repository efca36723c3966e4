/* offload_amdgpu._native: the AMDGPU backend's native entry points (offload_native.h), on the HIP
 * functions hip-python's rocm.bindings.cyhip exports in its C API (__pyx_capi__), so a launch from
 * the core's compiled path reaches the runtime hip-python loaded without a Python frame. The entry
 * points themselves are offload_native_gpu.h's; here are the adapters over the HIP calls the
 * Python hooks make (_launch.py, _memory.py, _queue.py) and HipDevice.activate. Every signature is
 * checked at import: on a mismatch `entry_points()` is None and `unavailable` says why (the Python
 * hooks serve). */
#include <stddef.h>
#include <stdint.h>

static int fill(uintptr_t dst, unsigned element, uint32_t value, size_t count, uintptr_t stream);
#define OFFLOAD_GPU_FILL fill /* _memory.fill's one-call case: hipMemsetD8/D16/D32Async */
#include "offload_native_gpu.h"

typedef int hipError_t; /* an enum: int-sized */
typedef void *hipFunction_t;
typedef void *hipStream_t;
enum { HIP_MEMCPY_DEFAULT = 4 }; /* hipMemcpyDefault: the runtime tells the direction by the pointers */

static hipError_t (*hip_set_device)(int);
static hipError_t (*hip_module_launch_kernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,
                                              unsigned, unsigned, hipStream_t, void **, void **);
static hipError_t (*hip_memcpy_htod_async)(void *, const void *, size_t, hipStream_t);
static hipError_t (*hip_memcpy_dtoh_async)(void *, void *, size_t, hipStream_t);
static hipError_t (*hip_memcpy_async)(void *, const void *, size_t, int, hipStream_t);
static hipError_t (*hip_memset_d8_async)(void *, unsigned char, size_t, hipStream_t);
static hipError_t (*hip_memset_d16_async)(void *, unsigned short, size_t, hipStream_t);
static hipError_t (*hip_memset_d32_async)(void *, int, size_t, hipStream_t);
static hipError_t (*hip_stream_synchronize)(hipStream_t);
static hipError_t (*hip_stream_query)(hipStream_t);

static const offload_gpu_function functions[] = {
    {"hipSetDevice", "enum hipError_t (int)", (void **)&hip_set_device},
    {"hipModuleLaunchKernel",
     "enum hipError_t (hipFunction_t, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
     "unsigned int, unsigned int, hipStream_t, void **, void **)",
     (void **)&hip_module_launch_kernel},
    {"hipMemcpyHtoDAsync", "enum hipError_t (void *, void const *, size_t, hipStream_t)",
     (void **)&hip_memcpy_htod_async},
    {"hipMemcpyDtoHAsync", "enum hipError_t (void *, void *, size_t, hipStream_t)", (void **)&hip_memcpy_dtoh_async},
    {"hipMemcpyAsync", "enum hipError_t (void *, void const *, size_t, enum hipMemcpyKind, hipStream_t)",
     (void **)&hip_memcpy_async},
    {"hipMemsetD8Async", "enum hipError_t (void *, unsigned char, size_t, hipStream_t)", (void **)&hip_memset_d8_async},
    {"hipMemsetD16Async", "enum hipError_t (void *, unsigned short, size_t, hipStream_t)", (void **)&hip_memset_d16_async},
    {"hipMemsetD32Async", "enum hipError_t (void *, int, size_t, hipStream_t)", (void **)&hip_memset_d32_async},
    {"hipStreamSynchronize", "enum hipError_t (hipStream_t)", (void **)&hip_stream_synchronize},
    {"hipStreamQuery", "enum hipError_t (hipStream_t)", (void **)&hip_stream_query},
};

/* HipDevice.activate: HIP's current device, set where the process has more than one. */
static int activate(const offload_gpu_device *device) { return device->select ? hip_set_device(device->ordinal) : 0; }

static int launch(uintptr_t function, const offload_launch_dims *dims, uintptr_t stream, void **extra) {
  const uint32_t *g = dims->num_groups, *b = dims->group_size;
  return hip_module_launch_kernel((hipFunction_t)function, g[0], g[1], g[2], b[0], b[1], b[2],
                                  (unsigned)dims->dyn_shared_memory, (hipStream_t)stream, NULL, extra);
}
static int submit(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) { return hip_memcpy_htod_async((void *)dst, (const void *)src, n, (hipStream_t)s); }
static int retrieve(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) { return hip_memcpy_dtoh_async((void *)dst, (void *)src, n, (hipStream_t)s); }
static int exchange(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
  return hip_memcpy_async((void *)dst, (const void *)src, n, HIP_MEMCPY_DEFAULT, (hipStream_t)s);
}
static int fill(uintptr_t dst, unsigned element, uint32_t value, size_t count, uintptr_t s) {
  return element == 1   ? hip_memset_d8_async((void *)dst, (unsigned char)value, count, (hipStream_t)s)
         : element == 2 ? hip_memset_d16_async((void *)dst, (unsigned short)value, count, (hipStream_t)s)
                        : hip_memset_d32_async((void *)dst, (int)value, count, (hipStream_t)s); /* an int, as the hook passes */
}
static int stream_sync(uintptr_t stream) { return hip_stream_synchronize((hipStream_t)stream); }
static int stream_query(uintptr_t stream) { return hip_stream_query((hipStream_t)stream); }

OFFLOAD_GPU_EXTENSION("offload_amdgpu._native", "The AMDGPU backend's native entry points (offload_native.h) on rocm.bindings.cyhip.",
                      "rocm.bindings.cyhip", 600 /* hipErrorNotReady */,
                      3 /* hipErrorInitializationError: what cyhip's functions return having raised (`except?`) */,
                      3 /* HIP_LAUNCH_PARAM_END */, 0 /* a stream names its device: queued work selects none, as the Python hooks */)
