/* hip_front.c - the HIP front of the simulated GPU driver: libamdhip64.so (a test fixture).
 *
 * Exports the plain hip* names hip-python dlsyms (hipGetDeviceProperties as
 * hipGetDevicePropertiesR0600), with HIP 6.x+ semantics on top of the simulator core:
 *   - lazy initialisation: every call initialises the runtime; hipInit(flags != 0) is
 *     hipErrorInvalidValue; with no device hipInit and hipGetDeviceCount answer hipErrorNoDevice;
 *   - the last error: every failing call stores its error for the calling thread;
 *     hipGetLastError returns and clears it, hipPeekAtLastError returns it; a success does not
 *     clear it, and hipErrorNotReady from queries is not recorded (CUDA's rule, which HIP 6 follows);
 *   - the current device per thread (hipSetDevice), the null stream as the legacy stream;
 *   - modules from code objects or offload bundles for the simulated device's target
 *     (GPUSIM_HIP_TARGET, default gfx90a:sramecc+:xnack-): the kernels and their explicit
 *     argument layout from the NT_AMDGPU_METADATA note, the kernel bodies from the host build
 *     registered for the code object (simcore's registry); another target is
 *     hipErrorNoBinaryForGpu, anything else hipErrorInvalidImage;
 *   - launches with kernelParams or the HIP_LAUNCH_PARAM_* extra array (END = 3); a buffer
 *     shorter than the kernel's explicit arguments is hipErrorInvalidValue; LDS over 64 KiB
 *     is hipErrorInvalidValue.
 * Device memory is host memory; every range a call touches is checked against the core's
 * allocations.
 */
#define _GNU_SOURCE
#include "../core/simcore.h"
#include "amdgpu_image.h"
#include "hip_device_prop.h"
#include "host_alias.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorInvalidPitchValue = 12,
  hipErrorInvalidConfiguration = 9,
  hipErrorInvalidSymbol = 13,
  hipErrorInvalidDevicePointer = 17,
  hipErrorInvalidMemcpyDirection = 21,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorNoBinaryForGpu = 209,
  hipErrorPeerAccessUnsupported = 217,
  hipErrorInvalidHandle = 400,
  hipErrorIllegalState = 401,
  hipErrorNotFound = 500,
  hipErrorNotReady = 600,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchOutOfResources = 701,
  hipErrorPeerAccessAlreadyEnabled = 704,
  hipErrorPeerAccessNotEnabled = 705,
  hipErrorHostMemoryAlreadyRegistered = 712,
  hipErrorHostMemoryNotRegistered = 713,
  hipErrorLaunchFailure = 719,
  hipErrorCooperativeLaunchTooLarge = 720,
  hipErrorNotSupported = 801,
  hipErrorUnknown = 999,
} hipError_t;

#define LDS_LIMIT (64 * 1024)
#define WAVEFRONT 64
#define HANDLE_MAGIC_STREAM 0x48495053u /* "HIPS" */
#define HANDLE_MAGIC_EVENT 0x48495045u
#define HANDLE_MAGIC_MODULE 0x4849504du
#define HANDLE_MAGIC_FUNCTION 0x48495046u

/* ---- errors ------------------------------------------------------------------------------ */

static __thread hipError_t last_error = hipSuccess;
static __thread int current_device = 0;

static hipError_t ret(hipError_t e) {
  if (e != hipSuccess && e != hipErrorNotReady) last_error = e;
  return e;
}

static hipError_t from_sim(sim_status s) {
  switch (s) {
  case SIM_OK: return hipSuccess;
  case SIM_ERR_INVALID_VALUE: return hipErrorInvalidValue;
  case SIM_ERR_OUT_OF_MEMORY: return hipErrorOutOfMemory;
  case SIM_ERR_NOT_READY: return hipErrorNotReady;
  case SIM_ERR_INVALID_HANDLE: return hipErrorInvalidHandle;
  case SIM_ERR_NOT_FOUND: return hipErrorNotFound;
  case SIM_ERR_LAUNCH_FAILED: return hipErrorLaunchFailure;
  case SIM_ERR_OUT_OF_RESOURCES: return hipErrorLaunchOutOfResources;
  case SIM_ERR_INVALID_IMAGE: return hipErrorInvalidImage;
  case SIM_ERR_NOT_SUPPORTED: return hipErrorNotSupported;
  case SIM_ERR_HOST_CALLBACK: return hipErrorLaunchFailure;
  case SIM_ERR_ILLEGAL_INSTRUCTION: return hipErrorLaunchFailure; /* the device's sticky fault: a trap */
  case SIM_ERR_ILLEGAL_ADDRESS: return hipErrorIllegalAddress;     /* ... or a wild memory access */
  case SIM_ERR_NOT_PERMITTED: return hipErrorIllegalState;        /* a HIP call from a host function */
  }
  return hipErrorUnknown;
}

/* Every hip* call but the error-text ones starts with one of these (README: "host functions",
 * "sticky faults"). HOST_FN_GUARD: a HIP call from inside a host function (hipLaunchHostFunc:
 * "The host function must not make any HIP API calls") is refused with hipErrorIllegalState, as
 * the CUDA front refuses it with CUDA_ERROR_NOT_PERMITTED. GUARD adds the sticky fault: once a
 * kernel of the current device faulted, every call returns its error (hipErrorLaunchFailure for a
 * trap, hipErrorIllegalAddress for a wild access) until hipDeviceReset. */
#define HOST_FN_GUARD()                                                                             \
  do {                                                                                              \
    if (sim_in_host_function()) return ret(hipErrorIllegalState);                                   \
  } while (0)
#define GUARD()                                                                                     \
  do {                                                                                              \
    HOST_FN_GUARD();                                                                                \
    if (current_device < sim_device_count() && sim_device_fault(current_device) != SIM_OK)          \
      return ret(from_sim(sim_device_fault(current_device)));                                       \
  } while (0)

