/* offload_host.h - the launch ABI of host (CPU) kernels for the offload-host backend.
 *
 * A host program is an ELF shared object built for this machine. Every kernel is an
 * exported C function of one signature:
 *
 *     void name(const void *args, const offload_group_t *group);
 *
 * `args` points to the packed argument struct that the caller passed to olLaunchKernel
 * (the C layout of the kernel's parameters, exactly as on a GPU); it is NULL when the
 * launch had no arguments. The function is called once per work-group of the 1-3
 * dimensional grid; groups run concurrently on a pool of threads, in no defined order.
 *
 * Inside a group the kernel runs its work-items with OFFLOAD_FOR_EACH_ITEM loops. A
 * work-group barrier is the boundary between two such loops: every work-item finishes
 * the first loop before any work-item starts the second (the execution model of SYCL's
 * hierarchical parallelism). Memory shared by a group is either a local array declared
 * in the kernel body (static local memory) or OFFLOAD_LOCAL_MEM (the dynamic local
 * memory of DynSharedMemory bytes, 64-byte aligned, private to the group).
 *
 *     struct foo_args { uint32_t *out; };
 *     OFFLOAD_KERNEL(foo) {
 *         const struct foo_args *a = OFFLOAD_ARGS(struct foo_args);
 *         OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = tid.x; }
 *     }
 */
#ifndef OFFLOAD_HOST_H
#define OFFLOAD_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct offload_dim3 {
  uint32_t x, y, z;
} offload_dim3_t;

typedef struct offload_group {
  offload_dim3_t group_id;   /* this group's position in the grid */
  offload_dim3_t num_groups; /* grid size in groups (NumGroups) */
  offload_dim3_t group_size; /* work-items per group (GroupSize) */
  void *local_mem;           /* dynamic local memory, NULL when local_mem_size is 0 */
  size_t local_mem_size;     /* DynSharedMemory of the launch */
} offload_group_t;

typedef void (*offload_kernel_fn)(const void *args, const offload_group_t *group);

#define OFFLOAD_EXPORT __attribute__((visibility("default"), used))

#ifdef __cplusplus
#define OFFLOAD_KERNEL(name)                                                             \
  extern "C" OFFLOAD_EXPORT void name(const void *offload_args_,                        \
                                      const offload_group_t *offload_group_)
#else
#define OFFLOAD_KERNEL(name)                                                             \
  OFFLOAD_EXPORT void name(const void *offload_args_, const offload_group_t *offload_group_)
#endif

/* The kernel's argument struct and its group, inside an OFFLOAD_KERNEL body. */
#define OFFLOAD_ARGS(type) ((const type *)offload_args_)
#define OFFLOAD_GROUP (offload_group_)
#define OFFLOAD_LOCAL_MEM(type) ((type *)offload_group_->local_mem)

/* Runs the following statement once per work-item of the group, binding `tid` (an
 * offload_dim3_t) to the work-item's id within the group. */
#define OFFLOAD_FOR_EACH_ITEM(tid)                                                       \
  for (uint32_t offload_z_ = 0; offload_z_ < offload_group_->group_size.z; ++offload_z_) \
    for (uint32_t offload_y_ = 0; offload_y_ < offload_group_->group_size.y; ++offload_y_) \
      for (uint32_t offload_x_ = 0, offload_once_ = 1;                                   \
           offload_x_ < offload_group_->group_size.x; ++offload_x_, offload_once_ = 1)   \
        for (offload_dim3_t tid = {offload_x_, offload_y_, offload_z_}; offload_once_;   \
             offload_once_ = 0)

/* Global ids of a work-item (group_id * group_size + tid), per dimension. */
#define offload_global_id_x(tid) (offload_group_->group_id.x * offload_group_->group_size.x + (tid).x)
#define offload_global_id_y(tid) (offload_group_->group_id.y * offload_group_->group_size.y + (tid).y)
#define offload_global_id_z(tid) (offload_group_->group_id.z * offload_group_->group_size.z + (tid).z)

/* Linear id of a work-item within its group, x fastest. */
#define offload_local_linear_id(tid)                                                     \
  (((tid).z * offload_group_->group_size.y + (tid).y) * offload_group_->group_size.x + (tid).x)

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_HOST_H */
