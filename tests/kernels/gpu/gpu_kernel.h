/* gpu_kernel.h - what the single-source GPU test kernels need beyond CUDA C, for each target:
 *   nvcc (__CUDACC__): nothing extra;
 *   clang for amdgcn (__HIP__ / __AMDGCN__): left to the AMDGPU build's own prelude;
 *   the simulators' host build (GPUSIM_HOST_BUILD): tests/simulators/core/gpusim_kernel.h,
 *   force-included by the build, maps __global__, threadIdx, __syncthreads, __shared__, ...
 * GPU_DYNAMIC_SHARED(type, name) declares the block's dynamic shared memory inside a kernel.
 * GPU_TRAP() aborts the kernel with a device fault (CUDA's __trap(); __builtin_trap on amdgcn;
 * the simulators' host build makes it the device's sticky fault).
 */
#ifndef OFFLOAD_GPU_KERNEL_H
#define OFFLOAD_GPU_KERNEL_H

#include <stdint.h>

#if defined(GPUSIM_HOST_BUILD)
#define GPU_DYNAMIC_SHARED(type, name) GPUSIM_DYNAMIC_SHARED(type, name)
#else
#define GPU_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

#if defined(GPUSIM_HOST_BUILD) || defined(__CUDACC__)
#define GPU_TRAP() __trap()
#else
#define GPU_TRAP() __builtin_trap()
#endif

#define GPU_GLOBAL_ID_X (blockIdx.x * blockDim.x + threadIdx.x)

#endif
