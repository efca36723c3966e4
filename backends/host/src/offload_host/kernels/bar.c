/* bar: a second program exporting a kernel named foo that writes work-item id + 1. */
#include <offload_host.h>

struct foo_args {
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(foo, struct foo_args, OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(foo) {
  const struct foo_args *a = OFFLOAD_ARGS(struct foo_args);
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = tid.x + 1; }
}
