/* cumodule.c - the simulated CUDA driver's modules, functions, launches and occupancy (see simcuda.h). */
#define _GNU_SOURCE
#include "simcuda.h"
#include "cuimage.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules -------------------------------------------------------------------------------- */

struct cufunction {
  unsigned magic; /* FUNCTION_MAGIC: tells a function from a library's kernel (culibrary.c) */
  struct cumodule *module;
  cu_kernel_info info;
  sim_kernel_entry entry;
  int max_dynamic_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int non_portable_cluster; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
};

struct cumodule {
  unsigned magic;
  int device;
  sim_hostlib *lib;
  cu_image image;
  struct cufunction *functions;
  void **global_storage; /* per global: tracked address */
  int *global_owned;     /* 1 when the front allocated it (no host build) */
};


static void module_free(struct cumodule *m) {
  for (unsigned i = 0; i < m->image.global_count; ++i) {
    if (m->global_storage[i] == NULL) continue;
    sim_mem_untrack(m->global_storage[i]);
    if (m->global_owned[i]) free(m->global_storage[i]);
  }
  sim_hostlib_close(m->lib);
  cu_image_release(&m->image);
  free(m->functions);
  free(m->global_storage);
  free(m->global_owned);
  handle_delete(BIN_MODULE, m);
}

/* Loads an image as a module of a device (no context checks: cuModuleLoadData's and the
 * libraries' shared part). */