static const struct {
  hipError_t code;
  const char *name, *text;
} ERRORS[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorInvalidConfiguration, "hipErrorInvalidConfiguration", "invalid configuration argument"},
    {hipErrorInvalidSymbol, "hipErrorInvalidSymbol", "invalid device symbol"},
    {hipErrorInvalidDevicePointer, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {hipErrorInvalidMemcpyDirection, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {hipErrorInvalidDeviceFunction, "hipErrorInvalidDeviceFunction", "invalid device function"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidImage, "hipErrorInvalidImage", "device kernel image is invalid"},
    {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device"},
    {hipErrorPeerAccessUnsupported, "hipErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorIllegalState, "hipErrorIllegalState", "the operation cannot be performed in the present state"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorNotReady, "hipErrorNotReady", "device not ready"},
    {hipErrorIllegalAddress, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {hipErrorLaunchOutOfResources, "hipErrorLaunchOutOfResources", "too many resources requested for launch"},
    {hipErrorPeerAccessAlreadyEnabled, "hipErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {hipErrorPeerAccessNotEnabled, "hipErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {hipErrorHostMemoryAlreadyRegistered, "hipErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {hipErrorHostMemoryNotRegistered, "hipErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {hipErrorLaunchFailure, "hipErrorLaunchFailure", "unspecified launch failure"},
    {hipErrorInvalidPitchValue, "hipErrorInvalidPitchValue", "invalid pitch argument"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorUnknown, "hipErrorUnknown", "unknown error"},
};

EXPORT const char *hipGetErrorName(hipError_t e) {
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; ++i)
    if (ERRORS[i].code == e) return ERRORS[i].name;
  return "hipErrorUnknown";
}

EXPORT const char *hipGetErrorString(hipError_t e) {
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; ++i)
    if (ERRORS[i].code == e) return ERRORS[i].text;
  return "unknown error";
}

EXPORT hipError_t hipGetLastError(void) {
  HOST_FN_GUARD();
  hipError_t e = last_error;
  last_error = hipSuccess;
  return e;
}

EXPORT hipError_t hipPeekAtLastError(void) { return last_error; }

/* ---- devices ------------------------------------------------------------------------------ */

static amdgpu_target device_target;
static char device_target_name[64];
static pthread_once_t target_once = PTHREAD_ONCE_INIT;

static void read_target(void) {
  const char *name = getenv("GPUSIM_HIP_TARGET");
  if (name == NULL || *name == '\0') name = "gfx90a:sramecc+:xnack-";
  snprintf(device_target_name, sizeof device_target_name, "%s", name);
  /* The simulated devices are gfx90a-class; the settings after the processor are read here. */
  device_target.mach = 0x3f;
  device_target.xnack = strstr(name, "xnack+") != NULL;
  device_target.sramecc = strstr(name, "sramecc-") == NULL;
  if (strncmp(name, "gfx90a", 6) != 0) {
    fprintf(stderr, "gpusim-hip: GPUSIM_HIP_TARGET=%s: only gfx90a is simulated; using gfx90a\n", name);
    snprintf(device_target_name, sizeof device_target_name, "gfx90a:sramecc%c:xnack%c",
             device_target.sramecc ? '+' : '-', device_target.xnack ? '+' : '-');
  }
}

static const sim_device_props *device_props(int ordinal) {
  pthread_once(&target_once, read_target);
  return sim_device(ordinal);
}

/* The device getters' common start (after GUARD): `p`, the properties of `device` (an unknown
 * ordinal is hipErrorInvalidDevice, none at all hipErrorNoDevice), then `valid` checked. */
#define DEVICE_GETTER(p, device, valid)                                                       \
  const sim_device_props *p = device_props(device);                                          \
  do {                                                                                       \
    if (p == NULL) return ret(sim_device_count() ? hipErrorInvalidDevice : hipErrorNoDevice); \
    if (!(valid)) return ret(hipErrorInvalidValue);                                          \
  } while (0)

static hipError_t check_current(void) {
  if (sim_device_count() == 0) return hipErrorNoDevice;
  return device_props(current_device) ? hipSuccess : hipErrorInvalidDevice;
}

EXPORT hipError_t hipInit(unsigned int flags) {
  HOST_FN_GUARD();
  if (flags != 0) return ret(hipErrorInvalidValue);
  return ret(sim_device_count() == 0 ? hipErrorNoDevice : hipSuccess);
}

/* GPUSIM_HIP_VERSION: the HIP version the runtime reports, "MAJOR.MINOR.PATCH" (default
 * 7.15.26333, the HIP of ROCm 10.0 that hip-python 10.0.x is generated for), as HIP_VERSION =
 * major * 10000000 + minor * 100000 + patch (hipRuntimeGetVersion, hipDriverGetVersion). */
#define DEFAULT_HIP_VERSION "7.15.26333"
static int hip_version_value;
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static int parse_version(const char *text) {
  unsigned major, minor, patch;
  char end;
  if (sscanf(text, "%u.%u.%u%c", &major, &minor, &patch, &end) != 3 || major > 200 || minor > 99 || patch > 99999)
    return -1;
  return (int)(major * 10000000u + minor * 100000u + patch);
}

static void read_version(void) {
  const char *text = getenv("GPUSIM_HIP_VERSION");
  if (text == NULL || *text == '\0') text = DEFAULT_HIP_VERSION;
  hip_version_value = parse_version(text);
  if (hip_version_value < 0) {
    fprintf(stderr, "gpusim-hip: GPUSIM_HIP_VERSION=%s: expected MAJOR.MINOR.PATCH (minor < 100, patch < 100000); using %s\n",
            text, DEFAULT_HIP_VERSION);
    hip_version_value = parse_version(DEFAULT_HIP_VERSION);
  }
}

EXPORT hipError_t hipDriverGetVersion(int *version) {
  HOST_FN_GUARD();
  if (version == NULL) return ret(hipErrorInvalidValue);
  pthread_once(&version_once, read_version);
  *version = hip_version_value;
  return hipSuccess;
}

EXPORT hipError_t hipRuntimeGetVersion(int *version) { return hipDriverGetVersion(version); }

EXPORT hipError_t hipGetDeviceCount(int *count) {
  HOST_FN_GUARD();
  if (count == NULL) return ret(hipErrorInvalidValue);
  *count = sim_device_count();
  return ret(*count == 0 ? hipErrorNoDevice : hipSuccess);
}

EXPORT hipError_t hipSetDevice(int device) {
  HOST_FN_GUARD();
  if (sim_device_count() == 0) return ret(hipErrorNoDevice);
  if (device_props(device) == NULL) return ret(hipErrorInvalidDevice);
  current_device = device;
  return hipSuccess;
}

EXPORT hipError_t hipGetDevice(int *device) {
  GUARD();
  if (device == NULL) return ret(hipErrorInvalidValue);
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  *device = current_device;
  return hipSuccess;
}

EXPORT hipError_t hipDeviceGetName(char *name, int len, int device) {
  GUARD();
  DEVICE_GETTER(p, device, name != NULL && len > 0);
  snprintf(name, (size_t)len, "%s (HIP simulator, %s)", p->name, device_target_name);
  return hipSuccess;
}

EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, int device) {
  GUARD();
  DEVICE_GETTER(p, device, bytes != NULL);
  *bytes = p->total_memory;
  return hipSuccess;
}

typedef struct hipUUID {
  char bytes[16];
} hipUUID;

EXPORT hipError_t hipDeviceGetUuid(hipUUID *uuid, int device) {
  GUARD();
  DEVICE_GETTER(p, device, uuid != NULL);
  memcpy(uuid->bytes, p->uuid, 16);
  return hipSuccess;
}

/* hipDeviceAttribute_t of HIP 6.x / 7.x (the numbering hip-python 6.4+ sends). */
enum {
  ATTR_CLOCK_RATE = 5,
  ATTR_CONCURRENT_KERNELS = 8,
  ATTR_COOPERATIVE_LAUNCH = 10,
  ATTR_INTEGRATED = 16,
  ATTR_L2_CACHE_SIZE = 19,
  ATTR_MAJOR = 23,
  ATTR_MANAGED_MEMORY = 24,
  ATTR_MAX_BLOCKS_PER_MP = 25,
  ATTR_MAX_BLOCK_DIM_X = 26,
  ATTR_MAX_BLOCK_DIM_Y = 27,
  ATTR_MAX_BLOCK_DIM_Z = 28,
  ATTR_MAX_GRID_DIM_X = 29,
  ATTR_MAX_GRID_DIM_Y = 30,
  ATTR_MAX_GRID_DIM_Z = 31,
  ATTR_MAX_THREADS_PER_BLOCK = 56,
  ATTR_MAX_THREADS_PER_MP = 57,
  ATTR_MEMORY_BUS_WIDTH = 59,
  ATTR_MEMORY_CLOCK_RATE = 60,
  ATTR_MINOR = 61,
  ATTR_MULTIPROCESSOR_COUNT = 63,
  ATTR_PCI_BUS_ID = 67,
  ATTR_PCI_DEVICE_ID = 68,
  ATTR_PCI_DOMAIN_ID = 69,
  ATTR_MAX_REGISTERS_PER_BLOCK = 71,
  ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 74,
  ATTR_SHARED_MEM_PER_BLOCK_OPTIN = 75,
  ATTR_SHARED_MEM_PER_MP = 76,
  ATTR_TOTAL_CONSTANT_MEMORY = 83,
  ATTR_TOTAL_GLOBAL_MEM = 84,
  ATTR_UNIFIED_ADDRESSING = 85,
  ATTR_WARP_SIZE = 87,
  ATTR_HOST_REGISTER_SUPPORTED = 90,
  ATTR_MAX_SHARED_MEMORY_PER_MP = 10002,
  ATTR_PHYSICAL_MP_COUNT = 10015,
  ATTR_WALL_CLOCK_RATE = 10017,
};

static int clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : (int)v; }

/* GPUSIM_HIP_COOPERATIVE: each device's hipDeviceAttributeCooperativeLaunch (clr reports its
 * cooperativeGroups_), 0 or 1, comma-separated by ordinal; devices not named have 1. */
static int cooperative_knob(int device) {
  const char *text = getenv("GPUSIM_HIP_COOPERATIVE");
  for (int i = 0; text && *text; ++i) {
    if (i == device) {
      if ((text[0] == '0' || text[0] == '1') && (text[1] == ',' || text[1] == '\0')) return text[0] == '1';
      fprintf(stderr, "gpusim-hip: ignoring GPUSIM_HIP_COOPERATIVE entry %d (0 or 1)\n", i);
      return 1;
    }
    text = strchr(text, ',');
    if (text) ++text;
  }
  return 1;
}

EXPORT hipError_t hipDeviceGetAttribute(int *value, int attr, int device) {
  GUARD();
  DEVICE_GETTER(p, device, value != NULL);
  int cus = p->multiprocessors > 104 ? 104 : p->multiprocessors; /* MI210-like: 104 compute units */
  switch (attr) {
  case ATTR_CLOCK_RATE: *value = p->clock_khz; break;
  case ATTR_CONCURRENT_KERNELS: *value = 1; break;
  case ATTR_COOPERATIVE_LAUNCH: *value = cooperative_knob(device); break;
  case ATTR_INTEGRATED: *value = 0; break;
  case ATTR_L2_CACHE_SIZE: *value = 8 * 1024 * 1024; break;
  case ATTR_MAJOR: *value = 9; break;
  case ATTR_MINOR: *value = 0; break;
  case ATTR_MANAGED_MEMORY: *value = 1; break;
  case ATTR_MAX_BLOCKS_PER_MP: *value = 2; break;
  case ATTR_MAX_BLOCK_DIM_X: *value = (int)p->max_block_dim.x; break;
  case ATTR_MAX_BLOCK_DIM_Y: *value = (int)p->max_block_dim.y; break;
  case ATTR_MAX_BLOCK_DIM_Z: *value = (int)p->max_block_dim.z; break;
  case ATTR_MAX_GRID_DIM_X: *value = clamp_int(p->max_grid_dim.x); break;
  case ATTR_MAX_GRID_DIM_Y: *value = clamp_int(p->max_grid_dim.y); break;
  case ATTR_MAX_GRID_DIM_Z: *value = clamp_int(p->max_grid_dim.z); break;
  case ATTR_MAX_THREADS_PER_BLOCK: *value = p->max_threads_per_block; break;
  case ATTR_MAX_THREADS_PER_MP: *value = p->max_threads_per_multiprocessor; break;
  case ATTR_MEMORY_BUS_WIDTH: *value = 4096; break;
  case ATTR_MEMORY_CLOCK_RATE: *value = 1600000; break;
  case ATTR_MULTIPROCESSOR_COUNT: case ATTR_PHYSICAL_MP_COUNT: *value = cus; break;
  case ATTR_PCI_BUS_ID: *value = p->pci_bus_id; break;
  case ATTR_PCI_DEVICE_ID: *value = 0; break;
  case ATTR_PCI_DOMAIN_ID: *value = 0; break;
  case ATTR_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
  case ATTR_MAX_SHARED_MEMORY_PER_BLOCK: case ATTR_SHARED_MEM_PER_BLOCK_OPTIN: *value = LDS_LIMIT; break;
  case ATTR_SHARED_MEM_PER_MP: case ATTR_MAX_SHARED_MEMORY_PER_MP: *value = LDS_LIMIT; break;
  case ATTR_TOTAL_CONSTANT_MEMORY: *value = clamp_int(p->total_memory); break;
  case ATTR_TOTAL_GLOBAL_MEM: *value = clamp_int(p->total_memory); break;
  case ATTR_UNIFIED_ADDRESSING: case ATTR_HOST_REGISTER_SUPPORTED: *value = 1; break;
  case ATTR_WARP_SIZE: *value = WAVEFRONT; break;
  case ATTR_WALL_CLOCK_RATE: *value = 100000; break;
  default: return ret(hipErrorInvalidValue);
  }
  return hipSuccess;
}

EXPORT hipError_t hipGetDevicePropertiesR0600(hip_device_prop *prop, int device) {
  GUARD();
  DEVICE_GETTER(p, device, prop != NULL);
  memset(prop, 0, sizeof *prop);
  hipDeviceGetName(prop->name, sizeof prop->name, device);
  memcpy(prop->uuid, p->uuid, 16);
  prop->totalGlobalMem = p->total_memory;
  prop->sharedMemPerBlock = LDS_LIMIT;
  prop->regsPerBlock = 65536;
  prop->warpSize = WAVEFRONT;
  prop->maxThreadsPerBlock = p->max_threads_per_block;
  prop->maxThreadsDim[0] = (int)p->max_block_dim.x;
  prop->maxThreadsDim[1] = (int)p->max_block_dim.y;
  prop->maxThreadsDim[2] = (int)p->max_block_dim.z;
  prop->maxGridSize[0] = clamp_int(p->max_grid_dim.x);
  prop->maxGridSize[1] = clamp_int(p->max_grid_dim.y);
  prop->maxGridSize[2] = clamp_int(p->max_grid_dim.z);
  prop->clockRate = p->clock_khz;
  prop->major = 9;
  prop->minor = 0;
  hipDeviceGetAttribute(&prop->multiProcessorCount, ATTR_MULTIPROCESSOR_COUNT, device);
  prop->canMapHostMemory = 1;
  prop->concurrentKernels = 1;
  prop->pciBusID = p->pci_bus_id;
  prop->unifiedAddressing = 1;
  prop->memoryClockRate = 1600000;
  prop->memoryBusWidth = 4096;
  prop->l2CacheSize = 8 * 1024 * 1024;
  prop->maxThreadsPerMultiProcessor = p->max_threads_per_multiprocessor;
  prop->sharedMemPerMultiprocessor = LDS_LIMIT;
  prop->managedMemory = 1;
  prop->sharedMemPerBlockOptin = LDS_LIMIT;
  prop->hostRegisterSupported = 1;
  snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "%s", device_target_name);
  prop->maxSharedMemoryPerMultiProcessor = LDS_LIMIT;
  return hipSuccess;
}

EXPORT hipError_t hipDeviceSynchronize(void) {
  GUARD();
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_device_sync(current_device)));
}

