/* main's ABI level given NULLs, missing arrays, a pointer that is no context and an unknown
 * backend in ol_init_args_t: each call prints "CASE <name> <code>" (0: success), never crashes,
 * whether OFFLOAD_DISABLE_VALIDATION is set (offload's own checks answer) or not (the table's). */
#include <offload/OffloadAPI.h>

#include <stdio.h>

#define CASE(name, call) do { ol_result_t r_ = (call); printf("CASE %s %d\n", name, r_ ? (int)r_->Code : 0); } while (0)

int main(void) {
    ol_context_handle_t context = NULL;
    size_t value = 0;
    ol_context_handle_t bogus = (ol_context_handle_t)&value;
    CASE("init", olInit(NULL));
    CASE("create_context_null_devices", olCreateContext(1, NULL, &context));
    CASE("context_info_null", olGetContextInfo(NULL, OL_CONTEXT_INFO_DEVICES, sizeof value, &value));
    CASE("destroy_context_null", olDestroyContext(NULL));
    CASE("launch_null_arguments", olLaunchKernel(NULL, NULL, NULL, NULL, NULL, 2, NULL, NULL));
    CASE("prefetch_null_arrays", olMemPrefetch(NULL, 1, NULL, NULL, 0));
    CASE("alloc_host_null_device", olMemAllocHost(NULL, NULL, 8, NULL));
    CASE("iterate_platforms_null", olIteratePlatforms(NULL, NULL));
    CASE("iterate_symbols_null", olIterateSymbols(NULL, OL_SYMBOL_KIND_KERNEL, NULL, NULL));
    CASE("mem_info_bogus_context", olGetMemInfo(bogus, &value, OL_MEM_INFO_SIZE, sizeof value, &value));
    CASE("queue_bogus_context", olCreateQueue(bogus, NULL, NULL));
    CASE("shutdown", olShutDown());
    ol_platform_backend_t unknown[] = {(ol_platform_backend_t)77};
    ol_init_args_t args = {1, unknown};
    CASE("init_unknown_backend", olInit(&args));
    return 0;
}
