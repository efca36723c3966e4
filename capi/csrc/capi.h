/* The runtime under the generated entry points (entry.c): the embedded interpreter, interned
 * results, handles, callbacks and the info cache. Every function here is called by generated code;
 * those taking or returning PyObject must be called with the GIL held (capi_enter). */
#ifndef OFFLOAD_CAPI_H
#define OFFLOAD_CAPI_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "offload/OffloadAPI.h"

#define CAPI_EXPORT __attribute__((visibility("default")))

/* Validation on (OFFLOAD_DISABLE_VALIDATION unset at the first olInit), as liboffload reads it. */
extern int capi_validate;

/* An interned result: the same pointer for the same code and details, never freed. */
ol_result_t capi_error(ol_errc_t code, const char *details);
/* NULL when the library is initialised and usable from this process; else the error to return. */
ol_result_t capi_check(void);
/* Whether capi_enter took the GIL (and capi_leave gives it back) or found this thread holding it. */
typedef enum { CAPI_HELD, CAPI_TAKEN } capi_gil;
/* Take the GIL (booting the interpreter if needed); on failure *res is the error to return. */
bool capi_enter(capi_gil *gil, ol_result_t *res);
void capi_leave(capi_gil gil);
/* The bridge's callable for ABI function number `index` (borrowed). */
PyObject *capi_fn(int index);
/* The current Python exception as an interned result (clears it). */
ol_result_t capi_raised(void);

/* Handles are the addresses of the Python handle objects, which the registry keeps alive. */
PyObject *capi_handle_in(const void *handle, ol_errc_t invalid, const char *what, ol_result_t *res);
bool capi_handle_out(PyObject *obj, void **out, ol_result_t *res);
void capi_handle_forget(const void *handle);

/* Argument conversions (new references; NULL with *res set on failure). */
PyObject *capi_bytes(const void *data, size_t size);
PyObject *capi_string(const char *text);
PyObject *capi_launch_size(const ol_kernel_launch_size_args_t *args, ol_result_t *res);
/* Every iteration callback (devices, platforms, symbols) is bool(handle, user data). */
typedef bool (*capi_iterate_cb)(void *handle, void *user_data);
PyObject *capi_iterate_callback(capi_iterate_cb cb, void *user_data);
/* Arrays: handles (events, main's devices; NULL entries None, `what` names one that is no live
 * handle), main's addresses and sizes; a launch's properties (an
 * ol_kernel_launch_prop_t list ended by type 0: [(type, value), ...]) and its arguments (one
 * bytes object per ArgPtrs[i] of ArgSizes[i] bytes); NULL arrays are None. */
PyObject *capi_handles(const void *const *handles, size_t count, ol_errc_t invalid, const char *what, ol_result_t *res);
PyObject *capi_pointers(void *const *pointers, size_t count);
PyObject *capi_sizes(const size_t *sizes, size_t count);
PyObject *capi_launch_properties(const void *properties, ol_result_t *res);
PyObject *capi_arguments(const void *const *pointers, const size_t *sizes, size_t count);
PyObject *capi_host_callback(ol_host_function_cb_t cb, void *user_data);

/* Out-parameter conversions of a call's result (steal nothing). */
bool capi_out_pointer(PyObject *value, void **out, ol_result_t *res);
bool capi_out_size(PyObject *value, size_t *out, ol_result_t *res);
bool capi_out_bool(PyObject *value, bool *out, ol_result_t *res);
bool capi_out_float(PyObject *value, float *out, ol_result_t *res);
/* Generated (entry.c, per ABI level): the level's name ("llvm22", "r1"), its functions' names in
 * capi_fn order (NULL-terminated) and its device properties' numbers and names ({0, NULL}-ended):
 * the bridge makes its tables from them (_bridge.tables). */
