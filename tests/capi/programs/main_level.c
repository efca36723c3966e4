/* liboffload main's ABI (offload_capi --abi main) through main's header and library:
 * olInit(const ol_init_args_t *), contexts (creation, info, ownership, destruction, a stale one),
 * the Context first in allocations, queues, programs and memory info, olMemAllocHost and
 * olMemAllocAligned(Host), olMemIsAccessible, olMemPrefetch, profiled events, platform, symbol
 * and compatible-device iteration, and olLaunchKernel with per-argument pointers and sizes and a
 * cooperative launch property; main's numbering and the validation conditions of the table.
 * argv[1]: the host build of offload-host's saxpy test program; argv[2] (optional): a backend to
 * ask for in ol_init_args_t (PlatformBackend number) whose first device runs the memory cases
 * too. Prints "OK main" and exits 0, or "FAIL <what>" and exits 1. */
#include <offload/OffloadAPI.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call) do { ol_result_t r_ = (call); if (r_) { printf("FAIL %s: %s\n", #call, r_->Details); return 1; } } while (0)
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %s\n", #cond); return 1; } } while (0)
#define FAILS(call, code) do { ol_result_t r_ = (call); if (!r_ || r_->Code != (code)) { printf("FAIL %s: %s\n", #call, r_ ? r_->Details : "succeeded"); return 1; } } while (0)
#define REFUSED(call, code, text) do { ol_result_t r_ = (call); if (!r_ || r_->Code != (code) || strcmp(r_->Details, text)) { printf("FAIL %s: %s\n", #call, r_ ? r_->Details : "succeeded"); return 1; } } while (0)

#include "host_device.h"
#include "image.h"

static ol_device_handle_t other;   /* the first device of argv[2]'s backend */
static ol_platform_backend_t wanted;
static int platforms, symbols, compatible;

static bool find_other(ol_device_handle_t device, void *user) {
    ol_platform_handle_t platform;
    ol_platform_backend_t backend;
    (void)user;
    if (!olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform) &&
        !olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) && backend == wanted && !other)
        other = device;
    return true;
}

static bool count_platform(ol_platform_handle_t platform, void *user) { (void)platform; (void)user; platforms++; return true; }
static bool count_symbol(ol_symbol_handle_t symbol, void *user) { (void)user; symbols += symbol != NULL; return true; }
static bool count_device(ol_device_handle_t device, void *user) { compatible += device == *(ol_device_handle_t *)user; return true; }

