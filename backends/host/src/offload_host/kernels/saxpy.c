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
  /* One countable loop over the group's global ids below n: vectorised by the compiler. */
  OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, p->n) { y[i] = a * x[i] + y[i]; }
}
