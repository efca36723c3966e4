/* offload_kernel.h - one source for simple kernels on the host, CUDA and HIP (offload.build).
 *
 * A kernel written as
 *
 *     #include <offload_kernel.h>
 *
 *     OFFLOAD_PORTABLE_KERNEL(saxpy, (float, a), (const float *, x), (float *, y), (uint64_t, n)) {
 *       const uint64_t i = offload_global_id(0);
 *       if (i < n) y[i] = a * x[i] + y[i];
 *     }
 *
 * compiles unchanged for every device offload.build targets:
 *
 *   - host C (offload_host.h, the host backend's compiler): an argument struct, its parameter
 *     declaration (OFFLOAD_KERNEL_PARAMS, kinds and pointer element types found with _Generic) and
 *     a kernel that runs the body once per work-item of each group;
 *   - CUDA (nvcc, NVRTC: __CUDACC__) and HIP (clang -x hip: __HIP__, with or without the HIP
 *     headers): extern "C" __global__ void saxpy(float a, const float *x, float *y, uint64_t n);
 *   - any other CUDA-style C++ environment that defines OFFLOAD_KERNEL_CUDA_STYLE and provides
 *     __global__, threadIdx, blockIdx, blockDim and gridDim itself.
 *
 * The body is one work-item's code. Ids, each of dimension d = 0, 1 or 2 (x, y, z):
 * offload_thread_id(d) (within the group), offload_group_id(d), offload_group_size(d),
 * offload_num_groups(d) (the grid in groups), offload_global_id(d) (as uint64_t). Parameters are
 * (type, name) pairs, 1 to 16 of them, each type one declarator without commas. Not portable, so
 * not offered: barriers, group-shared memory, atomics (write those per target).
 *
 * Host parameter declarations: integers, floats and pointers to bool / the fixed-width integers /
 * float / double (const or not) are declared with their kind and element type; void pointers as
 * untyped pointers; anything else (a struct, a pointer to a struct) as bytes of its size.
 */
#ifndef OFFLOAD_KERNEL_H
#define OFFLOAD_KERNEL_H

/* ---- the parameter list machinery (every target) ---------------------------------------- */
#define OFFLOAD_K_CAT_(a, b) OFFLOAD_K_CAT2_(a, b)
#define OFFLOAD_K_CAT2_(a, b) a##b
#define OFFLOAD_K_COUNT_(...) OFFLOAD_K_COUNT2_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define OFFLOAD_K_COUNT2_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, n, ...) n
#define OFFLOAD_K_COMMA_() ,
#define OFFLOAD_K_SEMI_() ;
#define OFFLOAD_K_APPLY_(m, c, pair) OFFLOAD_K_APPLY2_(m, c, OFFLOAD_K_UNPACK_ pair)
#define OFFLOAD_K_APPLY2_(m, c, ...) OFFLOAD_K_APPLY3_(m, c, __VA_ARGS__)
#define OFFLOAD_K_APPLY3_(m, c, type, name) m(c, type, name)
#define OFFLOAD_K_UNPACK_(type, name) type, name
/* m(c, type, name) for every (type, name) pair, separated by sep() */
#define OFFLOAD_K_MAP_(m, c, sep, ...) OFFLOAD_K_CAT_(OFFLOAD_K_MAP_, OFFLOAD_K_COUNT_(__VA_ARGS__))(m, c, sep, __VA_ARGS__)
#define OFFLOAD_K_MAP_1(m, c, s, p) OFFLOAD_K_APPLY_(m, c, p)
#define OFFLOAD_K_MAP_2(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_1(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_3(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_2(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_4(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_3(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_5(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_4(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_6(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_5(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_7(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_6(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_8(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_7(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_9(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_8(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_10(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_9(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_11(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_10(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_12(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_11(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_13(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_12(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_14(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_13(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_15(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_14(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_MAP_16(m, c, s, p, ...) OFFLOAD_K_APPLY_(m, c, p) s() OFFLOAD_K_MAP_15(m, c, s, __VA_ARGS__)
#define OFFLOAD_K_DECL_(c, type, name) type name
#define OFFLOAD_K_D0 x
#define OFFLOAD_K_D1 y
#define OFFLOAD_K_D2 z
#define OFFLOAD_K_DIM_(d) OFFLOAD_K_CAT_(OFFLOAD_K_D, d)

