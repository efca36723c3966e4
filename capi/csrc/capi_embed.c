/* The embedded runtime: the interpreter (this process's, or one started here), the bridge module,
 * olInit/olShutDown reference counting, interned results, fork and exit. */
#define _GNU_SOURCE
#include "capi.h"
#include "capi_trace.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int capi_validate = 1;

static pthread_mutex_t lifecycle = PTHREAD_MUTEX_INITIALIZER;
static atomic_int refcount;     /* successful olInit calls not yet matched by olShutDown */
static atomic_int forked_child; /* set in a child forked while the runtime was in use */
static int embedded;            /* we started the interpreter */
static int hosted;              /* we found an interpreter running (a Python process) */
static int booted;
static int gc_paused;           /* the cyclic GC is off from our interpreter's start to the first olInit's end */
static char boot_error[512];
static PyObject *bridge_calls;  /* tuple: the bridge's callables, in ABI order */
static PyObject *bridge;        /* module offload_capi._bridge */
static __thread ol_code_location_t *code_location;

extern void capi_forget_all(void); /* capi_convert.c: the registry and the info cache */
extern PyObject *capi_registry, *capi_info_calls, *capi_launch_class;

void capi_set_code_location(ol_code_location_t *location) { code_location = location; }

/* ---- interned results: {Code, Details} pairs live for the whole process ---------------------- */
typedef struct interned { struct interned *next; ol_error_struct_t error; } interned;
static interned *results[256];
static pthread_mutex_t results_lock = PTHREAD_MUTEX_INITIALIZER;

ol_result_t capi_error(ol_errc_t code, const char *details) {
    unsigned long hash = (unsigned long)code * 31u;
    for (const char *c = details; *c; c++) hash = hash * 131u + (unsigned char)*c;
    pthread_mutex_lock(&results_lock);
    interned **slot = &results[hash % 256];
    for (interned *it = *slot; it; it = it->next) {
        if (it->error.Code == code && strcmp(it->error.Details, details) == 0) {
            pthread_mutex_unlock(&results_lock);
            return &it->error;
        }
    }
    interned *fresh = malloc(sizeof *fresh);
    char *copy = strdup(details);
    if (!fresh || !copy) { /* out of memory: a static answer, still a valid result */
        pthread_mutex_unlock(&results_lock);
        free(fresh); free(copy);
        static const ol_error_struct_t oom = {OL_ERRC_OUT_OF_RESOURCES, "out of host memory"};
        return &oom;
    }
    fresh->error.Code = code;
    fresh->error.Details = copy;
    fresh->next = *slot;
    *slot = fresh;
    pthread_mutex_unlock(&results_lock);
    return &fresh->error;
}

ol_result_t capi_raised(void) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    ol_result_t res = NULL;
    PyObject *code = value ? PyObject_GetAttrString(value, "code") : NULL;
    PyObject *details = code ? PyObject_GetAttrString(value, "details") : NULL;
    if (code && details && PyLong_Check(code) && PyUnicode_Check(details)) {
        const char *text = PyUnicode_AsUTF8(details);
        long number = PyLong_AsLong(code); /* offload's number: this level's may differ (main's INVALID_CONTEXT) */
        ol_errc_t errc = number > 0 && (size_t)number < capi_errc_count && capi_errc_of[number] ? (ol_errc_t)capi_errc_of[number]
                                                                                               : OL_ERRC_UNKNOWN;
        res = capi_error(errc, text ? text : "");
    } else { /* not an OffloadError: a bug of ours, reported with its type and message */
        PyErr_Clear();
        PyObject *str = value ? PyObject_Str(value) : NULL;
        const char *text = str ? PyUnicode_AsUTF8(str) : NULL;
        char buf[1024];
        snprintf(buf, sizeof buf, "offload-capi: %s: %s", type ? ((PyTypeObject *)type)->tp_name : "error",
                 text ? text : "(no message)");
        res = capi_error(OL_ERRC_UNKNOWN, buf);
        Py_XDECREF(str);
    }
    PyErr_Clear();
    Py_XDECREF(code); Py_XDECREF(details);
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    return res;
}

