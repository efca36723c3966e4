// foo: out[global id] = thread id within the block (liboffload test: Data[i] == i, 1 block of 64).
#include "gpu_kernel.h"

extern "C" __global__ void foo(uint32_t *out) { out[GPU_GLOBAL_ID_X] = threadIdx.x; }