/* GPUSIM_HIP_PEER: "1" (default) peers can reach each other; "0" no peer access (a machine
 * without P2P: hipDeviceCanAccessPeer answers 0, and hipDeviceEnablePeerAccess refuses with
 * hipErrorInvalidDevice, as clr's hip_peer.cpp does when canAccessPeer is 0); "fail" peers report
 * they can, but enabling fails (hipErrorPeerAccessUnsupported: the mapping could not be made). */
typedef enum { PEER_YES, PEER_NO, PEER_FAIL } peer_mode;
static peer_mode peer_knob(void) {
  const char *v = getenv("GPUSIM_HIP_PEER");
  if (v == NULL || *v == '\0' || strcmp(v, "1") == 0) return PEER_YES;
  if (strcmp(v, "0") == 0) return PEER_NO;
  if (strcmp(v, "fail") == 0) return PEER_FAIL;
  fprintf(stderr, "gpusim-hip: GPUSIM_HIP_PEER=%s: expected 1, 0 or fail; using 1\n", v);
  return PEER_YES;
}

/* hipDeviceReset: waits for the current device's work, then clears its sticky fault, the errors
 * its streams keep, and its peer access ("The peer memory remains accessible ... until hipDeviceDisablePeerAccess or
 * hipDeviceReset"). Not modelled: the reset does not free the device's allocations. */
static unsigned char peer_enabled[8][8];
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT hipError_t hipDeviceReset(void) {
  HOST_FN_GUARD();
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  sim_device_wait_idle(current_device);
  sim_device_clear_fault(current_device);
  /* The errors the device's streams still keep go with it (a call refused by the sticky fault
   * returned before it synchronised, so a stream may still hold the fault as its own error). */
  (void)sim_device_sync(current_device);
  pthread_mutex_lock(&peer_lock);
  for (int i = 0; i < 8; ++i) peer_enabled[current_device][i] = 0;
  pthread_mutex_unlock(&peer_lock);
  return hipSuccess;
}

EXPORT hipError_t hipDeviceCanAccessPeer(int *can, int device, int peer) {
  GUARD();
  if (can == NULL) return ret(hipErrorInvalidValue);
  if (device_props(device) == NULL || device_props(peer) == NULL) return ret(hipErrorInvalidDevice);
  *can = device != peer && peer_knob() != PEER_NO;
  return hipSuccess;
}

EXPORT hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
  GUARD();
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  if (flags != 0) return ret(hipErrorInvalidValue);
  if (device_props(peer) == NULL || peer == current_device) return ret(hipErrorInvalidDevice);
  peer_mode mode = peer_knob();
  if (mode == PEER_NO) return ret(hipErrorInvalidDevice);
  if (mode == PEER_FAIL) return ret(hipErrorPeerAccessUnsupported);
  pthread_mutex_lock(&peer_lock);
  int already = peer_enabled[current_device][peer];
  peer_enabled[current_device][peer] = 1;
  pthread_mutex_unlock(&peer_lock);
  return ret(already ? hipErrorPeerAccessAlreadyEnabled : hipSuccess);
}

EXPORT hipError_t hipDeviceDisablePeerAccess(int peer) {
  GUARD();
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  if (device_props(peer) == NULL) return ret(hipErrorInvalidDevice);
  pthread_mutex_lock(&peer_lock);
  int was = peer_enabled[current_device][peer];
  peer_enabled[current_device][peer] = 0;
  pthread_mutex_unlock(&peer_lock);
  return ret(was ? hipSuccess : hipErrorPeerAccessNotEnabled);
}

/* ---- memory ------------------------------------------------------------------------------- */

#define KIND(k) (1u << (k))

static hipError_t alloc(void **ptr, size_t size, sim_mem_kind kind) {
  GUARD();
  if (ptr == NULL) return ret(hipErrorInvalidValue);
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  if (size == 0) { /* HIP: no allocation, a null pointer, success */
    *ptr = NULL;
    return hipSuccess;
  }
  return ret(from_sim(sim_mem_alloc(current_device, kind, size, ptr)));
}

EXPORT hipError_t hipMalloc(void **ptr, size_t size) { return alloc(ptr, size, SIM_MEM_DEVICE); }

EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  GUARD();
  if (flags & ~0x3fu) return ret(hipErrorInvalidValue);
  return alloc(ptr, size, SIM_MEM_HOST);
}

EXPORT hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags) {
  GUARD();
  if (flags != 1 /* hipMemAttachGlobal */ && flags != 2 /* hipMemAttachHost */) return ret(hipErrorInvalidValue);
  return alloc(ptr, size, SIM_MEM_MANAGED);
}

/* hipFree and hipHostFree wait for the device's work first, as HIP does; the base address of an
 * allocation of one of `kinds` only (NULL: nothing to do). */
static int free_pending(void *ptr);

