/* offload_host.h - the launch ABI of host (CPU) kernels for the offload-host backend.
 *
 * A host program is an ELF shared object built for this machine. Every kernel is an
 * exported C function of one signature, written with OFFLOAD_KERNEL (which marks it as a kernel:
 * a plain C function is not found as one):
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
 * A program's constructors run in the calling process at olCreateProgram, its destructors at
 * olDestroyProgram, exactly as with dlopen: the backend checks the image's structure (tables,
 * relocations) before loading it, but a constructor that crashes takes the process with it.
 * Only symbols the program itself defines are found (functions as kernels, data objects as
 * globals), never those of the libraries it links.
 *
 *     struct foo_args { uint32_t *out; };
 *     OFFLOAD_KERNEL_PARAMS(foo, struct foo_args, OFFLOAD_POINTER(out));
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
  /* Cooperative launches only (KernelLaunchPropType.IS_COOPERATIVE), NULL otherwise: returns
   * once every group of the grid has called it (OFFLOAD_GRID_BARRIER). */
  void (*grid_barrier)(const struct offload_group *group);
  void *grid_state; /* the launcher's, for grid_barrier */
} offload_group_t;

/* A grid-wide barrier, between two OFFLOAD_FOR_EACH_ITEM loops of a kernel launched
 * cooperatively: every group finishes what it did before it before any group goes on (every
 * group of a cooperative launch runs at once, on a thread of its own). Outside a cooperative
 * launch it traps, as a grid sync outside one is undefined on a GPU. */
#define OFFLOAD_GRID_BARRIER()                                                           \
  (offload_group_->grid_barrier ? offload_group_->grid_barrier(offload_group_) : __builtin_trap())

typedef void (*offload_kernel_fn)(const void *args, const offload_group_t *group);

#define OFFLOAD_EXPORT __attribute__((visibility("default"), used))

/* OFFLOAD_KERNEL(name) { body } defines a kernel, and beside it its mark: the exported read-only
 * object offload_kernel_<name> (OFFLOAD_KERNEL_MAGIC). The backend finds a kernel only where the
 * mark (or an OFFLOAD_KERNEL_PARAMS declaration) is, so a plain C function of another signature is
 * refused by name at olGetSymbol instead of being called with this one. Write it once per kernel
 * (it is a definition, not a prototype). */
#define OFFLOAD_KERNEL_MAGIC 0x4B52454Bu /* "KERK" */
#ifdef __cplusplus
#define OFFLOAD_KERNEL(name)                                                             \
  extern "C" OFFLOAD_EXPORT const uint32_t offload_kernel_##name = OFFLOAD_KERNEL_MAGIC; \
  extern "C" OFFLOAD_EXPORT void name(const void *offload_args_,                        \
                                      const offload_group_t *offload_group_)
#else
#define OFFLOAD_KERNEL(name)                                                             \
  OFFLOAD_EXPORT const uint32_t offload_kernel_##name = OFFLOAD_KERNEL_MAGIC;            \
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

/* The vectorisable 1-D form: runs the following statement once per work-item of the group,
 * binding `i` (a uint64_t) to its global x id, in one countable loop over the group's ids
 * (a compiler vectorises it: build with -O3 and the CPU's vector width, as build_program does).
 * OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, limit) skips the ids >= limit (the usual `if (i < n)`
 * guard, hoisted out of the loop). Meant for 1-D groups; in a group with y or z sizes above 1
 * the loop runs once per (y, z) row, every x id once per row. A work-group barrier is the
 * boundary between two loops, as with OFFLOAD_FOR_EACH_ITEM.
 *
 *     OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, a->n) { a->y[i] = a->a * a->x[i] + a->y[i]; }
 */
