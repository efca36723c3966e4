/* Conversions between C arguments and the bridge's Python values: handles (the registry),
 * buffers, launch sizes, callbacks (called with the GIL released), out-parameters, and the info
 * queries with their cache of platform and device answers. */
#include "capi.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PyObject *capi_registry;    /* the bridge's HANDLES: {address: handle object} */
PyObject *capi_info_calls;  /* the bridge's INFO: one callable per info query kind */
PyObject *capi_launch_class; /* offload.KernelLaunchSizeArgs */

/* ---- handles ------------------------------------------------------------------------------- */
/* The registered handle addresses, also in C (open addressing, GIL held): a live handle is found
 * without a Python object being made; a miss falls back to the registry (handles the bridge made). */
#define TOMBSTONE ((const void *)1)
static const void **live;
static size_t live_cap, live_used;

static size_t live_slot(const void *p) { return (((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 17) & (live_cap - 1); }

static bool live_has(const void *p) {
    if (!live_cap) return false;
    for (size_t i = live_slot(p);; i = (i + 1) & (live_cap - 1)) {
        if (live[i] == p) return true;
        if (!live[i]) return false;
    }
}

static void live_add(const void *p) {
    if (live_has(p)) return;
    if ((live_used + 1) * 2 > live_cap) { /* grow (tombstones dropped) */
        size_t old_cap = live_cap;
        const void **old = live;
        live_cap = live_cap ? live_cap * 2 : 256;
        live = calloc(live_cap, sizeof *live);
        if (!live) { live = old; live_cap = old_cap; return; } /* out of memory: the registry still serves */
        live_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] && old[i] != TOMBSTONE) live_add(old[i]);
        free(old);
    }
    size_t i = live_slot(p);
    while (live[i] && live[i] != TOMBSTONE) i = (i + 1) & (live_cap - 1);
    if (!live[i]) live_used++;
    live[i] = p;
}

static void live_del(const void *p) {
    if (!live_cap) return;
    for (size_t i = live_slot(p); live[i]; i = (i + 1) & (live_cap - 1))
        if (live[i] == p) { live[i] = TOMBSTONE; return; }
}

PyObject *capi_handle_in(const void *handle, ol_errc_t invalid, const char *what, ol_result_t *res) {
    if (!handle) Py_RETURN_NONE; /* the bridge's function reports a NULL it does not accept */
    if (live_has(handle)) {
        PyObject *obj = (PyObject *)handle;
        Py_INCREF(obj);
        return obj;
    }
    PyObject *key = PyLong_FromVoidPtr((void *)handle);
    PyObject *obj = key ? PyDict_GetItemWithError(capi_registry, key) : NULL;
    Py_XDECREF(key);
    if (!obj) {
        if (PyErr_Occurred()) { *res = capi_raised(); return NULL; }
        char buf[160];
        snprintf(buf, sizeof buf, "%s %p is not a live handle of this library", what, handle);
        *res = capi_error(invalid, buf);
        return NULL;
    }
    live_add(handle);
    Py_INCREF(obj);
    return obj;
}

bool capi_handle_out(PyObject *obj, void **out, ol_result_t *res) {
    void *ignored;
    if (!out) out = &ignored; /* validation off and a NULL out-parameter: the answer is dropped, not written to 0 */
    if (obj == Py_None) { *out = NULL; return true; }
    if (!live_has(obj)) {
        PyObject *key = PyLong_FromVoidPtr(obj);
        if (!key || PyDict_SetItem(capi_registry, key, obj) < 0) {
            Py_XDECREF(key);
            *res = capi_raised();
            return false;
        }
        Py_DECREF(key);
        live_add(obj);
    }
    *out = obj;
    return true;
}

void capi_handle_forget(const void *handle) {
    live_del(handle);
    PyObject *key = PyLong_FromVoidPtr((void *)handle);
    if (key && PyDict_DelItem(capi_registry, key) < 0) PyErr_Clear();
    Py_XDECREF(key);
}