#if defined(__CUDACC__) || defined(__HIP__) || defined(OFFLOAD_KERNEL_CUDA_STYLE)
/* ---- CUDA-style targets ------------------------------------------------------------------ */
#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
#else
#include <stdint.h>
#endif

#if defined(__HIP__) && !defined(__CLANG_HIP_RUNTIME_WRAPPER_H__) && !defined(__global__)
/* clang -x hip -nogpuinc (no HIP headers): the little of HIP a portable kernel uses. */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
struct offload_hip_uint3_ {
  unsigned x, y, z;
};
#define threadIdx \
  (offload_hip_uint3_{__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()})
#define blockIdx \
  (offload_hip_uint3_{__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()})
#define blockDim                                                                                 \
  (offload_hip_uint3_{__builtin_amdgcn_workgroup_size_x(), __builtin_amdgcn_workgroup_size_y(), \
                      __builtin_amdgcn_workgroup_size_z()})
#define gridDim                                                                                     \
  (offload_hip_uint3_{__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(),         \
                      __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y(),         \
                      __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z()})
#endif

#define OFFLOAD_PORTABLE_KERNEL(name, ...) \
  extern "C" __global__ void name(OFFLOAD_K_MAP_(OFFLOAD_K_DECL_, name, OFFLOAD_K_COMMA_, __VA_ARGS__))
#define offload_thread_id(d) (threadIdx.OFFLOAD_K_DIM_(d))
#define offload_group_id(d) (blockIdx.OFFLOAD_K_DIM_(d))
#define offload_group_size(d) (blockDim.OFFLOAD_K_DIM_(d))
#define offload_num_groups(d) (gridDim.OFFLOAD_K_DIM_(d))

#else
/* ---- the host (C, offload_host.h) -------------------------------------------------------- */
#include <offload_host.h>

#define OFFLOAD_K_FIELD_(c, type, name) type name
#define OFFLOAD_K_ARG_(c, type, name) offload_a_->name
#define OFFLOAD_K_ELEMENT_OF_(type) \
  _Generic(*(type *)0, \
    _Bool *: OFFLOAD_ELEMENT_bool, int8_t *: OFFLOAD_ELEMENT_int8, uint8_t *: OFFLOAD_ELEMENT_uint8, \
    int16_t *: OFFLOAD_ELEMENT_int16, uint16_t *: OFFLOAD_ELEMENT_uint16, int32_t *: OFFLOAD_ELEMENT_int32, \
    uint32_t *: OFFLOAD_ELEMENT_uint32, int64_t *: OFFLOAD_ELEMENT_int64, uint64_t *: OFFLOAD_ELEMENT_uint64, \
    float *: OFFLOAD_ELEMENT_float32, double *: OFFLOAD_ELEMENT_float64, \
    const _Bool *: OFFLOAD_ELEMENT_bool | OFFLOAD_ELEMENT_CONST_, \
    const int8_t *: OFFLOAD_ELEMENT_int8 | OFFLOAD_ELEMENT_CONST_, \
    const uint8_t *: OFFLOAD_ELEMENT_uint8 | OFFLOAD_ELEMENT_CONST_, \
    const int16_t *: OFFLOAD_ELEMENT_int16 | OFFLOAD_ELEMENT_CONST_, \
    const uint16_t *: OFFLOAD_ELEMENT_uint16 | OFFLOAD_ELEMENT_CONST_, \
    const int32_t *: OFFLOAD_ELEMENT_int32 | OFFLOAD_ELEMENT_CONST_, \
    const uint32_t *: OFFLOAD_ELEMENT_uint32 | OFFLOAD_ELEMENT_CONST_, \
    const int64_t *: OFFLOAD_ELEMENT_int64 | OFFLOAD_ELEMENT_CONST_, \
    const uint64_t *: OFFLOAD_ELEMENT_uint64 | OFFLOAD_ELEMENT_CONST_, \
    const float *: OFFLOAD_ELEMENT_float32 | OFFLOAD_ELEMENT_CONST_, \
    const double *: OFFLOAD_ELEMENT_float64 | OFFLOAD_ELEMENT_CONST_, \
    default: 0)
