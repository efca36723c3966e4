/* The host device through the C ABI: olIterateDevices(find_host, NULL) leaves it in `host` (the
 * device whose platform's backend is OL_PLATFORM_BACKEND_HOST), for kernels.c and r1.c. */
#ifndef CAPI_TEST_HOST_DEVICE_H
#define CAPI_TEST_HOST_DEVICE_H

#include <offload/OffloadAPI.h>

#include <stdbool.h>

static ol_device_handle_t host;

static bool find_host(ol_device_handle_t device, void *user) {
    ol_platform_handle_t platform;
    ol_platform_backend_t backend;
    (void)user;
    if (!olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform) &&
        !olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) &&
        backend == OL_PLATFORM_BACKEND_HOST)
        host = device;
    return true;
}

#endif
