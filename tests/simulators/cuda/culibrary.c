/* culibrary.c - the simulated CUDA driver's context-independent loading (see simcuda.h):
 * cuLibraryLoadData / Unload, a library's kernels (CUkernel), its module and globals per
 * context, and the kernel queries (attributes per device, name, parameter layout).
 *
 * Modelled (CUDA Driver API, "Library Management"): a library is parsed (and its JIT log
 * written) when loaded, on the current context's device or, with none current, device 0; it is
 * loaded into another device lazily, when a kernel is first needed there (a launch, a function, an
 * attribute), as with CUDA_MODULE_LOADING=LAZY. A CUkernel is accepted wherever a CUfunction is
 * (cast to one, the current context's function is meant). Unloading makes the library's and its
 * kernels' handles invalid. Not modelled: unified functions and data
 * (CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, cuLibraryGetUnifiedFunction), managed
 * variables (cuLibraryGetManaged), cuLibraryLoadFromFile.
 */
#define _GNU_SOURCE
#include "simcuda.h"
#include "cuimage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LIBRARY_MAGIC 0x4c494252u

struct cukernel {
  unsigned magic; /* KERNEL_MAGIC: first, as a CUfunction's FUNCTION_MAGIC */
  struct culibrary *library;
  unsigned index; /* the kernel's position in every module of the image */
};

struct culibrary {
  unsigned magic;
  pthread_mutex_t lock;
  unsigned char *image; /* an own copy (modules of other devices are loaded from it later) */
  CUmodule modules[8];  /* per device, loaded on first use */
  int first_device;     /* the device it was parsed on */
  struct cukernel *kernels;
  unsigned kernel_count;
};

enum { LIBRARY_UNIFIED_TABLE = 0, LIBRARY_BINARY_IS_PRESERVED = 1 };

static CUresult library_module(struct culibrary *lib, int device, CUmodule *out) {
  pthread_mutex_lock(&lib->lock);
  CUresult rc = CUDA_SUCCESS;
  if (lib->modules[device] == NULL) rc = cu_module_load_device(device, lib->image, &lib->modules[device]);
  *out = lib->modules[device];
  pthread_mutex_unlock(&lib->lock);
  return rc;
}

