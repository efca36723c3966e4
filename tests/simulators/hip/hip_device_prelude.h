/* hip_device_prelude.h - force-included when clang builds the single-source test kernels for
 * amdgcn (clang++ -x hip --cuda-device-only -nogpuinc: no HIP headers, so this file is the
 * little of HIP the kernels use). A test fixture: not the HIP headers, not shipped.
 *
 * The CUDA sources spell global constructors / destructors as the kernels nvptx$device$init /
 * nvptx$device$fini (what clang lowers them to on NVPTX, written by hand because nvcc has no
 * device constructors). Here they become real device constructors / destructors, which clang
 * lowers to the kernels amdgcn.device.init / amdgcn.device.fini that the HIP runtime runs at
 * module load / unload.
 */
#ifndef GPUSIM_HIP_DEVICE_PRELUDE_H
#define GPUSIM_HIP_DEVICE_PRELUDE_H

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))

struct gpusim_hip_uint3 {
  unsigned x, y, z;
};
#define threadIdx \
  (gpusim_hip_uint3{__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()})
#define blockIdx \
  (gpusim_hip_uint3{__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()})
#define blockDim                                                                                      \
  (gpusim_hip_uint3{__builtin_amdgcn_workgroup_size_x(), __builtin_amdgcn_workgroup_size_y(),         \
                    __builtin_amdgcn_workgroup_size_z()})
#define gridDim                                                                                       \
  (gpusim_hip_uint3{__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(),             \
                    __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y(),             \
                    __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z()})
#define __syncthreads()                                                                               \
  (__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"), __builtin_amdgcn_s_barrier(),               \
   __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"))

#define nvptx$device$init(...) \
  gpusim_hip_unused_init(); __attribute__((constructor)) static __device__ void gpusim_hip_device_init()
#define nvptx$device$fini(...) \
  gpusim_hip_unused_fini(); __attribute__((destructor)) static __device__ void gpusim_hip_device_fini()

#endif
