// global: a device global written by one kernel and read by another.
#include "gpu_kernel.h"

__device__ uint32_t global[64];

extern "C" __global__ void write() { global[threadIdx.x] = threadIdx.x * 2; }

extern "C" __global__ void read(uint32_t *out) { out[GPU_GLOBAL_ID_X] = global[threadIdx.x]; }
