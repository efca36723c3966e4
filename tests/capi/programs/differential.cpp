// The differential suite: one line per case, "CASE <group>.<name> <result> [values]", where every
// value printed is one both liboffload and offload must answer alike on a host device (tests/capi/
// test_differential.py runs it against Debian's libLLVMOffload.so.22.1 and against offload's, and
// compares line by line; docs/capi.md lists the documented differences). Built against the
// packaged OffloadAPI.h, unchanged for either library.
#include <offload/OffloadAPI.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static const char *errc(ol_result_t r) {
  if (!r) return "OL_SUCCESS";
  static const char *names[] = {
      "SUCCESS", "UNKNOWN", "HOST_IO", "INVALID_BINARY", "INVALID_NULL_POINTER", "INVALID_ARGUMENT",
      "NOT_FOUND", "OUT_OF_RESOURCES", "INVALID_SIZE", "INVALID_ENUMERATION", "HOST_TOOL_NOT_FOUND",
      "INVALID_VALUE", "UNIMPLEMENTED", "UNSUPPORTED", "ASSEMBLE_FAILURE", "COMPILE_FAILURE", "LINK_FAILURE",
      "BACKEND_FAILURE", "UNINITIALIZED", "INVALID_NULL_HANDLE", "INVALID_PLATFORM", "INVALID_DEVICE",
      "INVALID_QUEUE", "INVALID_EVENT", "SYMBOL_KIND"};
  return r->Code < sizeof names / sizeof *names ? names[r->Code] : "?";
}

static int cases;
#define CASE(name, call, ...)                                                         \
  do {                                                                                \
    ol_result_t r_ = (call);                                                          \
    std::printf("CASE %s %s", name, errc(r_));                                        \
    if (r_ && r_->Details && std::strncmp(r_->Details, "validation failure: ", 20) == 0) \
      std::printf(" [%s]", r_->Details);                                              \
    __VA_ARGS__;                                                                      \
    std::printf("\n");                                                                \
    cases++;                                                                          \
  } while (0)

static ol_device_handle_t host, dev;
static int visits, wanted = OL_PLATFORM_BACKEND_HOST;

static bool find_host(ol_device_handle_t device, void *user) {
  visits++;
  ol_platform_handle_t platform;
  ol_platform_backend_t backend;
  if (olGetDeviceInfo(device, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform) == OL_SUCCESS &&
      olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) == OL_SUCCESS &&
      backend == OL_PLATFORM_BACKEND_HOST && !host)
    host = device;
  if (backend == wanted && !dev) dev = device;
  return *static_cast<bool *>(user);
}

