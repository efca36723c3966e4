/* cuimage.h - parsing CUDA images (cubin, fatbin, PTX) for the simulated CUDA driver.
 *
 * What is read: the architecture (cubin e_flags; PTX .target; fatbin entry arch), kernels
 * (cubin: STT_FUNC symbols with STO_CUDA_ENTRY; PTX: .entry), each kernel's parameters (cubin:
 * EIATTR_KPARAM_INFO records of .nv.info.<kernel>; PTX: .param declarations with natural or
 * explicit alignment), registers (EIATTR_REGCOUNT), static shared memory (.nv.shared.<kernel>
 * / .shared declarations), and globals (.nv.global / .nv.global.init symbols; PTX .global
 * declarations, initial data not read). Compressed fatbin entries are not decompressed.
 */
#ifndef GPUSIM_CUIMAGE_H
#define GPUSIM_CUIMAGE_H

#include <stddef.h>
#include <stdint.h>

#define CU_MAX_PARAMS 512

typedef struct cu_param {
  uint32_t offset, size;
} cu_param;

typedef struct cu_kernel_info {
  char *name;
  unsigned param_count;
  cu_param *params;
  uint32_t param_bytes; /* end of the last parameter */
  uint32_t static_shared;
  uint32_t registers;
} cu_kernel_info;

typedef struct cu_global_info {
  char *name;
  size_t size;
  void *init; /* initial bytes (size of them) or NULL for zero */
} cu_global_info;

typedef struct cu_image {
  unsigned sm;          /* the architecture loaded (e.g. 90) */
  unsigned ptx_version; /* PTX ISA * 10 when loaded from PTX, else 0 */
  cu_kernel_info *kernels;
  unsigned kernel_count;
  cu_global_info *globals;
  unsigned global_count;
} cu_image;

/* Parses an image as cuModuleLoadData receives it. Returns a CUresult: INVALID_IMAGE for
 * anything unrecognised or malformed, NO_BINARY_FOR_GPU for an incompatible architecture,
 * UNSUPPORTED_PTX_VERSION for PTX newer than max_ptx, INVALID_PTX for PTX whose target the device
 * cannot run (newer; sm_XXa on any other device than sm_XX; sm_XXf outside its family). *image_size is the extent of the image (what its hash covers). */
int cu_image_parse(const void *image, int device_sm, int max_ptx, cu_image *out, size_t *image_size);
void cu_image_release(cu_image *image);
/* The JIT's error log of the calling thread's last cu_image_parse ("" when it had nothing to
 * say): what cuModuleLoadDataEx returns through CU_JIT_ERROR_LOG_BUFFER. */
const char *cu_image_jit_log(void);

#endif
