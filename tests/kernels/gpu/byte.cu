// byte: a kernel with a single one-byte parameter that does nothing.
#include "gpu_kernel.h"

/* Stores its one-byte argument in byte_seen, so the conformance kit sees it arrive. */
__device__ uint32_t byte_seen;

extern "C" __global__ void byte(unsigned char c) {
  if (GPU_GLOBAL_ID_X == 0) byte_seen = c;
}