CUresult cu_kernel_function(void *handle, int device, CUfunction *out) {
  struct cukernel *k = handle;
  if (k == NULL || k->magic != KERNEL_MAGIC || k->library->magic != LIBRARY_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  CUmodule m;
  CUresult rc = library_module(k->library, device, &m);
  if (rc == CUDA_SUCCESS) *out = cu_module_kernel(m, k->index);
  return rc;
}

#define REQUIRE_KERNEL(k) \
  do { if ((k) == NULL || (k)->magic != KERNEL_MAGIC || (k)->library->magic != LIBRARY_MAGIC) return CUDA_ERROR_INVALID_HANDLE; } while (0)
#define REQUIRE_LIBRARY(l) \
  do { if ((l) == NULL || (l)->magic != LIBRARY_MAGIC) return CUDA_ERROR_INVALID_HANDLE; } while (0)

EXPORT CUresult cuLibraryLoadData(CUlibrary *out, const void *code, int *jit_options, void **jit_values, unsigned n_jit,
                                  int *lib_options, void **lib_values, unsigned n_lib) {
  REQUIRE_INIT();
  if (out == NULL || code == NULL || (n_lib > 0 && (lib_options == NULL || lib_values == NULL))) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n_lib; ++i) {
    if (lib_options[i] == LIBRARY_UNIFIED_TABLE) return CUDA_ERROR_NOT_SUPPORTED; /* not modelled */
    if (lib_options[i] != LIBRARY_BINARY_IS_PRESERVED) return CUDA_ERROR_INVALID_VALUE;
  }
  struct cuctx *ctx;
  int device = cu_current(&ctx) == CUDA_SUCCESS ? ctx->device : 0;
  CUmodule first;
  CUresult rc = cu_module_load_options(device, &first, code, n_jit, jit_options, jit_values);
  if (rc != CUDA_SUCCESS) return rc;
  cu_image parsed;
  size_t extent = 0;
  if (cu_image_parse(code, cu_device_sm(), cu_max_ptx_isa(), &parsed, &extent) == CUDA_SUCCESS) cu_image_release(&parsed);
  struct culibrary *lib = calloc(1, sizeof *lib);
  unsigned count = cu_module_kernel_count(first);
  if (lib != NULL) {
    lib->image = calloc(1, extent + 1); /* + a NUL: PTX text stays terminated */
    lib->kernels = calloc(count ? count : 1, sizeof *lib->kernels);
  }
  if (lib == NULL || lib->image == NULL || lib->kernels == NULL) {
    if (lib) free(lib->image), free(lib->kernels);
    free(lib);
    cuModuleUnload(first);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(lib->image, code, extent);
  pthread_mutex_init(&lib->lock, NULL);
  lib->modules[device] = first;
  lib->first_device = device;
  lib->kernel_count = count;
  for (unsigned i = 0; i < count; ++i) lib->kernels[i] = (struct cukernel){KERNEL_MAGIC, lib, i};
  lib->magic = LIBRARY_MAGIC;
  *out = lib;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib) {
  REQUIRE_INIT();
  REQUIRE_LIBRARY(lib);
  pthread_mutex_lock(&lib->lock);
  lib->magic = 0;
  for (unsigned i = 0; i < lib->kernel_count; ++i) lib->kernels[i].magic = 0;
  for (int d = 0; d < 8; ++d)
    if (lib->modules[d] != NULL) cuModuleUnload(lib->modules[d]);
  free(lib->image);
  lib->image = NULL;
  pthread_mutex_unlock(&lib->lock);
  /* the structs stay (never reused): a stale library or kernel handle reads INVALID_HANDLE */
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary lib, const char *name) {
  REQUIRE_INIT();
  if (out == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_LIBRARY(lib);
  CUmodule m = lib->modules[lib->first_device];
  for (unsigned i = 0; i < lib->kernel_count; ++i)
    if (strcmp(cu_func_name(cu_module_kernel(m, i)), name) == 0) {
      *out = &lib->kernels[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib) {
  REQUIRE_INIT();
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_LIBRARY(lib);
  *count = lib->kernel_count;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n, CUlibrary lib) {
  REQUIRE_INIT();
  if (kernels == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_LIBRARY(lib);
  for (unsigned i = 0; i < n && i < lib->kernel_count; ++i) kernels[i] = &lib->kernels[i];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetModule(CUmodule *out, CUlibrary lib) {
  REQUIRE_CTX(ctx);
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_LIBRARY(lib);
  return library_module(lib, ctx->device, out);
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name) {
  REQUIRE_CTX(ctx);
  REQUIRE_LIBRARY(lib);
  CUmodule m;
  CUresult rc = library_module(lib, ctx->device, &m);
  return rc != CUDA_SUCCESS ? rc : cuModuleGetGlobal_v2(dptr, bytes, m, name);
}

EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel k) {
  REQUIRE_CTX(ctx);
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  return cu_kernel_function(k, ctx->device, out);
}

EXPORT CUresult cuKernelGetLibrary(CUlibrary *out, CUkernel k) {
  REQUIRE_INIT();
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_KERNEL(k);
  *out = k->library;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k) {
  REQUIRE_INIT();
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  REQUIRE_KERNEL(k);
  *name = cu_func_name(cu_module_kernel(k->library->modules[k->library->first_device], k->index));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t *offset, size_t *size) {
  REQUIRE_INIT();
  REQUIRE_KERNEL(k);
  return cu_func_param(cu_module_kernel(k->library->modules[k->library->first_device], k->index), index, offset, size);
}

/* Attributes of the kernel's function on device dev (loaded there if need be). */
EXPORT CUresult cuKernelGetAttribute(int *value, int attribute, CUkernel k, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  CUfunction f;
  CUresult rc = cu_kernel_function(k, dev, &f);
  return rc != CUDA_SUCCESS ? rc : cu_func_attribute(f, attribute, value);
}

EXPORT CUresult cuKernelSetAttribute(int attribute, int value, CUkernel k, CUdevice dev) {
  REQUIRE_DEVICE(dev);
  CUfunction f;
  CUresult rc = cu_kernel_function(k, dev, &f);
  return rc != CUDA_SUCCESS ? rc : cu_func_set_attribute(f, attribute, value);
}