/* Memory in a context of `device`: allocations owned by it, its queue, the context's refusals. */
static int memory(ol_device_handle_t device) {
    ol_context_handle_t context, stale;
    CHECK(olCreateContext(1, &device, &context));
    size_t count = 0;
    ol_device_handle_t listed = NULL;
    ol_platform_handle_t platform, owner;
    CHECK(olGetContextInfo(context, OL_CONTEXT_INFO_NUM_DEVICES, sizeof count, &count));
    CHECK(olGetContextInfo(context, OL_CONTEXT_INFO_DEVICES, sizeof listed, &listed));
    CHECK(olGetContextInfo(context, OL_CONTEXT_INFO_PLATFORM, sizeof owner, &owner));
    CHECK(olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform));
    EXPECT(count == 1 && listed == device && owner == platform);
    CHECK(olGetContextInfoSize(context, OL_CONTEXT_INFO_DEVICES, &count));
    EXPECT(count == sizeof(ol_device_handle_t));

    void *mem, *host_mem, *aligned;
    CHECK(olMemAlloc(context, device, OL_ALLOC_TYPE_DEVICE, 64, &mem));
    CHECK(olMemAllocHost(context, device, 32, &host_mem));
    CHECK(olMemAllocAligned(NULL, device, OL_ALLOC_TYPE_DEVICE, 64, 64, &aligned));
    EXPECT(((uintptr_t)aligned & 63) == 0);
    FAILS(olMemAlloc(NULL, device, OL_ALLOC_TYPE_HOST, 16, &mem), OL_ERRC_INVALID_ENUMERATION); /* main: olMemAllocHost */
    size_t size = 0;
    CHECK(olGetMemInfo(context, mem, OL_MEM_INFO_SIZE, sizeof size, &size));
    EXPECT(size == 64);
    ol_alloc_type_t type = OL_ALLOC_TYPE_DEVICE;
    CHECK(olGetMemInfo(NULL, host_mem, OL_MEM_INFO_TYPE, sizeof type, &type));
    EXPECT(type == OL_ALLOC_TYPE_HOST);
    bool accessible = false;
    CHECK(olMemIsAccessible(device, host_mem, 32, &accessible));
    EXPECT(accessible);

    ol_queue_handle_t queue;
    ol_context_handle_t of_queue = NULL;
    CHECK(olCreateQueue(context, device, &queue));
    CHECK(olGetQueueInfo(queue, OL_QUEUE_INFO_CONTEXT, sizeof of_queue, &of_queue));
    EXPECT(of_queue == context);
    uint32_t pattern = 0x01020304, back[16] = {0};
    CHECK(olMemFill(queue, mem, sizeof pattern, &pattern, 64));
    void *mems[] = {mem};
    size_t sizes[] = {64};
    CHECK(olMemPrefetch(queue, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
    REFUSED(olMemPrefetch(queue, 1, mems, sizes, (ol_mem_migration_flags_t)4), OL_ERRC_INVALID_ENUMERATION,
            "validation failure: (Flags & ~(OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE | OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST)) != 0");
    REFUSED(olMemPrefetch(queue, 1, NULL, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_NULL_POINTER,
            "validation failure: Count > 0 && Mems == NULL");
    ol_event_handle_t start, end;
    CHECK(olCreateEvent(queue, OL_EVENT_FLAGS_ENABLE_PROFILING, &start));
    CHECK(olMemcpy(queue, back, host, mem, device, sizeof back));
    CHECK(olCreateEvent(queue, OL_EVENT_FLAGS_ENABLE_PROFILING, &end));
    CHECK(olSyncQueue(queue));
    EXPECT(back[0] == pattern && back[15] == pattern);
    float ms = -1;
    CHECK(olGetEventElapsedTime(start, end, &ms));
    EXPECT(ms >= 0);
    CHECK(olDestroyEvent(start));
    CHECK(olDestroyEvent(end));

    /* a context owning something is not destroyed, and a free names its context */
    FAILS(olDestroyContext(context), OL_ERRC_INVALID_CONTEXT);
    CHECK(olCreateContext(1, &device, &stale));
    FAILS(olMemFree(stale, mem), OL_ERRC_INVALID_CONTEXT);
    CHECK(olDestroyContext(stale));
    FAILS(olCreateQueue(stale, device, &queue), OL_ERRC_INVALID_CONTEXT); /* no live handle any more */
    CHECK(olMemFree(context, mem));
    CHECK(olMemFree(NULL, host_mem)); /* its owner is found */
    CHECK(olMemFree(NULL, aligned));
    CHECK(olDestroyQueue(queue));
    CHECK(olDestroyContext(context));
    return 0;
}


/* saxpy with one pointer and size per argument, once plainly and once cooperatively. */
static int kernels(const char *path) {
    size_t image_size;
    char *image = path ? slurp(path, &image_size) : NULL;
    EXPECT(image);
    ol_program_handle_t program;
    ol_symbol_handle_t saxpy;
    CHECK(olCreateProgram(NULL, host, image, image_size, &program));
    CHECK(olIterateCompatibleDevices(image, image_size, count_device, &host));
    EXPECT(compatible == 1);
    free(image);
    CHECK(olGetSymbol(program, "saxpy", OL_SYMBOL_KIND_KERNEL, &saxpy));
    CHECK(olIterateSymbols(program, OL_SYMBOL_KIND_KERNEL, count_symbol, NULL));
    EXPECT(symbols >= 1);

    enum { N = 1000 };
    float *x, *y;
    CHECK(olMemAllocHost(NULL, host, N * sizeof *x, (void **)&x));
    CHECK(olMemAllocHost(NULL, host, N * sizeof *y, (void **)&y));
    for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
    float a = 2.0f;
    uint64_t n = N;
    const void *pointers[] = {&a, &x, &y, &n};
    const size_t sizes[] = {sizeof a, sizeof x, sizeof y, sizeof n};
    ol_kernel_launch_size_args_t launch = {1, {(N + 63) / 64, 1, 1}, {64, 1, 1}, 0};
    CHECK(olLaunchKernel(NULL, host, saxpy, &launch, NULL, 4, pointers, sizes));
    EXPECT(y[0] == 1.0f && y[999] == 1999.0f);
    bool cooperative = true;
    ol_kernel_launch_prop_t properties[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &cooperative},
                                            {OL_KERNEL_LAUNCH_PROP_TYPE_NONE, NULL}};
    size_t most = 0;
    CHECK(olGetKernelMaxCooperativeGroupCount(host, saxpy, &launch, &most));
    EXPECT(most >= launch.NumGroups.x);
    CHECK(olLaunchKernel(NULL, host, saxpy, &launch, properties, 4, pointers, sizes));
    EXPECT(y[0] == 1.0f && y[999] == 3997.0f);
    REFUSED(olLaunchKernel(NULL, host, saxpy, &launch, NULL, 4, NULL, sizes), OL_ERRC_INVALID_ARGUMENT,
            "validation failure: NumArgs > 0 && (ArgPtrs == NULL || ArgSizes == NULL)");
    FAILS(olLaunchKernel(NULL, host, saxpy, &launch, NULL, 3, pointers, sizes), OL_ERRC_INVALID_ARGUMENT); /* 4 parameters */
    CHECK(olMemFree(NULL, x));
    CHECK(olMemFree(NULL, y));
    CHECK(olDestroyProgram(program));
    return 0;
}

int main(int argc, char **argv) {
    EXPECT(OL_ERRC_INVALID_CONTEXT == 24 && OL_ERRC_SYMBOL_KIND == 25);
    EXPECT(OL_QUEUE_INFO_CONTEXT == 1 && OL_QUEUE_INFO_EMPTY == 2);
    FAILS(olCreateContext(0, NULL, NULL), OL_ERRC_UNINITIALIZED);
    wanted = argc > 2 ? (ol_platform_backend_t)atoi(argv[2]) : OL_PLATFORM_BACKEND_HOST;
    ol_platform_backend_t chosen[] = {wanted};
    ol_init_args_t args = {1, chosen};
    CHECK(olInit(&args));
    CHECK(olIteratePlatforms(count_platform, NULL));
    EXPECT(platforms == (wanted == OL_PLATFORM_BACKEND_HOST ? 1 : 2)); /* the backend asked for, and the host always */
    CHECK(olIterateDevices(find_host, NULL));
    CHECK(olIterateDevices(find_other, NULL));
    EXPECT(host && other);
    REFUSED(olCreateContext(1, NULL, NULL), OL_ERRC_INVALID_NULL_POINTER, "validation failure: NULL == Devices");
    REFUSED(olMemAllocAligned(NULL, host, OL_ALLOC_TYPE_DEVICE, 64, 3, NULL), OL_ERRC_INVALID_ARGUMENT,
            "validation failure: (Alignment & (Alignment - 1)) != 0");
    ol_code_location_t where = {"main", __FILE__, __LINE__, 0};
    void *located;
    CHECK(olMemAllocHostWithCodeLoc(NULL, host, 8, &located, &where));
    CHECK(olMemFreeWithCodeLoc(NULL, located, &where));
    if (memory(other)) return 1;
    if (other != host && memory(host)) return 1;
    if (kernels(argc > 1 ? argv[1] : NULL)) return 1;
    CHECK(olShutDown());
    printf("OK main\n");
    return 0;
}
