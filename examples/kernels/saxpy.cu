// saxpy for the cuda platform: y[i] = a * x[i] + y[i] (the parameters of the host kernel saxpy.c).
#include <cstdint>

extern "C" __global__ void saxpy(float a, const float *x, float *y, uint64_t n) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
