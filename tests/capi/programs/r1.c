/* R1's ABI (offload_capi --abi r1): what R1 has and LLVM 22 has not, through R1's header and
 * library: R1's device properties (NUM_LANES, *_FP_SUPPORT), olQueryQueue, olGetEventElapsedTime,
 * olMemUnregister's Flags, and R1's numbering where it differs from LLVM 22's. Prints "OK r1". */
#include <offload/OffloadAPI.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { ol_result_t r_ = (call); if (r_) { printf("FAIL %s: %s\n", #call, r_->Details); return 1; } } while (0)
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %s\n", #cond); return 1; } } while (0)

#include "host_device.h"

int main(void) {
    EXPECT(OL_DEVICE_INFO_SINGLE_FP_CONFIG == 20 && OL_DEVICE_INFO_NUM_LANES == 19 && OL_DEVICE_INFO_LAST == 33);
    CHECK(olInit());
    CHECK(olIterateDevices(find_host, NULL));
    EXPECT(host != NULL);
    uint32_t lanes = 0;
    bool supported = false;
    size_t size = 0;
    CHECK(olGetDeviceInfo(host, OL_DEVICE_INFO_NUM_LANES, sizeof lanes, &lanes));
    EXPECT(lanes > 0);
    CHECK(olGetDeviceInfo(host, OL_DEVICE_INFO_SINGLE_FP_SUPPORT, sizeof supported, &supported));
    CHECK(olGetDeviceInfoSize(host, OL_DEVICE_INFO_DOUBLE_FP_SUPPORT, &size));
    EXPECT(size == 1);
    ol_result_t bad = olGetDeviceInfo(host, (ol_device_info_t)OL_DEVICE_INFO_LAST, sizeof lanes, &lanes);
    EXPECT(bad && bad->Code == OL_ERRC_INVALID_ENUMERATION);
    ol_queue_handle_t queue;
    ol_event_handle_t start, end;
    bool done = false;
    float ms = -1;
    CHECK(olCreateQueue(host, &queue));
    CHECK(olCreateEvent(queue, &start));
    CHECK(olCreateEvent(queue, &end));
    CHECK(olSyncEvent(end));
    CHECK(olQueryQueue(queue, &done));
    EXPECT(done);
    CHECK(olGetEventElapsedTime(start, end, &ms));
    EXPECT(ms >= 0);
    bad = olQueryQueue(queue, NULL);
    EXPECT(bad && bad->Code == OL_ERRC_INVALID_NULL_POINTER && !strcmp(bad->Details, "validation failure: NULL == IsQueueWorkCompleted"));
    int value = 5;
    void *pinned;
    CHECK(olMemRegister(host, &value, sizeof value, OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, &pinned));
    CHECK(olMemUnregister(host, &value, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
    uint32_t pattern = 1;
    void *mem;
    CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, 16, &mem));
    bad = olMemFill(NULL, mem, 0, &pattern, 16);
    EXPECT(bad && bad->Code == OL_ERRC_INVALID_SIZE && !strcmp(bad->Details, "validation failure: PatternSize == 0"));
    CHECK(olMemFree(mem));
    CHECK(olDestroyEvent(start));
    CHECK(olDestroyEvent(end));
    CHECK(olDestroyQueue(queue));
    CHECK(olShutDown());
    printf("OK r1\n");
    return 0;
}
