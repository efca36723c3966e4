//===- Auto-generated file, part of the offload project (offload-capi) ----===//
//
// Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

// Auto-generated file, do not manually edit: python -m offload_capi.generate
// (llvm22 ABI, from offload's API table).

#pragma once

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <stdbool.h>
#endif

#if defined(__cplusplus)
extern "C" {
#endif

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_APICALL
/// @brief Calling convention for all API functions
#if defined(_WIN32)
#define OL_APICALL __cdecl
#else
#define OL_APICALL
#endif // defined(_WIN32)
#endif // OL_APICALL

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_APIEXPORT
/// @brief Microsoft-specific dllexport storage-class attribute
#if defined(_WIN32)
#define OL_APIEXPORT __declspec(dllexport)
#else
#define OL_APIEXPORT
#endif // defined(_WIN32)
#endif // OL_APIEXPORT

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_SUCCESS
/// @brief Success condition
#define OL_SUCCESS NULL
#endif // OL_SUCCESS

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_VERSION_MAJOR
/// @brief Major version of the Offload API
#define OL_VERSION_MAJOR 0
#endif // OL_VERSION_MAJOR

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_VERSION_MINOR
/// @brief Minor version of the Offload API
#define OL_VERSION_MINOR 0
#endif // OL_VERSION_MINOR

///////////////////////////////////////////////////////////////////////////////
#ifndef OL_VERSION_PATCH
/// @brief Patch version of the Offload API
#define OL_VERSION_PATCH 1
#endif // OL_VERSION_PATCH

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of context object
typedef struct ol_context_impl_t *ol_context_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of platform's device object
typedef struct ol_device_impl_t *ol_device_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of event object
typedef struct ol_event_impl_t *ol_event_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of a platform instance
typedef struct ol_platform_impl_t *ol_platform_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of program object
typedef struct ol_program_impl_t *ol_program_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of queue object
typedef struct ol_queue_impl_t *ol_queue_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Handle of an object in a device's memory for a specific program
typedef struct ol_symbol_impl_t *ol_symbol_handle_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_alloc_type_t``.
typedef enum ol_alloc_type_t {
  OL_ALLOC_TYPE_HOST = 0,
  OL_ALLOC_TYPE_DEVICE = 1,
  OL_ALLOC_TYPE_MANAGED = 2,
  /// @cond
  OL_ALLOC_TYPE_LAST = 3,
  OL_ALLOC_TYPE_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_alloc_type_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_device_fp_capability_flag_t`` (bit field).
typedef enum ol_device_fp_capability_flag_t {
  OL_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1,
  OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST = 2,
  OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO = 4,
  OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF = 8,
  OL_DEVICE_FP_CAPABILITY_FLAG_INF_NAN = 16,
  OL_DEVICE_FP_CAPABILITY_FLAG_DENORM = 32,
  OL_DEVICE_FP_CAPABILITY_FLAG_FMA = 64,
  OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT = 128,
  /// @cond
  OL_DEVICE_FP_CAPABILITY_FLAG_LAST = 256,
  OL_DEVICE_FP_CAPABILITY_FLAG_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_device_fp_capability_flag_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_device_info_t`` (R1 order; NUM_LANES precedes the FP configuration entries).
typedef enum ol_device_info_t {
  /// [ol_device_type_t]
  OL_DEVICE_INFO_TYPE = 0,
  /// [ol_platform_handle_t]
  OL_DEVICE_INFO_PLATFORM = 1,
  /// [char[]]
  OL_DEVICE_INFO_NAME = 2,
  /// [char[]]
  OL_DEVICE_INFO_PRODUCT_NAME = 3,
  /// [char[]]
  OL_DEVICE_INFO_UID = 4,
  /// [char[]]
  OL_DEVICE_INFO_VENDOR = 5,
  /// [char[]]
  OL_DEVICE_INFO_DRIVER_VERSION = 6,
  /// [uint32_t]
  OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE = 7,
  /// [ol_dimensions_t]
  OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION = 8,
  /// [uint32_t]
  OL_DEVICE_INFO_MAX_WORK_SIZE = 9,
  /// [ol_dimensions_t]
  OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION = 10,
  /// [uint32_t]
  OL_DEVICE_INFO_VENDOR_ID = 11,
  /// [uint32_t]
  OL_DEVICE_INFO_NUM_COMPUTE_UNITS = 12,
  /// [uint32_t]
  OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY = 13,
  /// [uint32_t]
  OL_DEVICE_INFO_MEMORY_CLOCK_RATE = 14,
  /// [uint32_t]
  OL_DEVICE_INFO_ADDRESS_BITS = 15,
  /// [uint64_t]
  OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE = 16,
  /// [uint64_t]
  OL_DEVICE_INFO_GLOBAL_MEM_SIZE = 17,
  /// [uint64_t]
  OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE = 18,
  /// [ol_device_fp_capability_flags_t]
  OL_DEVICE_INFO_SINGLE_FP_CONFIG = 19,
  /// [ol_device_fp_capability_flags_t]
  OL_DEVICE_INFO_DOUBLE_FP_CONFIG = 20,
  /// [ol_device_fp_capability_flags_t]
  OL_DEVICE_INFO_HALF_FP_CONFIG = 21,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR = 22,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT = 23,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT = 24,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG = 25,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT = 26,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE = 27,
  /// [uint32_t]
  OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF = 28,
  /// @cond
  OL_DEVICE_INFO_LAST = 29,
  OL_DEVICE_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_device_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_device_type_t``.
typedef enum ol_device_type_t {
  OL_DEVICE_TYPE_DEFAULT = 0,
  OL_DEVICE_TYPE_ALL = 1,
  OL_DEVICE_TYPE_GPU = 2,
  OL_DEVICE_TYPE_CPU = 3,
  OL_DEVICE_TYPE_HOST = 4,
  /// @cond
  OL_DEVICE_TYPE_LAST = 5,
  OL_DEVICE_TYPE_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_device_type_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_errc_t``.
typedef enum ol_errc_t {
  OL_ERRC_SUCCESS = 0,
  OL_ERRC_UNKNOWN = 1,
  OL_ERRC_HOST_IO = 2,
  OL_ERRC_INVALID_BINARY = 3,
  OL_ERRC_INVALID_NULL_POINTER = 4,
  OL_ERRC_INVALID_ARGUMENT = 5,
  OL_ERRC_NOT_FOUND = 6,
  OL_ERRC_OUT_OF_RESOURCES = 7,
  OL_ERRC_INVALID_SIZE = 8,
  OL_ERRC_INVALID_ENUMERATION = 9,
  OL_ERRC_HOST_TOOL_NOT_FOUND = 10,
  OL_ERRC_INVALID_VALUE = 11,
  OL_ERRC_UNIMPLEMENTED = 12,
  OL_ERRC_UNSUPPORTED = 13,
  OL_ERRC_ASSEMBLE_FAILURE = 14,
  OL_ERRC_COMPILE_FAILURE = 15,
  OL_ERRC_LINK_FAILURE = 16,
  OL_ERRC_BACKEND_FAILURE = 17,
  OL_ERRC_UNINITIALIZED = 18,
  OL_ERRC_INVALID_NULL_HANDLE = 19,
  OL_ERRC_INVALID_PLATFORM = 20,
  OL_ERRC_INVALID_DEVICE = 21,
  OL_ERRC_INVALID_QUEUE = 22,
  OL_ERRC_INVALID_EVENT = 23,
  OL_ERRC_SYMBOL_KIND = 24,
  /// @cond
  OL_ERRC_LAST = 25,
  OL_ERRC_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_errc_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_event_info_t``.
typedef enum ol_event_info_t {
  /// [ol_queue_handle_t]
  OL_EVENT_INFO_QUEUE = 0,
  /// [bool]
  OL_EVENT_INFO_IS_COMPLETE = 1,
  /// @cond
  OL_EVENT_INFO_LAST = 2,
  OL_EVENT_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_event_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_mem_info_t``.
typedef enum ol_mem_info_t {
  /// [ol_device_handle_t]
  OL_MEM_INFO_DEVICE = 0,
  /// [void *]
  OL_MEM_INFO_BASE = 1,
  /// [size_t]
  OL_MEM_INFO_SIZE = 2,
  /// [ol_alloc_type_t]
  OL_MEM_INFO_TYPE = 3,
  /// @cond
  OL_MEM_INFO_LAST = 4,
  OL_MEM_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_mem_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_platform_backend_t``.
typedef enum ol_platform_backend_t {
  OL_PLATFORM_BACKEND_UNKNOWN = 0,
  OL_PLATFORM_BACKEND_CUDA = 1,
  OL_PLATFORM_BACKEND_AMDGPU = 2,
  OL_PLATFORM_BACKEND_LEVEL_ZERO = 3,
  OL_PLATFORM_BACKEND_HOST = 4,
  /// @cond
  OL_PLATFORM_BACKEND_LAST = 5,
  OL_PLATFORM_BACKEND_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_platform_backend_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_platform_info_t``.
typedef enum ol_platform_info_t {
  /// [char[]]
  OL_PLATFORM_INFO_NAME = 0,
  /// [char[]]
  OL_PLATFORM_INFO_VENDOR_NAME = 1,
  /// [char[]]
  OL_PLATFORM_INFO_VERSION = 2,
  /// [ol_platform_backend_t]
  OL_PLATFORM_INFO_BACKEND = 3,
  /// @cond
  OL_PLATFORM_INFO_LAST = 4,
  OL_PLATFORM_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_platform_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_queue_info_t``.
typedef enum ol_queue_info_t {
  /// [ol_device_handle_t]
  OL_QUEUE_INFO_DEVICE = 0,
  /// [bool]
  OL_QUEUE_INFO_EMPTY = 1,
  /// @cond
  OL_QUEUE_INFO_LAST = 2,
  OL_QUEUE_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_queue_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_symbol_info_t``.
typedef enum ol_symbol_info_t {
  /// [ol_symbol_kind_t]
  OL_SYMBOL_INFO_KIND = 0,
  /// [void *]
  OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS = 1,
  /// [size_t]
  OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE = 2,
  /// @cond
  OL_SYMBOL_INFO_LAST = 3,
  OL_SYMBOL_INFO_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_symbol_info_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief ``ol_symbol_kind_t``.
typedef enum ol_symbol_kind_t {
  OL_SYMBOL_KIND_KERNEL = 0,
  OL_SYMBOL_KIND_GLOBAL_VARIABLE = 1,
  /// @cond
  OL_SYMBOL_KIND_LAST = 2,
  OL_SYMBOL_KIND_FORCE_UINT32 = 0x7fffffff
  /// @endcond

} ol_symbol_kind_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Device floating-point capability flags
typedef uint32_t ol_device_fp_capability_flags_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Memory registering/locking flags
typedef uint32_t ol_memory_register_flags_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Result type returned by all entry points.
typedef const struct ol_error_struct_t *ol_result_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief User-provided function to be used with `olIterateDevices`
typedef bool (*ol_device_iterate_cb_t)(ol_device_handle_t Device, void *UserData);

///////////////////////////////////////////////////////////////////////////////
/// @brief Host function for use by `olLaunchHostFunction`.
typedef void (*ol_host_function_cb_t)(void *UserData);

///////////////////////////////////////////////////////////////////////////////
/// @brief Code location information that can optionally be associated with an
/// API call
typedef struct ol_code_location_t {
  const char *FunctionName; /// Function name
  const char *SourceFile;   /// Source code file
  uint32_t LineNumber;      /// Source code line number
  uint32_t ColumnNumber;    /// Source code column number
} ol_code_location_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief A three element vector
typedef struct ol_dimensions_t {
  uint32_t x; /// X
  uint32_t y; /// Y
  uint32_t z; /// Z
} ol_dimensions_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Details of the error condition returned by an API call
typedef struct ol_error_struct_t {
  ol_errc_t Code;      /// The error code
  const char *Details; /// String containing error details
} ol_error_struct_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Size-related arguments for a kernel launch.
typedef struct ol_kernel_launch_size_args_t {
  size_t Dimensions;                /// Number of work dimensions
  struct ol_dimensions_t NumGroups; /// Number of work groups in each dimension
  struct ol_dimensions_t GroupSize; /// Size of a work group in each dimension
  size_t DynSharedMemory;           /// Size of dynamic shared memory in bytes.
} ol_kernel_launch_size_args_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olCalculateOptimalOccupancy
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct calculate_optimal_occupancy_params_t {
  ol_device_handle_t *pDevice;
  ol_symbol_handle_t *pKernel;
  size_t *pSharedMemory;
  size_t **pGroupSize;
} ol_calculate_optimal_occupancy_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The group size giving optimal occupancy with ``shared_memory`` bytes of dynamic memory.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Kernel`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == GroupSize`
OL_APIEXPORT ol_result_t OL_APICALL olCalculateOptimalOccupancy(
    ol_device_handle_t Device,
    ol_symbol_handle_t Kernel,
    size_t SharedMemory,
    size_t *GroupSize);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olCalculateOptimalOccupancy that also sets source code location information
/// @details See also ::olCalculateOptimalOccupancy
OL_APIEXPORT ol_result_t OL_APICALL olCalculateOptimalOccupancyWithCodeLoc(
    ol_device_handle_t Device,
    ol_symbol_handle_t Kernel,
    size_t SharedMemory,
    size_t *GroupSize,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olCreateEvent
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct create_event_params_t {
  ol_queue_handle_t *pQueue;
  ol_event_handle_t **pEvent;
} ol_create_event_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Record an event after the queue's current work; ``flags``: EventFlags (ENABLE_PROFILING for olGetEventElapsedTime at API level main).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Event`
OL_APIEXPORT ol_result_t OL_APICALL olCreateEvent(
    ol_queue_handle_t Queue,
    ol_event_handle_t *Event);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olCreateEvent that also sets source code location information
/// @details See also ::olCreateEvent
OL_APIEXPORT ol_result_t OL_APICALL olCreateEventWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_event_handle_t *Event,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olCreateProgram
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct create_program_params_t {
  ol_device_handle_t *pDevice;
  const void **pProgData;
  size_t *pProgDataSize;
  ol_program_handle_t **pProgram;
} ol_create_program_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Load a program from a copy of ``data``, owned by ``context``.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == ProgData`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Program`
OL_APIEXPORT ol_result_t OL_APICALL olCreateProgram(
    ol_device_handle_t Device,
    const void *ProgData,
    size_t ProgDataSize,
    ol_program_handle_t *Program);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olCreateProgram that also sets source code location information
/// @details See also ::olCreateProgram
OL_APIEXPORT ol_result_t OL_APICALL olCreateProgramWithCodeLoc(
    ol_device_handle_t Device,
    const void *ProgData,
    size_t ProgDataSize,
    ol_program_handle_t *Program,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olCreateQueue
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct create_queue_params_t {
  ol_device_handle_t *pDevice;
  ol_queue_handle_t **pQueue;
} ol_create_queue_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Create a queue in ``context`` (reusing a finished parked one; an error it still held goes to the final olShutDown).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Queue`
OL_APIEXPORT ol_result_t OL_APICALL olCreateQueue(
    ol_device_handle_t Device,
    ol_queue_handle_t *Queue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olCreateQueue that also sets source code location information
/// @details See also ::olCreateQueue
OL_APIEXPORT ol_result_t OL_APICALL olCreateQueueWithCodeLoc(
    ol_device_handle_t Device,
    ol_queue_handle_t *Queue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olDestroyEvent
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct destroy_event_params_t {
  ol_event_handle_t *pEvent;
} ol_destroy_event_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Destroy an event.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Event`
OL_APIEXPORT ol_result_t OL_APICALL olDestroyEvent(
    ol_event_handle_t Event);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olDestroyEvent that also sets source code location information
/// @details See also ::olDestroyEvent
OL_APIEXPORT ol_result_t OL_APICALL olDestroyEventWithCodeLoc(
    ol_event_handle_t Event,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olDestroyProgram
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct destroy_program_params_t {
  ol_program_handle_t *pProgram;
} ol_destroy_program_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Unload a program from its device once no launch of its kernels is being made or queued on its device (from a host function: queued behind its own queue).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Program`
OL_APIEXPORT ol_result_t OL_APICALL olDestroyProgram(
    ol_program_handle_t Program);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olDestroyProgram that also sets source code location information
/// @details See also ::olDestroyProgram
OL_APIEXPORT ol_result_t OL_APICALL olDestroyProgramWithCodeLoc(
    ol_program_handle_t Program,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olDestroyQueue
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct destroy_queue_params_t {
  ol_queue_handle_t *pQueue;
} ol_destroy_queue_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Destroy a queue; work already enqueued still runs, and its errors reach the final olShutDown.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
OL_APIEXPORT ol_result_t OL_APICALL olDestroyQueue(
    ol_queue_handle_t Queue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olDestroyQueue that also sets source code location information
/// @details See also ::olDestroyQueue
OL_APIEXPORT ol_result_t OL_APICALL olDestroyQueueWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetDeviceInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_device_info_params_t {
  ol_device_handle_t *pDevice;
  ol_device_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_device_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The value of one device property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfo(
    ol_device_handle_t Device,
    ol_device_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetDeviceInfo that also sets source code location information
/// @details See also ::olGetDeviceInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoWithCodeLoc(
    ol_device_handle_t Device,
    ol_device_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetDeviceInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_device_info_size_params_t {
  ol_device_handle_t *pDevice;
  ol_device_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_device_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of one device property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoSize(
    ol_device_handle_t Device,
    ol_device_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetDeviceInfoSize that also sets source code location information
/// @details See also ::olGetDeviceInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoSizeWithCodeLoc(
    ol_device_handle_t Device,
    ol_device_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetEventInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_event_info_params_t {
  ol_event_handle_t *pEvent;
  ol_event_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_event_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The value of one event property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Event`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetEventInfo(
    ol_event_handle_t Event,
    ol_event_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetEventInfo that also sets source code location information
/// @details See also ::olGetEventInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetEventInfoWithCodeLoc(
    ol_event_handle_t Event,
    ol_event_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetEventInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_event_info_size_params_t {
  ol_event_handle_t *pEvent;
  ol_event_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_event_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of one event property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Event`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetEventInfoSize(
    ol_event_handle_t Event,
    ol_event_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetEventInfoSize that also sets source code location information
/// @details See also ::olGetEventInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetEventInfoSizeWithCodeLoc(
    ol_event_handle_t Event,
    ol_event_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetMemInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_mem_info_params_t {
  const void **pPtr;
  ol_mem_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_mem_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief A property of the allocation containing ``ptr`` (any interior pointer; of ``context`` when given).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Ptr`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetMemInfo(
    const void *Ptr,
    ol_mem_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetMemInfo that also sets source code location information
/// @details See also ::olGetMemInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetMemInfoWithCodeLoc(
    const void *Ptr,
    ol_mem_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetMemInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_mem_info_size_params_t {
  const void **pPtr;
  ol_mem_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_mem_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of a memory property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Ptr`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetMemInfoSize(
    const void *Ptr,
    ol_mem_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetMemInfoSize that also sets source code location information
/// @details See also ::olGetMemInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetMemInfoSizeWithCodeLoc(
    const void *Ptr,
    ol_mem_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetPlatformInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_platform_info_params_t {
  ol_platform_handle_t *pPlatform;
  ol_platform_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_platform_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The value of one platform property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Platform`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfo(
    ol_platform_handle_t Platform,
    ol_platform_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetPlatformInfo that also sets source code location information
/// @details See also ::olGetPlatformInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoWithCodeLoc(
    ol_platform_handle_t Platform,
    ol_platform_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetPlatformInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_platform_info_size_params_t {
  ol_platform_handle_t *pPlatform;
  ol_platform_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_platform_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of one platform property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Platform`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoSize(
    ol_platform_handle_t Platform,
    ol_platform_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetPlatformInfoSize that also sets source code location information
/// @details See also ::olGetPlatformInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoSizeWithCodeLoc(
    ol_platform_handle_t Platform,
    ol_platform_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetQueueInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_queue_info_params_t {
  ol_queue_handle_t *pQueue;
  ol_queue_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_queue_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The value of one queue property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetQueueInfo(
    ol_queue_handle_t Queue,
    ol_queue_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetQueueInfo that also sets source code location information
/// @details See also ::olGetQueueInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetQueueInfoWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_queue_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetQueueInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_queue_info_size_params_t {
  ol_queue_handle_t *pQueue;
  ol_queue_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_queue_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of one queue property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetQueueInfoSize(
    ol_queue_handle_t Queue,
    ol_queue_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetQueueInfoSize that also sets source code location information
/// @details See also ::olGetQueueInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetQueueInfoSizeWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_queue_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetSymbol
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_symbol_params_t {
  ol_program_handle_t *pProgram;
  const char **pName;
  ol_symbol_kind_t *pKind;
  ol_symbol_handle_t **pSymbol;
} ol_get_symbol_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The kernel or global variable ``name`` (the same handle each time).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Program`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Name`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Symbol`
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbol(
    ol_program_handle_t Program,
    const char *Name,
    ol_symbol_kind_t Kind,
    ol_symbol_handle_t *Symbol);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetSymbol that also sets source code location information
/// @details See also ::olGetSymbol
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbolWithCodeLoc(
    ol_program_handle_t Program,
    const char *Name,
    ol_symbol_kind_t Kind,
    ol_symbol_handle_t *Symbol,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetSymbolInfo
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_symbol_info_params_t {
  ol_symbol_handle_t *pSymbol;
  ol_symbol_info_t *pPropName;
  size_t *pPropSize;
  void **pPropValue;
} ol_get_symbol_info_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The value of one symbol property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PropSize == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Symbol`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropValue`
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbolInfo(
    ol_symbol_handle_t Symbol,
    ol_symbol_info_t PropName,
    size_t PropSize,
    void *PropValue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetSymbolInfo that also sets source code location information
/// @details See also ::olGetSymbolInfo
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbolInfoWithCodeLoc(
    ol_symbol_handle_t Symbol,
    ol_symbol_info_t PropName,
    size_t PropSize,
    void *PropValue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olGetSymbolInfoSize
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct get_symbol_info_size_params_t {
  ol_symbol_handle_t *pSymbol;
  ol_symbol_info_t *pPropName;
  size_t **pPropSizeRet;
} ol_get_symbol_info_size_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief The C size in bytes of one symbol property.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Symbol`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PropSizeRet`
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbolInfoSize(
    ol_symbol_handle_t Symbol,
    ol_symbol_info_t PropName,
    size_t *PropSizeRet);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olGetSymbolInfoSize that also sets source code location information
/// @details See also ::olGetSymbolInfoSize
OL_APIEXPORT ol_result_t OL_APICALL olGetSymbolInfoSizeWithCodeLoc(
    ol_symbol_handle_t Symbol,
    ol_symbol_info_t PropName,
    size_t *PropSizeRet,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Perform initialization of the Offload library and plugins.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
OL_APIEXPORT ol_result_t OL_APICALL olInit();

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olInit that also sets source code location information
/// @details See also ::olInit
OL_APIEXPORT ol_result_t OL_APICALL olInitWithCodeLoc(
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olIsValidBinary
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct is_valid_binary_params_t {
  ol_device_handle_t *pDevice;
  const void **pProgData;
  size_t *pProgDataSize;
  bool **pValid;
} ol_is_valid_binary_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Whether ``data`` could be loaded on ``device``.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == ProgData`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Valid`
OL_APIEXPORT ol_result_t OL_APICALL olIsValidBinary(
    ol_device_handle_t Device,
    const void *ProgData,
    size_t ProgDataSize,
    bool *Valid);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olIsValidBinary that also sets source code location information
/// @details See also ::olIsValidBinary
OL_APIEXPORT ol_result_t OL_APICALL olIsValidBinaryWithCodeLoc(
    ol_device_handle_t Device,
    const void *ProgData,
    size_t ProgDataSize,
    bool *Valid,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olIterateDevices
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct iterate_devices_params_t {
  ol_device_iterate_cb_t *pCallback;
  void **pUserData;
} ol_iterate_devices_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Call ``callback(device, user_data)`` for every device until it returns False.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Callback`
OL_APIEXPORT ol_result_t OL_APICALL olIterateDevices(
    ol_device_iterate_cb_t Callback,
    void *UserData);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olIterateDevices that also sets source code location information
/// @details See also ::olIterateDevices
OL_APIEXPORT ol_result_t OL_APICALL olIterateDevicesWithCodeLoc(
    ol_device_iterate_cb_t Callback,
    void *UserData,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olLaunchHostFunction
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct launch_host_function_params_t {
  ol_queue_handle_t *pQueue;
  ol_host_function_cb_t *pCallback;
  void **pUserData;
} ol_launch_host_function_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Run ``callback(user_data)`` in queue order.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Callback`
OL_APIEXPORT ol_result_t OL_APICALL olLaunchHostFunction(
    ol_queue_handle_t Queue,
    ol_host_function_cb_t Callback,
    void *UserData);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olLaunchHostFunction that also sets source code location information
/// @details See also ::olLaunchHostFunction
OL_APIEXPORT ol_result_t OL_APICALL olLaunchHostFunctionWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_host_function_cb_t Callback,
    void *UserData,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olLaunchKernel
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct launch_kernel_params_t {
  ol_queue_handle_t *pQueue;
  ol_device_handle_t *pDevice;
  ol_symbol_handle_t *pKernel;
  const void **pArgumentsData;
  size_t *pArgumentsSize;
  const ol_kernel_launch_size_args_t **pLaunchSizeArgs;
} ol_launch_kernel_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Launch a kernel. ``args``: the packed argument struct (R1) or a sequence of per-argument values, each bytes-like (main's ArgPtrs/ArgSizes: as many as the kernel's parameters, each of its size). ``properties``: a mapping or pairs of KernelLaunchPropType and value (IS_COOPERATIVE: True for a cooperative launch). Main's order ``(queue, device, kernel, launch_size_args, properties, args)`` is accepted too. No queue: synchronous. ``args`` must hold every parameter the backend reports (INVALID_ARGUMENT), the grid must fit the device's limits (INVALID_SIZE).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_ARGUMENT
///         + `ArgumentsSize > 0 && ArgumentsData == NULL`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Kernel`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == LaunchSizeArgs`
OL_APIEXPORT ol_result_t OL_APICALL olLaunchKernel(
    ol_queue_handle_t Queue,
    ol_device_handle_t Device,
    ol_symbol_handle_t Kernel,
    const void *ArgumentsData,
    size_t ArgumentsSize,
    const ol_kernel_launch_size_args_t *LaunchSizeArgs);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olLaunchKernel that also sets source code location information
/// @details See also ::olLaunchKernel
OL_APIEXPORT ol_result_t OL_APICALL olLaunchKernelWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_device_handle_t Device,
    ol_symbol_handle_t Kernel,
    const void *ArgumentsData,
    size_t ArgumentsSize,
    const ol_kernel_launch_size_args_t *LaunchSizeArgs,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemAlloc
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct mem_alloc_params_t {
  ol_device_handle_t *pDevice;
  ol_alloc_type_t *pType;
  size_t *pSize;
  void ***pAllocationOut;
} ol_mem_alloc_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Allocate ``size`` bytes of HOST, DEVICE or MANAGED memory in ``context`` (default: the device's platform's); return the address. At API level main HOST is refused: use olMemAllocHost.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `Size == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == AllocationOut`
OL_APIEXPORT ol_result_t OL_APICALL olMemAlloc(
    ol_device_handle_t Device,
    ol_alloc_type_t Type,
    size_t Size,
    void **AllocationOut);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemAlloc that also sets source code location information
/// @details See also ::olMemAlloc
OL_APIEXPORT ol_result_t OL_APICALL olMemAllocWithCodeLoc(
    ol_device_handle_t Device,
    ol_alloc_type_t Type,
    size_t Size,
    void **AllocationOut,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemFill
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct mem_fill_params_t {
  ol_queue_handle_t *pQueue;
  void **pPtr;
  size_t *pPatternSize;
  const void **pPatternPtr;
  size_t *pFillSize;
} ol_mem_fill_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Fill ``fill_size`` bytes at ``ptr`` with the repeated ``pattern``. No queue: synchronous. The range is checked as olMemcpy's are.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `PatternSize == 0`
///     - ::OL_ERRC_INVALID_SIZE
///         + `FillSize % PatternSize != 0`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Ptr`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PatternPtr`
OL_APIEXPORT ol_result_t OL_APICALL olMemFill(
    ol_queue_handle_t Queue,
    void *Ptr,
    size_t PatternSize,
    const void *PatternPtr,
    size_t FillSize);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemFill that also sets source code location information
/// @details See also ::olMemFill
OL_APIEXPORT ol_result_t OL_APICALL olMemFillWithCodeLoc(
    ol_queue_handle_t Queue,
    void *Ptr,
    size_t PatternSize,
    const void *PatternPtr,
    size_t FillSize,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemFree
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct mem_free_params_t {
  void **pAddress;
} ol_mem_free_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Free an olMemAlloc allocation (its owner is found; a context given must be its own: INVALID_CONTEXT), once every busy queue (live or parked) has finished its work (from a host function: queued behind its own queue).
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Address`
OL_APIEXPORT ol_result_t OL_APICALL olMemFree(
    void *Address);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemFree that also sets source code location information
/// @details See also ::olMemFree
OL_APIEXPORT ol_result_t OL_APICALL olMemFreeWithCodeLoc(
    void *Address,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemRegister
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct mem_register_params_t {
  ol_device_handle_t *pDevice;
  void **pPtr;
  size_t *pSize;
  ol_memory_register_flags_t *pFlags;
  void ***pPinnedPtr;
} ol_mem_register_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Register (and optionally page-lock) host memory; return the pinned pointer.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_SIZE
///         + `Size == 0`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Ptr`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == PinnedPtr`
OL_APIEXPORT ol_result_t OL_APICALL olMemRegister(
    ol_device_handle_t Device,
    void *Ptr,
    size_t Size,
    ol_memory_register_flags_t Flags,
    void **PinnedPtr);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemRegister that also sets source code location information
/// @details See also ::olMemRegister
OL_APIEXPORT ol_result_t OL_APICALL olMemRegisterWithCodeLoc(
    ol_device_handle_t Device,
    void *Ptr,
    size_t Size,
    ol_memory_register_flags_t Flags,
    void **PinnedPtr,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemUnregister
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct mem_unregister_params_t {
  ol_device_handle_t *pDevice;
  void **pPtr;
} ol_mem_unregister_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Unregister (and optionally unlock) host memory registered with olMemRegister.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Device`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Ptr`
OL_APIEXPORT ol_result_t OL_APICALL olMemUnregister(
    ol_device_handle_t Device,
    void *Ptr);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemUnregister that also sets source code location information
/// @details See also ::olMemUnregister
OL_APIEXPORT ol_result_t OL_APICALL olMemUnregisterWithCodeLoc(
    ol_device_handle_t Device,
    void *Ptr,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olMemcpy
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct memcpy_params_t {
  ol_queue_handle_t *pQueue;
  void **pDstPtr;
  ol_device_handle_t *pDstDevice;
  const void **pSrcPtr;
  ol_device_handle_t *pSrcDevice;
  size_t *pSize;
} ol_memcpy_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Copy ``size`` bytes; host pointers use a device of the host platform. No queue: synchronous. Both ranges are checked first: inside the allocation they touch (INVALID_SIZE), live device memory and mapped host memory (INVALID_ARGUMENT), no wrapping past 2**64.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == DstDevice`
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == SrcDevice`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == DstPtr`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == SrcPtr`
OL_APIEXPORT ol_result_t OL_APICALL olMemcpy(
    ol_queue_handle_t Queue,
    void *DstPtr,
    ol_device_handle_t DstDevice,
    const void *SrcPtr,
    ol_device_handle_t SrcDevice,
    size_t Size);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olMemcpy that also sets source code location information
/// @details See also ::olMemcpy
OL_APIEXPORT ol_result_t OL_APICALL olMemcpyWithCodeLoc(
    ol_queue_handle_t Queue,
    void *DstPtr,
    ol_device_handle_t DstDevice,
    const void *SrcPtr,
    ol_device_handle_t SrcDevice,
    size_t Size,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Release the resources in use by Offload.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
OL_APIEXPORT ol_result_t OL_APICALL olShutDown();

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olShutDown that also sets source code location information
/// @details See also ::olShutDown
OL_APIEXPORT ol_result_t OL_APICALL olShutDownWithCodeLoc(
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olSyncEvent
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct sync_event_params_t {
  ol_event_handle_t *pEvent;
} ol_sync_event_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Block until the event is complete.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Event`
OL_APIEXPORT ol_result_t OL_APICALL olSyncEvent(
    ol_event_handle_t Event);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olSyncEvent that also sets source code location information
/// @details See also ::olSyncEvent
OL_APIEXPORT ol_result_t OL_APICALL olSyncEventWithCodeLoc(
    ol_event_handle_t Event,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olSyncQueue
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct sync_queue_params_t {
  ol_queue_handle_t *pQueue;
} ol_sync_queue_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Block until the queue's work is complete.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
OL_APIEXPORT ol_result_t OL_APICALL olSyncQueue(
    ol_queue_handle_t Queue);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olSyncQueue that also sets source code location information
/// @details See also ::olSyncQueue
OL_APIEXPORT ol_result_t OL_APICALL olSyncQueueWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_code_location_t *CodeLocation);

///////////////////////////////////////////////////////////////////////////////
/// @brief Function parameters for olWaitEvents
/// @details Each entry is a pointer to the parameter passed to the function;
typedef struct wait_events_params_t {
  ol_queue_handle_t *pQueue;
  ol_event_handle_t **pEvents;
  size_t *pNumEvents;
} ol_wait_events_params_t;

///////////////////////////////////////////////////////////////////////////////
/// @brief Make later work on ``queue`` wait for every event in ``events``.
///
/// @returns
///     - ::OL_RESULT_SUCCESS
///     - ::OL_ERRC_UNINITIALIZED
///     - ::OL_ERRC_INVALID_NULL_HANDLE
///         + `NULL == Queue`
///     - ::OL_ERRC_INVALID_NULL_POINTER
///         + `NULL == Events`
OL_APIEXPORT ol_result_t OL_APICALL olWaitEvents(
    ol_queue_handle_t Queue,
    ol_event_handle_t *Events,
    size_t NumEvents);

///////////////////////////////////////////////////////////////////////////////
/// @brief Variant of olWaitEvents that also sets source code location information
/// @details See also ::olWaitEvents
OL_APIEXPORT ol_result_t OL_APICALL olWaitEventsWithCodeLoc(
    ol_queue_handle_t Queue,
    ol_event_handle_t *Events,
    size_t NumEvents,
    ol_code_location_t *CodeLocation);

#if defined(__cplusplus)
} // extern "C"
#endif
