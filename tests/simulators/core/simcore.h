/* simcore.h - the vendor-neutral core of the project's simulated GPU drivers (test fixtures).
 *
 * A simulated driver is this core plus a thin front that speaks one vendor's API (cuda/ for
 * libcuda.so.1; a HIP front can sit on the same core). The core models, in host memory and
 * host threads:
 *
 *   devices   GPUSIM_DEVICES of them (default 1, 0 allowed), each with generic properties;
 *   memory    tracked allocations (device, pinned host, managed, registered host, module
 *             globals); every range a front checks must lie inside one allocation; a size limit
 *             per device (GPUSIM_MEMORY_MIB, default 1024); double frees are detected; leaks
 *             are reported when a front asks (context release);
 *   streams   in-order workers (one thread each, started on first use), the legacy default
 *             stream's ordering against blocking streams, the first asynchronous error kept
 *             until the next synchronize; GPUSIM_DELAY_US delays every operation so that a
 *             missing synchronisation becomes visible;
 *   events    recorded on streams, with timestamps, waited for by other streams;
 *   launches  a host build of the kernel source (see gpusim_kernel.h) runs every block on the
 *             stream's worker; the threads of a block are ucontext fibers, so __syncthreads
 *             really holds every thread of the block until all have arrived;
 *   hostlibs  the registry mapping an image (by its FNV-1a 64 hash) to that host build:
 *             $GPUSIM_KERNELS/<16 hex digits>.so; each load dlopens a private copy, so two
 *             loads of one image have separate globals;
 *   ELF64     a bounds-checked reader of sections and symbols, for the fronts' image parsers.
 *
 * and the rules that make a simulated driver as strict as a real one (tests/simulators/README.md
 * cites the documentation of each):
 *
 *   push buffer     at most GPUSIM_PUSH_BUFFER (default 1024) operations are pending (queued or
 *                   running) per stream; sim_stream_submit then BLOCKS until one completes (as
 *                   a driver's enqueue does when its push buffer is full), it does not fail;
 *   sticky faults   a kernel that traps (__trap() in a host build: ILLEGAL_INSTRUCTION) or
 *                   touches unmapped memory (a wild or freed pointer, its stack's guard page:
 *                   SIGSEGV/SIGBUS on the worker, caught: ILLEGAL_ADDRESS) leaves its device faulted:
 *                   the launch's remaining blocks and every later operation on the device's
 *                   streams are skipped (their bookkeeping still completes, so nothing hangs),
 *                   sim_stream_submit / sim_stream_sync / sim_device_sync return the fault, and
 *                   the front returns it from every call until it calls sim_device_clear_fault
 *                   (context reset / last release);
 *   device memory   SIM_MEM_DEVICE allocations are pages of their own, tagged with a memory
 *   is not host     protection key (pkey_mprotect) whose access only the core's worker threads
 *   memory          enable: a dereference of a device pointer by application code (or a host
 *                   function, which runs on a worker with access disabled) faults (SIGSEGV,
 *                   SEGV_PKUERR) as on a GPU. A front touching device memory itself brackets
 *                   it with sim_device_access_begin/end. GPUSIM_PROTECT=0 turns this off; where
 *                   pkeys are unavailable it is off, said once on stderr, and sim_mem_protected
 *                   says why (tests skip that rule with the reason);
 *   host functions  an operation submitted with SIM_OP_HOST_FUNCTION runs application code:
 *                   sim_in_host_function() is 1 on its thread meanwhile (fronts refuse driver
 *                   calls then; the core refuses sim_stream_submit with NOT_PERMITTED), device
 *                   access is disabled, and after a sticky fault it is skipped unless
 *                   SIM_OP_AFTER_FAULT is also given (a callback that must see the status).
 *
 * API stability: functions here are only ever added, never changed (the fronts are built
 * against it independently). Status codes are the core's; each front maps them to its API's.
 */
#ifndef GPUSIM_SIMCORE_H
#define GPUSIM_SIMCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------------ */

