// localmem_reduction: every thread stores 2 into dynamic shared memory, then thread 0 sums
// them into out[block]. out[b] == 2 * block size; needs blockDim.x * 4 bytes.
#include "gpu_kernel.h"

extern "C" __global__ void localmem_reduction(uint32_t *out) {
  GPU_DYNAMIC_SHARED(uint32_t, shared);
  shared[threadIdx.x] = 2;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < blockDim.x; ++i) sum += shared[i];
    out[blockIdx.x] = sum;
  }
}