static hipError_t free_base(void *ptr, unsigned kinds) {
  if (ptr == NULL) return hipSuccess;
  sim_alloc_info info;
  if (!sim_mem_find(ptr, &info) || info.base != ptr || free_pending(ptr)) return ret(hipErrorInvalidValue);
  sim_device_wait_idle(info.device);
  return ret(from_sim(sim_mem_free(ptr, kinds)));
}

EXPORT hipError_t hipFree(void *ptr) {
  GUARD();
  return free_base(ptr, KIND(SIM_MEM_DEVICE) | KIND(SIM_MEM_MANAGED));
}

EXPORT hipError_t hipHostFree(void *ptr) {
  GUARD();
  return free_base(ptr, KIND(SIM_MEM_HOST));
}

/* Registered host ranges. hipHostRegister's documentation: "use hipHostGetDevicePointer to obtain
 * the mapped device pointer. On many systems, the mapped device pointer will have a different
 * value than the mapped host pointer. Applications must use the device pointer in device code, and
 * the host pointer in host code." So the device pointer here is a second mapping of the same pages
 * (host_alias.c): kernels and copies given it see the host's data, and code that passes the host
 * address where the device pointer belongs is caught (that address is not the device's). Where
 * no second mapping can be made (the pages are not plain anonymous memory, e.g. shared with an
 * earlier registration), the device pointer is the host address, as HIP also allows. */
#define MAX_REGISTERED 1024
typedef struct registration {
  void *host, *device; /* device != host: a second mapping made by host_alias_map */
  size_t size;
} registration;
static registration registered[MAX_REGISTERED];
static pthread_mutex_t registered_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags) {
  GUARD();
  if (ptr == NULL || size == 0 || (flags & ~0xfu)) return ret(hipErrorInvalidValue);
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  pthread_mutex_lock(&registered_lock);
  registration *slot = NULL;
  for (size_t i = 0; i < MAX_REGISTERED && slot == NULL; ++i)
    if (registered[i].host == NULL) slot = &registered[i];
  sim_status s = slot == NULL ? SIM_ERR_OUT_OF_MEMORY : sim_mem_track(current_device, SIM_MEM_REGISTERED, ptr, size);
  if (s == SIM_OK) {
    void *alias = host_alias_map(ptr, size);
    if (alias != NULL && sim_mem_track(current_device, SIM_MEM_REGISTERED, alias, size) != SIM_OK) {
      host_alias_unmap(alias, ptr, size);
      alias = NULL;
    }
    *slot = (registration){ptr, alias != NULL ? alias : ptr, size};
  }
  pthread_mutex_unlock(&registered_lock);
  return ret(s == SIM_OK ? hipSuccess : s == SIM_ERR_INVALID_VALUE ? hipErrorHostMemoryAlreadyRegistered : from_sim(s));
}

EXPORT hipError_t hipHostUnregister(void *ptr) {
  GUARD();
  if (ptr == NULL) return ret(hipErrorInvalidValue);
  pthread_mutex_lock(&registered_lock);
  registration *slot = NULL;
  for (size_t i = 0; i < MAX_REGISTERED && slot == NULL; ++i)
    if (registered[i].host == ptr) slot = &registered[i];
  if (slot == NULL) { /* never registered, or the device pointer (not the host one) */
    pthread_mutex_unlock(&registered_lock);
    return ret(hipErrorHostMemoryNotRegistered);
  }
  registration r = *slot;
  *slot = (registration){0};
  pthread_mutex_unlock(&registered_lock);
  if (r.device != r.host) {
    sim_device_wait_idle(current_device); /* no copy or kernel may still use the second mapping */
    sim_mem_untrack(r.device);
    host_alias_unmap(r.device, r.host, r.size);
  }
  return ret(from_sim(sim_mem_untrack(ptr)));
}

/* hipHostGetDevicePointer: the device pointer of registered memory (any address inside a
 * registered range) or of hipHostMalloc memory (the same address: it is allocated mapped). */
EXPORT hipError_t hipHostGetDevicePointer(void **device_ptr, void *host_ptr, unsigned int flags) {
  GUARD();
  if (device_ptr == NULL || host_ptr == NULL || flags != 0) return ret(hipErrorInvalidValue);
  pthread_mutex_lock(&registered_lock);
  for (size_t i = 0; i < MAX_REGISTERED; ++i) {
    registration *r = &registered[i];
    if (r->host != NULL && (uintptr_t)host_ptr >= (uintptr_t)r->host &&
        (uintptr_t)host_ptr < (uintptr_t)r->host + r->size) {
      *device_ptr = (unsigned char *)r->device + ((uintptr_t)host_ptr - (uintptr_t)r->host);
      pthread_mutex_unlock(&registered_lock);
      return hipSuccess;
    }
  }
  pthread_mutex_unlock(&registered_lock);
  sim_alloc_info info;
  if (sim_mem_find(host_ptr, &info) && info.kind == SIM_MEM_HOST) {
    *device_ptr = host_ptr;
    return hipSuccess;
  }
  return ret(hipErrorInvalidValue);
}

EXPORT hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total) {
  GUARD();
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  if (free_bytes == NULL || total == NULL) return ret(hipErrorInvalidValue);
  *total = device_props(current_device)->total_memory;
  *free_bytes = *total - sim_mem_used(current_device);
  return hipSuccess;
}

/* ---- streams ------------------------------------------------------------------------------ */

typedef struct hip_stream {
  unsigned magic;
  sim_stream *sim;
  unsigned flags;
} hip_stream;

/* The stream a call runs on: NULL is the current device's null (legacy) stream. */
static hipError_t stream_of(hip_stream *stream, sim_stream **out) {
  if (stream == NULL) {
    hipError_t e = check_current();
    if (e != hipSuccess) return e;
    *out = sim_stream_legacy(current_device);
    return hipSuccess;
  }
  if (stream->magic != HANDLE_MAGIC_STREAM) return hipErrorInvalidHandle;
  *out = stream->sim;
  return hipSuccess;
}

EXPORT hipError_t hipStreamCreateWithFlags(hip_stream **out, unsigned int flags) {
  GUARD();
  if (out == NULL || flags > 1) return ret(hipErrorInvalidValue);
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  hip_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return ret(hipErrorOutOfMemory);
  s->sim = sim_stream_create(current_device, flags == 0 /* hipStreamDefault blocks with the null stream */);
  if (s->sim == NULL) {
    free(s);
    return ret(hipErrorOutOfMemory);
  }
  s->magic = HANDLE_MAGIC_STREAM;
  s->flags = flags;
  *out = s;
  return hipSuccess;
}

EXPORT hipError_t hipStreamCreate(hip_stream **out) { return hipStreamCreateWithFlags(out, 0); }

EXPORT hipError_t hipStreamDestroy(hip_stream *stream) {
  GUARD();
  if (stream == NULL || stream->magic != HANDLE_MAGIC_STREAM) return ret(hipErrorInvalidHandle);
  stream->magic = 0;
  sim_stream_destroy(stream->sim); /* waits for its work */
  free(stream);
  return hipSuccess;
}

/* hipStreamGetDevice (HIP runtime API reference, Stream Management): "Get the device assocaited
 * with the stream"; the null stream is the current device's. */
EXPORT hipError_t hipStreamGetDevice(hip_stream *stream, int *device) {
  GUARD();
  if (device == NULL) return ret(hipErrorInvalidValue);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  *device = sim_stream_device(s);
  return hipSuccess;
}

EXPORT hipError_t hipStreamSynchronize(hip_stream *stream) {
  GUARD();
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_stream_sync(s)));
}

EXPORT hipError_t hipStreamQuery(hip_stream *stream) {
  GUARD();
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return sim_stream_busy(s) ? hipErrorNotReady : hipSuccess;
}

/* Stream-ordered memory (HIP runtime API reference, Stream Ordered Memory Allocator):
 * hipMallocAsync "Allocates memory with stream ordered semantics" from the stream's device; until
 * the stream reaches the allocation, a copy or fill on another stream that touches it faults
 * (sticky hipErrorIllegalAddress, simcore's sim_use_check), as CUDA's documented rule (the
 * allocation is used in its stream, or in another one ordered after it by an event) is modelled
 * for cuMemAllocAsync; kernels are not checked.
 * hipFreeAsync "Frees memory with stream ordered semantics": the free runs when the stream reaches
 * it, after which the memory is gone ("the memory must not be accessed after the stream reaches
 * the free"); a pointer that is not an allocation's base, or whose free is already pending, is
 * hipErrorInvalidValue (a double free); NULL is a no-op. hipMalloc memory may be freed so too. */
#define MAX_PENDING_FREES 4096
static void *pending_frees[MAX_PENDING_FREES];
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static int pending_slot(void *ptr) { /* with pending_lock held */
  for (int i = 0; i < MAX_PENDING_FREES; i++)
    if (pending_frees[i] == ptr) return i;
  return -1;
}

static int free_pending(void *ptr) {
  pthread_mutex_lock(&pending_lock);
  int pending = pending_slot(ptr) >= 0;
  pthread_mutex_unlock(&pending_lock);
  return pending;
}

