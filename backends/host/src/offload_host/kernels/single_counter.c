/* single_counter: *out = *init_val + init_loop * addend, computed by a deliberately slow
 * loop (a volatile accumulator the compiler cannot fold) on one work-item. */
#include <offload_host.h>

struct single_counter_args {
  int32_t init_loop;
  int32_t addend;
  uint32_t *init_val;
  uint32_t *out;
};
OFFLOAD_KERNEL_PARAMS(single_counter, struct single_counter_args,
                      OFFLOAD_INT(init_loop),
                      OFFLOAD_INT(addend),
                      OFFLOAD_POINTER(init_val),
                      OFFLOAD_POINTER(out));

OFFLOAD_KERNEL(single_counter) {
  const struct single_counter_args *a = OFFLOAD_ARGS(struct single_counter_args);
  const offload_group_t *g = OFFLOAD_GROUP;
  if (g->group_id.x != 0 || g->group_id.y != 0 || g->group_id.z != 0) return;
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (offload_local_linear_id(tid) != 0) continue;
    volatile uint32_t local = *a->init_val;
    for (int32_t i = 0; i < a->init_loop; ++i) local += (uint32_t)a->addend;
    *a->out = local;
  }
}
