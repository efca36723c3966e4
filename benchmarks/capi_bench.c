/* bench_capi.py's C side, run against a libLLVMOffload.so (offload-capi's, or liboffload's):
 *   capi_bench init              the first olInit, in ms: wall-clock, then this process's CPU time
 *   capi_bench info N            olGetDeviceInfo(TYPE) of the first device, ns per call
 *   capi_bench launch IMAGE N    N enqueued olLaunchKernel of IMAGE's "noargs" kernel on the host
 *                                device then one olSyncQueue, ns per launch
 * Prints its number(s); exits 1 (with the error) when a call fails. */
#include <offload/OffloadAPI.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

#define CHECK(call) do { ol_result_t r_ = (call); if (r_) { fprintf(stderr, "%s: %s\n", #call, r_->Details); return 1; } } while (0)

static ol_device_handle_t first, host;

static bool pick(ol_device_handle_t device, void *user) {
    ol_platform_handle_t platform;
    ol_platform_backend_t backend = OL_PLATFORM_BACKEND_UNKNOWN;
    if (!first) first = device;
    if (!olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform) &&
        !olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) &&
        backend == OL_PLATFORM_BACKEND_HOST && !host)
        host = device;
    return true;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    double start = now_ns(), cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    CHECK(olInit());
    if (!strcmp(argv[1], "init")) { /* CPU time: what a loaded machine's time-sharing adds is not in it */
        printf("%.3f %.3f\n", (now_ns() - start) / 1e6, (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu) / 1e6);
        return olShutDown() != NULL;
    }
    CHECK(olIterateDevices(pick, NULL));
    if (!strcmp(argv[1], "info") && argc > 2) {
        long n = atol(argv[2]);
        ol_device_type_t type;
        CHECK(olGetDeviceInfo(first, OL_DEVICE_INFO_TYPE, sizeof type, &type));
        start = now_ns();
        for (long i = 0; i < n; i++) olGetDeviceInfo(first, OL_DEVICE_INFO_TYPE, sizeof type, &type);
        printf("%.3f\n", (now_ns() - start) / n);
    } else if (!strcmp(argv[1], "launch") && argc > 3) {
        FILE *f = fopen(argv[2], "rb");
        if (!f || !host) return 1;
        static char image[1 << 22];
        size_t size = fread(image, 1, sizeof image, f);
        fclose(f);
        long n = atol(argv[3]);
        ol_program_handle_t program;
        ol_symbol_handle_t kernel;
        ol_queue_handle_t queue;
        ol_kernel_launch_size_args_t grid = {1, {1, 1, 1}, {1, 1, 1}, 0};
        CHECK(olCreateProgram(host, image, size, &program));
        CHECK(olGetSymbol(program, "noargs", OL_SYMBOL_KIND_KERNEL, &kernel));
        CHECK(olCreateQueue(host, &queue));
        CHECK(olLaunchKernel(queue, host, kernel, NULL, 0, &grid));
        CHECK(olSyncQueue(queue));
        start = now_ns();
        for (long i = 0; i < n; i++) CHECK(olLaunchKernel(queue, host, kernel, NULL, 0, &grid));
        CHECK(olSyncQueue(queue));
        printf("%.3f\n", (now_ns() - start) / n);
        CHECK(olDestroyQueue(queue));
        CHECK(olDestroyProgram(program));
    } else {
        return 2;
    }
    CHECK(olShutDown());
    return 0;
}
