/* gpusim_kernel.h - the runtime interface between the simulator core and a host build of
 * GPU kernel source (a test fixture, not shipped).
 *
 * A host build is a shared object compiled from the same single-source kernel file as the GPU
 * image, with the host C++ compiler and this header in front of it. It exports:
 *
 *   gpusim_runtime *gpusim_rt;                 set by the simulator right after dlopen
 *   void gpusim_kernel_<name>(void **params);  one per kernel (GPUSIM_EXPORT_KERNEL(name)):
 *                                              params[i] points to parameter i's value
 *
 * Inside a kernel, threadIdx/blockIdx/blockDim/gridDim read the calling fiber's ids,
 * __syncthreads() suspends the fiber until every thread of the block has arrived, a
 * `__shared__` variable is one per block (blocks of one launch run one after another on one
 * worker thread, so thread_local storage is the block's), and GPUSIM_DYNAMIC_SHARED(T, name)
 * binds the block's dynamic shared memory. Atomics are the compiler's __atomic builtins.
 * __trap() aborts the launch and leaves the device with a sticky fault, as on a GPU.
 * Not modelled: warps (no warp intrinsics or lock-step), memory fences beyond the barrier,
 * texture/surface memory, device-side printf formatting beyond the host's printf.
 */
#ifndef GPUSIM_KERNEL_H
#define GPUSIM_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GPUSIM_RUNTIME_ABI 2u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpusim_uint3 {
  unsigned int x, y, z;
} gpusim_uint3;

typedef struct gpusim_thread {
  gpusim_uint3 thread_idx, block_idx, block_dim, grid_dim;
  void *dynamic_shared;
  size_t dynamic_shared_size;
} gpusim_thread;

typedef struct gpusim_runtime {
  unsigned abi; /* GPUSIM_RUNTIME_ABI */
  const gpusim_thread *(*self)(void);
  void (*syncthreads)(void);
  /* Aborts the launch as a GPU trap does: the calling thread never returns, the launch's other
   * threads and blocks stop, and the device takes a sticky fault (ABI 2). */
  void (*trap)(void) __attribute__((noreturn));
} gpusim_runtime;

#ifdef __cplusplus
}
#endif

/* Everything below is for the host build of kernel source only (C++). */
#if defined(GPUSIM_HOST_BUILD) && defined(__cplusplus)

#include <cstddef>
#include <type_traits>
#include <utility>

extern "C" __attribute__((visibility("default"))) gpusim_runtime *gpusim_rt;

typedef gpusim_uint3 uint3;
struct dim3 {
  unsigned int x, y, z;
  dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  dim3(gpusim_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __constant__
#define __restrict__ __restrict

#define threadIdx (gpusim_rt->self()->thread_idx)
#define blockIdx (gpusim_rt->self()->block_idx)
#define blockDim (gpusim_rt->self()->block_dim)
#define gridDim (gpusim_rt->self()->grid_dim)
#define __syncthreads() (gpusim_rt->syncthreads())
#define __trap() (gpusim_rt->trap())
#define GPUSIM_DYNAMIC_SHARED(type, name) type *const name = (type *)gpusim_rt->self()->dynamic_shared

template <typename T> static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicCAS(T *p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace gpusim {
template <typename... A, std::size_t... I>
static inline void invoke(void (*fn)(A...), void **params, std::index_sequence<I...>) {
  fn(*static_cast<std::remove_reference_t<A> *>(params[I])...);
}
template <typename... A> static inline void invoke(void (*fn)(A...), void **params) {
  invoke(fn, params, std::index_sequence_for<A...>{});
}
} // namespace gpusim

/* Once per host build (the build step appends it): the runtime pointer the simulator sets. */
#define GPUSIM_DEFINE_RUNTIME() \
  extern "C" __attribute__((visibility("default"))) gpusim_runtime *gpusim_rt = nullptr;

/* One line per kernel, after the kernel's definition (the build step appends them). */
#define GPUSIM_EXPORT_KERNEL(name)                                                          \
  extern "C" __attribute__((visibility("default"))) void gpusim_kernel_##name(void **params) { \
    gpusim::invoke(&name, params);                                                          \
  }

#endif /* GPUSIM_HOST_BUILD && __cplusplus */

#endif /* GPUSIM_KERNEL_H */
