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

OFFLOAD_KERNEL(multiargs) {
  (void)OFFLOAD_ARGS(struct multiargs_args);
  (void)offload_group_;
}