typedef struct unreached_alloc {
  char *ptr;
  size_t size;
  sim_stream *stream;
  unsigned long long id;
} unreached_alloc;
#define MAX_UNREACHED 4096
static unreached_alloc unreached[MAX_UNREACHED];
static size_t unreached_count;
static unsigned long long next_alloc_id = 1;

static void forget_unreached(void *ptr, unsigned long long id) { /* with pending_lock held; id 0: any */
  for (size_t i = 0; i < MAX_UNREACHED; i++)
    if (unreached[i].ptr == ptr && ptr != NULL && (id == 0 || unreached[i].id == id)) {
      unreached[i].ptr = NULL;
      --unreached_count;
    }
}

static sim_status reach_run(void *raw) {
  unreached_alloc *r = raw;
  pthread_mutex_lock(&pending_lock);
  forget_unreached(r->ptr, r->id);
  pthread_mutex_unlock(&pending_lock);
  return SIM_OK;
}

static sim_status use_rule(const void *p, size_t size, sim_stream *stream) {
  if (__atomic_load_n(&unreached_count, __ATOMIC_ACQUIRE) == 0) return SIM_OK;
  const char *lo = p, *hi = lo + size;
  int hit = 0;
  pthread_mutex_lock(&pending_lock);
  for (size_t i = 0; i < MAX_UNREACHED && !hit; i++)
    hit = unreached[i].ptr != NULL && unreached[i].stream != stream && lo < unreached[i].ptr + unreached[i].size &&
          unreached[i].ptr < hi;
  pthread_mutex_unlock(&pending_lock);
  if (!hit) return SIM_OK;
  sim_device_set_fault(sim_stream_device(stream), SIM_ERR_ILLEGAL_ADDRESS);
  return SIM_ERR_ILLEGAL_ADDRESS;
}

static pthread_once_t rule_once = PTHREAD_ONCE_INIT;
static void install_rule(void) { sim_set_use_rule(use_rule); }

EXPORT hipError_t hipMallocAsync(void **ptr, size_t size, hip_stream *stream) {
  GUARD();
  if (ptr == NULL) return ret(hipErrorInvalidValue);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  if (size == 0) {
    *ptr = NULL;
    return hipSuccess;
  }
  hipError_t rc = from_sim(sim_mem_alloc(sim_stream_device(s), SIM_MEM_DEVICE, size, ptr));
  if (rc != hipSuccess) return ret(rc);
  pthread_once(&rule_once, install_rule);
  unreached_alloc *r = malloc(sizeof *r);
  pthread_mutex_lock(&pending_lock);
  size_t slot = MAX_UNREACHED;
  for (size_t i = 0; i < MAX_UNREACHED && slot == MAX_UNREACHED; i++)
    if (unreached[i].ptr == NULL) slot = i;
  if (r != NULL && slot < MAX_UNREACHED) {
    *r = (unreached_alloc){*ptr, size, s, next_alloc_id++};
    unreached[slot] = *r;
    ++unreached_count;
  }
  pthread_mutex_unlock(&pending_lock);
  /* reached when the stream gets here (without room to track it: at once, unchecked) */
  if (r != NULL && slot < MAX_UNREACHED && sim_stream_submit_ex(s, reach_run, r, free, SIM_OP_AFTER_FAULT) == SIM_OK) return hipSuccess;
  if (r != NULL && slot < MAX_UNREACHED) {
    pthread_mutex_lock(&pending_lock);
    forget_unreached(r->ptr, r->id);
    pthread_mutex_unlock(&pending_lock);
  }
  free(r);
  return hipSuccess;
}

static sim_status free_async_run(void *ptr) {
  pthread_mutex_lock(&pending_lock);
  forget_unreached(ptr, 0); /* freed before its stream reached it (the free was not ordered after it) */
  pthread_mutex_unlock(&pending_lock);
  sim_status st = sim_mem_free(ptr, KIND(SIM_MEM_DEVICE));
  pthread_mutex_lock(&pending_lock);
  int i = pending_slot(ptr);
  if (i >= 0) pending_frees[i] = NULL;
  pthread_mutex_unlock(&pending_lock);
  return st;
}

EXPORT hipError_t hipFreeAsync(void *ptr, hip_stream *stream) {
  GUARD();
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  if (ptr == NULL) return hipSuccess;
  sim_alloc_info info;
  if (!sim_mem_find(ptr, &info) || info.base != ptr || info.kind != SIM_MEM_DEVICE) return ret(hipErrorInvalidValue);
  pthread_mutex_lock(&pending_lock);
  int free_slot = pending_slot(NULL);
  if (pending_slot(ptr) >= 0 || free_slot < 0) {
    pthread_mutex_unlock(&pending_lock);
    return ret(free_slot < 0 ? hipErrorOutOfMemory : hipErrorInvalidValue);
  }
  pending_frees[free_slot] = ptr;
  pthread_mutex_unlock(&pending_lock);
  sim_status st = sim_stream_submit(s, free_async_run, ptr, NULL);
  if (st != SIM_OK) {
    pthread_mutex_lock(&pending_lock);
    pending_frees[free_slot] = NULL;
    pthread_mutex_unlock(&pending_lock);
  }
  return ret(from_sim(st));
}

typedef void (*hipHostFn_t)(void *user_data);
EXPORT hipError_t hipLaunchHostFunc(hip_stream *stream, hipHostFn_t fn, void *data) {
  GUARD();
  if (fn == NULL) return ret(hipErrorInvalidValue);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_stream_submit_host_call(s, fn, data)));
}

/* ---- events ------------------------------------------------------------------------------- */

/* Events created and not destroyed: a simulator-only export (no hip* name) for tests that check a
 * library released its events. */
static long live_events;
EXPORT long gpusim_hip_live_events(void) { return __atomic_load_n(&live_events, __ATOMIC_RELAXED); }
/* Whether hipMalloc memory is protected from host access (simcore's pkeys), and if not, why: a
 * simulator-only export, as libcuda's, for tests that skip the rule with the reason. */
EXPORT int gpusim_memory_protected(const char **why) { return sim_mem_protected(why); }

typedef struct hip_event {
  unsigned magic;
  sim_event *sim;
} hip_event;

EXPORT hipError_t hipEventCreateWithFlags(hip_event **out, unsigned flags) {
  GUARD();
  /* hipEventDefault 0, BlockingSync 1, DisableTiming 2, Interprocess 4 (needs DisableTiming) */
  if (out == NULL || (flags & ~0x7u) || ((flags & 4) && !(flags & 2))) return ret(hipErrorInvalidValue);
  hip_event *ev = calloc(1, sizeof *ev);
  if (ev == NULL) return ret(hipErrorOutOfMemory);
  ev->sim = sim_event_create(!(flags & 2));
  if (ev->sim == NULL) {
    free(ev);
    return ret(hipErrorOutOfMemory);
  }
  ev->magic = HANDLE_MAGIC_EVENT;
  __atomic_add_fetch(&live_events, 1, __ATOMIC_RELAXED);
  *out = ev;
  return hipSuccess;
}

EXPORT hipError_t hipEventCreate(hip_event **out) { return hipEventCreateWithFlags(out, 0); }

static int valid_event(const hip_event *ev) { return ev != NULL && ev->magic == HANDLE_MAGIC_EVENT; }

EXPORT hipError_t hipEventDestroy(hip_event *ev) {
  GUARD();
  if (!valid_event(ev)) return ret(hipErrorInvalidHandle);
  ev->magic = 0;
  __atomic_sub_fetch(&live_events, 1, __ATOMIC_RELAXED);
  sim_event_destroy(ev->sim);
  free(ev);
  return hipSuccess;
}

EXPORT hipError_t hipEventRecord(hip_event *ev, hip_stream *stream) {
  GUARD();
  if (!valid_event(ev)) return ret(hipErrorInvalidHandle);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_event_record(ev->sim, s)));
}

EXPORT hipError_t hipEventQuery(hip_event *ev) {
  GUARD();
  if (!valid_event(ev)) return ret(hipErrorInvalidHandle);
  return sim_event_query(ev->sim) == SIM_OK ? hipSuccess : hipErrorNotReady;
}

EXPORT hipError_t hipEventSynchronize(hip_event *ev) {
  GUARD();
  if (!valid_event(ev)) return ret(hipErrorInvalidHandle);
  return ret(from_sim(sim_event_sync(ev->sim)));
}

EXPORT hipError_t hipEventElapsedTime(float *ms, hip_event *start, hip_event *stop) {
  GUARD();
  if (ms == NULL) return ret(hipErrorInvalidValue);
  if (!valid_event(start) || !valid_event(stop)) return ret(hipErrorInvalidHandle);
  sim_status s = sim_event_elapsed(start->sim, stop->sim, ms);
  return s == SIM_ERR_NOT_READY ? hipErrorNotReady : ret(from_sim(s));
}

EXPORT hipError_t hipStreamWaitEvent(hip_stream *stream, hip_event *ev, unsigned int flags) {
  GUARD();
  if (flags != 0) return ret(hipErrorInvalidValue);
  if (!valid_event(ev)) return ret(hipErrorInvalidHandle);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_stream_wait_event(s, ev->sim)));
}