#define OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, limit)                                        \
  for (uint32_t offload_z_ = 0; offload_z_ < offload_group_->group_size.z; ++offload_z_) \
    for (uint32_t offload_y_ = 0; offload_y_ < offload_group_->group_size.y; ++offload_y_) \
      for (uint64_t i = offload_group_first_x_(), offload_end_x_ = offload_group_end_x_(limit); \
           i < offload_end_x_; ++i)
#define OFFLOAD_FOR_EACH_GLOBAL_X(i) OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, UINT64_MAX)

/* Global ids of a work-item (group_id * group_size + tid), per dimension, as uint32_t: a
 * launch whose NumGroups * GroupSize exceeds 2**32 in some dimension is refused with
 * INVALID_SIZE, so these never wrap. */
#define offload_global_id_x(tid) (offload_group_->group_id.x * offload_group_->group_size.x + (tid).x)
#define offload_global_id_y(tid) (offload_group_->group_id.y * offload_group_->group_size.y + (tid).y)
#define offload_global_id_z(tid) (offload_group_->group_id.z * offload_group_->group_size.z + (tid).z)

/* Linear id of a work-item within its group, x fastest. */
#define offload_local_linear_id(tid)                                                     \
  (((tid).z * offload_group_->group_size.y + (tid).y) * offload_group_->group_size.x + (tid).x)

/* Implementation details of OFFLOAD_FOR_EACH_GLOBAL_X: the group's first global x id and the
 * end of its ids, clamped to `limit`. */
#define offload_group_first_x_() ((uint64_t)offload_group_->group_id.x * offload_group_->group_size.x)
#define offload_group_end_x_(limit) \
  offload_min_u64_(offload_group_first_x_() + offload_group_->group_size.x, (uint64_t)(limit))
