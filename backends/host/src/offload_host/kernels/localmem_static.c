/* localmem_static: localmem_reduction with static local memory of 64 elements
 * (group size at most 64). out[g] == 2 * group size. */
#include <offload_host.h>

struct localmem_static_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(localmem_static, struct localmem_static_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(localmem_static) {
  const struct localmem_static_args *a = OFFLOAD_ARGS(struct localmem_static_args);
  uint32_t shared_mem[64];
  const uint32_t n = OFFLOAD_GROUP->group_size.x;
  OFFLOAD_FOR_EACH_ITEM(tid) { shared_mem[tid.x] = 2; }
  /* barrier */
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (tid.x == 0) {
      uint32_t sum = 0;
      for (uint32_t i = 0; i < n; ++i) sum += shared_mem[i];
      a->out[OFFLOAD_GROUP->group_id.x] = sum;
    }
  }
}
