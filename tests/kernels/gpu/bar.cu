// bar: a second program whose kernel is also named foo; it writes thread id + 1.
#include "gpu_kernel.h"

extern "C" __global__ void foo(uint32_t *out) { out[GPU_GLOBAL_ID_X] = threadIdx.x + 1; }