static inline uint64_t offload_min_u64_(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- Kernel parameter declarations ----------------------------------------------------
 *
 * A kernel declares its argument struct and each parameter (one line each) at file scope:
 *
 *     struct saxpy_args { float a; const float *x; float *y; uint64_t n; };
 *     OFFLOAD_KERNEL_PARAMS(saxpy, struct saxpy_args,
 *                           OFFLOAD_FLOAT(a),
 *                           OFFLOAD_POINTER(x),
 *                           OFFLOAD_POINTER(y),
 *                           OFFLOAD_UINT(n));
 *
 *     OFFLOAD_KERNEL_NO_PARAMS(noargs);   (a kernel without parameters)
 *
 * Kinds: OFFLOAD_POINTER (a device address), OFFLOAD_POINTER_TO(member, element) and
 * OFFLOAD_CONST_POINTER_TO(member, element) (a device address of `element`s, one of bool, int8,
 * uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64; CONST: the kernel
 * only reads through it), OFFLOAD_INT / OFFLOAD_UINT (a signed / unsigned
 * integer of 1, 2, 4 or 8 bytes), OFFLOAD_FLOAT (2, 4 or 8 bytes), OFFLOAD_BYTES (anything
 * else: an array, a nested struct). Offsets and sizes come from the struct itself (offsetof,
 * sizeof), so a declaration cannot drift from the layout. At most 32 parameters; names of
 * at most OFFLOAD_PARAM_NAME_MAX - 1 bytes.
 *
 * The declaration is an exported read-only data object, offload_params_<kernel>. The host
 * backend reads it from the image's bytes (it never runs code for it) and reports it through
 * the kernel_params hook: olLaunchKernel then refuses an argument buffer shorter than the end
 * of the last parameter (INVALID_ARGUMENT, naming both sizes); a longer one (tail padding) is
 * accepted, as upstream does.
 *
 * With an element type declared, the object layer refuses an offload.Array of another dtype for
 * that parameter, and passes read-only memory only to a CONST pointer (both INVALID_ARGUMENT,
 * naming the kernel and the parameter).
 *
 * An UNDECLARED kernel stays launchable but is unchecked: kernel_params returns None and the
 * kernel reads whatever buffer it is given (NULL for no arguments). Declare every kernel that
 * reads its arguments.
 */

enum offload_param_kind {
  OFFLOAD_PARAM_POINTER_ = 1,
  OFFLOAD_PARAM_INT_ = 2,
  OFFLOAD_PARAM_UINT_ = 3,
  OFFLOAD_PARAM_FLOAT_ = 4,
  OFFLOAD_PARAM_BYTES_ = 5
};

enum offload_param_element {
  OFFLOAD_ELEMENT_bool = 1,
  OFFLOAD_ELEMENT_int8 = 2,
  OFFLOAD_ELEMENT_uint8 = 3,
  OFFLOAD_ELEMENT_int16 = 4,
  OFFLOAD_ELEMENT_uint16 = 5,
  OFFLOAD_ELEMENT_int32 = 6,
  OFFLOAD_ELEMENT_uint32 = 7,
  OFFLOAD_ELEMENT_int64 = 8,
  OFFLOAD_ELEMENT_uint64 = 9,
  OFFLOAD_ELEMENT_float16 = 10,
  OFFLOAD_ELEMENT_float32 = 11,
  OFFLOAD_ELEMENT_float64 = 12,
  OFFLOAD_ELEMENT_CONST_ = 0x100
};

#define OFFLOAD_PARAM_NAME_MAX 48 /* bytes of a parameter name, NUL included */
#define OFFLOAD_PARAMS_MAGIC 0x504B464Fu /* "OFKP" */

typedef struct offload_param_decl {
  uint64_t offset;
  uint64_t size;
  uint32_t kind; /* enum offload_param_kind */
  uint32_t element; /* pointers: enum offload_param_element, | OFFLOAD_ELEMENT_CONST_; else 0 */
  char name[OFFLOAD_PARAM_NAME_MAX];
} offload_param_decl_t;

typedef struct offload_kernel_params {
  uint32_t magic;     /* OFFLOAD_PARAMS_MAGIC */
  uint32_t version;   /* 1 */
  uint64_t args_size; /* sizeof the argument struct */
  uint64_t count;     /* entries of params */
  offload_param_decl_t params[32];
} offload_kernel_params_t;

#define OFFLOAD_POINTER(member) (POINTER_, member, 0)
#define OFFLOAD_POINTER_TO(member, element) (POINTER_, member, OFFLOAD_ELEMENT_##element)
#define OFFLOAD_CONST_POINTER_TO(member, element) \
  (POINTER_, member, OFFLOAD_ELEMENT_##element | OFFLOAD_ELEMENT_CONST_)
#define OFFLOAD_INT(member) (INT_, member, 0)
#define OFFLOAD_UINT(member) (UINT_, member, 0)
#define OFFLOAD_FLOAT(member) (FLOAT_, member, 0)
#define OFFLOAD_BYTES(member) (BYTES_, member, 0)

#define OFFLOAD_KERNEL_PARAMS(kernel, type, ...)                                          \
  OFFLOAD_PARAMS_LINKAGE_ const offload_kernel_params_t offload_params_##kernel = {       \
      OFFLOAD_PARAMS_MAGIC, 1, sizeof(type), OFFLOAD_COUNT_(__VA_ARGS__),                  \
      {OFFLOAD_EACH_(type, __VA_ARGS__)}}

#define OFFLOAD_KERNEL_NO_PARAMS(kernel)                                                  \
  OFFLOAD_PARAMS_LINKAGE_ const offload_kernel_params_t offload_params_##kernel = {       \
      OFFLOAD_PARAMS_MAGIC, 1, 0, 0, {{0, 0, 0, 0, ""}}}

