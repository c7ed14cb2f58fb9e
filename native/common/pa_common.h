/* Internal helpers shared by every part of the library: export macro,
 * the thread-local "recent error" message, and small checked arithmetic. */
#ifndef PA_COMMON_H
#define PA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"

/* Every exported CANN / pyaclnn symbol is defined with PA_API;
 * everything else is hidden (-fvisibility=hidden). */
#define PA_API __attribute__((visibility("default")))

#define PA_UNUSED(x) ((void)(x))
#define PA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PA_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Records a message for aclGetRecentErrMsg() on the calling thread and
 * returns `code`, so call sites read: return pa_fail(161002, "...", ...). */
int pa_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a message without a code. */
void pa_set_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Replaces the calling thread's message with `msg` verbatim (may be NULL). */
void pa_set_errmsg_raw(const char *msg);
/* The calling thread's message ("" when none). */
const char *pa_get_errmsg(void);

/* Overflow-checked a*b for non-negative int64; returns false on overflow. */
static inline bool pa_mul_ok(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* An op's double attribute `scale` as the fp32 its kernel uses, rounded to
 * nearest even as an IEEE conversion does: |d| >= 2^128 - 2^103 (halfway
 * past FLT_MAX) becomes +-inf, NaN stays NaN; computed without the
 * out-of-range (float) conversion C leaves undefined. Shared by every op. */
float pa_scale_to_f32(double d);

/* 64-byte aligned allocation (NULL on failure or size 0). Free with pa_free_aligned. */
void *pa_alloc_aligned(size_t size);
void pa_free_aligned(void *p);

#endif
