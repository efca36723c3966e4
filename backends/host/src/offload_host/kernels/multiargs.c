/* multiargs: parameters of mixed size and alignment; does nothing. */
#include <offload_host.h>

struct multiargs_args {
  char A;
  int *B;
  short C;
};
OFFLOAD_KERNEL_PARAMS(multiargs, struct multiargs_args,
                      OFFLOAD_INT(A),
                      OFFLOAD_POINTER(B),
                      OFFLOAD_INT(C));

/* Writes A + C to B[0] (work-item 0; nothing when B is NULL, as in launches that only check
 * argument sizes), so the kit can see every argument arrive. */
OFFLOAD_KERNEL(multiargs) {
  const struct multiargs_args *a = OFFLOAD_ARGS(struct multiargs_args);
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (offload_group_->group_id.x == 0 && tid.x == 0 && a->B != NULL) a->B[0] = (int)a->A + (int)a->C;
  }
}