/* Implementation details of the declarations. */
#ifdef __cplusplus
#define OFFLOAD_PARAMS_LINKAGE_ extern "C" OFFLOAD_EXPORT
#else
#define OFFLOAD_PARAMS_LINKAGE_ OFFLOAD_EXPORT
#endif
#define OFFLOAD_PARAM_ENTRY_(t, e) OFFLOAD_PARAM_ENTRY2_(t, OFFLOAD_UNPACK_ e)
#define OFFLOAD_UNPACK_(kind, member, element) kind, member, element
#define OFFLOAD_PARAM_ENTRY2_(t, ...) OFFLOAD_PARAM_ENTRY3_(t, __VA_ARGS__)
#define OFFLOAD_PARAM_ENTRY3_(t, kind, member, element)                                   \
  {offsetof(t, member), sizeof(((t *)0)->member), OFFLOAD_PARAM_##kind, (element), #member}
#define OFFLOAD_COUNT_(...) OFFLOAD_COUNT2_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define OFFLOAD_COUNT2_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, n, ...) n
#define OFFLOAD_CAT_(a, b) OFFLOAD_CAT2_(a, b)
#define OFFLOAD_CAT2_(a, b) a##b
#define OFFLOAD_EACH_(t, ...) OFFLOAD_CAT_(OFFLOAD_EACH_, OFFLOAD_COUNT_(__VA_ARGS__))(t, __VA_ARGS__)
#define OFFLOAD_EACH_1(t, e) OFFLOAD_PARAM_ENTRY_(t, e)
#define OFFLOAD_EACH_2(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_1(t, __VA_ARGS__)
#define OFFLOAD_EACH_3(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_2(t, __VA_ARGS__)
#define OFFLOAD_EACH_4(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_3(t, __VA_ARGS__)
#define OFFLOAD_EACH_5(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_4(t, __VA_ARGS__)
#define OFFLOAD_EACH_6(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_5(t, __VA_ARGS__)
#define OFFLOAD_EACH_7(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_6(t, __VA_ARGS__)
#define OFFLOAD_EACH_8(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_7(t, __VA_ARGS__)
#define OFFLOAD_EACH_9(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_8(t, __VA_ARGS__)
#define OFFLOAD_EACH_10(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_9(t, __VA_ARGS__)
#define OFFLOAD_EACH_11(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_10(t, __VA_ARGS__)
#define OFFLOAD_EACH_12(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_11(t, __VA_ARGS__)
#define OFFLOAD_EACH_13(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_12(t, __VA_ARGS__)
#define OFFLOAD_EACH_14(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_13(t, __VA_ARGS__)
#define OFFLOAD_EACH_15(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_14(t, __VA_ARGS__)
#define OFFLOAD_EACH_16(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_15(t, __VA_ARGS__)
#define OFFLOAD_EACH_17(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_16(t, __VA_ARGS__)
#define OFFLOAD_EACH_18(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_17(t, __VA_ARGS__)
#define OFFLOAD_EACH_19(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_18(t, __VA_ARGS__)
#define OFFLOAD_EACH_20(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_19(t, __VA_ARGS__)
#define OFFLOAD_EACH_21(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_20(t, __VA_ARGS__)
#define OFFLOAD_EACH_22(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_21(t, __VA_ARGS__)
#define OFFLOAD_EACH_23(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_22(t, __VA_ARGS__)
#define OFFLOAD_EACH_24(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_23(t, __VA_ARGS__)
#define OFFLOAD_EACH_25(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_24(t, __VA_ARGS__)
#define OFFLOAD_EACH_26(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_25(t, __VA_ARGS__)
#define OFFLOAD_EACH_27(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_26(t, __VA_ARGS__)
#define OFFLOAD_EACH_28(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_27(t, __VA_ARGS__)
#define OFFLOAD_EACH_29(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_28(t, __VA_ARGS__)
#define OFFLOAD_EACH_30(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_29(t, __VA_ARGS__)
#define OFFLOAD_EACH_31(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_30(t, __VA_ARGS__)
#define OFFLOAD_EACH_32(t, e, ...) OFFLOAD_PARAM_ENTRY_(t, e), OFFLOAD_EACH_31(t, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_HOST_H */