typedef enum sim_status {
  SIM_OK = 0,
  SIM_ERR_INVALID_VALUE,      /* bad argument, out-of-bounds range, unknown/freed pointer */
  SIM_ERR_OUT_OF_MEMORY,      /* the device's memory limit would be exceeded */
  SIM_ERR_NOT_READY,          /* asynchronous work still pending (queries) */
  SIM_ERR_INVALID_HANDLE,     /* e.g. elapsed time of an event without timing */
  SIM_ERR_NOT_FOUND,          /* no such symbol / no host build registered */
  SIM_ERR_LAUNCH_FAILED,      /* a launch could not run (e.g. no host entry) */
  SIM_ERR_OUT_OF_RESOURCES,   /* launch exceeds a block/grid/shared-memory limit */
  SIM_ERR_INVALID_IMAGE,      /* malformed ELF */
  SIM_ERR_NOT_SUPPORTED,      /* something the simulator deliberately does not model */
  SIM_ERR_HOST_CALLBACK,      /* reserved for fronts */
  SIM_ERR_ILLEGAL_INSTRUCTION, /* a kernel trapped (__trap()): the device's sticky fault */
  SIM_ERR_NOT_PERMITTED,      /* a driver call from inside a host function (see sim_in_host_function) */
  SIM_ERR_ILLEGAL_ADDRESS,    /* a kernel touched unmapped memory: the device's sticky fault */
} sim_status;

const char *sim_status_name(sim_status status);

/* ---- configuration and devices ----------------------------------------------------------- */

typedef struct sim_dim3 {
  unsigned x, y, z;
} sim_dim3;

/* Generic properties; fronts add their vendor-specific ones (compute capability, gfx name). */
typedef struct sim_device_props {
  char name[256];
  unsigned char uuid[16];
  size_t total_memory;           /* the allocation limit, bytes */
  int multiprocessors;
  int clock_khz;
  int memory_clock_khz;
  int memory_bus_width;          /* bits */
  int max_threads_per_block;
  sim_dim3 max_block_dim;
  sim_dim3 max_grid_dim;
  size_t shared_per_block;       /* default dynamic+static limit, bytes */
  size_t shared_per_block_optin; /* limit after the front's opt-in attribute */
  size_t shared_per_multiprocessor;
  int warp_size;
  int registers_per_block;
  int max_threads_per_multiprocessor;
  int l2_cache_bytes;
  int pci_bus_id;
} sim_device_props;

/* Reads the environment once (thread-safe); later calls return the same values. */
int sim_device_count(void);
/* NULL for an ordinal out of range. */
const sim_device_props *sim_device(int ordinal);
/* GPUSIM_DELAY_US, microseconds each stream operation waits before it runs. */
unsigned sim_delay_us(void);

/* ---- memory ------------------------------------------------------------------------------ */

typedef enum sim_mem_kind {
  SIM_MEM_DEVICE = 0,
  SIM_MEM_HOST,       /* pinned host memory allocated by the driver */
  SIM_MEM_MANAGED,
  SIM_MEM_REGISTERED, /* user host memory registered (pinned) with the driver */
  SIM_MEM_GLOBAL,     /* a module global, tracked for bounds checks; freed with its module */
} sim_mem_kind;

typedef struct sim_alloc_info {
  void *base;
  size_t size;
  int device;
  sim_mem_kind kind;
} sim_alloc_info;

/* Allocates size (> 0) bytes, 256-byte aligned, zero-filled (a front may poison it); counts
 * against the device limit (all kinds but REGISTERED/GLOBAL). DEVICE allocations are whole
 * pages, protected from host access (sim_mem_protected). */
sim_status sim_mem_alloc(int device, sim_mem_kind kind, size_t size, void **out);
/* Frees a live base address of one of the given kinds (kind_mask: 1 << sim_mem_kind);
 * INVALID_VALUE for an interior, unknown or already freed pointer, or another kind. */
sim_status sim_mem_free(void *base, unsigned kind_mask);
/* Tracks memory the core did not allocate (REGISTERED host ranges, GLOBAL module symbols);
 * INVALID_VALUE when it overlaps a tracked range. */
sim_status sim_mem_track(int device, sim_mem_kind kind, void *base, size_t size);
/* Stops tracking a range added with sim_mem_track (by its base). */
sim_status sim_mem_untrack(void *base);
/* 1 when SIM_MEM_DEVICE allocations are protected from host access (see the header comment);
 * 0 otherwise, with *why (if not NULL) saying why (a static string). */
int sim_mem_protected(const char **why);
/* Enables the calling thread's access to device memory, returning a token for
 * sim_device_access_end, which restores the previous state. For a front's own accesses (e.g.
 * poisoning a new allocation, a copy it performs on the calling thread); no-ops when memory is
 * not protected. */
unsigned sim_device_access_begin(void);
void sim_device_access_end(unsigned token);
/* Finds the allocation containing p (0 if none, 1 if found). */
int sim_mem_find(const void *p, sim_alloc_info *out);
/* SIM_OK when [p, p + size) lies inside one tracked allocation, else INVALID_VALUE. */
sim_status sim_mem_check(const void *p, size_t size);
/* Bytes currently allocated against a device's limit. */
size_t sim_mem_used(int device);
/* Reports every live allocation of the device whose kind is in kind_mask on stderr (one line
 * each, prefixed "gpusim: leak"); returns their number. */