/* ---- copies and fills --------------------------------------------------------------------- */

typedef struct copy_op {
  void *dst;
  const void *src;
  size_t size;
} copy_op;

static sim_status copy_run(void *raw) {
  copy_op *c = raw;
  sim_status use = sim_use_check(c->dst, c->size);
  if (use == SIM_OK) use = sim_use_check(c->src, c->size);
  if (use != SIM_OK) return use; /* stream-ordered memory its stream has not reached (hipMallocAsync) */
  memmove(c->dst, c->src, c->size);
  return SIM_OK;
}

/* A side of a copy: device memory (`device` true) must lie in one allocation; host memory may
 * be untracked (pageable), but a tracked host range is bounds-checked as well. */
static hipError_t check_side(const void *p, size_t size, int device) {
  if (p == NULL) return hipErrorInvalidValue;
  sim_alloc_info info;
  if (sim_mem_find(p, &info)) return sim_mem_check(p, size) == SIM_OK ? hipSuccess : hipErrorInvalidValue;
  return device ? hipErrorInvalidValue : hipSuccess;
}

static hipError_t submit_copy(void *dst, int dst_device, const void *src, int src_device, size_t size,
                              hip_stream *stream) {
  if (size == 0) return hipSuccess;
  hipError_t e = check_side(dst, size, dst_device);
  if (e == hipSuccess) e = check_side(src, size, src_device);
  sim_stream *s;
  if (e == hipSuccess) e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  copy_op *c = malloc(sizeof *c);
  if (c == NULL) return ret(hipErrorOutOfMemory);
  *c = (copy_op){dst, src, size};
  sim_status st = sim_stream_submit(s, copy_run, c, free);
  if (st != SIM_OK) free(c);
  return ret(from_sim(st));
}

static hipError_t sync_null(hipError_t e) {
  if (e != hipSuccess) return e;
  return hipStreamSynchronize(NULL);
}

EXPORT hipError_t hipMemcpyHtoDAsync(void *dst, const void *src, size_t size, hip_stream *stream) {
  GUARD();
  return submit_copy(dst, 1, src, 0, size, stream);
}

EXPORT hipError_t hipMemcpyDtoHAsync(void *dst, const void *src, size_t size, hip_stream *stream) {
  GUARD();
  return submit_copy(dst, 0, src, 1, size, stream);
}

EXPORT hipError_t hipMemcpyDtoDAsync(void *dst, const void *src, size_t size, hip_stream *stream) {
  GUARD();
  return submit_copy(dst, 1, src, 1, size, stream);
}

/* hipMemcpyKind: HostToHost 0, HostToDevice 1, DeviceToHost 2, DeviceToDevice 3, Default 4. */
EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, hip_stream *stream) {
  GUARD();
  if (kind < 0 || kind > 4) return ret(hipErrorInvalidMemcpyDirection);
  int dst_dev = kind == 1 || kind == 3, src_dev = kind == 2 || kind == 3;
  return submit_copy(dst, dst_dev, src, src_dev, size, stream);
}

/* hipMemcpy3D / hipMemcpy3DAsync (HIP runtime API, "Memory Management": hipMemcpy3DParms) on
 * linear memory: extent.width bytes x height rows x depth slices between two hipPitchedPtr
 * regions (slice pitch = pitch * ysize), starting at srcPos/dstPos (x in bytes). A pitch below
 * pos.x + width is hipErrorInvalidPitchValue; for more than one slice, ysize below pos.y +
 * height is hipErrorInvalidValue; every row is checked as one hipMemcpyAsync range before any
 * is queued, then the rows run in stream order. HIP arrays are not simulated (NotSupported). */
typedef struct { size_t x, y, z; } hip_pos;
typedef struct { void *ptr; size_t pitch, xsize, ysize; } hip_pitched_ptr;
typedef struct { size_t width, height, depth; } hip_extent;
typedef struct {
  void *srcArray;
  hip_pos srcPos;
  hip_pitched_ptr srcPtr;
  void *dstArray;
  hip_pos dstPos;
  hip_pitched_ptr dstPtr;
  hip_extent extent;
  int kind;
} hip_memcpy3d_parms;

static hipError_t copy_3d(const hip_memcpy3d_parms *p, hip_stream *stream) {
  if (p == NULL) return ret(hipErrorInvalidValue);
  if (p->srcArray != NULL || p->dstArray != NULL) return ret(hipErrorNotSupported);
  if (p->kind < 0 || p->kind > 4) return ret(hipErrorInvalidMemcpyDirection);
  size_t w = p->extent.width, h = p->extent.height, depth = p->extent.depth;
  if (w == 0 || h == 0 || depth == 0) return hipSuccess;
  if (p->srcPtr.ptr == NULL || p->dstPtr.ptr == NULL) return ret(hipErrorInvalidValue);
  if (p->srcPtr.pitch < p->srcPos.x + w || p->dstPtr.pitch < p->dstPos.x + w) return ret(hipErrorInvalidPitchValue);
  if (depth > 1 && (p->srcPtr.ysize < p->srcPos.y + h || p->dstPtr.ysize < p->dstPos.y + h))
    return ret(hipErrorInvalidValue);
  int dst_dev = p->kind == 1 || p->kind == 3, src_dev = p->kind == 2 || p->kind == 3;
  size_t src_slab = p->srcPtr.pitch * p->srcPtr.ysize, dst_slab = p->dstPtr.pitch * p->dstPtr.ysize;
  for (int pass = 0; pass < 2; pass++) { /* pass 0 checks every row, pass 1 queues them */
    for (size_t z = 0; z < depth; z++) {
      for (size_t y = 0; y < h; y++) {
        const char *s = (const char *)p->srcPtr.ptr + (p->srcPos.z + z) * src_slab + (p->srcPos.y + y) * p->srcPtr.pitch +
                        p->srcPos.x;
        char *d = (char *)p->dstPtr.ptr + (p->dstPos.z + z) * dst_slab + (p->dstPos.y + y) * p->dstPtr.pitch + p->dstPos.x;
        hipError_t e = pass == 0 ? check_side(d, w, dst_dev) : submit_copy(d, dst_dev, s, src_dev, w, stream);
        if (pass == 0 && e == hipSuccess) e = check_side(s, w, src_dev);
        if (e != hipSuccess) return ret(e);
      }
    }
  }
  return hipSuccess;
}

EXPORT hipError_t hipMemcpy3DAsync(const hip_memcpy3d_parms *p, hip_stream *stream) {
  GUARD();
  return copy_3d(p, stream);
}

EXPORT hipError_t hipMemcpy3D(const hip_memcpy3d_parms *p) {
  GUARD();
  return sync_null(copy_3d(p, NULL));
}

EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t size, int kind) {
  GUARD();
  return sync_null(hipMemcpyAsync(dst, src, size, kind, NULL));
}

EXPORT hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t size) {
  GUARD();
  return sync_null(hipMemcpyHtoDAsync(dst, src, size, NULL));
}

EXPORT hipError_t hipMemcpyDtoH(void *dst, const void *src, size_t size) {
  GUARD();
  return sync_null(hipMemcpyDtoHAsync(dst, src, size, NULL));
}

EXPORT hipError_t hipMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t size,
                                     hip_stream *stream) {
  GUARD();
  if (device_props(dst_device) == NULL || device_props(src_device) == NULL) return ret(hipErrorInvalidDevice);
  sim_alloc_info d, s;
  if (size && (!sim_mem_find(dst, &d) || d.device != dst_device || !sim_mem_find(src, &s) || s.device != src_device))
    return ret(hipErrorInvalidValue);
  return submit_copy(dst, 1, src, 1, size, stream);
}

/* hipMemcpyPeer: synchronous (the null stream's copy, then waited for); needs no peer access. */
EXPORT hipError_t hipMemcpyPeer(void *dst, int dst_device, const void *src, int src_device, size_t size) {
  return sync_null(hipMemcpyPeerAsync(dst, dst_device, src, src_device, size, NULL));
}

static hipError_t submit_fill(void *dst, size_t pitch, size_t width, size_t height, unsigned elem, uint32_t value,
                              hip_stream *stream) {
  if (dst == NULL) return ret(hipErrorInvalidValue);
  if (width == 0 || height == 0) return hipSuccess;
  if (((uintptr_t)dst % elem) != 0 || pitch < width) return ret(hipErrorInvalidValue);
  size_t extent = pitch * (height - 1) + width;
  if (check_side(dst, extent, 1) != hipSuccess) return ret(hipErrorInvalidValue);
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  return ret(from_sim(sim_stream_submit_fill(s, dst, pitch, width, height, elem, value)));
}

EXPORT hipError_t hipMemsetD8Async(void *dst, unsigned char value, size_t count, hip_stream *stream) {
  GUARD();
  return submit_fill(dst, count, count, 1, 1, value, stream);
}