#define OFFLOAD_K_KIND_OF_(type) \
  (OFFLOAD_K_ELEMENT_OF_(type) ? OFFLOAD_PARAM_POINTER_ : \
   _Generic(*(type *)0, \
    void *: OFFLOAD_PARAM_POINTER_, const void *: OFFLOAD_PARAM_POINTER_, \
    signed char: OFFLOAD_PARAM_INT_, short: OFFLOAD_PARAM_INT_, int: OFFLOAD_PARAM_INT_, \
    long: OFFLOAD_PARAM_INT_, long long: OFFLOAD_PARAM_INT_, char: OFFLOAD_PARAM_INT_, \
    _Bool: OFFLOAD_PARAM_UINT_, unsigned char: OFFLOAD_PARAM_UINT_, unsigned short: OFFLOAD_PARAM_UINT_, \
    unsigned int: OFFLOAD_PARAM_UINT_, unsigned long: OFFLOAD_PARAM_UINT_, unsigned long long: OFFLOAD_PARAM_UINT_, \
    float: OFFLOAD_PARAM_FLOAT_, double: OFFLOAD_PARAM_FLOAT_, \
    default: OFFLOAD_PARAM_BYTES_))
#define OFFLOAD_K_ENTRY_(args, type, name) \
  {offsetof(args, name), sizeof(type), OFFLOAD_K_KIND_OF_(type), OFFLOAD_K_ELEMENT_OF_(type), #name}

#define OFFLOAD_PORTABLE_KERNEL(name, ...)                                                          \
  struct name##_offload_args_ {                                                                     \
    OFFLOAD_K_MAP_(OFFLOAD_K_FIELD_, name, OFFLOAD_K_SEMI_, __VA_ARGS__);                          \
  };                                                                                                \
  OFFLOAD_PARAMS_LINKAGE_ const offload_kernel_params_t offload_params_##name = {                  \
      OFFLOAD_PARAMS_MAGIC, 1, sizeof(struct name##_offload_args_), OFFLOAD_K_COUNT_(__VA_ARGS__),  \
      {OFFLOAD_K_MAP_(OFFLOAD_K_ENTRY_, struct name##_offload_args_, OFFLOAD_K_COMMA_, __VA_ARGS__)}}; \
  static inline void name##_offload_item_(const offload_group_t *offload_group_, offload_dim3_t offload_tid_, \
                                          OFFLOAD_K_MAP_(OFFLOAD_K_DECL_, name, OFFLOAD_K_COMMA_, __VA_ARGS__)); \
  OFFLOAD_KERNEL(name) {                                                                            \
    const struct name##_offload_args_ *offload_a_ = OFFLOAD_ARGS(struct name##_offload_args_);      \
    OFFLOAD_FOR_EACH_ITEM(offload_t_) {                                                             \
      name##_offload_item_(offload_group_, offload_t_,                                              \
                           OFFLOAD_K_MAP_(OFFLOAD_K_ARG_, name, OFFLOAD_K_COMMA_, __VA_ARGS__));    \
    }                                                                                               \
  }                                                                                                 \
  static inline void name##_offload_item_(const offload_group_t *offload_group_, offload_dim3_t offload_tid_, \
                                          OFFLOAD_K_MAP_(OFFLOAD_K_DECL_, name, OFFLOAD_K_COMMA_, __VA_ARGS__))
#define offload_thread_id(d) (offload_tid_.OFFLOAD_K_DIM_(d))
#define offload_group_id(d) (offload_group_->group_id.OFFLOAD_K_DIM_(d))
#define offload_group_size(d) (offload_group_->group_size.OFFLOAD_K_DIM_(d))
#define offload_num_groups(d) (offload_group_->num_groups.OFFLOAD_K_DIM_(d))
#endif

#define offload_global_id(d) ((uint64_t)offload_group_id(d) * offload_group_size(d) + offload_thread_id(d))

#endif /* OFFLOAD_KERNEL_H */
