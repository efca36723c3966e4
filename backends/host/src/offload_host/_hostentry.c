/* _hostentry.c - the host device's native entry points for offload's compiled core
 * (offload/include/offload_native.h): a launch or a pending-work query goes from the
 * core's C straight to the pool or the native queue, without a Python frame.
 *
 * Words (hookspecs.native_word, _backend.py): the device is its pool (pool_t *), a queue is its
 * Queue object (_hostq.c), a kernel is its function address, given only for a kernel that
 * declared its parameters (an undeclared one has its buffer padded by the Python hook).
 *
 * Each entry point does exactly what the Python hook would, or defers having done nothing: a
 * dynamic local memory size beyond the device's limit, a grid whose global ids do not fit 32
 * bits (both errors of the hook), a synchronous launch of several groups on the main thread
 * (the hook's launch sees Ctrl-C between its claims of groups; one group has nothing to
 * cancel), out of memory, a faulted device, and every submission q_push would wait for, start a
 * worker for or refuse. No entry point takes the GIL.
 */
#include "_native.h"

#include "offload_native.h"

static int grid(const offload_launch_dims *dims, offload_dim3_t *ng, offload_dim3_t *gs, uint64_t *total) {
  for (int i = 0; i < 3; ++i) /* set_grid's limit: global ids are 32-bit */
    if ((uint64_t)dims->num_groups[i] * dims->group_size[i] > ((uint64_t)1 << 32)) return 0;
  if (__builtin_mul_overflow((uint64_t)dims->num_groups[0] * dims->num_groups[1], (uint64_t)dims->num_groups[2], total))
    return 0;
  *ng = (offload_dim3_t){dims->num_groups[0], dims->num_groups[1], dims->num_groups[2]};
  *gs = (offload_dim3_t){dims->group_size[0], dims->group_size[1], dims->group_size[2]};
  return 1;
}

static offload_native_result launch(offload_native_word device, offload_native_word queue, offload_native_word kernel,
                                    const void *args, size_t args_size, const offload_launch_dims *dims, uint64_t *when) {
  pool_t *pool = (pool_t *)device;
  offload_dim3_t ng, gs;
  uint64_t total;
  if (dims->dyn_shared_memory > pool_local_limit(pool) || !grid(dims, &ng, &gs, &total)) return OFFLOAD_NATIVE_DEFER;
  offload_kernel_fn fn = (offload_kernel_fn)kernel;
  const void *data = args_size > 0 ? args : NULL;
  if (queue != 0)
    return hostq_submit_launch((void *)queue, pool, fn, data, args_size, ng, gs, dims->dyn_shared_memory, when)
               ? OFFLOAD_NATIVE_DEFER
               : OFFLOAD_NATIVE_DONE;
  if (when != NULL) return OFFLOAD_NATIVE_DEFER; /* (stamped launches are queued ones) */
  if (total > 1 && hostq_on_main_thread()) return OFFLOAD_NATIVE_DEFER;
  /* A launch that faulted, or found the device faulted (pool_run ran nothing), defers too: the hook
   * then runs nothing and raises the fault (its one source). A queued one was not appended. */
  return pool_run(pool, fn, data, ng, gs, dims->dyn_shared_memory) == 0 ? OFFLOAD_NATIVE_DONE : OFFLOAD_NATIVE_DEFER;
}

static offload_native_result launch_kernel(offload_native_word device, offload_native_word queue,
                                           offload_native_word kernel, const void *args, size_t args_size,
                                           const offload_launch_dims *dims) {
  return launch(device, queue, kernel, args, args_size, dims, NULL);
}

/* The timeline's: the launch carries its stamp (one submission, one lock of the queue). */
static offload_native_result launch_kernel_stamped(offload_native_word device, offload_native_word queue,
                                                   offload_native_word kernel, const void *args, size_t args_size,
                                                   const offload_launch_dims *dims, uint64_t *when) {
  return queue != 0 && when != NULL ? launch(device, queue, kernel, args, args_size, dims, when) : OFFLOAD_NATIVE_DEFER;
}

static offload_native_result has_pending_work(offload_native_word device, offload_native_word queue, int *pending) {
  (void)device;
  *pending = hostq_pending((void *)queue);
  return OFFLOAD_NATIVE_DONE;
}

static offload_native_result stamp(offload_native_word device, offload_native_word queue, uint64_t *when) {
  (void)device;
  return queue != 0 && hostq_submit_stamp((void *)queue, when) == 0 ? OFFLOAD_NATIVE_DONE : OFFLOAD_NATIVE_DEFER;
}

static const offload_native_entry_points ENTRY_POINTS = {
    .abi_version = OFFLOAD_NATIVE_ABI_VERSION,
    .struct_size = sizeof(offload_native_entry_points),
    .launch_kernel = launch_kernel,
    /* copies: every copy of the host device is host to host, which the core makes itself (a
     * memmove, or a queued copy through enqueue_host_call): no entry point would be called */
    .data_submit = NULL,
    .data_retrieve = NULL,
    .data_exchange = NULL,
    .synchronize = NULL,     /* the hook: its waits see Ctrl-C and raise the queue's errors */
    .has_pending_work = has_pending_work,
    .stamp = stamp, /* the timeline's: when the queue reached the marker */
    .launch_kernel_stamped = launch_kernel_stamped,
};

int hostentry_exec(PyObject *module) {
  PyObject *capsule = PyCapsule_New((void *)&ENTRY_POINTS, OFFLOAD_NATIVE_CAPSULE_NAME, NULL);
  if (capsule == NULL) return -1;
  int rc = PyModule_AddObjectRef(module, "ENTRY_POINTS", capsule);
  Py_DECREF(capsule);
  return rc;
}