/* ---- arguments ----------------------------------------------------------------------------- */
PyObject *capi_bytes(const void *data, size_t size) {
    if (!data) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
}

PyObject *capi_string(const char *text) {
    if (!text) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "surrogateescape");
}

/* The last launch size of this thread and its KernelLaunchSizeArgs: a loop of launches with one
 * grid builds it once (it also keeps the device-limit check's cache). */
static __thread ol_kernel_launch_size_args_t last_args;
static __thread PyObject *last_launch;

PyObject *capi_launch_size(const ol_kernel_launch_size_args_t *a, ol_result_t *res) {
    if (!a) Py_RETURN_NONE;
    if (last_launch && memcmp(&last_args, a, sizeof *a) == 0) { Py_INCREF(last_launch); return last_launch; }
    /* liboffload does not read Dimensions (every axis of NumGroups and GroupSize is used): a zeroed
       or out-of-range one is taken as 3, which means the same, instead of offload's refusal */
    Py_ssize_t dimensions = a->Dimensions >= 1 && a->Dimensions <= 3 ? (Py_ssize_t)a->Dimensions : 3;
    PyObject *made = PyObject_CallFunction(capi_launch_class, "n(III)(III)n", dimensions,
                                                 a->NumGroups.x, a->NumGroups.y, a->NumGroups.z,
                                                 a->GroupSize.x, a->GroupSize.y, a->GroupSize.z,
                                                 (Py_ssize_t)a->DynSharedMemory);
    if (!made) { *res = capi_raised(); return NULL; }
    Py_XSETREF(last_launch, made);
    last_args = *a;
    Py_INCREF(made);
    return made;
}

PyObject *capi_handles(const void *const *handles, size_t count, ol_errc_t invalid, const char *what, ol_result_t *res) {
    if (!handles) Py_RETURN_NONE;
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (!list) { *res = capi_raised(); return NULL; }
    for (size_t i = 0; i < count; i++) {
        PyObject *h = capi_handle_in(handles[i], invalid, what, res);
        if (!h) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, h);
    }
    return list;
}

/* A list of `count` Python values made by `make` from element i (NULL: None). */
static PyObject *list_of(const void *array, size_t count, PyObject *(*make)(const void *array, size_t i)) {
    if (!array) Py_RETURN_NONE;
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *item = make(array, i);
        if (!item) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *pointer_at(const void *array, size_t i) { return PyLong_FromVoidPtr(((void *const *)array)[i]); }
static PyObject *size_at(const void *array, size_t i) { return PyLong_FromSize_t(((const size_t *)array)[i]); }

PyObject *capi_pointers(void *const *pointers, size_t count) { return list_of(pointers, count, pointer_at); }
PyObject *capi_sizes(const size_t *sizes, size_t count) { return list_of(sizes, count, size_at); }

PyObject *capi_arguments(const void *const *pointers, const size_t *sizes, size_t count) {
    if (!pointers || !sizes) Py_RETURN_NONE; /* (validation refuses it with NumArgs > 0) */
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *item = pointers[i] ? PyBytes_FromStringAndSize(pointers[i], (Py_ssize_t)sizes[i]) : Py_NewRef(Py_None);
        if (!item) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* main's ol_kernel_launch_prop_t (this file is compiled against every level's header) */
typedef struct { uint32_t type; void *data; } launch_prop;

PyObject *capi_launch_properties(const void *properties, ol_result_t *res) {
    if (!properties) Py_RETURN_NONE;
    PyObject *pairs = PyList_New(0);
    for (const launch_prop *p = properties; pairs && p->type != 0; p++) {
        /* IS_COOPERATIVE (1) points to a bool; an unknown type goes to offload as its number */
        PyObject *value = p->type == 1 ? PyBool_FromLong(p->data && *(const bool *)p->data) : PyLong_FromVoidPtr(p->data);
        PyObject *pair = value ? Py_BuildValue("(kN)", (unsigned long)p->type, value) : NULL;
        if (!pair || PyList_Append(pairs, pair) < 0) Py_CLEAR(pairs);
        Py_XDECREF(pair);
    }
    if (!pairs) *res = capi_raised();
    return pairs;
}

typedef struct { capi_iterate_cb iterate; ol_host_function_cb_t host; void *user_data; } callback;

static void free_callback(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, "offload_capi.callback")); }

