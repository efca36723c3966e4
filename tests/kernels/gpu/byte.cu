// byte: a kernel with a single one-byte parameter that does nothing.
#include "gpu_kernel.h"

extern "C" __global__ void byte(unsigned char c) { (void)c; }
