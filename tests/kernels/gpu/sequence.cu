// sequence: one Fibonacci step per launch, inout[idx] from the two before it. Launched
// repeatedly with idx = 0, 1, 2, ... it checks that launches run in queue order.
#include "gpu_kernel.h"

extern "C" __global__ void sequence(uint32_t idx, uint32_t *inout) {
  if (blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) return;
  if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;
  if (idx == 0)
    inout[0] = 0;
  else if (idx == 1)
    inout[1] = 1;
  else
    inout[idx] = inout[idx - 1] + inout[idx - 2];
}
