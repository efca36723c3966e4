/* saxpy: y[i] = a * x[i] + y[i] for every 1-D global id i < n. */
#include <offload_host.h>

struct saxpy_args {
  float a;
  const float *x;
  float *y;
  uint64_t n;
};
OFFLOAD_KERNEL_PARAMS(saxpy, struct saxpy_args,
                      OFFLOAD_FLOAT(a),
                      OFFLOAD_CONST_POINTER_TO(x, float32),
                      OFFLOAD_POINTER_TO(y, float32),
                      OFFLOAD_UINT(n));

OFFLOAD_KERNEL(saxpy) {
  const struct saxpy_args *p = OFFLOAD_ARGS(struct saxpy_args);
  const float a = p->a;
  const float *restrict x = p->x;
  float *restrict y = p->y;
  const uint64_t n = p->n;
  const uint64_t base = (uint64_t)OFFLOAD_GROUP->group_id.x * OFFLOAD_GROUP->group_size.x;
  uint64_t end = base + OFFLOAD_GROUP->group_size.x;
  if (end > n) end = n;
  /* The work-items of a 1-D group are one contiguous range: a plain, vectorizable loop. */
  for (uint64_t i = base; i < end; ++i) y[i] = a * x[i] + y[i];
}
