// noargs: a kernel without parameters that does nothing.
#include "gpu_kernel.h"

extern "C" __global__ void noargs() {}
