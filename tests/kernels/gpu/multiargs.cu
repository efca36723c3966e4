// multiargs: parameters of mixed size and alignment (char, int *, short); does nothing.
#include "gpu_kernel.h"

/* Writes a + c to b[0] (when b is not NULL: size checks launch it with zeroed arguments), so
 * the conformance kit sees every argument arrive. */
extern "C" __global__ void multiargs(char a, int *b, short c) {
  if (GPU_GLOBAL_ID_X == 0 && b != 0) b[0] = (int)a + (int)c;
}
