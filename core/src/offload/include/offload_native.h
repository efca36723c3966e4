/* offload_native.h: the data-path entry points a backend may hand offload's compiled core.
 *
 * Optional. A backend that implements the hooks `native_entry_points` and `native_word`
 * (offload.hookspecs) lets the core's compiled per-call path go from an ol* call straight to the
 * driver, without a Python frame. A backend without them works exactly as before: the compiled
 * core calls its Python hooks.
 *
 * - `native_entry_points(device)` returns a PyCapsule named OFFLOAD_NATIVE_CAPSULE_NAME whose
 *   pointer is a `const offload_native_entry_points *` that stays valid (static storage) while
 *   the backend's module is loaded; or None (this device has none).
 * - `native_word(device, native)` returns, for a native device, queue or kernel the backend handed
 *   the core, the pointer-sized word its entry points take for it (a stream, the address of a
 *   record the backend keeps alive until that object is released), or None: calls involving that
 *   object use the Python hooks. The core asks once per object and keeps the word.
 *
 * The obligations of an entry point:
 * - It is called with the GIL released and must not touch Python objects.
 * - It returns OFFLOAD_NATIVE_DONE when the operation was made exactly as the corresponding Python
 *   hook would have made it, or OFFLOAD_NATIVE_DEFER having done nothing at all: the core then
 *   calls the Python hook with the same arguments, which makes the operation or raises the error.
 *   So every error code and message has one source (the Python hook); an entry point defers on
 *   any driver error and on any case it does not handle (an argument buffer larger than it takes,
 *   a launch needing an attribute set first, ...).
 * - The core has made every check the hookspecs promise before calling it (live handles, ranges
 *   inside allocations, the argument buffer at least the kernel's parameter extent, the grid
 *   within the device's limits): an entry point never re-checks them.
 * - A NULL member means "not provided": the core calls the Python hook for that operation.
 * - `queue` is 0 for a synchronous operation, which must be complete when the entry point returns.
 */
#ifndef OFFLOAD_NATIVE_H
#define OFFLOAD_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define OFFLOAD_NATIVE_ABI_VERSION 1
#define OFFLOAD_NATIVE_CAPSULE_NAME "offload.native_entry_points"

typedef enum offload_native_result {
  OFFLOAD_NATIVE_DONE = 0,
  OFFLOAD_NATIVE_DEFER = 1,
} offload_native_result;

/* the words native_word gave (0 for "no queue": a synchronous operation) */
typedef uintptr_t offload_native_word;

/* offload.KernelLaunchSizeArgs, already checked against the device's limits */
typedef struct offload_launch_dims {
  uint32_t num_groups[3];
  uint32_t group_size[3];
  size_t dyn_shared_memory;
} offload_launch_dims;

/* hookspecs.launch_kernel: `args` holds `args_size` bytes, at least the kernel's parameter extent;
 * the entry point passes the driver exactly the extent it needs. */
typedef offload_native_result (*offload_native_launch_kernel_fn)(
    offload_native_word device, offload_native_word queue, offload_native_word kernel,
    const void *args, size_t args_size, const offload_launch_dims *dims);

/* hookspecs.data_submit / data_retrieve: host <-> memory of `device` */
typedef offload_native_result (*offload_native_data_move_fn)(
    offload_native_word device, uintptr_t dst, uintptr_t src, size_t size, offload_native_word queue);

/* hookspecs.data_exchange: between two devices of this backend */
typedef offload_native_result (*offload_native_data_exchange_fn)(
    offload_native_word src_device, uintptr_t src, offload_native_word dst_device, uintptr_t dst,
    size_t size, offload_native_word queue);

/* hookspecs.synchronize with release false (olSyncQueue): may block */
typedef offload_native_result (*offload_native_synchronize_fn)(offload_native_word device, offload_native_word queue);

/* hookspecs.has_pending_work: *pending set to 1 or 0; must not block */
typedef offload_native_result (*offload_native_has_pending_work_fn)(
    offload_native_word device, offload_native_word queue, int *pending);

/* Optional (the core reads it only where struct_size covers it): enqueue on `queue` a marker that,
 * when the queue reaches it (all earlier work done), stores the CLOCK_MONOTONIC time in ns into
 * *when with a release store; *when stays valid until written (or the queue is released without
 * running it). The timeline times the compiled path's work with it. */
typedef offload_native_result (*offload_native_stamp_fn)(offload_native_word device, offload_native_word queue, uint64_t *when);

/* Optional, as stamp: launch_kernel on a queue (never 0) and stamp in one submission: *when gets
 * the time the queue finished the launch. The timeline's compiled launch uses it where present (a
 * stamp after the launch would take the queue's lock a second time); on DEFER nothing was done and
 * *when is never written. */
typedef offload_native_result (*offload_native_launch_stamped_fn)(
    offload_native_word device, offload_native_word queue, offload_native_word kernel,
    const void *args, size_t args_size, const offload_launch_dims *dims, uint64_t *when);

/* Optional, as stamp: hookspecs.data_fill: `size` bytes at `ptr` (memory of `device`, checked)
 * filled with the `pattern_size` bytes at `pattern` repeated; `size` is a whole number of
 * patterns, at least one. `pattern` stays valid (and unchanged) until the entry point returns. */
typedef offload_native_result (*offload_native_data_fill_fn)(
    offload_native_word device, uintptr_t ptr, const void *pattern, size_t pattern_size, size_t size,
    offload_native_word queue);

typedef struct offload_native_entry_points {
  uint32_t abi_version; /* OFFLOAD_NATIVE_ABI_VERSION: the core refuses (uses the Python hooks for) another */
  uint32_t struct_size; /* sizeof(offload_native_entry_points) as the backend was built */
  offload_native_launch_kernel_fn launch_kernel;
  offload_native_data_move_fn data_submit;
  offload_native_data_move_fn data_retrieve;
  offload_native_data_exchange_fn data_exchange;
  offload_native_synchronize_fn synchronize;
  offload_native_has_pending_work_fn has_pending_work;
  offload_native_stamp_fn stamp; /* added after ABI 1's first members: present when struct_size covers it */
  offload_native_launch_stamped_fn launch_kernel_stamped; /* added after stamp: likewise */
  offload_native_data_fill_fn data_fill; /* added after launch_kernel_stamped: likewise */
} offload_native_entry_points;

#endif /* OFFLOAD_NATIVE_H */
