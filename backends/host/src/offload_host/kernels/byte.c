/* byte: a kernel with a single one-byte parameter that does nothing. */
#include <offload_host.h>

struct byte_args {
  unsigned char c;
};
OFFLOAD_KERNEL_PARAMS(byte, struct byte_args, OFFLOAD_UINT(c));

/* Stores its one-byte argument in byte_seen, so the kit can see it arrive. */
OFFLOAD_EXPORT uint32_t byte_seen = 0;

OFFLOAD_KERNEL(byte) {
  const struct byte_args *a = OFFLOAD_ARGS(struct byte_args);
  (void)offload_group_;
  __atomic_store_n(&byte_seen, (uint32_t)a->c, __ATOMIC_RELAXED);
}