size_t sim_mem_report_leaks(int device, unsigned kind_mask, const char *when);

/* ---- streams ----------------------------------------------------------------------------- */

typedef struct sim_stream sim_stream;
/* An operation: runs on the stream's worker; a non-OK status becomes the stream's
 * asynchronous error. free_arg (may be NULL) runs after fn, on the worker. */
typedef sim_status (*sim_op_fn)(void *arg);

/* blocking: the stream synchronises with the device's legacy default stream (CUDA's
 * default stream flag; NON_BLOCKING streams pass 0). */
sim_stream *sim_stream_create(int device, int blocking);
/* The device's legacy default stream (created on first use, never destroyed). */
sim_stream *sim_stream_legacy(int device);
int sim_stream_device(const sim_stream *stream);
/* The stream whose worker runs the calling thread's current operation (NULL on any other thread). */
sim_stream *sim_current_stream(void);
/* A front's rule on the device memory an operation touches when it runs (the CUDA front: a
 * stream-ordered allocation its stream has not reached yet): SIM_OK, or the status the operation
 * fails with (the rule makes it sticky where the device would fault). Set once, by the front. */
typedef sim_status (*sim_use_rule)(const void *p, size_t size, sim_stream *stream);
void sim_set_use_rule(sim_use_rule rule);
/* The rule applied to [p, p + size) for the current stream (SIM_OK without a rule, or off a worker). */
sim_status sim_use_check(const void *p, size_t size);
/* Waits for the stream's work, then frees it. Must not be the legacy stream. */
void sim_stream_destroy(sim_stream *stream);
/* Enqueues fn(arg). Blocks while the stream's push buffer is full (sim_push_buffer()
 * operations pending); returns the device's sticky fault instead of enqueuing once faulted;
 * NOT_PERMITTED from inside a host function. On a non-OK return nothing was enqueued and
 * free_arg was NOT called (the caller still owns arg). */
sim_status sim_stream_submit(sim_stream *stream, sim_op_fn fn, void *arg, void (*free_arg)(void *));

/* Flags of sim_stream_submit_ex. */
#define SIM_OP_HOST_FUNCTION 1u /* application code: sim_in_host_function() = 1, device access off */
#define SIM_OP_AFTER_FAULT 2u   /* still runs after the device's sticky fault (to report it) */
/* sim_stream_submit with flags (0 = a device operation, as sim_stream_submit). */
sim_status sim_stream_submit_ex(sim_stream *stream, sim_op_fn fn, void *arg, void (*free_arg)(void *), unsigned flags);
/* The fronts' host functions (cuLaunchHostFunc, hipLaunchHostFunc): fn(user_data) on the stream's
 * worker, submitted with SIM_OP_HOST_FUNCTION. Returns as sim_stream_submit_ex. */
sim_status sim_stream_submit_host_call(sim_stream *stream, void (*fn)(void *), void *user_data);
/* The fronts' memsets: height rows, pitch bytes apart, each of width bytes filled with the elem-byte
 * (1, 2 or 4, little-endian) value repeated. The caller has checked the range and alignment.
 * Returns as sim_stream_submit. */
sim_status sim_stream_submit_fill(sim_stream *stream, void *dst, size_t pitch, size_t width, size_t height,
                                  unsigned elem, uint32_t value);
/* GPUSIM_PUSH_BUFFER: the most operations pending per stream (default 1024, 1..1048576). */
unsigned sim_push_buffer(void);
/* 1 on a worker thread while it runs an operation submitted with SIM_OP_HOST_FUNCTION. */
int sim_in_host_function(void);
/* 1 while work is queued or running. */
int sim_stream_busy(sim_stream *stream);
/* Waits until every operation enqueued before the call has finished; returns and clears the
 * first asynchronous error. */
sim_status sim_stream_sync(sim_stream *stream);
/* Drops the error a stream keeps for its next synchronisation (a context's end: the device's
 * legacy stream outlives the context, its error does not). */
void sim_stream_clear_error(sim_stream *stream);
/* Waits until every operation enqueued before the call has finished, keeping any error. */
void sim_stream_wait_idle(sim_stream *stream);
/* Every stream of the device (legacy included) synchronised; first error returned. */
sim_status sim_device_sync(int device);
/* Every stream of the device idle (errors kept). */
void sim_device_wait_idle(int device);

/* ---- sticky faults ----------------------------------------------------------------------- */

