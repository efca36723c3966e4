// localmem_static: localmem_reduction with 64 elements of static shared memory
// (block size at most 64). out[b] == 2 * block size.
#include "gpu_kernel.h"

extern "C" __global__ void localmem_static(uint32_t *out) {
  __shared__ uint32_t shared_mem[64];
  shared_mem[threadIdx.x] = 2;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < blockDim.x; ++i) sum += shared_mem[i];
    out[blockIdx.x] = sum;
  }
}
