/* Internal helpers shared by every part of the library: export macro,
 * the thread-local "recent error" message, and small checked arithmetic. */
#ifndef PA_COMMON_H
#define PA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"

/* Every exported CANN / pyaclnn symbol is defined with PA_API;
 * everything else is hidden (-fvisibility=hidden). */
#define PA_API __attribute__((visibility("default")))

/* Every thread-local variable of the library. initial-exec puts it in the
 * static TLS block each thread gets when it is created: a dlopen'ed library's
 * default (dynamic) TLS is instead malloc'ed on a thread's first access, and
 * glibc aborts the process when that malloc fails. dlopen'ed libraries share a
 * static TLS surplus of a few hundred bytes, so keep these to a few words
 * (the error message itself is allocated on demand, see pa_common.c). */
#define PA_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

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

/* Host memory ran out in `api` while allocating `what`: records
 * "<api>: out of host memory for <what>" and returns `code`. Needs no memory
 * (the message goes to a preallocated buffer when the thread has none yet). */
int pa_fail_oom(int code, const char *api, const char *what);

/* fopen(path, "r") of a system file (cgroup limits, /proc). On failure
 * *transient says whether it may work later (out of memory or file
 * descriptors) rather than the file being absent or unreadable for good, so
 * callers do not cache a transient failure as "no such limit". */
FILE *pa_open_sys_file(const char *path, bool *transient);

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