/* SIM_OK, or the device's sticky fault (SIM_ERR_ILLEGAL_INSTRUCTION after a kernel trapped,
 * SIM_ERR_ILLEGAL_ADDRESS after it touched unmapped memory). */
sim_status sim_device_fault(int device);
/* Faults the device as a trapping kernel does (for fronts modelling other sticky errors);
 * the first fault stays. */
void sim_device_set_fault(int device, sim_status fault);
/* Makes the device usable again (the front's context reset / last release, after
 * sim_device_wait_idle). */
void sim_device_clear_fault(int device);

/* ---- events ------------------------------------------------------------------------------ */

typedef struct sim_event sim_event;
sim_event *sim_event_create(int timing);
/* Frees once no recorded marker still refers to it. */
void sim_event_destroy(sim_event *event);
/* Records the event at the current end of the stream. */
sim_status sim_event_record(sim_event *event, sim_stream *stream);
/* SIM_OK when complete (or never recorded), NOT_READY otherwise. */
sim_status sim_event_query(sim_event *event);
sim_status sim_event_sync(sim_event *event);
/* Milliseconds from start to end: NOT_READY if either is pending, INVALID_HANDLE if either was
 * created without timing or never recorded. */
sim_status sim_event_elapsed(sim_event *start, sim_event *end, float *ms);
/* Later work of stream waits for the event's most recent record (as of this call). */
sim_status sim_stream_wait_event(sim_stream *stream, sim_event *event);

/* ---- kernels and launches ---------------------------------------------------------------- */

/* The entry a host build exports per kernel: gpusim_kernel_<name>(void **params), params[i]
 * pointing to the value of parameter i (CUDA's kernelParams convention). */
typedef void (*sim_kernel_entry)(void **params);

typedef struct sim_launch_desc {
  sim_kernel_entry entry;
  sim_dim3 grid, block;
  size_t dynamic_shared;  /* bytes of dynamic shared memory per block */
  const void *args;       /* packed argument buffer (copied at submit) */
  size_t args_size;
  const size_t *param_offsets; /* offset of each parameter in args (copied at submit) */
  unsigned param_count;
} sim_launch_desc;

/* Checks block and grid against the device's limits (OUT_OF_RESOURCES / INVALID_VALUE) and
 * enqueues the launch. */
sim_status sim_launch(sim_stream *stream, const sim_launch_desc *desc);

/* ---- host builds of kernel images -------------------------------------------------------- */

typedef struct sim_hostlib sim_hostlib;
uint64_t sim_image_hash(const void *image, size_t size);
/* Opens a private copy of $GPUSIM_KERNELS/<hash>.so for this image; NOT_FOUND when none is
 * registered (or GPUSIM_KERNELS is unset). */
sim_status sim_hostlib_open(const void *image, size_t size, sim_hostlib **out);
/* The host entry of a kernel, NULL when the host build lacks it. */
sim_kernel_entry sim_hostlib_kernel(sim_hostlib *lib, const char *name);
/* The host address of a global variable, NULL when absent. */
void *sim_hostlib_global(sim_hostlib *lib, const char *name);
void sim_hostlib_close(sim_hostlib *lib);

/* ---- ELF64 reading (bounds-checked) ------------------------------------------------------ */

typedef struct sim_elf {
  const unsigned char *data;
  size_t size;
  uint16_t machine;
  uint32_t flags;
  unsigned char abi_version;
  uint16_t shnum;
  uint64_t shoff;
  uint16_t shstrndx;
} sim_elf;

typedef struct sim_elf_section {
  const char *name;
  uint32_t type;
  uint64_t flags;
  const unsigned char *data; /* NULL for NOBITS */
  uint64_t size;
  uint32_t link, info;
  uint64_t entsize;
} sim_elf_section;

typedef struct sim_elf_symbol {
  const char *name;
  unsigned char info, other;
  uint16_t shndx;
  uint64_t value, size;
} sim_elf_symbol;

/* INVALID_IMAGE unless data is a little-endian ELF64 whose section table and string table lie
 * inside it. */
sim_status sim_elf_open(const void *data, size_t size, sim_elf *out);
/* INVALID_IMAGE when section index's header or contents lie outside the image. */
sim_status sim_elf_section_at(const sim_elf *elf, unsigned index, sim_elf_section *out);
/* Calls fn for every symbol of every SYMTAB section; stops when fn returns non-zero (that
 * value is returned). INVALID_IMAGE (as a negative number) for a malformed table. */
int sim_elf_symbols(const sim_elf *elf, int (*fn)(const sim_elf_symbol *sym, void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GPUSIM_SIMCORE_H */
