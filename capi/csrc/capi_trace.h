/* The C ABI's OFFLOAD_TRACE printer (capi_trace.c), called by the generated entry points. A
 * capi_tb collects one call's "(.Param = value, ...)" after the call; capi_tb_close prints it with
 * the result. Info values are typed by a CAPI_T_* code or, for an enum, its index in the ABI's
 * enums (capi_enum_name, generated). */
#ifndef OFFLOAD_CAPI_TRACE_H
#define OFFLOAD_CAPI_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "offload/OffloadAPI.h"

enum { CAPI_T_UNKNOWN = -1, CAPI_T_STRING = -2, CAPI_T_U32 = -3, CAPI_T_U64 = -4, CAPI_T_BOOL = -5,
       CAPI_T_HANDLE = -6, CAPI_T_DIMENSIONS = -7, CAPI_T_POINTER = -8 };

/* Whether OFFLOAD_TRACE asked the C ABI for liboffload's lines (read at the first olInit). */
extern int capi_tracing;
/* Whether a call now is traced: tracing asked for and the library initialised. */
bool capi_trace_on(void);
/* Generated: the name of enumerator v of the ABI's enum number `which` (NULL: none). */
const char *capi_enum_name(int which, uint32_t v);
extern const int capi_errc_enum;

typedef struct { FILE *out; char *text; size_t size; bool first; } capi_tb;

void capi_trace_open(const char *name);
bool capi_tb_init(capi_tb *b);
void capi_tb_close(capi_tb *b, ol_result_t result);
void capi_tp_ptr(capi_tb *b, const char *name, const void *p);
void capi_tp_fn(capi_tb *b, const char *name, const void *p);
void capi_tp_u64(capi_tb *b, const char *name, uint64_t v);
void capi_tp_enum(capi_tb *b, const char *name, int which, uint32_t v);
void capi_tp_str(capi_tb *b, const char *name, const char *s);
void capi_tp_outptr(capi_tb *b, const char *name, void *const *p);
void capi_tp_outsize(capi_tb *b, const char *name, const size_t *p);
void capi_tp_outbool(capi_tb *b, const char *name, const bool *p);
void capi_tp_outfloat(capi_tb *b, const char *name, const float *p);
void capi_tp_events(capi_tb *b, const char *name, ol_event_handle_t *events, size_t count);
/* main's arrays, as offload's tracer prints them at API level main: "0xARRAY {a, b}" (handles and
 * addresses in hex, `sizes` in decimal) */
void capi_tp_array(capi_tb *b, const char *name, const void *array, size_t count, bool sizes);
void capi_tp_launch(capi_tb *b, const char *name, const ol_kernel_launch_size_args_t *a);
void capi_tp_info(capi_tb *b, const char *name, int type, const void *value);

#endif
