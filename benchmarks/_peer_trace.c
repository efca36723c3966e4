/* _peer_trace.c - the peer of bench_tracing.py: LLVM liboffload's own cost of olGetDeviceInfo(NAME)
 * on its host device, built against the library's offload/OffloadAPI.h and run once with
 * OFFLOAD_TRACE unset and once with OFFLOAD_TRACE=1 (the library reads it at olInit; stderr goes
 * to /dev/null). Prints "ns_per_call <value>" (the best of 5 rounds of `calls` calls). */
#include <stdbool.h> /* the header uses bool without including it (it is C++-first) */
#include <stdint.h>

#include <offload/OffloadAPI.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static ol_device_handle_t found;

static bool pick(ol_device_handle_t device, void *user) {
  (void)user;
  found = device; /* the last one iterated is the host device (liboffload lists it last) */
  return true;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 100000;
  if (olInit() != OL_SUCCESS) {
    fprintf(stderr, "olInit failed\n");
    return 2;
  }
  if (olIterateDevices(pick, NULL) != OL_SUCCESS || found == NULL) {
    fprintf(stderr, "no device\n");
    return 2;
  }
  char name[256];
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    double start = now_ns();
    for (long i = 0; i < calls; ++i) {
      if (olGetDeviceInfo(found, OL_DEVICE_INFO_NAME, sizeof name, name) != OL_SUCCESS) {
        fprintf(stderr, "olGetDeviceInfo failed\n");
        return 2;
      }
    }
    double per = (now_ns() - start) / calls;
    if (per < best) best = per;
  }
  printf("ns_per_call %.3f\n", best);
  olShutDown();
  return 0;
}