static PyObject *call_iterate(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    callback *cb = PyCapsule_GetPointer(self, "offload_capi.callback");
    void *device;
    ol_result_t res = NULL;
    if (!cb || nargs < 1) return NULL;
    if (!capi_handle_out(args[0], &device, &res)) return NULL;
    bool more;
    Py_BEGIN_ALLOW_THREADS /* the callback may block, or call the API from here or other threads */
    more = cb->iterate(device, cb->user_data);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(more);
}

static PyObject *call_host(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)args; (void)nargs;
    callback *cb = PyCapsule_GetPointer(self, "offload_capi.callback");
    if (!cb) return NULL;
    Py_BEGIN_ALLOW_THREADS
    cb->host(cb->user_data);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef iterate_def = {"c_iterate_callback", (PyCFunction)(void (*)(void))call_iterate, METH_FASTCALL, NULL};
static PyMethodDef host_def = {"c_host_function", (PyCFunction)(void (*)(void))call_host, METH_FASTCALL, NULL};

static PyObject *make_callback(PyMethodDef *def, callback value) {
    if (!value.iterate && !value.host) Py_RETURN_NONE;
    callback *cb = malloc(sizeof *cb);
    if (!cb) return PyErr_NoMemory();
    *cb = value;
    PyObject *capsule = PyCapsule_New(cb, "offload_capi.callback", free_callback);
    if (!capsule) { free(cb); return NULL; }
    PyObject *fn = PyCFunction_New(def, capsule);
    Py_DECREF(capsule);
    return fn;
}

PyObject *capi_iterate_callback(capi_iterate_cb cb, void *user_data) {
    return make_callback(&iterate_def, (callback){cb, NULL, user_data});
}

PyObject *capi_host_callback(ol_host_function_cb_t cb, void *user_data) {
    return make_callback(&host_def, (callback){NULL, cb, user_data});
}

/* ---- out-parameters ------------------------------------------------------------------------ */
/* capi_out_<kind>: the call's result converted (`convert`, of `value`) into *out; a NULL `out`
 * (validation off) drops the answer instead of writing to 0. */
#define CAPI_OUT(kind, type, convert)                                                                  \
    bool capi_out_##kind(PyObject *value, type *out, ol_result_t *res) {                               \
        type ignored;                                                                                  \
        type converted = (type)(convert);                                                              \
        if (PyErr_Occurred()) { *res = capi_raised(); return false; }                                  \
        *(out ? out : &ignored) = converted;                                                           \
        return true;                                                                                   \
    }
CAPI_OUT(pointer, void *, value == Py_None ? NULL : PyLong_AsVoidPtr(value))
CAPI_OUT(size, size_t, PyLong_AsSize_t(value))
CAPI_OUT(bool, bool, PyObject_IsTrue(value) == 1) /* -1: an error, raised */
CAPI_OUT(float, float, PyFloat_AsDouble(value))
#undef CAPI_OUT

/* ---- info queries and their cache ---------------------------------------------------------- */
typedef struct { const void *handle; uint32_t prop; int which; size_t size; char *bytes; } cached;
#define CACHE_SLOTS 4096
static cached cache[CACHE_SLOTS];
static size_t cache_used;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(const void *handle, uint32_t prop, int which) {
    size_t h = ((size_t)handle >> 4) * 0x9E3779B97F4A7C15ull + prop * 131u + (size_t)which;
    return (h >> 7) % CACHE_SLOTS;
}

