/* hip_host_prelude.h - force-included (after core/gpusim_kernel.h) into the HIP simulator's host
 * builds of the single-source test kernels. The device constructor / destructor of a source
 * (spelled nvptx$device$init / nvptx$device$fini, see hip_device_prelude.h) becomes the host
 * entry of the code object's amdgcn.device.init / amdgcn.device.fini kernel, exported as
 * gpusim_kernel_amdgcn_device_init / _fini; the HIP front launches it at load / unload, as the
 * HIP runtime launches those kernels.
 */
#ifndef GPUSIM_HIP_HOST_PRELUDE_H
#define GPUSIM_HIP_HOST_PRELUDE_H

#define nvptx$device$init(...)                                                                        \
  gpusim_hip_unused_init();                                                                           \
  static void gpusim_hip_device_init();                                                               \
  extern "C" __attribute__((visibility("default"))) void gpusim_kernel_amdgcn_device_init(void **) {  \
    gpusim_hip_device_init();                                                                         \
  }                                                                                                   \
  static void gpusim_hip_device_init()
#define nvptx$device$fini(...)                                                                        \
  gpusim_hip_unused_fini();                                                                           \
  static void gpusim_hip_device_fini();                                                               \
  extern "C" __attribute__((visibility("default"))) void gpusim_kernel_amdgcn_device_fini(void **) {  \
    gpusim_hip_device_fini();                                                                         \
  }                                                                                                   \
  static void gpusim_hip_device_fini()

#endif
