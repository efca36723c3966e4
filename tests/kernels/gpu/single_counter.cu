// single_counter: *out = *init_val + init_loop * addend, computed by a deliberately slow loop
// (a volatile accumulator the compiler cannot fold) on one thread.
#include "gpu_kernel.h"

extern "C" __global__ void single_counter(int32_t init_loop, int32_t addend, uint32_t *init_val, uint32_t *out) {
  if (blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) return;
  if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;
  volatile uint32_t local = *init_val;
  for (int32_t i = 0; i < init_loop; ++i) local += (uint32_t)addend;
  *out = local;
}