/* ---- booting ------------------------------------------------------------------------------- */
static int python_gone(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsInitialized() || Py_IsFinalizing();
#else
    return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

static void after_fork_child(void) {
    if (embedded || atomic_load(&refcount) > 0) atomic_store(&forked_child, 1);
}

/* The venv's (or installation's) python next to this library's site-packages, so that the
 * interpreter we start finds the same packages (pyvenv.cfg); OFFLOAD_CAPI_PYTHON overrides it. */
static void find_program(char *out, size_t size, char *site, size_t site_size) {
    Dl_info info;
    out[0] = site[0] = 0;
    const char *override = getenv("OFFLOAD_CAPI_PYTHON");
    if (override && *override) snprintf(out, size, "%s", override);
    if (dladdr((void *)&find_program, &info) && info.dli_fname) {
        char path[PATH_MAX];
        if (realpath(info.dli_fname, path)) {
            /* <site-packages>/offload_capi/lib[/<abi>]/lib*.so -> <site-packages> */
            const char *base = NULL;
            for (int up = 0; up < 4; up++) {
                char *slash = strrchr(path, '/');
                if (!slash) return;
                *slash = 0;
                base = strrchr(path, '/');
                if (base && strcmp(base, "/offload_capi") == 0) break;
                base = NULL;
            }
            if (!base) return; /* not an installed package */
            *strrchr(path, '/') = 0;
            snprintf(site, site_size, "%s", path);
            for (int up = 0; up < 3; up++) { char *slash = strrchr(path, '/'); if (slash) *slash = 0; }
            if (out[0]) return;
            snprintf(out, size, "%s/bin/python3", path);
            if (access(out, X_OK) != 0) out[0] = 0;
        }
    }
}

static int start_interpreter(void) {
    Dl_info info; /* promote libpython to global scope: we may have been loaded RTLD_LOCAL, and
                     Python's own extension modules resolve their symbols globally */
    if (dladdr((void *)&Py_IsInitialized, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    char program[PATH_MAX], site[PATH_MAX];
    find_program(program, sizeof program, site, sizeof site);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    PyStatus status = PyStatus_Ok();
    if (program[0]) status = PyConfig_SetBytesString(&config, &config.program_name, program);
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        snprintf(boot_error, sizeof boot_error, "offload-capi: cannot start Python: %s",
                 status.err_msg ? status.err_msg : "unknown failure");
        return 0;
    }
    if (site[0]) { /* a library used from its build tree or an unusual layout: its site-packages */
        PyObject *path = PySys_GetObject("path"), *dir = PyUnicode_DecodeFSDefault(site);
        if (path && dir && PySequence_Contains(path, dir) == 0) PyList_Append(path, dir);
        Py_XDECREF(dir);
    }
    embedded = 1;
    return 1;
}

/* The CPython this process runs is the one the library was built for (its symbols may be another
 * interpreter's when the process embeds or links a different CPython). */
static int same_python(void) {
    const char *running = Py_GetVersion();
    size_t n = strlen(PY_VERSION);
    const char *dot = strchr(PY_VERSION, '.');
    dot = dot ? strchr(dot + 1, '.') : NULL; /* compare major.minor */
    if (dot) n = (size_t)(dot - PY_VERSION);
    if (strncmp(running, PY_VERSION, n) == 0 && (running[n] == '.' || running[n] == ' ' || running[n] == '\0')) return 1;
    snprintf(boot_error, sizeof boot_error,
             "offload-capi: built for CPython %.*s, but this process runs CPython %.20s: install offload-capi "
             "with the interpreter the program uses", (int)n, PY_VERSION, running);
    return 0;
}

/* _bridge.tables(level, function names, {device property number: name}) of this library's level. */
static PyObject *level_tables(void) {
    PyObject *names = PyList_New(0), *device = PyDict_New(), *tables = NULL;
    int ok = names && device;
    for (int i = 0; ok && capi_functions[i]; i++) {
        PyObject *name = PyUnicode_FromString(capi_functions[i]);
        ok = name && PyList_Append(names, name) == 0;
        Py_XDECREF(name);
    }
    for (int i = 0; ok && capi_device_infos[i].name; i++) {
        PyObject *number = PyLong_FromUnsignedLong(capi_device_infos[i].number);
        PyObject *name = PyUnicode_FromString(capi_device_infos[i].name);
        ok = number && name && PyDict_SetItem(device, number, name) == 0;
        Py_XDECREF(number); Py_XDECREF(name);
    }
    if (ok) tables = PyObject_CallMethod(bridge, "tables", "sOO", capi_abi, names, device);
    Py_XDECREF(names); Py_XDECREF(device);
    return tables;
}

static void resume_gc(void) { /* with the GIL */
    if (gc_paused) PyGC_Enable();
    gc_paused = 0;
}

static void boot(void) {
    int started_here = 0;
    if (!same_python()) return;
    if (!Py_IsInitialized()) {
        if (!start_interpreter()) return;
        started_here = 1;
    } else {
        hosted = 1;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    /* Start-up allocates thousands of objects (modules, classes, enums) and frees few: the cyclic
     * GC's passes over them find nothing and cost ~10% of the first olInit. In an interpreter we
     * started, it is off until that olInit returns (capi_init); a hosting process's GC is its own. */
    if (started_here) gc_paused = PyGC_Disable(); /* 1: it was on */
    bridge = PyImport_ImportModule("offload_capi._bridge");
    PyObject *tables = bridge ? level_tables() : NULL;
    if (tables && PyTuple_Check(tables) && PyTuple_GET_SIZE(tables) == 2) {
        bridge_calls = Py_NewRef(PyTuple_GET_ITEM(tables, 0));
        capi_info_calls = Py_NewRef(PyTuple_GET_ITEM(tables, 1));
    }
    Py_XDECREF(tables);
    capi_registry = bridge ? PyObject_GetAttrString(bridge, "HANDLES") : NULL;
    capi_launch_class = bridge ? PyObject_GetAttrString(bridge, "KernelLaunchSizeArgs") : NULL;
    if (!bridge_calls || !capi_registry || !capi_info_calls || !capi_launch_class || !PyTuple_Check(bridge_calls)
        || !PyTuple_Check(capi_info_calls)) {
        ol_result_t why = PyErr_Occurred() ? capi_raised() : capi_error(OL_ERRC_UNKNOWN, "bad bridge");
        snprintf(boot_error, sizeof boot_error, "offload-capi: cannot import offload_capi._bridge: %s", why->Details);
        resume_gc();
    } else {
        booted = 1;
    }
    PyGILState_Release(gil);
    if (started_here) PyEval_SaveThread(); /* the GIL is free for every thread from here on */
    pthread_atfork(NULL, NULL, after_fork_child);
}

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

bool capi_enter(capi_gil *gil, ol_result_t *res) {
    pthread_once(&boot_once, boot);
    if (!booted) {
        *res = capi_error(OL_ERRC_BACKEND_FAILURE, boot_error[0] ? boot_error : "offload-capi: Python did not start");
        return false;
    }
    if (hosted && python_gone()) { /* a static destructor after the hosting interpreter finished */
        *res = capi_error(OL_ERRC_UNINITIALIZED, "offload-capi: the Python interpreter hosting offload has finished");
        return false;
    }
    if (PyGILState_Check()) { /* a Python thread calling in with the GIL, or a callback calling back */
        *gil = CAPI_HELD;
        return true;
    }
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (ts) {
        PyEval_RestoreThread(ts);
    } else { /* a C thread's first call: its thread state stays (never released by PyGILState_Release),
                so that its later calls only take the GIL */
        PyGILState_Ensure();
    }
    *gil = CAPI_TAKEN;
    return true;
}

void capi_leave(capi_gil gil) {
    if (gil == CAPI_TAKEN) PyEval_SaveThread();
}

PyObject *capi_fn(int index) { return PyTuple_GET_ITEM(bridge_calls, index); }

static ol_result_t forked(void) {
    return capi_error(OL_ERRC_BACKEND_FAILURE,
                      "offload-capi: this process was forked while offload was in use; its runtime (Python "
                      "threads, device state) does not survive fork(): use it in the parent, or exec a new program");
}

ol_result_t capi_check(void) {
    if (atomic_load_explicit(&forked_child, memory_order_relaxed)) return forked();
    if (atomic_load_explicit(&refcount, memory_order_acquire) <= 0) {
        static const ol_error_struct_t uninit = {
            OL_ERRC_UNINITIALIZED, "liboffload has not been initialized - please call olInit before using this API"};
        return &uninit;
    }
    return NULL;
}

/* Calls a bridge function with the GIL held (`args`: NULL or a tuple of its arguments); its result or NULL. */
static ol_result_t call_bridge(const char *name, PyObject *args, PyObject **result) {
    PyObject *fn = PyObject_GetAttrString(bridge, name);
    PyObject *r = fn ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(fn);
    if (!r) return capi_raised();
    if (result) *result = r; else Py_DECREF(r);
    return NULL;
}

/* OFFLOAD_TRACE as offload reads it (_trace.tracing: trimmed, any case): off when empty, 0, off,
 * false or no; "json" and "perfetto[:PATH]" are offload's own formats (its Python tracer writes
 * them); any other value: liboffload's lines, printed here. */
static int wants_c_trace(void) {
    const char *v = getenv("OFFLOAD_TRACE");
    if (!v) return 0;
    while (*v == ' ' || *v == '\t' || *v == '\n') v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n')) n--;
    static const char *const off[] = {"", "0", "off", "false", "no", "json"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++)
        if (n == strlen(off[i]) && strncasecmp(v, off[i], n) == 0) return 0;
    const char *colon = memchr(v, ':', n);
    size_t head = colon ? (size_t)(colon - v) : n;
    while (head && v[head - 1] == ' ') head--;
    return !(head == 8 && strncasecmp(v, "perfetto", 8) == 0);
}

bool capi_trace_on(void) {
    return capi_tracing && atomic_load_explicit(&refcount, memory_order_relaxed) > 0 && !atomic_load(&forked_child);
}

/* main's ol_init_args_t as the bridge's init arguments: (c_trace, platforms or None, main) */
static PyObject *init_arguments(int c_trace, const uint32_t *platforms, size_t count, bool main_args) {
    PyObject *list = Py_NewRef(Py_None);
    if (platforms) {
        Py_SETREF(list, PyList_New((Py_ssize_t)count));
        for (size_t i = 0; list && i < count; i++) {
            PyObject *n = PyLong_FromUnsignedLong(platforms[i]);
            if (!n) Py_CLEAR(list); else PyList_SET_ITEM(list, (Py_ssize_t)i, n);
        }
    }
    return list ? Py_BuildValue("(ONO)", c_trace ? Py_True : Py_False, list, main_args ? Py_True : Py_False) : NULL;
}

ol_result_t capi_init(const uint32_t *platforms, size_t count, bool main_args) {
    if (atomic_load(&forked_child)) return forked();
    capi_gil gil;
    ol_result_t res = NULL;
    pthread_mutex_lock(&lifecycle);
    if (capi_enter(&gil, &res)) {
        PyObject *state = NULL;
        int c_trace = atomic_load(&refcount) == 0 ? wants_c_trace() : capi_tracing;
        PyObject *args = init_arguments(c_trace, platforms, count, main_args);
        res = args ? call_bridge("init", args, &state) : capi_raised();
        Py_XDECREF(args);
        resume_gc();
        if (!res) {
            if (atomic_load(&refcount) == 0) {
                capi_tracing = c_trace;
                capi_validate = PyObject_IsTrue(PyTuple_GET_ITEM(state, 1));
            }
            atomic_fetch_add(&refcount, 1);
            Py_DECREF(state);
        }
        capi_leave(gil);
    }
    pthread_mutex_unlock(&lifecycle);
    return res;
}

ol_result_t capi_shutdown(void) {
    ol_result_t res = capi_check();
    if (res) return res;
    pthread_mutex_lock(&lifecycle);
    capi_gil gil;
    if (hosted && python_gone()) { /* the interpreter's exit already finished offload's work */
        atomic_fetch_sub(&refcount, 1);
        pthread_mutex_unlock(&lifecycle);
        return NULL;
    }
    if (capi_enter(&gil, &res)) {
        res = call_bridge("shut_down", NULL, NULL);
        if (atomic_fetch_sub(&refcount, 1) == 1) capi_forget_all();
        capi_leave(gil);
    }
    pthread_mutex_unlock(&lifecycle);
    return res;
}
