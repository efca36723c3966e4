// saxpy: y[i] = a * x[i] + y[i] for every 1-D global id i < n.
#include "gpu_kernel.h"

extern "C" __global__ void saxpy(float a, const float *x, float *y, uint64_t n) {
  const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
