// fault: out[i] = i for every 1-D global id i < n, except that thread 0 of block trap_block
// traps first (a device fault: the launch fails and the context is left with a sticky error).
// A trap_block no block has makes it a plain, successful kernel.
#include "gpu_kernel.h"

extern "C" __global__ void fault(unsigned *out, unsigned n, unsigned trap_block) {
  if (blockIdx.x == trap_block && threadIdx.x == 0) GPU_TRAP();
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
}
