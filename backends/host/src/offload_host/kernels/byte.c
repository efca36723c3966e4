/* byte: a kernel with a single one-byte parameter that does nothing. */
#include <offload_host.h>

struct byte_args {
  unsigned char c;
};
OFFLOAD_KERNEL_PARAMS(byte, struct byte_args, OFFLOAD_UINT(c));

OFFLOAD_KERNEL(byte) {
  (void)OFFLOAD_ARGS(struct byte_args);
  (void)offload_group_;
}