// argv[1] "work": also the work section (offload's library only: LLVM 22's virtual host device
// cannot allocate), on the first device of platform backend argv[2] (default: the host's).
int main(int argc, char **argv) {
  bool work = argc > 1 && std::strcmp(argv[1], "work") == 0;
  if (argc > 2) wanted = std::atoi(argv[2]);
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  ol_device_type_t type;
  size_t size = 0;
  void *ptr = nullptr;
  ol_queue_handle_t queue = nullptr;
  ol_event_handle_t event = nullptr;
  ol_program_handle_t program = nullptr;
  ol_symbol_handle_t symbol = nullptr;
  bool flag = false, more = true;
  ol_kernel_launch_size_args_t grid = {1, {1, 1, 1}, {1, 1, 1}, 0};
  char text[256];

  // --- init --------------------------------------------------------------------------------------
  CASE("init.device_info_before_init", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  CASE("init.shutdown_before_init", olShutDown());
  CASE("init.first", olInit());
  CASE("init.second", olInit());
  CASE("init.with_code_loc", olShutDownWithCodeLoc(nullptr));
  // --- platform and device -----------------------------------------------------------------------
  CASE("device.iterate", olIterateDevices(find_host, &more), std::printf(" host=%d", host != nullptr));
  CASE("device.iterate_null_callback", olIterateDevices(nullptr, nullptr));
  more = false;
  visits = 0;
  CASE("device.iterate_stops", olIterateDevices(find_host, &more), std::printf(" visits=%d", visits));
  CASE("device.type", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, sizeof type, &type), std::printf(" %d", type));
  CASE("device.type_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_TYPE, &size), std::printf(" %zu", size));
  CASE("device.name_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_NAME, &size), std::printf(" >0:%d", size > 0));
  CASE("device.name", olGetDeviceInfo(host, OL_DEVICE_INFO_NAME, sizeof text, text),
       std::printf(" nul:%d", std::strlen(text) + 1 == size));
  CASE("device.prop_size_zero", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, 0, &type));
  CASE("device.null_value", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, sizeof type, nullptr));
  CASE("device.too_small", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, 1, &type));
  CASE("device.bad_enum", olGetDeviceInfo(host, OL_DEVICE_INFO_FORCE_UINT32, sizeof type, &type));
  CASE("device.bad_enum_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_LAST, &size));
  CASE("device.null_device", olGetDeviceInfo(nullptr, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  CASE("device.size_null_ret", olGetDeviceInfoSize(host, OL_DEVICE_INFO_TYPE, nullptr));
  CASE("device.dims_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, &size),
       std::printf(" %zu", size));
  CASE("device.fp_config_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_SINGLE_FP_CONFIG, &size),
       std::printf(" %zu", size));
  CASE("device.mem_size_size", olGetDeviceInfoSize(host, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, &size),
       std::printf(" %zu", size));
  CASE("device.address_bits", olGetDeviceInfo(host, OL_DEVICE_INFO_ADDRESS_BITS, sizeof(uint32_t), text),
       std::printf(" %u", *reinterpret_cast<uint32_t *>(text)));
  CASE("device.with_code_loc", olGetDeviceInfoWithCodeLoc(host, OL_DEVICE_INFO_TYPE, sizeof type, &type, nullptr));
  ol_platform_handle_t platform = nullptr;
  ol_platform_backend_t backend;
  CASE("platform.of_device", olGetDeviceInfo(host, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform),
       std::printf(" nonnull:%d", platform != nullptr));
  CASE("platform.backend", olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend),
       std::printf(" %d", backend));
  CASE("platform.version_size", olGetPlatformInfoSize(platform, OL_PLATFORM_INFO_VERSION, &size),
       std::printf(" >0:%d", size > 0));
  CASE("platform.bad_enum", olGetPlatformInfo(platform, OL_PLATFORM_INFO_FORCE_UINT32, sizeof backend, &backend));
  CASE("platform.null", olGetPlatformInfo(nullptr, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
  CASE("platform.prop_size_zero", olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, 0, &backend));
  CASE("platform.size_null_ret", olGetPlatformInfoSize(platform, OL_PLATFORM_INFO_NAME, nullptr));
  // --- memory ------------------------------------------------------------------------------------
  CASE("memory.alloc_zero", olMemAlloc(host, OL_ALLOC_TYPE_HOST, 0, &ptr));
  CASE("memory.alloc_null_device", olMemAlloc(nullptr, OL_ALLOC_TYPE_HOST, 64, &ptr));
  CASE("memory.alloc_null_out", olMemAlloc(host, OL_ALLOC_TYPE_HOST, 64, nullptr));
  CASE("memory.free_null", olMemFree(nullptr));
  CASE("memory.memcpy_null_dst_device", olMemcpy(nullptr, text, nullptr, text, host, 4));
  CASE("memory.memcpy_null_src_device", olMemcpy(nullptr, text, host, text, nullptr, 4));
  CASE("memory.memcpy_null_dst", olMemcpy(nullptr, nullptr, host, text, host, 4));
  CASE("memory.memcpy_null_src", olMemcpy(nullptr, text, host, nullptr, host, 4));
  uint32_t pattern = 7;
  CASE("memory.fill_not_multiple", olMemFill(nullptr, text, sizeof pattern, &pattern, 6));
  CASE("memory.fill_null_ptr", olMemFill(nullptr, nullptr, sizeof pattern, &pattern, 8));
  CASE("memory.fill_null_pattern", olMemFill(nullptr, text, sizeof pattern, nullptr, 8));
  CASE("memory.info_null_ptr", olGetMemInfo(nullptr, OL_MEM_INFO_SIZE, sizeof size, &size));
  CASE("memory.info_prop_size_zero", olGetMemInfo(text, OL_MEM_INFO_SIZE, 0, &size));
  CASE("memory.info_null_value", olGetMemInfo(text, OL_MEM_INFO_SIZE, sizeof size, nullptr));
  CASE("memory.info_size_null_ptr", olGetMemInfoSize(nullptr, OL_MEM_INFO_SIZE, &size));
  CASE("memory.info_size_null_ret", olGetMemInfoSize(text, OL_MEM_INFO_SIZE, nullptr));
  CASE("memory.register_zero", olMemRegister(host, text, 0, 0, &ptr));
  CASE("memory.register_null_device", olMemRegister(nullptr, text, 16, 0, &ptr));
  CASE("memory.register_null_out", olMemRegister(host, text, 16, 0, nullptr));
  CASE("memory.unregister_null_ptr", olMemUnregister(host, nullptr));
  CASE("memory.unregister_null_device", olMemUnregister(nullptr, text));
  // --- queue ---------------------------------------------------------------------------------------
  CASE("queue.create_null_device", olCreateQueue(nullptr, &queue));
  CASE("queue.create_null_out", olCreateQueue(host, nullptr));
  CASE("queue.destroy_null", olDestroyQueue(nullptr));
  CASE("queue.sync_null", olSyncQueue(nullptr));
  CASE("queue.info_null", olGetQueueInfo(nullptr, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag));
  CASE("queue.info_size_null", olGetQueueInfoSize(nullptr, OL_QUEUE_INFO_EMPTY, &size));
  CASE("queue.wait_null_queue", olWaitEvents(nullptr, &event, 1));
  CASE("queue.host_function_null_queue", olLaunchHostFunction(nullptr, [](void *) {}, nullptr));
  // --- event ---------------------------------------------------------------------------------------
  CASE("event.create_null_queue", olCreateEvent(nullptr, &event));
  CASE("event.destroy_null", olDestroyEvent(nullptr));
  CASE("event.sync_null", olSyncEvent(nullptr));
  CASE("event.info_null", olGetEventInfo(nullptr, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag));
  CASE("event.info_size_null", olGetEventInfoSize(nullptr, OL_EVENT_INFO_IS_COMPLETE, &size));
  // --- program -------------------------------------------------------------------------------------
  const char garbage[] = "this is not a program";
  CASE("program.create_null_device", olCreateProgram(nullptr, garbage, sizeof garbage, &program));
  CASE("program.create_null_data", olCreateProgram(host, nullptr, 4, &program));
  CASE("program.create_null_out", olCreateProgram(host, garbage, sizeof garbage, nullptr));
  CASE("program.valid_null_device", olIsValidBinary(nullptr, garbage, sizeof garbage, &flag));
  CASE("program.valid_null_out", olIsValidBinary(host, garbage, sizeof garbage, nullptr));
  CASE("program.destroy_null", olDestroyProgram(nullptr));
  // --- symbol --------------------------------------------------------------------------------------
  CASE("symbol.get_null_program", olGetSymbol(nullptr, "k", OL_SYMBOL_KIND_KERNEL, &symbol));
  CASE("symbol.info_null", olGetSymbolInfo(nullptr, OL_SYMBOL_INFO_KIND, sizeof size, &size));
  CASE("symbol.info_size_null", olGetSymbolInfoSize(nullptr, OL_SYMBOL_INFO_KIND, &size));
  // --- kernel --------------------------------------------------------------------------------------
  CASE("kernel.launch_null_device", olLaunchKernel(nullptr, nullptr, symbol, nullptr, 0, &grid));
  CASE("kernel.launch_args_null", olLaunchKernel(nullptr, host, symbol, nullptr, 8, &grid));
  CASE("kernel.launch_null_kernel", olLaunchKernel(nullptr, host, nullptr, nullptr, 0, &grid));
  CASE("kernel.occupancy_null_device", olCalculateOptimalOccupancy(nullptr, symbol, 0, &size));
  CASE("kernel.occupancy_null_kernel", olCalculateOptimalOccupancy(host, nullptr, 0, &size));
  // --- work on the chosen device (host memory on the host device) ---------------------------------
  void *mem = nullptr;
  if (work) {
  CASE("work.device_found", nullptr, std::printf(" %d", dev != nullptr));
  CASE("work.alloc_device", olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, 64, &mem), std::printf(" nonnull:%d", mem != nullptr));
  CASE("work.mem_info_size", olGetMemInfo(mem, OL_MEM_INFO_SIZE, sizeof size, &size), std::printf(" %zu", size));
  CASE("work.mem_info_base_interior", olGetMemInfo(static_cast<char *>(mem) + 8, OL_MEM_INFO_BASE, sizeof ptr, &ptr),
       std::printf(" base:%d", ptr == mem));
  ol_alloc_type_t alloc_type;
  CASE("work.mem_info_type", olGetMemInfo(mem, OL_MEM_INFO_TYPE, sizeof alloc_type, &alloc_type),
       std::printf(" %d", alloc_type));
  ol_device_handle_t owner = nullptr;
  CASE("work.mem_info_device", olGetMemInfo(mem, OL_MEM_INFO_DEVICE, sizeof owner, &owner),
       std::printf(" dev:%d", owner == dev));
  CASE("work.mem_info_unknown", olGetMemInfo(text, OL_MEM_INFO_SIZE, sizeof size, &size));
  uint32_t back[16] = {0};
  CASE("work.fill_sync", olMemFill(nullptr, mem, sizeof pattern, &pattern, 64));
  CASE("work.memcpy_back", olMemcpy(nullptr, back, host, mem, dev, sizeof back), std::printf(" %u %u", back[0], back[15]));
  const char hello[] = "hello, offload";
  CASE("work.memcpy_sync", olMemcpy(nullptr, mem, dev, hello, host, sizeof hello));
  CASE("work.memcpy_past_end", olMemcpy(nullptr, mem, dev, hello, host, 65));
  CASE("work.create_queue", olCreateQueue(dev, &queue), std::printf(" nonnull:%d", queue != nullptr));
  ol_device_handle_t of_queue = nullptr;
  CASE("work.queue_device", olGetQueueInfo(queue, OL_QUEUE_INFO_DEVICE, sizeof of_queue, &of_queue),
       std::printf(" dev:%d", of_queue == dev));
  static int ran;
  CASE("work.host_function", olLaunchHostFunction(queue, [](void *p) { ++*static_cast<int *>(p); }, &ran));
  std::memset(text, 0, sizeof text);
  CASE("work.memcpy_queued", olMemcpy(queue, text, host, mem, dev, sizeof hello));
  CASE("work.create_event", olCreateEvent(queue, &event), std::printf(" nonnull:%d", event != nullptr));
  CASE("work.sync_event", olSyncEvent(event), std::printf(" ran:%d copied:%d", ran, std::strcmp(text, hello) == 0));
  CASE("work.event_complete", olGetEventInfo(event, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag),
       std::printf(" %d", flag));
  ol_queue_handle_t of_event = nullptr;
  CASE("work.event_queue", olGetEventInfo(event, OL_EVENT_INFO_QUEUE, sizeof of_event, &of_event),
       std::printf(" same:%d", of_event == queue));
  CASE("work.wait_events", olWaitEvents(queue, &event, 1));
  CASE("work.wait_null_events", olWaitEvents(queue, nullptr, 1));
  CASE("work.wait_zero_events", olWaitEvents(queue, &event, 0));
  CASE("work.sync_queue", olSyncQueue(queue));
  CASE("work.queue_empty", olGetQueueInfo(queue, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag), std::printf(" %d", flag));
  CASE("work.destroy_event", olDestroyEvent(event));
  CASE("work.destroy_queue", olDestroyQueue(queue));
  CASE("work.stale_queue", olSyncQueue(queue));
  CASE("work.is_valid_garbage", olIsValidBinary(dev, garbage, sizeof garbage, &flag), std::printf(" %d", flag));
  CASE("work.create_program_garbage", olCreateProgram(dev, garbage, sizeof garbage, &program));
  CASE("work.free", olMemFree(mem));
  CASE("work.double_free", olMemFree(mem));
  CASE("work.free_unknown", olMemFree(text));
  }
  // --- the end -------------------------------------------------------------------------------------
  CASE("init.shutdown", olShutDown());
  CASE("init.after_shutdown", olGetDeviceInfo(host, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  CASE("init.shutdown_again", olShutDown());
  ol_result_t a = olMemFree(nullptr), b = olMemFree(nullptr);
  std::printf("CASE result.interned %s same:%d\n", errc(a), a == b);
  std::printf("CASES %d\n", cases + 1);
  return 0;
}
