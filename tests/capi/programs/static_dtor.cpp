// olInit from a static constructor and olShutDown from a static destructor, as C++ libraries
// holding liboffload for their lifetime do. Built as a program (main allocates and returns without
// shutting down: the destructor runs in exit()), and with -DAS_LIBRARY as a shared library that a
// Python process loads (its destructor then runs after the interpreter has finished). The
// destructor prints "dtor: <result>" on stderr; the process must exit 0.
#include <offload/OffloadAPI.h>

#include <cstdio>

namespace {
struct Holder {
  Holder() {
    ol_result_t r = olInit();
    std::fprintf(stderr, "ctor: %s\n", r ? r->Details : "OL_SUCCESS");
  }
  ~Holder() {
    ol_result_t r = olShutDown();
    std::fprintf(stderr, "dtor: %s\n", r ? r->Details : "OL_SUCCESS");
  }
} holder;
}  // namespace

#ifndef AS_LIBRARY
static bool first(ol_device_handle_t device, void *user) {
  *static_cast<ol_device_handle_t *>(user) = device;
  return false;
}

int main() {
  ol_device_handle_t device = nullptr;
  void *mem = nullptr;
  if (olIterateDevices(first, &device) || !device) return 1;
  if (olMemAlloc(device, OL_ALLOC_TYPE_HOST, 64, &mem)) return 1;  // never freed: olShutDown's to clean
  std::printf("main done\n");
  return 0;
}
#endif
