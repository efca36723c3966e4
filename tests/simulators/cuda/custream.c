/* custream.c - the simulated CUDA driver's streams, events, host functions and stream callbacks (see simcuda.h). */
#define _GNU_SOURCE
#include "simcuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handle recycling: a destroyed handle's memory is kept (magic cleared) and reused for a
 * later handle of the same kind, so using a destroyed handle reads INVALID_HANDLE instead of
 * freed memory (the driver's behaviour for stale handles is undefined). */

static pthread_mutex_t recycle_lock = PTHREAD_MUTEX_INITIALIZER;
static void *recycle_bins[3];

/* Every handle struct starts with its magic (unsigned) followed by at least 8 more bytes; a
 * recycled one keeps magic 0 and holds the bin's link at offset 8. */
void *handle_new(int bin, size_t size) {
  pthread_mutex_lock(&recycle_lock);
  void *h = recycle_bins[bin];
  if (h) memcpy(&recycle_bins[bin], (char *)h + 8, sizeof(void *));
  pthread_mutex_unlock(&recycle_lock);
  if (h == NULL) return calloc(1, size);
  memset(h, 0, size);
  return h;
}

void handle_delete(int bin, void *h) {
  *(unsigned *)h = 0;
  pthread_mutex_lock(&recycle_lock);
  memcpy((char *)h + 8, &recycle_bins[bin], sizeof(void *));
  recycle_bins[bin] = h;
  pthread_mutex_unlock(&recycle_lock);
}

/* ---- streams -------------------------------------------------------------------------------- */

int is_default_stream(CUstream stream) {
  return stream == NULL || stream == (CUstream)0x1 || stream == (CUstream)0x2;
}

/* Resolves a stream handle (NULL and CU_STREAM_LEGACY/PER_THREAD mean the current context's
 * legacy default stream); *owner (if not NULL) is the context the stream belongs to. A stream
 * of a context that has since ended is INVALID_HANDLE. */
CUresult resolve_stream_owner(CUstream stream, struct cuctx *ctx, sim_stream **out, struct cuctx **owner) {
  if (is_default_stream(stream)) {
    *out = sim_stream_legacy(ctx->device);
    if (owner) *owner = ctx;
    return CUDA_SUCCESS;
  }
  if (stream->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&stream->ctx->generation, __ATOMIC_ACQUIRE) != stream->generation) return CUDA_ERROR_INVALID_HANDLE;
  *out = stream->sim;
  if (owner) *owner = stream->ctx;
  return CUDA_SUCCESS;
}

CUresult resolve_stream(CUstream stream, struct cuctx *ctx, sim_stream **out) {
  return resolve_stream_owner(stream, ctx, out, NULL);
}

/* A stream and an event alike (struct custream, struct cuevent): they live in ctx, die with its
 * current generation (a destroyed or reset context makes them INVALID_HANDLE) and count in its
 * live_streams / live_events while they exist. The create macro ends the calling cuXCreate: the
 * handle h from bin, its simulator object from make (NULL: OUT_OF_MEMORY, h back in its bin),
 * stored in *out. The destroy macro ends cuXDestroy of a valid h: refused with a sticky fault
 * of its device, as every call is; else the handle and its simulator object go. */
#define CREATE_IN_CONTEXT(type, bin, tag, make, live)                                                     \
  do {                                                                                                    \
    type *h = handle_new(bin, sizeof *h);                                                                 \
    if (h == NULL) return CUDA_ERROR_OUT_OF_MEMORY;                                                       \
    h->sim = make;                                                                                        \
    if (h->sim == NULL) {                                                                                 \
      handle_delete(bin, h);                                                                              \
      return CUDA_ERROR_OUT_OF_MEMORY;                                                                    \
    }                                                                                                     \
    h->magic = tag;                                                                                       \
    h->flags = flags;                                                                                     \
    h->ctx = ctx;                                                                                         \
    h->generation = __atomic_load_n(&ctx->generation, __ATOMIC_ACQUIRE);                                  \
    __atomic_add_fetch(&ctx->live, 1, __ATOMIC_ACQ_REL);                                                  \
    *out = h;                                                                                             \
    return CUDA_SUCCESS;                                                                                  \
  } while (0)

#define DESTROY_IN_CONTEXT(h, bin, destroy_sim, live)                                                     \
  do {                                                                                                    \
    sim_status fault = sim_device_fault((h)->ctx->device);                                                \
    if (fault != SIM_OK) return from_sim(fault);                                                          \
    (h)->magic = 0;                                                                                       \
    __atomic_sub_fetch(&(h)->ctx->live, 1, __ATOMIC_ACQ_REL);                                             \
    destroy_sim((h)->sim);                                                                                \
    handle_delete(bin, h);                                                                                \
    return CUDA_SUCCESS;                                                                                  \
  } while (0)

EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (out == NULL || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  CREATE_IN_CONTEXT(struct custream, BIN_STREAM, STREAM_MAGIC, sim_stream_create(ctx->device, flags == 0), live_streams);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  REQUIRE_INIT();
  if (is_default_stream(stream) || stream->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (__atomic_load_n(&stream->ctx->generation, __ATOMIC_ACQUIRE) != stream->generation) return CUDA_ERROR_INVALID_HANDLE;
  DESTROY_IN_CONTEXT(stream, BIN_STREAM, sim_stream_destroy, live_streams);
}
EXPORT CUresult cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }

EXPORT CUresult cuStreamQuery(CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return sim_stream_busy(s) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  REQUIRE_CTX(ctx);
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return from_sim(sim_stream_sync(s));
}

EXPORT CUresult cuStreamGetFlags(CUstream stream, unsigned *flags) {
  REQUIRE_CTX(ctx);
  if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  *flags = (stream == NULL || (uintptr_t)stream <= 2) ? 0 : stream->flags;
  return CUDA_SUCCESS;
}

typedef struct stream_callback {
  CUstreamCallback fn;
  CUstream stream;
  int device;
  void *user_data;
} stream_callback;

static sim_status stream_callback_op(void *raw) {
  stream_callback *cb = raw;
  /* cuStreamAddCallback: the callback receives CUDA_SUCCESS or the error of the stream (it runs
   * even after a sticky fault, unlike a host function). */
  cb->fn(cb->stream, from_sim(sim_device_fault(cb->device)), cb->user_data);
  return SIM_OK;
}

EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *user_data, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (fn == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  stream_callback *cb = malloc(sizeof *cb);
  if (cb == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *cb = (stream_callback){fn, stream, sim_stream_device(s), user_data};
  rc = from_sim(sim_stream_submit_ex(s, stream_callback_op, cb, free, SIM_OP_HOST_FUNCTION | SIM_OP_AFTER_FAULT));
  if (rc != CUDA_SUCCESS) free(cb);
  return rc;
}

EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *user_data) {
  REQUIRE_CTX(ctx);
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return from_sim(sim_stream_submit_host_call(s, fn, user_data));
}

/* ---- events --------------------------------------------------------------------------------- */

EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags) {
  REQUIRE_CTX(ctx);
  if (out == NULL || (flags & ~0x7u) || ((flags & 0x4) && !(flags & 0x2))) return CUDA_ERROR_INVALID_VALUE;
  CREATE_IN_CONTEXT(struct cuevent, BIN_EVENT, EVENT_MAGIC, sim_event_create(!(flags & 0x2)), live_events);
}

#define REQUIRE_EVENT(e)                                                                                  \
  do {                                                                                                    \
    if ((e) == NULL || (e)->magic != EVENT_MAGIC) return CUDA_ERROR_INVALID_HANDLE;                       \
    if (__atomic_load_n(&(e)->ctx->generation, __ATOMIC_ACQUIRE) != (e)->generation) return CUDA_ERROR_INVALID_HANDLE; \
  } while (0)

EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  REQUIRE_INIT();
  REQUIRE_EVENT(event);
  DESTROY_IN_CONTEXT(event, BIN_EVENT, sim_event_destroy, live_events);
}
EXPORT CUresult cuEventDestroy(CUevent event) { return cuEventDestroy_v2(event); }

EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  sim_stream *s;
  struct cuctx *owner;
  CUresult rc = resolve_stream_owner(stream, ctx, &s, &owner);
  if (rc != CUDA_SUCCESS) return rc;
  /* cuEventRecord: "hEvent and hStream must be from the same context otherwise
   * CUDA_ERROR_INVALID_HANDLE is returned". */
  if (owner != event->ctx) return CUDA_ERROR_INVALID_HANDLE;
  return from_sim(sim_event_record(event->sim, s));
}

EXPORT CUresult cuEventQuery(CUevent event) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  return from_sim(sim_event_query(event->sim));
}

EXPORT CUresult cuEventSynchronize(CUevent event) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  CUresult rc = from_sim(sim_event_sync(event->sim));
  sim_status fault = sim_device_fault(event->ctx->device);
  return fault != SIM_OK ? from_sim(fault) : rc;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(start);
  REQUIRE_EVENT(end);
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (start->ctx != end->ctx) return CUDA_ERROR_INVALID_HANDLE; /* events of two devices */
  return from_sim(sim_event_elapsed(start->sim, end->sim, ms));
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return cuEventElapsedTime_v2(ms, start, end); }

EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  REQUIRE_CTX(ctx);
  REQUIRE_EVENT(event);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  CUresult rc = resolve_stream(stream, ctx, &s);
  if (rc != CUDA_SUCCESS) return rc;
  return from_sim(sim_stream_wait_event(s, event->sim));
}
