/* cumem.c - the simulated CUDA driver's memory: allocations, registered memory, copies, memsets (see simcuda.h). */
#define _GNU_SOURCE
#include "simcuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory -------------------------------------------------------------------------------- */


EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  REQUIRE_CTX(ctx);
  if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  *total = sim_device(ctx->device)->total_memory;
  *free_bytes = *total - sim_mem_used(ctx->device);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  REQUIRE_CTX(ctx);
  if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  CUresult rc = from_sim(sim_mem_alloc(ctx->device, SIM_MEM_DEVICE, size, &p));
  if (rc != CUDA_SUCCESS) return rc;
  unsigned access = sim_device_access_begin(); /* device memory: the driver's own write */
  memset(p, 0xA5, size); /* cuMemAlloc does not clear memory: make reads of it visible */
  sim_device_access_end(access);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return rc;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size) {
  REQUIRE_CTX(ctx);
  if (pp == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return from_sim(sim_mem_alloc(ctx->device, SIM_MEM_HOST, size, pp));
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (dptr == NULL || size == 0 || (flags != 1 && flags != 2)) return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  CUresult rc = from_sim(sim_mem_alloc(ctx->device, SIM_MEM_MANAGED, size, &p));
  if (rc == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  REQUIRE_CTX(ctx);
  if (dptr == 0) return CUDA_SUCCESS;
  if (cu_pool_free_pending(dptr)) return CUDA_ERROR_INVALID_VALUE; /* cuMemFreeAsync has it already */
  /* cuMemFree synchronises with the device (as the driver does for non-async frees). */
  sim_alloc_info info;
  if (sim_mem_find((void *)(uintptr_t)dptr, &info)) sim_device_wait_idle(info.device);
  CUresult rc = from_sim(sim_mem_free((void *)(uintptr_t)dptr, KIND(SIM_MEM_DEVICE) | KIND(SIM_MEM_MANAGED)));
  if (rc == CUDA_SUCCESS) cu_pool_forget(dptr); /* a stream-ordered allocation freed synchronously */
  return rc;
}

EXPORT CUresult cuMemFreeHost(void *p) {
  REQUIRE_CTX(ctx);
  sim_alloc_info info;
  if (sim_mem_find(p, &info)) sim_device_wait_idle(info.device);
  return from_sim(sim_mem_free(p, KIND(SIM_MEM_HOST)));
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (p == NULL || size == 0 || (flags & ~0xfu)) return CUDA_ERROR_INVALID_VALUE;
  sim_status status = sim_mem_track(ctx->device, SIM_MEM_REGISTERED, p, size);
  return status == SIM_ERR_INVALID_VALUE ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : from_sim(status);
}

EXPORT CUresult cuMemHostUnregister(void *p) {
  REQUIRE_CTX(ctx);
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  return sim_mem_untrack(p) == SIM_OK ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr) {
  REQUIRE_CTX(ctx);
  sim_alloc_info info;
  if (!sim_mem_find((void *)(uintptr_t)dptr, &info)) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = (CUdeviceptr)(uintptr_t)info.base;
  if (size) *size = info.size;
  return CUDA_SUCCESS;
}


/* ---- copies and fills ------------------------------------------------------------------------- */

typedef struct copy_op {
  void *dst;
  const void *src;
  size_t size;
  void *staging; /* owned copy of a pageable source */
} copy_op;

static sim_status copy_run(void *raw) {
  copy_op *c = raw;
  sim_status use = sim_use_check(c->dst, c->size);
  if (use == SIM_OK && !c->staging) use = sim_use_check(c->src, c->size);
  if (use != SIM_OK) return use; /* stream-ordered memory not yet reached by its stream (cupool.c) */
  memmove(c->dst, c->staging ? c->staging : c->src, c->size);
  return SIM_OK;
}

static void copy_free(void *raw) {
  copy_op *c = raw;
  free(c->staging);
  free(c);
}

/* A device-side range: inside one tracked allocation (device, managed, pinned, global). */
static CUresult check_device_range(const void *p, size_t size) {
  return sim_mem_check(p, size) == SIM_OK ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A host-side range: pageable (untracked, returns 0) or pinned/managed (tracked: must fit,
 * returns 1). -1 when it starts inside a tracked allocation but runs past its end. */
static int host_range_kind(const void *p, size_t size) {
  sim_alloc_info info;
  if (!sim_mem_find(p, &info)) return 0;
  return sim_mem_check(p, size) == SIM_OK ? 1 : -1;
}

/* Device memory for the synchronisation rules: what only the device reaches (cuMemAlloc
 * memory, module globals) and managed memory; pinned host memory is host memory. */
static int is_device_kind(sim_mem_kind kind) {
  return kind == SIM_MEM_DEVICE || kind == SIM_MEM_GLOBAL || kind == SIM_MEM_MANAGED;
}

/* cuMemPrefetchAsync (CUDA 13.0; cuMemPrefetchAsync_v2 since 12.2), Unified Memory: "devPtr must
 * point to memory allocated via cuMemAllocManaged or declared via __managed__ variables" (the
 * range inside one such allocation); the location is a device (CU_MEM_LOCATION_TYPE_DEVICE, id a
 * device ordinal) or the host (CU_MEM_LOCATION_TYPE_HOST and its NUMA forms); flags are "reserved
 * for future use and must be 0"; anything else is CUDA_ERROR_INVALID_VALUE, a stream of another
 * context CUDA_ERROR_INVALID_HANDLE. The destination GPU "must have non-zero value for the device
 * attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS. Additionally, hStream must be associated
 * with a device that has a non-zero value for" it: else CUDA_ERROR_INVALID_DEVICE (a GPU on
 * Windows/WSL or an older one; GPUSIM_CUDA_MANAGED_CONCURRENT). Managed memory is host memory here:
 * the migration changes nothing a program can observe, so nothing is enqueued. */
enum { MEM_LOCATION_DEVICE = 1, MEM_LOCATION_HOST = 2, MEM_LOCATION_HOST_NUMA_CURRENT = 4 };

EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation location, unsigned flags,
                                      CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_alloc_info info;
  const void *p = (const void *)(uintptr_t)ptr;
  if (flags != 0 || count == 0 || !sim_mem_find(p, &info) || info.kind != SIM_MEM_MANAGED) return CUDA_ERROR_INVALID_VALUE;
  if (sim_mem_check(p, count) != SIM_OK) return CUDA_ERROR_INVALID_VALUE;
  if (location.type == MEM_LOCATION_DEVICE) {
    if (location.id < 0 || location.id >= sim_device_count()) return CUDA_ERROR_INVALID_DEVICE;
    if (!cu_concurrent_managed(location.id)) return CUDA_ERROR_INVALID_DEVICE;
  } else if (location.type < MEM_LOCATION_HOST || location.type > MEM_LOCATION_HOST_NUMA_CURRENT) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc == CUDA_SUCCESS && !cu_concurrent_managed(owner->device)) return CUDA_ERROR_INVALID_DEVICE;
  return rc;
}

enum { DIR_HTOD, DIR_DTOH, DIR_DTOD };

static CUresult copy_enqueue(struct cuctx *ctx, void *dst, const void *src, size_t size, CUstream stream, int dir,
                             int synchronous) {
  if (size == 0) return CUDA_SUCCESS;
  if (dst == NULL || src == NULL) return CUDA_ERROR_INVALID_VALUE;
  int src_pinned = 1, dst_pinned = 1;
  if (dir == DIR_HTOD || dir == DIR_DTOD) {
    if (check_device_range(dst, size) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  }
  if (dir == DIR_DTOH || dir == DIR_DTOD) {
    if (check_device_range(src, size) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  }
  if (dir == DIR_HTOD && (src_pinned = host_range_kind(src, size)) < 0) return CUDA_ERROR_INVALID_VALUE;
  if (dir == DIR_DTOH && (dst_pinned = host_range_kind(dst, size)) < 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  copy_op *c = malloc(sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (copy_op){dst, src, size, NULL};
  if (!src_pinned) {
    /* Pageable source: the driver waits for the stream, then stages the data before
     * returning; the caller may reuse its buffer at once. */
    sim_stream_wait_idle(s);
    c->staging = malloc(size);
    if (c->staging == NULL) {
      free(c);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(c->staging, src, size);
  }
  rc = from_sim(sim_stream_submit(s, copy_run, c, copy_free));
  if (rc != CUDA_SUCCESS) {
    copy_free(c);
    return rc;
  }
  /* "API synchronization behavior", synchronous copies: from pageable host memory the call
   * returns once the data is staged (above), the DMA may still be pending; from pinned host
   * memory it is synchronous; to host memory it returns once the copy has completed; device to
   * device does no host-side synchronisation at all. Asynchronous copies into pageable memory
   * also return once done ("might be synchronous"). */
  int wait = dir == DIR_DTOH ? (synchronous || !dst_pinned) : dir == DIR_HTOD ? (synchronous && src_pinned) : 0;
  if (wait) sim_stream_wait_idle(s);
  return CUDA_SUCCESS;
}


EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), src, n, stream, DIR_HTOD, 0);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, dst, PTR(src), n, stream, DIR_DTOH, 0);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, DIR_DTOD, 0);
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), src, n, NULL, DIR_HTOD, 1);
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, dst, PTR(src), n, NULL, DIR_DTOH, 1);
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  REQUIRE_CTX(ctx);
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, NULL, DIR_DTOD, 1);
}

