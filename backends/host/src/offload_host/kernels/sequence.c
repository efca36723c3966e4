/* sequence: one Fibonacci step per launch, inout[idx] from the two before it. Launched
 * repeatedly with idx = 0, 1, 2, ... it checks that launches run in queue order. */
#include <offload_host.h>

struct sequence_args {
  uint32_t idx;
  uint32_t *inout;
};
OFFLOAD_KERNEL_PARAMS(sequence, struct sequence_args,
                      OFFLOAD_UINT(idx),
                      OFFLOAD_POINTER(inout));

OFFLOAD_KERNEL(sequence) {
  const struct sequence_args *a = OFFLOAD_ARGS(struct sequence_args);
  const offload_group_t *g = OFFLOAD_GROUP;
  if (g->group_id.x != 0 || g->group_id.y != 0 || g->group_id.z != 0) return;
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (offload_local_linear_id(tid) != 0) continue;
    if (a->idx == 0)
      a->inout[0] = 0;
    else if (a->idx == 1)
      a->inout[1] = 1;
    else
      a->inout[a->idx] = a->inout[a->idx - 1] + a->inout[a->idx - 2];
  }
}
