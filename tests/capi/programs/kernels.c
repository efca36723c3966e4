/* Programs, symbols and kernels through the C ABI on the host device: argv[1] is the host build of
 * offload-host's saxpy test program, argv[2] that of its global program (tests/capi writes both).
 * saxpy over 1000 floats in groups of 64 (a packed argument struct, enqueued, then synced), the
 * symbols' info, the optimal occupancy (UNSUPPORTED on the host), a global variable read back by a kernel, and the errors of
 * a wrong symbol kind, a missing symbol and a launch after its program was destroyed.
 * Prints "OK kernels" and exits 0, or "FAIL <what>" and exits 1. */
#include <offload/OffloadAPI.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call) do { ol_result_t r_ = (call); if (r_) { printf("FAIL %s: %s\n", #call, r_->Details); return 1; } } while (0)
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %s\n", #cond); return 1; } } while (0)
#define FAILS(call, code) do { ol_result_t r_ = (call); if (!r_ || r_->Code != (code)) { printf("FAIL %s: %s\n", #call, r_ ? r_->Details : "succeeded"); return 1; } } while (0)

#include "host_device.h"
#include "image.h"

struct saxpy_args { float a; const float *x; float *y; uint64_t n; };

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    size_t saxpy_size, global_size;
    char *saxpy_image = slurp(argv[1], &saxpy_size), *global_image = slurp(argv[2], &global_size);
    EXPECT(saxpy_image && global_image);
    CHECK(olInit());
    CHECK(olIterateDevices(find_host, NULL));
    EXPECT(host);
    bool valid = false;
    CHECK(olIsValidBinary(host, saxpy_image, saxpy_size, &valid));
    EXPECT(valid);

    ol_program_handle_t program, global_program;
    ol_symbol_handle_t saxpy, again, write, read, variable;
    CHECK(olCreateProgram(host, saxpy_image, saxpy_size, &program));
    free(saxpy_image); /* the library keeps its own copy */
    CHECK(olGetSymbol(program, "saxpy", OL_SYMBOL_KIND_KERNEL, &saxpy));
    CHECK(olGetSymbol(program, "saxpy", OL_SYMBOL_KIND_KERNEL, &again));
    EXPECT(saxpy == again); /* the same handle each time */
    ol_symbol_kind_t kind = OL_SYMBOL_KIND_GLOBAL_VARIABLE;
    CHECK(olGetSymbolInfo(saxpy, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    EXPECT(kind == OL_SYMBOL_KIND_KERNEL);
    FAILS(olGetSymbol(program, "no_such_kernel", OL_SYMBOL_KIND_KERNEL, &again), OL_ERRC_NOT_FOUND);
    size_t group = 0; /* the host backend has no occupancy to report: liboffload's "cannot provide" */
    FAILS(olCalculateOptimalOccupancy(host, saxpy, 0, &group), OL_ERRC_UNSUPPORTED);

    enum { N = 1000 };
    float *x, *y;
    CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, N * sizeof(float), (void **)&x));
    CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, N * sizeof(float), (void **)&y));
    for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
    struct saxpy_args args = {2.0f, x, y, N};
    ol_kernel_launch_size_args_t grid = {1, {(N + 63) / 64, 1, 1}, {64, 1, 1}, 0};
    ol_queue_handle_t queue;
    CHECK(olCreateQueue(host, &queue));
    CHECK(olLaunchKernel(queue, host, saxpy, &args, sizeof args, &grid));
    args.a = -1.0f; /* the launch copied its arguments */
    CHECK(olSyncQueue(queue));
    for (int i = 0; i < N; i++)
        if (y[i] != 2.0f * (float)i + 1.0f) { printf("FAIL y[%d] = %g\n", i, y[i]); return 1; }
    ol_kernel_launch_size_args_t unread = {0, {(N + 63) / 64, 1, 1}, {64, 1, 1}, 0}; /* Dimensions unset */
    args.a = 1.0f;
    CHECK(olLaunchKernel(NULL, host, saxpy, &args, sizeof args, &unread)); /* y = x + (2x + 1) */
    for (int i = 0; i < N; i++)
        if (y[i] != 3.0f * (float)i + 1.0f) { printf("FAIL y[%d] = %g after the second saxpy\n", i, y[i]); return 1; }
    ol_kernel_launch_size_args_t empty = {1, {0, 1, 1}, {64, 1, 1}, 0};
    FAILS(olLaunchKernel(queue, host, saxpy, &args, sizeof args, &empty), OL_ERRC_INVALID_SIZE);

    CHECK(olCreateProgram(host, global_image, global_size, &global_program));
    CHECK(olGetSymbol(global_program, "write", OL_SYMBOL_KIND_KERNEL, &write));
    CHECK(olGetSymbol(global_program, "read", OL_SYMBOL_KIND_KERNEL, &read));
    CHECK(olGetSymbol(global_program, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &variable));
    FAILS(olGetSymbol(global_program, "global", OL_SYMBOL_KIND_KERNEL, &again), OL_ERRC_NOT_FOUND); /* no kernel of that name */
    size_t bytes = 0;
    void *address = NULL;
    CHECK(olGetSymbolInfo(variable, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof bytes, &bytes));
    CHECK(olGetSymbolInfo(variable, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof address, &address));
    EXPECT(bytes == 64 * sizeof(uint32_t) && address);
    FAILS(olCalculateOptimalOccupancy(host, variable, 0, &group), OL_ERRC_SYMBOL_KIND);
    ol_kernel_launch_size_args_t one_group = {1, {1, 1, 1}, {64, 1, 1}, 0};
    uint32_t *out;
    CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, 64 * sizeof(uint32_t), (void **)&out));
    CHECK(olLaunchKernel(queue, host, write, NULL, 0, &one_group));
    CHECK(olLaunchKernel(queue, host, read, &out, sizeof out, &one_group));
    CHECK(olSyncQueue(queue));
    uint32_t copied[64];
    CHECK(olMemcpy(NULL, copied, host, address, host, sizeof copied));
    for (int i = 0; i < 64; i++)
        if (out[i] != 2u * i || copied[i] != 2u * i) { printf("FAIL global[%d]: %u %u\n", i, out[i], copied[i]); return 1; }

    CHECK(olDestroyProgram(program));
    FAILS(olLaunchKernel(queue, host, saxpy, &args, sizeof args, &grid), OL_ERRC_INVALID_ARGUMENT);
    CHECK(olDestroyQueue(queue));
    CHECK(olDestroyProgram(global_program));
    CHECK(olMemFree(x));
    CHECK(olMemFree(y));
    CHECK(olMemFree(out));
    CHECK(olShutDown());
    free(global_image);
    printf("OK kernels\n");
    return 0;
}