/* Unified copies (the kind inferred from the pointers): each side is device memory when it lies
 * in device or managed memory, host memory otherwise (pinned or pageable). */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  sim_alloc_info d, s;
  int dst_dev = sim_mem_find(PTR(dst), &d) && is_device_kind(d.kind);
  int src_dev = sim_mem_find(PTR(src), &s) && is_device_kind(s.kind);
  int dir = dst_dev && src_dev ? DIR_DTOD : dst_dev ? DIR_HTOD : src_dev ? DIR_DTOH : -1;
  if (dir < 0) {
    /* host to host: fully synchronous, in stream order */
    if (n == 0) return CUDA_SUCCESS;
    sim_stream *q;
    CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &q);
    if (rc != CUDA_SUCCESS) return rc;
    sim_stream_wait_idle(q);
    memmove(PTR(dst), PTR(src), n);
    return CUDA_SUCCESS;
  }
  return copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, dir, synchronous);
}
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  return unified_copy(dst, src, n, stream, 0);
}
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return unified_copy(dst, src, n, NULL, 1); }

static CUresult peer_copy(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                          CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  if (dst_ctx == NULL || src_ctx == NULL || dst_ctx->refs <= 0 || src_ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_alloc_info d, s;
  if (n == 0) return CUDA_SUCCESS;
  if (!sim_mem_find(PTR(dst), &d) || !sim_mem_find(PTR(src), &s)) return CUDA_ERROR_INVALID_VALUE;
  if (d.device != dst_ctx->device || s.device != src_ctx->device) return CUDA_ERROR_INVALID_VALUE;
  /* No peer access needed (the driver stages the copy). cuMemcpyPeer is serialised with all
   * pending and future work of the current, source and destination contexts; modelled as
   * fully synchronous ("exhibits synchronous behavior for most use cases"). */
  if (synchronous) {
    sim_device_wait_idle(ctx->device);
    sim_device_wait_idle(src_ctx->device);
    sim_device_wait_idle(dst_ctx->device);
  }
  CUresult rc = copy_enqueue(ctx, PTR(dst), PTR(src), n, stream, DIR_DTOD, synchronous);
  if (rc == CUDA_SUCCESS && synchronous) sim_stream_wait_idle(sim_stream_legacy(ctx->device));
  return rc;
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                  CUstream stream) {
  return peer_copy(dst, dst_ctx, src, src_ctx, n, stream, 0);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n) {
  return peer_copy(dst, dst_ctx, src, src_ctx, n, NULL, 1);
}

static CUresult fill(CUdeviceptr dst, size_t pitch, uint32_t value, size_t width, size_t height, unsigned elem,
                     CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (dst % elem != 0 || (height > 1 && (pitch < width * elem))) return CUDA_ERROR_INVALID_VALUE;
  size_t extent = (height - 1) * pitch + width * elem;
  if (check_device_range(PTR(dst), extent) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  /* "API synchronization behavior": the synchronous memsets are asynchronous with respect to
   * the host except when the target is pinned host memory or a Unified Memory region. */
  sim_alloc_info target;
  sim_mem_find(PTR(dst), &target);
  synchronous = synchronous && (target.kind == SIM_MEM_HOST || target.kind == SIM_MEM_REGISTERED ||
                                target.kind == SIM_MEM_MANAGED);
  sim_stream *s;
  CUresult rc = resolve_stream(synchronous ? NULL : stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  rc = from_sim(sim_stream_submit_fill(s, PTR(dst), height > 1 ? pitch : width * elem, width * elem, height, elem, value));
  if (rc != CUDA_SUCCESS) return rc;
  if (synchronous) sim_stream_wait_idle(s);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return fill(d, 0, v, n, 1, 1, NULL, 1); }
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return fill(d, 0, v, n, 1, 2, NULL, 1); }
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { return fill(d, 0, v, n, 1, 4, NULL, 1); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 1, s, 0); }
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 2, s, 0); }
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { return fill(d, 0, v, n, 1, 4, s, 0); }
EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 1, NULL, 1);
}
EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 2, NULL, 1);
}
EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  return fill(d, pitch, v, w, h, 4, NULL, 1);
}
EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 1, s, 0);
}
EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 2, s, 0);
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s) {
  return fill(d, pitch, v, w, h, 4, s, 0);
}

