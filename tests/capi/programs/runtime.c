/* The embedded runtime under the ways C programs use liboffload. It loads the library itself with
 * dlopen(argv[2], RTLD_NOW | RTLD_LOCAL), as plugin loaders do (nothing here links libpython or
 * libLLVMOffload), and runs mode argv[1]:
 *   basic     olInit, the host device's name, olShutDown
 *   threads   8 threads x 200 rounds of alloc, copy, info, queue, host function, sync, free
 *   fork      olInit, fork: the child's calls fail with a clear error, the parent's still work
 *   blocking  a host function blocks until the main thread, meanwhile calling the API, releases it;
 *             another calls the API from inside the host function
 *   gc        the interpreter's cyclic GC, paused while the library starts it, is on after olInit
 *             (libpython is in global scope by then: its PyGC_IsEnabled, called with the GIL)
 * Prints "OK <mode>" and exits 0 on success; "FAIL <what>" and exits 1 otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <offload/OffloadAPI.h>

#define API(name) static __typeof__(name) *p_##name;
API(olInit) API(olShutDown) API(olIterateDevices) API(olGetDeviceInfo) API(olGetPlatformInfo) API(olMemAlloc)
API(olMemFree) API(olMemcpy) API(olCreateQueue) API(olDestroyQueue) API(olSyncQueue) API(olLaunchHostFunction)
API(olGetQueueInfo)

static void fail(const char *what, ol_result_t r) {
    printf("FAIL %s: %d %s\n", what, r ? (int)r->Code : 0, r && r->Details ? r->Details : "");
    exit(1);
}
#define CHECK(call) do { ol_result_t r_ = (call); if (r_) fail(#call, r_); } while (0)

static ol_device_handle_t host;

static bool find_host(ol_device_handle_t device, void *user) {
    ol_platform_handle_t platform;
    ol_platform_backend_t backend;
    CHECK(p_olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform));
    CHECK(p_olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
    if (backend == OL_PLATFORM_BACKEND_HOST) host = device;
    return true;
}

static void bump(void *counter) { atomic_fetch_add((atomic_int *)counter, 1); }

static void *worker(void *arg) {
    (void)arg;
    atomic_int ran = 0;
    ol_queue_handle_t queue;
    for (int i = 0; i < 200; i++) {
        void *mem;
        char in[64], out[64], name[128];
        snprintf(in, sizeof in, "round %d of thread %lu", i, (unsigned long)pthread_self());
        CHECK(p_olMemAlloc(host, OL_ALLOC_TYPE_HOST, sizeof in, &mem));
        CHECK(p_olMemcpy(NULL, mem, host, in, host, sizeof in));
        CHECK(p_olMemcpy(NULL, out, host, mem, host, sizeof out));
        if (memcmp(in, out, sizeof in) != 0) fail("copy round trip", NULL);
        CHECK(p_olGetDeviceInfo(host, OL_DEVICE_INFO_NAME, sizeof name, name));
        if (i % 20 == 0) {
            CHECK(p_olCreateQueue(host, &queue));
            CHECK(p_olLaunchHostFunction(queue, bump, &ran));
            CHECK(p_olSyncQueue(queue));
            CHECK(p_olDestroyQueue(queue));
        }
        CHECK(p_olMemFree(mem));
    }
    if (atomic_load(&ran) != 10) fail("host functions ran", NULL);
    return NULL;
}

static atomic_int released;

static void wait_for_release(void *arg) {
    (void)arg;
    while (!atomic_load(&released)) usleep(1000);
}

static void call_back_in(void *arg) {
    void *mem;
    CHECK(p_olMemAlloc(host, OL_ALLOC_TYPE_HOST, 16, &mem));
    CHECK(p_olMemFree(mem));
    atomic_store((atomic_int *)arg, 1);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL dlopen: %s\n", dlerror()); return 1; }
#define LOAD(name) if (!(p_##name = (__typeof__(p_##name))dlsym(lib, #name))) { printf("FAIL dlsym %s\n", #name); return 1; }
    LOAD(olInit) LOAD(olShutDown) LOAD(olIterateDevices) LOAD(olGetDeviceInfo) LOAD(olGetPlatformInfo)
    LOAD(olMemAlloc) LOAD(olMemFree) LOAD(olMemcpy) LOAD(olCreateQueue) LOAD(olDestroyQueue) LOAD(olSyncQueue)
    LOAD(olLaunchHostFunction) LOAD(olGetQueueInfo)
    CHECK(p_olInit());
    CHECK(p_olIterateDevices(find_host, NULL));
    if (!host) fail("no host device", NULL);
    const char *mode = argv[1];
    if (!strcmp(mode, "basic")) {
        char name[128];
        CHECK(p_olGetDeviceInfo(host, OL_DEVICE_INFO_NAME, sizeof name, name));
    } else if (!strcmp(mode, "threads")) {
        pthread_t threads[8];
        for (int i = 0; i < 8; i++) pthread_create(&threads[i], NULL, worker, NULL);
        for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            char name[128];
            ol_result_t r = p_olGetDeviceInfo(host, OL_DEVICE_INFO_NAME, sizeof name, name);
            ol_result_t s = p_olInit();
            bool clear = r && r->Code == OL_ERRC_BACKEND_FAILURE && strstr(r->Details, "fork") && s && s->Code == r->Code;
            printf("child: %s\n", r ? r->Details : "no error");
            _exit(clear ? 0 : 3);
        }
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the child's calls did not fail clearly", NULL);
        void *mem;
        CHECK(p_olMemAlloc(host, OL_ALLOC_TYPE_HOST, 16, &mem));
        CHECK(p_olMemFree(mem));
    } else if (!strcmp(mode, "blocking")) {
        ol_queue_handle_t queue;
        atomic_int called_back = 0;
        bool empty = true;
        CHECK(p_olCreateQueue(host, &queue));
        CHECK(p_olLaunchHostFunction(queue, wait_for_release, NULL));
        CHECK(p_olLaunchHostFunction(queue, call_back_in, &called_back));
        void *mems[20]; /* the blocked host function must not hold the interpreter (olMemFree
                           would wait for the busy queue, as liboffload's does: freed after) */
        for (int i = 0; i < 20; i++) CHECK(p_olMemAlloc(host, OL_ALLOC_TYPE_HOST, 16, &mems[i]));
        CHECK(p_olGetQueueInfo(queue, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
        if (empty) fail("the queue is empty while its host function blocks", NULL);
        atomic_store(&released, 1);
        CHECK(p_olSyncQueue(queue));
        if (!atomic_load(&called_back)) fail("the host function calling the API did not run", NULL);
        for (int i = 0; i < 20; i++) CHECK(p_olMemFree(mems[i]));
        CHECK(p_olDestroyQueue(queue));
    } else if (!strcmp(mode, "gc")) {
        int (*gil_ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
        void (*gil_release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
        int (*gc_enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGC_IsEnabled");
        if (!gil_ensure || !gil_release || !gc_enabled) fail("libpython's symbols are not in global scope", NULL);
        int gil = gil_ensure();
        int on = gc_enabled();
        gil_release(gil);
        if (!on) fail("the cyclic GC is still off after olInit", NULL);
    } else {
        printf("FAIL unknown mode %s\n", mode);
        return 2;
    }
    CHECK(p_olShutDown());
    printf("OK %s\n", mode);
    return 0;
}
