/* OFFLOAD_TRACE from the C ABI, in liboffload's printer's format (LLVM 22's OffloadPrint.hpp): the
 * generated entry points print "---> olX" before the call and "(.Param = value, ...)-> RESULT"
 * after it, reading the caller's arguments as the real library does. */
#define _GNU_SOURCE
#include "capi_trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int capi_tracing;

void capi_trace_open(const char *name) {
    fprintf(stderr, "---> %s", name);
    fflush(stderr);
}

bool capi_tb_init(capi_tb *b) {
    b->text = NULL;
    b->size = 0;
    b->out = open_memstream(&b->text, &b->size);
    b->first = true;
    if (b->out) fputc('(', b->out);
    return b->out != NULL;
}

static void sep(capi_tb *b, const char *name) {
    fprintf(b->out, "%s.%s = ", b->first ? "" : ", ", name);
    b->first = false;
}

static void ptr(FILE *out, const void *p) {
    if (p) fprintf(out, "%p", p); else fputs("nullptr", out);
}

void capi_tp_ptr(capi_tb *b, const char *name, const void *p) { sep(b, name); ptr(b->out, p); }

void capi_tp_fn(capi_tb *b, const char *name, const void *p) { /* a function pointer: hex, 0x0 too */
    sep(b, name);
    fprintf(b->out, "0x%lx", (unsigned long)(uintptr_t)p);
}

void capi_tp_u64(capi_tb *b, const char *name, uint64_t v) { sep(b, name); fprintf(b->out, "%" PRIu64, v); }

void capi_tp_enum(capi_tb *b, const char *name, int which, uint32_t v) {
    sep(b, name);
    const char *text = capi_enum_name(which, v);
    fputs(text ? text : "unknown enumerator", b->out);
}

void capi_tp_str(capi_tb *b, const char *name, const char *s) {
    sep(b, name);
    if (s) fprintf(b->out, "%p (%s)", (const void *)s, s); else fputs("nullptr", b->out);
}

void capi_tp_outptr(capi_tb *b, const char *name, void *const *p) {
    sep(b, name);
    if (!p) { fputs("nullptr", b->out); return; }
    fprintf(b->out, "%p (", (const void *)p);
    ptr(b->out, *p);
    fputc(')', b->out);
}

void capi_tp_outsize(capi_tb *b, const char *name, const size_t *p) {
    sep(b, name);
    if (p) fprintf(b->out, "%p (%zu)", (const void *)p, *p); else fputs("nullptr", b->out);
}

void capi_tp_outbool(capi_tb *b, const char *name, const bool *p) {
    sep(b, name);
    if (p) fprintf(b->out, "%p (%d)", (const void *)p, *p ? 1 : 0); else fputs("nullptr", b->out);
}

void capi_tp_outfloat(capi_tb *b, const char *name, const float *p) {
    sep(b, name);
    if (p) fprintf(b->out, "%p (%g)", (const void *)p, (double)*p); else fputs("nullptr", b->out);
}

void capi_tp_events(capi_tb *b, const char *name, ol_event_handle_t *events, size_t count) {
    (void)count; /* LLVM 22 prints the array as a pointer to its first handle */
    capi_tp_outptr(b, name, (void *const *)events);
}

void capi_tp_array(capi_tb *b, const char *name, const void *array, size_t count, bool sizes) {
    sep(b, name);
    if (!array) { fputs("nullptr", b->out); return; }
    fprintf(b->out, "%p {", array);
    for (size_t i = 0; i < count; i++) {
        if (i) fputs(", ", b->out);
        if (sizes) fprintf(b->out, "%zu", ((const size_t *)array)[i]); else ptr(b->out, ((const void *const *)array)[i]);
    }
    fputc('}', b->out);
}

static void dims(FILE *out, const ol_dimensions_t *d) {
    fprintf(out, "(struct ol_dimensions_t){.x = %u, .y = %u, .z = %u}", d->x, d->y, d->z);
}

void capi_tp_launch(capi_tb *b, const char *name, const ol_kernel_launch_size_args_t *a) {
    sep(b, name);
    if (!a) { fputs("nullptr", b->out); return; }
    fprintf(b->out, "%p ((struct ol_kernel_launch_size_args_t){.Dimensions = %zu, .NumGroups = ", (const void *)a, a->Dimensions);
    dims(b->out, &a->NumGroups);
    fputs(", .GroupSize = ", b->out);
    dims(b->out, &a->GroupSize);
    fprintf(b->out, ", .DynSharedMemory = %zu})", a->DynSharedMemory);
}

void capi_tp_info(capi_tb *b, const char *name, int type, const void *value) {
    sep(b, name);
    if (type == CAPI_T_UNKNOWN) { fputs("unknown enumerator", b->out); return; }
    if (!value) { fputs("nullptr", b->out); return; }
    fprintf(b->out, "%p (", value);
    switch (type) {
    case CAPI_T_STRING: fputs((const char *)value, b->out); break;
    case CAPI_T_U32: fprintf(b->out, "%" PRIu32, *(const uint32_t *)value); break;
    case CAPI_T_U64: fprintf(b->out, "%" PRIu64, *(const uint64_t *)value); break;
    case CAPI_T_BOOL: fprintf(b->out, "%d", *(const bool *)value ? 1 : 0); break;
    case CAPI_T_HANDLE: ptr(b->out, *(void *const *)value); break;
    case CAPI_T_DIMENSIONS: dims(b->out, (const ol_dimensions_t *)value); break;
    case CAPI_T_POINTER: /* LLVM 22 prints a void * value through printPtr, and streams its result */
        fprintf(b->out, "%p (", value);
        ptr(b->out, *(void *const *)value);
        fputs(")0x0", b->out);
        break;
    default: { /* an enum: its enumerator's name */
        const char *text = capi_enum_name(type, *(const uint32_t *)value);
        fputs(text ? text : "unknown enumerator", b->out);
    }
    }
    fputc(')', b->out);
}

void capi_tb_close(capi_tb *b, ol_result_t result) {
    fputc(')', b->out);
    fclose(b->out);
    const char *code = "OL_SUCCESS";
    if (result) code = capi_enum_name(capi_errc_enum, (uint32_t)result->Code);
    if (!code) code = "OL_ERRC_UNKNOWN";
    if (result && result->Details && *result->Details)
        fprintf(stderr, "%s-> %s\n     *Error Details* %s \n", b->text, code, result->Details);
    else
        fprintf(stderr, "%s-> %s\n", b->text, code);
    fflush(stderr);
    free(b->text);
}
