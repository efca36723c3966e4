// global_ctor: constructors run in priority order at load: (40 * 2) + 20 == 100, so
// out[i] == i + 100. On NVPTX, global constructors are lowered into the kernel
// nvptx$device$init, which the runtime launches (one thread) when it loads the image.
#include "gpu_kernel.h"

__device__ uint32_t global[64];

extern "C" __global__ void nvptx$device$init() {
  for (int i = 0; i < 64; ++i) global[i] = 40;  // priority 200
  for (int i = 0; i < 64; ++i) global[i] *= 2;  // priority 201
  for (int i = 0; i < 64; ++i) global[i] += 20; // priority 202
}

extern "C" __global__ void global_ctor(uint32_t *out) { out[GPU_GLOBAL_ID_X] = global[threadIdx.x] + threadIdx.x; }