EXPORT hipError_t hipMemsetD16Async(void *dst, unsigned short value, size_t count, hip_stream *stream) {
  GUARD();
  return submit_fill(dst, count * 2, count * 2, 1, 2, value, stream);
}

EXPORT hipError_t hipMemsetD32Async(void *dst, int value, size_t count, hip_stream *stream) {
  GUARD();
  return submit_fill(dst, count * 4, count * 4, 1, 4, (uint32_t)value, stream);
}

EXPORT hipError_t hipMemsetAsync(void *dst, int value, size_t size, hip_stream *stream) {
  GUARD();
  return submit_fill(dst, size, size, 1, 1, (unsigned char)value, stream);
}

EXPORT hipError_t hipMemset(void *dst, int value, size_t size) { return sync_null(hipMemsetAsync(dst, value, size, NULL)); }

EXPORT hipError_t hipMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height, hip_stream *stream) {
  GUARD();
  return submit_fill(dst, pitch, width, height, 1, (unsigned char)value, stream);
}

/* ---- modules and kernels ------------------------------------------------------------------ */

#define MAX_KERNELS 256
#define MAX_GLOBALS 256

typedef struct hip_function hip_function;

typedef struct hip_module {
  unsigned magic;
  int device;
  unsigned char *code; /* a private copy of the selected code object */
  size_t code_size;
  sim_hostlib *host; /* NULL: no host build registered (loads; launches are refused) */
  unsigned kernel_count;
  amdgpu_kernel *kernels;
  hip_function *functions;
  pthread_mutex_t lock; /* guards globals */
  unsigned global_count;
  void *globals[MAX_GLOBALS]; /* host-build globals tracked as SIM_MEM_GLOBAL */
} hip_module;

struct hip_function {
  unsigned magic;
  hip_module *module;
  const amdgpu_kernel *kernel;
  sim_kernel_entry entry;
};

EXPORT hipError_t hipModuleUnload(hip_module *m);

/* The host build's entry of a kernel: its name with '.' spelled '_' (amdgcn.device.init). */
static sim_kernel_entry host_entry(sim_hostlib *host, const char *name) {
  char symbol[AMDGPU_NAME_MAX];
  snprintf(symbol, sizeof symbol, "%s", name);
  for (char *c = symbol; *c; ++c)
    if (*c == '.') *c = '_';
  return sim_hostlib_kernel(host, symbol);
}

/* Runs the module's amdgcn.device.init / .fini kernel (one work-item) and waits for it, as the
 * HIP runtime does at load / unload. Nothing to do without that kernel or a host build. */
static hipError_t run_init_fini(hip_module *m, const char *name) {
  for (unsigned i = 0; i < m->kernel_count; ++i) {
    if (strcmp(m->kernels[i].name, name) != 0 || m->functions[i].entry == NULL) continue;
    sim_stream *s = sim_stream_legacy(m->device);
    sim_launch_desc d = {m->functions[i].entry, {1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0};
    sim_status st = sim_launch(s, &d);
    if (st == SIM_OK) st = sim_stream_sync(s);
    return from_sim(st);
  }
  return hipSuccess;
}

EXPORT hipError_t hipModuleLoadData(hip_module **out, const void *image) {
  GUARD();
  if (out == NULL || image == NULL) return ret(hipErrorInvalidValue);
  hipError_t e = check_current();
  if (e != hipSuccess) return ret(e);
  pthread_once(&target_once, read_target);
  /* hipModuleLoadData gets no size: the image's own headers say how long it is. */
  size_t size = amdgpu_image_size(image, (size_t)1 << 31);
  if (size == 0) return ret(hipErrorInvalidImage);
  const unsigned char *code;
  size_t code_size;
  amdgpu_image_status st = amdgpu_select_code_object(image, size, &device_target, &code, &code_size);
  if (st == AMDGPU_IMAGE_WRONG_TARGET) return ret(hipErrorNoBinaryForGpu);
  if (st != AMDGPU_IMAGE_OK) return ret(hipErrorInvalidImage);
  hip_module *m = calloc(1, sizeof *m);
  amdgpu_kernel *kernels = calloc(MAX_KERNELS, sizeof *kernels);
  unsigned char *copy = malloc(code_size);
  if (m == NULL || kernels == NULL || copy == NULL) {
    free(m), free(kernels), free(copy);
    return ret(hipErrorOutOfMemory);
  }
  memcpy(copy, code, code_size);
  if (amdgpu_read_kernels(copy, code_size, kernels, MAX_KERNELS, &m->kernel_count) != AMDGPU_IMAGE_OK) {
    free(m), free(kernels), free(copy);
    return ret(hipErrorInvalidImage);
  }
  m->functions = calloc(m->kernel_count ? m->kernel_count : 1, sizeof *m->functions);
  if (m->functions == NULL) {
    free(m), free(kernels), free(copy);
    return ret(hipErrorOutOfMemory);
  }
  sim_status hs = sim_hostlib_open(copy, code_size, &m->host);
  if (hs != SIM_OK && hs != SIM_ERR_NOT_FOUND) {
    free(m->functions), free(m), free(kernels), free(copy);
    return ret(from_sim(hs));
  }
  if (hs == SIM_ERR_NOT_FOUND) m->host = NULL;
  pthread_mutex_init(&m->lock, NULL);
  m->magic = HANDLE_MAGIC_MODULE;
  m->device = current_device;
  m->code = copy;
  m->code_size = code_size;
  m->kernels = kernels;
  for (unsigned i = 0; i < m->kernel_count; ++i) {
    m->functions[i] = (hip_function){HANDLE_MAGIC_FUNCTION, m, &kernels[i],
                                     m->host ? host_entry(m->host, kernels[i].name) : NULL};
  }
  hipError_t init = run_init_fini(m, "amdgcn.device.init");
  if (init != hipSuccess) {
    m->magic = HANDLE_MAGIC_MODULE;
    hipModuleUnload(m);
    return ret(init);
  }
  *out = m;
  return hipSuccess;
}

EXPORT hipError_t hipModuleUnload(hip_module *m) {
  GUARD();
  if (m == NULL || m->magic != HANDLE_MAGIC_MODULE) return ret(hipErrorInvalidHandle);
  sim_device_wait_idle(m->device); /* kernels of the module may still be running */
  hipError_t fini = run_init_fini(m, "amdgcn.device.fini");
  m->magic = 0;
  for (unsigned i = 0; i < m->kernel_count; ++i) m->functions[i].magic = 0;
  /* Globals handed out by hipModuleGetGlobal stop being valid device memory. */
  for (unsigned i = 0; i < m->global_count; ++i) sim_mem_untrack(m->globals[i]);
  if (m->host) sim_hostlib_close(m->host); /* runs the host build's destructors */
  pthread_mutex_destroy(&m->lock);
  free(m->functions);
  free(m->kernels);
  free(m->code);
  free(m);
  return ret(fini);
}

/* HIP's runtime (clr hip_code_object.hpp, DynCO::CheckDeviceIdMatch, called by getDynFunc and
 * getDeviceVar) aborts the process when a module is used with another device current than the one
 * it was loaded on: guarantee(false, "Device mismatch from where this module is loaded"). */
static void check_module_device(const hip_module *m) {
  if (m->device != current_device) {
    fprintf(stderr, "gpusim-hip: guarantee failed: Device mismatch from where this module is loaded "
                    "(module of device %d, current device %d)\n", m->device, current_device);
    abort();
  }
}

EXPORT hipError_t hipModuleGetFunction(hip_function **out, hip_module *m, const char *name) {
  GUARD();
  if (out == NULL || name == NULL) return ret(hipErrorInvalidValue);
  if (m == NULL || m->magic != HANDLE_MAGIC_MODULE) return ret(hipErrorInvalidHandle);
  check_module_device(m);
  for (unsigned i = 0; i < m->kernel_count; ++i)
    if (strcmp(m->kernels[i].name, name) == 0) {
      *out = &m->functions[i];
      return hipSuccess;
    }
  return ret(hipErrorNotFound);
}

typedef struct symbol_lookup {
  const char *name;
  uint64_t size;
  int found;
} symbol_lookup;

static int find_object(const sim_elf_symbol *sym, void *raw) {
  symbol_lookup *l = raw;
  if ((sym->info & 0xf) == 1 /* STT_OBJECT */ && sym->shndx != 0 && strcmp(sym->name, l->name) == 0) {
    l->size = sym->size;
    l->found = 1;
    return 1;
  }
  return 0;
}

EXPORT hipError_t hipModuleGetGlobal(void **dptr, size_t *bytes, hip_module *m, const char *name) {
  GUARD();
  if (name == NULL) return ret(hipErrorInvalidValue);
  if (m == NULL || m->magic != HANDLE_MAGIC_MODULE) return ret(hipErrorInvalidHandle);
  check_module_device(m);
  sim_elf elf;
  symbol_lookup lookup = {name, 0, 0};
  if (sim_elf_open(m->code, m->code_size, &elf) != SIM_OK || sim_elf_symbols(&elf, find_object, &lookup) < 0)
    return ret(hipErrorInvalidImage);
  if (!lookup.found) return ret(hipErrorNotFound);
  if (m->host == NULL) return ret(hipErrorNotSupported); /* no host build: no storage to hand out */
  void *address = sim_hostlib_global(m->host, name);
  if (address == NULL) return ret(hipErrorNotFound);
  if (lookup.size) {
    pthread_mutex_lock(&m->lock);
    sim_alloc_info info;
    sim_status st = SIM_OK;
    if (!sim_mem_find(address, &info)) {
      st = m->global_count == MAX_GLOBALS ? SIM_ERR_OUT_OF_MEMORY
                                          : sim_mem_track(m->device, SIM_MEM_GLOBAL, address, lookup.size);
      if (st == SIM_OK) m->globals[m->global_count++] = address;
    }
    pthread_mutex_unlock(&m->lock);
    if (st != SIM_OK) return ret(from_sim(st));
  }
  if (dptr) *dptr = address;
  if (bytes) *bytes = lookup.size;
  return hipSuccess;
}

static int valid_function(const hip_function *f) {
  return f != NULL && f->magic == HANDLE_MAGIC_FUNCTION && f->module->magic == HANDLE_MAGIC_MODULE;
}

#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)1)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)2)
#define HIP_LAUNCH_PARAM_END ((void *)3)

EXPORT hipError_t hipModuleLaunchKernel(hip_function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shared, hip_stream *stream,
                                        void **params, void **extra) {
  GUARD();
  if (!valid_function(f)) return ret(hipErrorInvalidHandle);
  const amdgpu_kernel *k = f->kernel;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return ret(hipErrorInvalidValue);
  if ((uint64_t)gx * bx > UINT32_MAX || (uint64_t)gy * by > UINT32_MAX || (uint64_t)gz * bz > UINT32_MAX)
    return ret(hipErrorInvalidValue); /* HIP: total work items per dimension must be < 2^32 */
  if ((uint64_t)bx * by * bz > k->max_flat_workgroup_size) return ret(hipErrorInvalidValue);
  if ((uint64_t)shared + k->group_segment_size > LDS_LIMIT) return ret(hipErrorInvalidValue);
  /* The explicit arguments: a packed buffer (extra) or one pointer per parameter (params). */
  unsigned char packed[4096];
  const void *args = NULL;
  size_t args_size = 0;
  if (extra != NULL) {
    if (params != NULL) return ret(hipErrorInvalidValue);
    const void *buffer = NULL;
    const size_t *size = NULL;
    for (unsigned i = 0;; i += 2) {
      if (i >= 64) return ret(hipErrorInvalidValue); /* no HIP_LAUNCH_PARAM_END */
      if (extra[i] == HIP_LAUNCH_PARAM_END) break;
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
      else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) size = extra[i + 1];
      else return ret(hipErrorInvalidValue);
    }
    if (buffer == NULL || size == NULL) return ret(hipErrorInvalidValue);
    args = buffer;
    args_size = *size;
  } else if (k->arg_count) {
    if (params == NULL || k->explicit_size > sizeof packed) return ret(hipErrorInvalidValue);
    memset(packed, 0, k->explicit_size);
    for (unsigned i = 0; i < k->arg_count; ++i) {
      if (params[i] == NULL) return ret(hipErrorInvalidValue);
      memcpy(packed + k->arg_offset[i], params[i], k->arg_size[i]);
    }
    args = packed;
    args_size = k->explicit_size;
  }
  if (args_size < k->explicit_size) return ret(hipErrorInvalidValue);
  if (f->entry == NULL) return ret(hipErrorNotSupported); /* no host build of this kernel */
  sim_stream *s;
  hipError_t e = stream_of(stream, &s);
  if (e != hipSuccess) return ret(e);
  if (sim_stream_device(s) != f->module->device) return ret(hipErrorInvalidHandle); /* another device's function */
  sim_launch_desc d = {f->entry, {gx, gy, gz}, {bx, by, bz}, shared, args, args_size,
                       k->arg_offset, k->arg_count};
  return ret(from_sim(sim_launch(s, &d)));
}

