/* multiargs: parameters of mixed size and alignment; does nothing. */
#include <offload_host.h>

struct multiargs_args {
  char A;
  int *B;
  short C;
};

OFFLOAD_KERNEL(multiargs) {
  (void)OFFLOAD_ARGS(struct multiargs_args);
  (void)offload_group_;
}