CUresult cu_module_load_device(int device, const void *image, CUmodule *out) {
  if (out == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct cumodule *m = handle_new(BIN_MODULE, sizeof *m);
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  m->device = device;
  size_t image_size = 0;
  CUresult rc = cu_image_parse(image, cu_device_sm(), cu_max_ptx_isa(), &m->image, &image_size);
  if (rc != CUDA_SUCCESS) {
    handle_delete(BIN_MODULE, m);
    return rc;
  }
  sim_status found = sim_hostlib_open(image, image_size, &m->lib);
  if (found != SIM_OK && found != SIM_ERR_NOT_FOUND) {
    cu_image_release(&m->image);
    handle_delete(BIN_MODULE, m);
    return from_sim(found);
  }
  m->functions = calloc(m->image.kernel_count ? m->image.kernel_count : 1, sizeof *m->functions);
  m->global_storage = calloc(m->image.global_count ? m->image.global_count : 1, sizeof *m->global_storage);
  m->global_owned = calloc(m->image.global_count ? m->image.global_count : 1, sizeof *m->global_owned);
  if (!m->functions || !m->global_storage || !m->global_owned) {
    module_free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (unsigned i = 0; i < m->image.kernel_count; ++i) {
    struct cufunction *f = &m->functions[i];
    f->magic = FUNCTION_MAGIC;
    f->module = m;
    f->info = m->image.kernels[i];
    f->entry = m->lib ? sim_hostlib_kernel(m->lib, f->info.name) : NULL;
    f->max_dynamic_shared = (int)(sim_device(m->device)->shared_per_block - f->info.static_shared);
  }
  for (unsigned i = 0; i < m->image.global_count; ++i) {
    const cu_global_info *g = &m->image.globals[i];
    if (g->size == 0) continue;
    void *address = m->lib ? sim_hostlib_global(m->lib, g->name) : NULL;
    if (address == NULL) {
      address = calloc(1, g->size);
      if (address == NULL) {
        module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (g->init) memcpy(address, g->init, g->size);
      m->global_owned[i] = 1;
    }
    if (sim_mem_track(m->device, SIM_MEM_GLOBAL, address, g->size) != SIM_OK) {
      if (m->global_owned[i]) free(address);
      module_free(m);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    m->global_storage[i] = address;
  }
  m->magic = MODULE_MAGIC;
  *out = m;
  return CUDA_SUCCESS;
}

static CUresult module_load(CUmodule *out, const void *image) {
  REQUIRE_CTX(ctx);
  return cu_module_load_device(ctx->device, image, out);
}

EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) { return module_load(out, image); }
enum {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_NUM_OPTIONS_MODELLED = 40, /* option ids at or above are unknown (INVALID_VALUE) */
};

/* Writes text into a JIT log buffer option pair (capped at its size, NUL included) and stores
 * the bytes written back into the size option's value, as the driver does ("OUT: Amount of log
 * buffer filled with messages"). */
static void jit_log_out(unsigned n, const int *options, void **values, int buffer_option, int size_option, const char *text) {
  char *buffer = NULL;
  int size_at = -1;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == buffer_option) buffer = values[i];
    if (options[i] == size_option) size_at = (int)i;
  }
  if (buffer == NULL || size_at < 0) return;
  size_t capacity = (size_t)(unsigned)(uintptr_t)values[size_at];
  if (capacity == 0) return;
  size_t len = strlen(text);
  if (len >= capacity) len = capacity - 1;
  memcpy(buffer, text, len);
  buffer[len] = '\0';
  values[size_at] = (void *)(uintptr_t)(len ? len + 1 : 0);
}

CUresult cu_module_load_options(int device, CUmodule *out, const void *image, unsigned n, int *options, void **values) {
  if (n > 0 && (options == NULL || values == NULL)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (options[i] < 0 || options[i] >= CU_JIT_NUM_OPTIONS_MODELLED) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = cu_module_load_device(device, image, out);
  const char *log = rc == CUDA_SUCCESS ? "" : cu_image_jit_log();
  jit_log_out(n, options, values, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log);
  jit_log_out(n, options, values, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
  return rc;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n, int *options, void **values) {
  REQUIRE_CTX(ctx);
  return cu_module_load_options(ctx->device, out, image, n, options, values);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  REQUIRE_INIT();
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  sim_device_wait_idle(m->device); /* kernels of the module may still be running */
  module_free(m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  REQUIRE_CTX(ctx);
  if (out == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->image.kernel_count; ++i)
    if (strcmp(m->functions[i].info.name, name) == 0) {
      *out = &m->functions[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  REQUIRE_CTX(ctx);
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->image.global_count; ++i)
    if (strcmp(m->image.globals[i].name, name) == 0 && m->global_storage[i] != NULL) {
      if (dptr) *dptr = (CUdeviceptr)(uintptr_t)m->global_storage[i];
      if (bytes) *bytes = m->image.globals[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

/* A CUfunction, or a library's CUkernel cast to one (the driver accepts those wherever it takes
 * a function, in the current context: "the context to use ... will be the current context"),
 * resolved to the function of the given device (-1: functions only). */
static CUresult resolve_function(CUfunction *f, int device) {
  if (*f == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if ((*f)->magic == FUNCTION_MAGIC)
    return (*f)->module != NULL && (*f)->module->magic == MODULE_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  if (device < 0) return CUDA_ERROR_INVALID_HANDLE;
  return cu_kernel_function((void *)*f, device, f);
}

#define REQUIRE_FUNC(f)                                        \
  do {                                                         \
    CUresult rf_ = resolve_function(&(f), ctx->device);        \
    if (rf_ != CUDA_SUCCESS) return rf_;                       \
  } while (0)

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (index >= f->info.param_count) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = f->info.params[index].offset;
  if (size) *size = f->info.params[index].size;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
  REQUIRE_INIT();
  CUresult rc = resolve_function(&f, -1);
  if (rc != CUDA_SUCCESS) return rc;
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  *name = f->info.name;
  return CUDA_SUCCESS;
}

/* CUfunction_attribute values (cuda.h) of one function, no context checks. */
CUresult cu_func_attribute(CUfunction f, int attribute, int *value) {
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case 0: *value = sim_device(f->module->device)->max_threads_per_block; break;
  case 1: *value = (int)f->info.static_shared; break;
  case 2: *value = 0; break;
  case 3: *value = 0; break;
  case 4: *value = (int)f->info.registers; break;
  case 5: *value = f->module->image.ptx_version ? (int)f->module->image.ptx_version : cu_device_sm(); break;
  case 6: *value = (int)f->module->image.sm; break;
  case 7: *value = 0; break;
  case 8: *value = f->max_dynamic_shared; break;
  case 9: *value = -1; break;
  case 10: *value = 0; break; /* CLUSTER_SIZE_MUST_BE_SET */
  case 11: case 12: case 13: *value = 0; break; /* REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH: none */
  case 14: *value = f->non_portable_cluster; break; /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
  case 15: *value = 0; break; /* CLUSTER_SCHEDULING_POLICY_PREFERENCE: default */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attribute, CUfunction f) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  return cu_func_attribute(f, attribute, value);
}

/* Sets a CUfunction_attribute of one function, no context checks. */
CUresult cu_func_set_attribute(CUfunction f, int attribute, int value) {
  if (attribute == 14) {
    if (value != 0 && value != 1) return CUDA_ERROR_INVALID_VALUE;
    f->non_portable_cluster = value;
    return CUDA_SUCCESS;
  }
  if (attribute == 8) {
    size_t limit = sim_device(f->module->device)->shared_per_block_optin - f->info.static_shared;
    if (value < 0 || (size_t)value > limit) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  }
  if (attribute == 9) return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  return cu_func_set_attribute(f, attribute, value);
}

/* The parameter layout of a function, no context checks. */
CUresult cu_func_param(CUfunction f, size_t index, size_t *offset, size_t *size) {
  if (index >= f->info.param_count) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = f->info.params[index].offset;
  if (size) *size = f->info.params[index].size;
  return CUDA_SUCCESS;
}

/* cuModuleGetFunctionCount / cuModuleEnumerateFunctions (CUDA 12.4; Driver API, Module
 * Management): how many functions a module holds, and the first numFunctions of them. */
EXPORT CUresult cuModuleGetFunctionCount(unsigned *count, CUmodule m) {
  REQUIRE_INIT();
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  *count = m->image.kernel_count;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned n, CUmodule m) {
  REQUIRE_INIT();
  if (functions == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < n && i < m->image.kernel_count; ++i) functions[i] = &m->functions[i];
  return CUDA_SUCCESS;
}

const char *cu_func_name(CUfunction f) { return f->info.name; }
unsigned cu_module_kernel_count(CUmodule m) { return m->image.kernel_count; }
CUfunction cu_module_kernel(CUmodule m, unsigned index) { return &m->functions[index]; }

#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (f->module->device != ctx->device) return CUDA_ERROR_INVALID_HANDLE;
  if (params != NULL && extra != NULL) return CUDA_ERROR_INVALID_VALUE;
  const cu_kernel_info *k = &f->info;
  const void *buffer = NULL;
  size_t buffer_size = 0;
  unsigned char packed[4096];
  if (extra != NULL) {
    int have_pointer = 0, have_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (i > 64) return CUDA_ERROR_INVALID_VALUE;
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
        have_pointer = 1;
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        if (extra[i + 1] == NULL) return CUDA_ERROR_INVALID_VALUE;
        buffer_size = *(size_t *)extra[i + 1];
        have_size = 1;
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (!have_pointer || !have_size || (buffer == NULL && buffer_size != 0)) return CUDA_ERROR_INVALID_VALUE;
    /* The buffer's size must be the parameters' extent (the last one's offset + size, no tail
     * padding): smaller is INVALID_VALUE, larger is "too many resources requested for launch"
     * (llvm-project #143323, fixed in liboffload by #172249). */
    if (buffer_size < k->param_bytes) return CUDA_ERROR_INVALID_VALUE;
    if (buffer_size > k->param_bytes) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  } else if (k->param_count > 0) {
    if (params == NULL || k->param_bytes > sizeof packed) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < k->param_count; ++i) {
      if (params[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
      memcpy(packed + k->params[i].offset, params[i], k->params[i].size);
    }
    buffer = packed;
    buffer_size = k->param_bytes;
  }
  const sim_device_props *p = sim_device(ctx->device);
  if (shared > (unsigned)f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t)bx * by * bz * (k->registers ? k->registers : 1) > (uint64_t)p->registers_per_block)
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (f->entry == NULL) {
    fprintf(stderr, "gpusim: kernel %s has no registered host build (GPUSIM_KERNELS); launch refused\n", k->name);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc != CUDA_SUCCESS) return rc;
  /* "A kernel launch will fail if it is issued to a stream that is not associated to the current
   * device" (Programming Guide, Stream and Event Behavior). */
  if (owner != ctx) return CUDA_ERROR_INVALID_HANDLE;
  size_t offsets[CU_MAX_PARAMS];
  for (unsigned i = 0; i < k->param_count; ++i) offsets[i] = k->params[i].offset;
  sim_launch_desc desc = {f->entry, {gx, gy, gz}, {bx, by, bz}, shared, buffer, buffer_size, offsets, k->param_count};
  return from_sim(sim_launch(s, &desc));
}

/* Occupancy as NVIDIA's cuda_occupancy.h computes it (cudaOccMaxBlocksPerSMSmemLimit): a block
 * asking for more dynamic shared memory than the function's current
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB less its static shared memory until
 * cuFuncSetAttribute raises it) fits zero blocks ("If result->activeBlocksPerMultiprocessor is 0,
 * then the given parameter combination cannot run on the device"), as such a launch is refused. */
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size, size_t dyn) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (blocks == NULL || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dyn > (size_t)f->max_dynamic_shared) {
    *blocks = 0;
    return CUDA_SUCCESS;
  }
  const sim_device_props *p = sim_device(f->module->device);
  int warps = (block_size + p->warp_size - 1) / p->warp_size;
  int by_threads = p->max_threads_per_multiprocessor / (warps * p->warp_size);
  int regs = (int)(f->info.registers ? f->info.registers : 1);
  int by_regs = 65536 / (regs * warps * p->warp_size);
  size_t shared = f->info.static_shared + dyn;
  int by_shared = shared ? (int)(p->shared_per_multiprocessor / shared) : 32;
  int n = by_threads < by_regs ? by_threads : by_regs;
  if (by_shared < n) n = by_shared;
  if (n > 32) n = 32;
  *blocks = n < 0 ? 0 : n;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize to_dyn,
                                                 size_t dyn, int limit) {
  REQUIRE_CTX(ctx);
  REQUIRE_FUNC(f);
  if (min_grid == NULL || block == NULL) return CUDA_ERROR_INVALID_VALUE;
  const sim_device_props *p = sim_device(f->module->device);
  int max = p->max_threads_per_block;
  if (limit > 0 && limit < max) max = limit;
  int best_block = 0, best_threads = -1, best_blocks = 0;
  for (int b = max - max % p->warp_size; b >= p->warp_size; b -= p->warp_size) {
    int n = 0;
    size_t need = to_dyn ? to_dyn(b) : dyn;
    if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, b, need) != CUDA_SUCCESS) continue;
    if (n * b > best_threads) {
      best_threads = n * b;
      best_block = b;
      best_blocks = n;
    }
  }
  if (best_threads <= 0) {
    *block = 0;
    *min_grid = 0;
    return CUDA_SUCCESS;
  }
  *block = best_block;
  *min_grid = best_blocks * p->multiprocessors;
  return CUDA_SUCCESS;
}
