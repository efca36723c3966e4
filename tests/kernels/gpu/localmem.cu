// localmem: stages thread ids through dynamic shared memory (blockDim.x * 4 bytes).
// out[i] == (i % block size) * 2.
#include "gpu_kernel.h"

extern "C" __global__ void localmem(uint32_t *out) {
  GPU_DYNAMIC_SHARED(uint32_t, shared);
  shared[threadIdx.x] = threadIdx.x * 2;
  __syncthreads();
  // read a neighbour's slot: only correct when the barrier really held every thread
  const uint32_t other = (threadIdx.x + 1) % blockDim.x;
  out[GPU_GLOBAL_ID_X] = shared[other] - 2 * other + 2 * threadIdx.x;
}
