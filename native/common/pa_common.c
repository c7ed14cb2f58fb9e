#include "common/pa_common.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PA_ERRMSG_CAP 1024

static _Thread_local char tl_errmsg[PA_ERRMSG_CAP];

void pa_set_errmsg_raw(const char *msg) {
    if (msg == NULL) {
        tl_errmsg[0] = '\0';
        return;
    }
    snprintf(tl_errmsg, sizeof tl_errmsg, "%s", msg);
}

static void set_errmsg_v(const char *fmt, va_list ap) {
    vsnprintf(tl_errmsg, sizeof tl_errmsg, fmt, ap);
}

void pa_set_errmsg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_errmsg_v(fmt, ap);
    va_end(ap);
}

int pa_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_errmsg_v(fmt, ap);
    va_end(ap);
    return code;
}

const char *pa_get_errmsg(void) { return tl_errmsg; }

void *pa_alloc_aligned(size_t size) {
    if (size == 0) return NULL;
    size_t rounded = (size + 63) & ~(size_t)63;
    if (rounded < size) return NULL;
    return aligned_alloc(64, rounded);
}

void pa_free_aligned(void *p) { free(p); }

float pa_scale_to_f32(double d) {
    if (isnan(d)) return NAN;
    const double tie = 0x1.ffffffp127; /* halfway between FLT_MAX and 2^128: rounds to inf */
    if (d >= tie) return INFINITY;
    if (d <= -tie) return -INFINITY;
    if (d > FLT_MAX) return FLT_MAX;
    if (d < -FLT_MAX) return -FLT_MAX;
    return (float)d;
}
