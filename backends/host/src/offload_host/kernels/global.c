/* global: an exported device global written by one kernel and read by another. */
#include <offload_host.h>

OFFLOAD_EXPORT uint32_t global[64];

OFFLOAD_KERNEL_NO_PARAMS(write);
OFFLOAD_KERNEL(write) {
  (void)offload_args_;
  OFFLOAD_FOR_EACH_ITEM(tid) { global[tid.x] = tid.x * 2; }
}

struct read_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(read, struct read_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(read) {
  const struct read_args *a = OFFLOAD_ARGS(struct read_args);
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = global[tid.x]; }
}