typedef struct { uint32_t number; const char *name; } capi_named;
extern const char capi_abi[];
extern const char *const capi_functions[];
extern const capi_named capi_device_infos[];
/* Generated: offload's error code numbers (OffloadError.code) -> this level's ol_errc_t. */
extern const uint32_t capi_errc_of[];
extern const size_t capi_errc_count;
extern const ol_errc_t capi_invalid_context;

/* olGet*Info / olGet*InfoSize: `which` is the bridge's info function index, `cacheable` whether
 * the answers never change (platforms and devices: served from C without the interpreter). */
ol_result_t capi_info(int which, bool cacheable, const void *handle, ol_errc_t invalid, const char *what,
                      uint32_t prop, size_t prop_size, void *prop_value, size_t *prop_size_ret, const void *context);

/* The generated entry points' parts (entry.c), each function's alike:
 *   olX_impl: CAPI_UNLESS_READY(); validation; CAPI_BEGIN(n); CAPI_ARG(i, conversion)...;
 *             CAPI_INVOKE(CAPI_FN_olX, n); out-parameter from r; CAPI_END(n);
 *   CAPI_TRACED(olX, (params), (names), (trace printers))  the olX_call that prints its trace line;
 *   CAPI_EXPORTS(olX, (params), (params, CodeLocation), (names))  olX and olXWithCodeLoc. */
#define CAPI_UNLESS_READY() do { ol_result_t ready_ = capi_check(); if (ready_) return ready_; } while (0)
#define CAPI_BEGIN(n)                                                                                  \
    capi_gil gil;                                                                                      \
    ol_result_t res = NULL;                                                                            \
    if (!capi_enter(&gil, &res)) return res;                                                           \
    PyObject *args[n] = {NULL}, *r = NULL
#define CAPI_ARG(i, conversion) do { if (!(args[i] = (conversion))) { if (!res) res = capi_raised(); goto done; } } while (0)
#define CAPI_NONE(i) (args[i] = Py_NewRef(Py_None))
#define CAPI_INVOKE(fn, n) do { if (!(r = PyObject_Vectorcall(capi_fn(fn), args, n, NULL))) { res = capi_raised(); goto done; } } while (0)
#define CAPI_END(n)                                                                                    \
    Py_DECREF(r);                                                                                      \
done:                                                                                                  \
    for (int i_ = 0; i_ < (n); i_++) Py_XDECREF(args[i_]);                                             \
    capi_leave(gil);                                                                                   \
    return res
#define CAPI_UNPAREN(...) __VA_ARGS__
#define CAPI_TRACED(name, params, names, printers)                                                     \
    static ol_result_t name##_call params {                                                            \
        if (!capi_trace_on()) return name##_impl names;                                                \
        capi_trace_open(#name);                                                                        \
        ol_result_t res = name##_impl names;                                                           \
        if (!capi_trace_on()) return res;                                                              \
        capi_tb b;                                                                                     \
        if (!capi_tb_init(&b)) return res;                                                             \
        CAPI_UNPAREN printers                                                                          \
        capi_tb_close(&b, res);                                                                        \
        return res;                                                                                    \
    }
#define CAPI_EXPORTS(name, params, located, names)                                                     \
    CAPI_EXPORT ol_result_t name params { return name##_call names; }                                  \
    CAPI_EXPORT ol_result_t name##WithCodeLoc located {                                                \
        capi_set_code_location(CodeLocation);                                                          \
        ol_result_t res = name##_call names;                                                           \
        capi_set_code_location(NULL);                                                                  \
        return res;                                                                                    \
    }

/* olInit: `platforms` (count of them) the platform backends main's ol_init_args_t asks for
 * (NULL: every one); `main_args`: this level's olInit takes them (the session is main's). */
ol_result_t capi_init(const uint32_t *platforms, size_t count, bool main_args);
ol_result_t capi_shutdown(void);

/* The code location of the current thread's *WithCodeLoc call (NULL outside one). */
void capi_set_code_location(ol_code_location_t *location);

#endif