/* cuMemcpy3D / cuMemcpy3DAsync ("Memory Management", CUDA_MEMCPY3D): WidthInBytes x Height x
 * Depth bytes between two pitched regions. Each side is CU_MEMORYTYPE_HOST (srcHost/dstHost),
 * DEVICE (srcDevice/dstDevice) or UNIFIED (srcDevice/dstDevice, the kind inferred from the
 * pointer); CUDA arrays (CU_MEMORYTYPE_ARRAY) are not simulated (CUDA_ERROR_NOT_SUPPORTED).
 * The pitch must hold the row: Pitch >= XInBytes + WidthInBytes, and for a copy of more than one
 * slice Height >= Y + Height; every row's range is checked (device rows inside one allocation,
 * host rows mapped) before anything is queued, and the rows then run in stream order. */
enum { MEMTYPE_HOST = 1, MEMTYPE_DEVICE = 2, MEMTYPE_ARRAY = 3, MEMTYPE_UNIFIED = 4 };

static CUresult rect_side(int type, const void *host, CUdeviceptr device, int *is_device, char **base) {
  sim_alloc_info info;
  switch (type) {
  case MEMTYPE_HOST: *is_device = 0; *base = (char *)host; return CUDA_SUCCESS;
  case MEMTYPE_DEVICE: *is_device = 1; *base = PTR(device); return CUDA_SUCCESS;
  case MEMTYPE_UNIFIED:
    *is_device = sim_mem_find(PTR(device), &info) && is_device_kind(info.kind);
    *base = PTR(device);
    return CUDA_SUCCESS;
  case MEMTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult rect_copy(const CUDA_MEMCPY3D *p, CUstream stream, int synchronous) {
  REQUIRE_CTX(ctx);
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcLOD || p->dstLOD) return CUDA_ERROR_INVALID_VALUE;
  int src_dev, dst_dev;
  char *src, *dst;
  CUresult rc = rect_side(p->srcMemoryType, p->srcHost, p->srcDevice, &src_dev, &src);
  if (rc == CUDA_SUCCESS) rc = rect_side(p->dstMemoryType, p->dstHost, p->dstDevice, &dst_dev, &dst);
  if (rc != CUDA_SUCCESS) return rc;
  size_t w = p->WidthInBytes, h = p->Height, depth = p->Depth;
  if (w == 0 || h == 0 || depth == 0) return CUDA_SUCCESS;
  if (src == NULL || dst == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcPitch < p->srcXInBytes + w || p->dstPitch < p->dstXInBytes + w) return CUDA_ERROR_INVALID_VALUE;
  if (depth > 1 && (p->srcHeight < p->srcY + h || p->dstHeight < p->dstY + h)) return CUDA_ERROR_INVALID_VALUE;
  size_t src_slab = p->srcPitch * p->srcHeight, dst_slab = p->dstPitch * p->dstHeight;
  int dir = dst_dev && src_dev ? DIR_DTOD : dst_dev ? DIR_HTOD : src_dev ? DIR_DTOH : -1;
  for (int pass = 0; pass < 2; pass++) { /* pass 0 checks every row, pass 1 queues them */
    for (size_t z = 0; z < depth; z++) {
      for (size_t y = 0; y < h; y++) {
        char *s = src + (p->srcZ + z) * src_slab + (p->srcY + y) * p->srcPitch + p->srcXInBytes;
        char *d = dst + (p->dstZ + z) * dst_slab + (p->dstY + y) * p->dstPitch + p->dstXInBytes;
        if (pass == 0) {
          if (src_dev ? check_device_range(s, w) != CUDA_SUCCESS : host_range_kind(s, w) < 0)
            return CUDA_ERROR_INVALID_VALUE;
          if (dst_dev ? check_device_range(d, w) != CUDA_SUCCESS : host_range_kind(d, w) < 0)
            return CUDA_ERROR_INVALID_VALUE;
        } else if (dir < 0) { /* host to host: synchronous, in stream order */
          if (z == 0 && y == 0) {
            sim_stream *q;
            rc = resolve_stream(synchronous ? NULL : stream, ctx, &q);
            if (rc != CUDA_SUCCESS) return rc;
            sim_stream_wait_idle(q);
          }
          memmove(d, s, w);
        } else if ((rc = copy_enqueue(ctx, d, s, w, stream, dir, synchronous)) != CUDA_SUCCESS) {
          return rc;
        }
      }
    }
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { return rect_copy(p, NULL, 1); }
EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream stream) { return rect_copy(p, stream, 0); }
