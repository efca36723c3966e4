// global_dtor: a destructor runs at unload. It sets global to 1 and, when the host stored a
// pointer to 64 uint32_t in dtor_out, writes 1 there too, so the unload is observable. On
// NVPTX, destructors are lowered into the kernel nvptx$device$fini, which the runtime launches
// (one thread) before it unloads the image.
#include "gpu_kernel.h"

__device__ uint32_t global[64];
__device__ uint32_t *dtor_out = nullptr;

extern "C" __global__ void nvptx$device$fini() {
  for (int i = 0; i < 64; ++i) global[i] = 1;
  if (dtor_out != nullptr)
    for (int i = 0; i < 64; ++i) dtor_out[i] = 1;
}

extern "C" __global__ void global_dtor() {}
