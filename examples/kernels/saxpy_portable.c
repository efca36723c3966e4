/* saxpy in the portable style of offload_kernel.h: the same source builds for the host, CUDA and HIP
 * with offload.build (examples/build_everywhere.py). y[i] = a * x[i] + y[i] for every global id i < n. */
#include <offload_kernel.h>

OFFLOAD_PORTABLE_KERNEL(saxpy, (float, a), (const float *, x), (float *, y), (uint64_t, n)) {
  const uint64_t i = offload_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
