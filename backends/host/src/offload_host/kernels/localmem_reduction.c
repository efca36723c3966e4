/* localmem_reduction: every work-item stores 2 into dynamic local memory, then work-item 0
 * sums them into out[group]. out[g] == 2 * group size; needs group_size.x * 4 bytes. */
#include <offload_host.h>

struct localmem_reduction_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(localmem_reduction, struct localmem_reduction_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(localmem_reduction) {
  const struct localmem_reduction_args *a = OFFLOAD_ARGS(struct localmem_reduction_args);
  uint32_t *shared = OFFLOAD_LOCAL_MEM(uint32_t);
  const uint32_t n = OFFLOAD_GROUP->group_size.x;
  OFFLOAD_FOR_EACH_ITEM(tid) { shared[tid.x] = 2; }
  /* barrier */
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (tid.x == 0) {
      uint32_t sum = 0;
      for (uint32_t i = 0; i < n; ++i) sum += shared[i];
      a->out[OFFLOAD_GROUP->group_id.x] = sum;
    }
  }
}