/* hipModuleOccupancyMaxActiveBlocksPerMultiprocessor (HIP Runtime API, Occupancy): how many blocks
 * of block_size work-items one compute unit holds at once, limited by its work-items and its LDS
 * (the kernel's group segment plus the dynamic shared memory); 0 for a block the kernel cannot run. */
/* hipMemPrefetchAsync (HIP Runtime API, Managed Memory): "Prefetches memory to the specified
 * destination device"; dev_ptr must lie in memory of hipMallocManaged (the range inside one such
 * allocation), device a device ordinal or hipCpuDeviceId (-1, the host); otherwise
 * hipErrorInvalidValue (hipErrorInvalidDevice for an ordinal of no device). Managed memory is host
 * memory here: the migration changes nothing a program can observe, so nothing is enqueued. */
EXPORT hipError_t hipMemPrefetchAsync(const void *ptr, size_t count, int device, hip_stream *stream) {
  GUARD();
  sim_alloc_info info;
  if (count == 0 || !sim_mem_find(ptr, &info) || info.kind != SIM_MEM_MANAGED) return ret(hipErrorInvalidValue);
  if (sim_mem_check(ptr, count) != SIM_OK) return ret(hipErrorInvalidValue);
  if (device != -1 && (device < 0 || device >= sim_device_count())) return ret(hipErrorInvalidDevice);
  sim_stream *s;
  return ret(stream_of(stream, &s));
}

EXPORT hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, hip_function *f, int block_size,
                                                                     size_t shared) {
  GUARD();
  if (blocks == NULL || block_size <= 0) return ret(hipErrorInvalidValue);
  if (!valid_function(f)) return ret(hipErrorInvalidHandle);
  const sim_device_props *p = device_props(f->module->device);
  size_t lds = shared + f->kernel->group_segment_size;
  if ((unsigned)block_size > f->kernel->max_flat_workgroup_size || lds > LDS_LIMIT) {
    *blocks = 0;
    return hipSuccess;
  }
  int by_items = p->max_threads_per_multiprocessor / block_size;
  int by_lds = lds ? (int)(LDS_LIMIT / lds) : by_items;
  *blocks = by_items < by_lds ? by_items : by_lds;
  return hipSuccess;
}

/* hipModuleLaunchCooperativeKernel (HIP Runtime API, Module Management): hipModuleLaunchKernel
 * whose blocks are all resident at once (so a grid barrier can synchronise them); a device without
 * cooperative groups (hipDeviceAttributeCooperativeLaunch 0, GPUSIM_HIP_COOPERATIVE) refuses it with
 * hipErrorLaunchFailure (clr's ihipLaunchKernel_validate: `if (!device->info().cooperativeGroups_)
 * return hipErrorLaunchFailure`); a grid larger than the occupancy allows on every compute unit is
 * hipErrorCooperativeLaunchTooLarge. The arguments come as one pointer per parameter
 * (kernelParams); there is no `extra`. */
EXPORT hipError_t hipModuleLaunchCooperativeKernel(hip_function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                   unsigned by, unsigned bz, unsigned shared, hip_stream *stream,
                                                   void **params) {
  GUARD();
  if (!valid_function(f)) return ret(hipErrorInvalidHandle);
  if (!cooperative_knob(f->module->device)) return ret(hipErrorLaunchFailure);
  int per_cu = 0, cus = 0;
  hipError_t e = hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, f, (int)(bx * by * bz), shared);
  if (e != hipSuccess) return e;
  hipDeviceGetAttribute(&cus, ATTR_MULTIPROCESSOR_COUNT, f->module->device);
  if ((uint64_t)gx * gy * gz > (uint64_t)per_cu * (uint64_t)cus) return ret(hipErrorCooperativeLaunchTooLarge);
  return hipModuleLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, NULL);
}

EXPORT hipError_t hipModuleOccupancyMaxPotentialBlockSize(int *grid, int *block, hip_function *f, size_t shared,
                                                          int limit) {
  GUARD();
  if (grid == NULL || block == NULL) return ret(hipErrorInvalidValue);
  if (!valid_function(f)) return ret(hipErrorInvalidHandle);
  /* HIP computes occupancy for the current device (hip::getCurrentDevice()); a module's function
   * has code for the device its module was loaded on only. */
  if (f->module->device != current_device) return ret(hipErrorInvalidDeviceFunction);
  if (shared + f->kernel->group_segment_size > LDS_LIMIT) return ret(hipErrorInvalidValue);
  const sim_device_props *p = device_props(f->module->device);
  int best = (int)f->kernel->max_flat_workgroup_size;
  if (best > p->max_threads_per_block) best = p->max_threads_per_block;
  if (limit > 0 && best > limit) best = limit;
  int cus;
  hipDeviceGetAttribute(&cus, ATTR_MULTIPROCESSOR_COUNT, f->module->device);
  *block = best;
  *grid = cus * (p->max_threads_per_multiprocessor / best > 0 ? p->max_threads_per_multiprocessor / best : 1);
  return hipSuccess;
}
