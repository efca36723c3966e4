/* global_dtor: a destructor runs at unload. It sets global to 1 and, when the host stored
 * a pointer to 64 uint32_t in dtor_out, writes 1 there too so the unload is observable. */
#include <offload_host.h>

OFFLOAD_EXPORT uint32_t global[64];
OFFLOAD_EXPORT uint32_t *dtor_out = NULL;

__attribute__((destructor)) static void dtor(void) {
  for (int i = 0; i < 64; ++i) global[i] = 1;
  if (dtor_out != NULL)
    for (int i = 0; i < 64; ++i) dtor_out[i] = 1;
}

OFFLOAD_KERNEL_NO_PARAMS(global_dtor);
OFFLOAD_KERNEL(global_dtor) {
  (void)offload_args_;
  (void)offload_group_;
}
