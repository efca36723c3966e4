// multiargs: parameters of mixed size and alignment (char, int *, short); does nothing.
#include "gpu_kernel.h"

extern "C" __global__ void multiargs(char a, int *b, short c) {
  (void)a;
  (void)b;
  (void)c;
}