static ol_result_t answer(const char *bytes, size_t size, size_t prop_size, void *prop_value, size_t *prop_size_ret) {
    if (!prop_value && !prop_size_ret) return capi_error(OL_ERRC_INVALID_NULL_POINTER, "value and size outputs are nullptr");
    if (prop_size_ret) *prop_size_ret = size;
    if (prop_value) {
        if (prop_size < size) return capi_error(OL_ERRC_INVALID_SIZE, "provided size is invalid");
        memcpy(prop_value, bytes, size);
    }
    return NULL;
}

static bool cache_find(const void *handle, uint32_t prop, int which, size_t prop_size, void *prop_value,
                       size_t *prop_size_ret, ol_result_t *res) {
    bool found = false;
    pthread_mutex_lock(&cache_lock);
    for (size_t i = slot_of(handle, prop, which), n = 0; n < CACHE_SLOTS && cache[i].bytes; i = (i + 1) % CACHE_SLOTS, n++) {
        if (cache[i].handle == handle && cache[i].prop == prop && cache[i].which == which) {
            *res = answer(cache[i].bytes, cache[i].size, prop_size, prop_value, prop_size_ret);
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return found;
}

static void cache_store(const void *handle, uint32_t prop, int which, const char *bytes, size_t size) {
    pthread_mutex_lock(&cache_lock);
    if (cache_used < CACHE_SLOTS / 2) {
        size_t i = slot_of(handle, prop, which);
        while (cache[i].bytes && !(cache[i].handle == handle && cache[i].prop == prop && cache[i].which == which))
            i = (i + 1) % CACHE_SLOTS;
        char *copy = cache[i].bytes ? NULL : malloc(size ? size : 1);
        if (copy) {
            memcpy(copy, bytes, size);
            cache[i] = (cached){handle, prop, which, size, copy};
            cache_used++;
        }
    }
    pthread_mutex_unlock(&cache_lock);
}

void capi_forget_all(void) {
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < CACHE_SLOTS; i++) { free(cache[i].bytes); cache[i].bytes = NULL; }
    cache_used = 0;
    pthread_mutex_unlock(&cache_lock);
    if (capi_registry) PyDict_Clear(capi_registry);
    free(live);
    live = NULL;
    live_cap = live_used = 0;
}

ol_result_t capi_info(int which, bool cacheable, const void *handle, ol_errc_t invalid, const char *what,
                      uint32_t prop, size_t prop_size, void *prop_value, size_t *prop_size_ret, const void *context) {
    ol_result_t res = NULL;
    cacheable = cacheable && handle;
    if (cacheable && cache_find(handle, prop, which, prop_size, prop_value, prop_size_ret, &res)) return res;
    capi_gil gil;
    if (!capi_enter(&gil, &res)) return res;
    PyObject *args[3] = {NULL, NULL, NULL};
    /* a Mem query's handle is the address it asks about; at main, its Context (NULL: the default) */
    args[0] = which == 4 ? PyLong_FromVoidPtr((void *)handle) : capi_handle_in(handle, invalid, what, &res);
    if (args[0] && context) args[2] = capi_handle_in(context, capi_invalid_context, "Context", &res);
    if (args[0] && (!context || args[2])) {
        args[1] = PyLong_FromUnsignedLong(prop);
        PyObject *fn = PyTuple_GET_ITEM(capi_info_calls, which);
        PyObject *r = PyObject_Vectorcall(fn, args, context ? 3 : 2, NULL);
        if (!r) {
            res = capi_raised();
        } else {
            char *bytes; Py_ssize_t size;
            if (PyBytes_AsStringAndSize(r, &bytes, &size) < 0) {
                res = capi_raised();
            } else {
                res = answer(bytes, (size_t)size, prop_size, prop_value, prop_size_ret);
                if (cacheable) cache_store(handle, prop, which, bytes, (size_t)size);
            }
            Py_DECREF(r);
        }
    }
    Py_XDECREF(args[0]); Py_XDECREF(args[1]); Py_XDECREF(args[2]);
    capi_leave(gil);
    return res;
}
