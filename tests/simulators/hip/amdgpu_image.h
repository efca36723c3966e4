/* amdgpu_image.h - the HIP front's reader of AMDGPU images (a test fixture, never shipped).
 *
 * Finds the code object of an image that runs on a given gfx target (a code object itself, or
 * an entry of a clang offload bundle), measures an image that comes without its size (as
 * hipModuleLoadData's does), and reads the kernels of the NT_AMDGPU_METADATA note (msgpack):
 * each kernel's name, explicit argument offsets and sizes (hidden_* arguments are the
 * runtime's), kernarg and static LDS sizes, and the largest work-group size.
 */
#ifndef GPUSIM_AMDGPU_IMAGE_H
#define GPUSIM_AMDGPU_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define AMDGPU_MAX_ARGS 64
#define AMDGPU_NAME_MAX 256

typedef struct amdgpu_kernel {
  char name[AMDGPU_NAME_MAX];
  unsigned arg_count;                   /* explicit arguments */
  size_t arg_offset[AMDGPU_MAX_ARGS];
  size_t arg_size[AMDGPU_MAX_ARGS];
  size_t explicit_size;                 /* end of the last explicit argument */
  size_t kernarg_size;                  /* .kernarg_segment_size (hidden arguments included) */
  size_t group_segment_size;            /* static LDS bytes */
  unsigned max_flat_workgroup_size;
} amdgpu_kernel;

typedef struct amdgpu_target {
  unsigned mach;        /* EF_AMDGPU_MACH value, e.g. 0x3f for gfx90a */
  int xnack, sramecc;   /* device: 1 on, 0 off; code object: 1 on, 0 off, -1 any/unspecified */
} amdgpu_target;

typedef enum amdgpu_image_status {
  AMDGPU_IMAGE_OK = 0,
  AMDGPU_IMAGE_MALFORMED,    /* not an AMDGPU code object or bundle, or broken inside */
  AMDGPU_IMAGE_WRONG_TARGET, /* well-formed, but for another processor or feature setting */
} amdgpu_image_status;

/* The size of an image starting at data (ELF or bundle) from its own headers, reading at most
 * `limit` bytes; 0 when it is neither or its headers are implausible. */
size_t amdgpu_image_size(const void *data, size_t limit);

/* The code object in [data, data + size) that runs on device; sets *code and *code_size. */
amdgpu_image_status amdgpu_select_code_object(const void *data, size_t size, const amdgpu_target *device,
                                              const unsigned char **code, size_t *code_size);

/* Reads the metadata note of a code object: up to `max` kernels into out, their number into
 * *count. AMDGPU_IMAGE_MALFORMED when the note is missing or broken. */
amdgpu_image_status amdgpu_read_kernels(const unsigned char *code, size_t size, amdgpu_kernel *out, unsigned max,
                                        unsigned *count);

#endif /* GPUSIM_AMDGPU_IMAGE_H */
