/* global_ctor: constructors run in priority order at load: (40 * 2) + 20 == 100, so
 * Data[i] == i + 100. */
#include <offload_host.h>

OFFLOAD_EXPORT uint32_t global[64];

__attribute__((constructor(200))) static void ctor_set(void) {
  for (int i = 0; i < 64; ++i) global[i] = 40;
}

__attribute__((constructor(201))) static void ctor_double(void) {
  for (int i = 0; i < 64; ++i) global[i] *= 2;
}

__attribute__((constructor(202))) static void ctor_add(void) {
  for (int i = 0; i < 64; ++i) global[i] += 20;
}

struct global_ctor_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(global_ctor, struct global_ctor_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(global_ctor) {
  const struct global_ctor_args *a = OFFLOAD_ARGS(struct global_ctor_args);
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = global[tid.x] + tid.x; }
}
