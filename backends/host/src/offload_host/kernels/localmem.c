/* localmem: stages work-item ids through dynamic local memory.
 * Data[i] == (i % group size) * 2; needs group_size.x * 4 bytes of DynSharedMemory. */
#include <offload_host.h>

struct localmem_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(localmem, struct localmem_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(localmem) {
  const struct localmem_args *a = OFFLOAD_ARGS(struct localmem_args);
  uint32_t *shared = OFFLOAD_LOCAL_MEM(uint32_t);
  OFFLOAD_FOR_EACH_ITEM(tid) { shared[tid.x] = tid.x * 2; }
  /* barrier */
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = shared[tid.x]; }
}
