/* noargs: a kernel without parameters that does nothing. */
#include <offload_host.h>

OFFLOAD_KERNEL_NO_PARAMS(noargs);
OFFLOAD_KERNEL(noargs) {
  (void)offload_args_;
  (void)offload_group_;
}
