#include "common/pa_common.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PA_ERRMSG_CAP 1024
#define PA_ERRMSG_SPARE 64

/* The calling thread's message buffer (PA_ERRMSG_CAP bytes): malloc'ed on the
 * thread's first message and freed when the thread exits. A thread whose
 * malloc fails takes one of PA_ERRMSG_SPARE static buffers for its lifetime,
 * so reporting an out-of-memory never needs new memory; only when those are
 * all taken does the thread get a fixed text instead of its message. */
static PA_THREAD_LOCAL char *tl_errmsg;
static PA_THREAD_LOCAL bool tl_errmsg_lost; /* the last message found no buffer */

static char g_spare[PA_ERRMSG_SPARE][PA_ERRMSG_CAP];
static atomic_bool g_spare_taken[PA_ERRMSG_SPARE];
static const char g_no_room[] =
    "out of host memory (and no room left to keep this thread's error message)";

static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_ok;

static void errmsg_release(void *p) {
    const uintptr_t a = (uintptr_t)p, lo = (uintptr_t)g_spare;
    if (a >= lo && a - lo < sizeof g_spare) {
        atomic_store(&g_spare_taken[(a - lo) / PA_ERRMSG_CAP], false);
    } else {
        free(p);
    }
    tl_errmsg = NULL;
}

static void key_init(void) { g_key_ok = pthread_key_create(&g_key, errmsg_release) == 0; }

static char *spare_take(void) {
    for (size_t i = 0; i < PA_ERRMSG_SPARE; i++) {
        if (!atomic_exchange(&g_spare_taken[i], true)) return g_spare[i];
    }
    return NULL;
}

/* This thread's buffer, made on first use; NULL (and the message lost) only
 * when neither malloc nor a spare could give one. */
static char *errmsg_buf(void) {
    if (tl_errmsg != NULL) return tl_errmsg;
    pthread_once(&g_key_once, key_init);
    char *b = NULL;
    if (g_key_ok) { /* without the key nothing would release the buffer at thread exit */
        b = malloc(PA_ERRMSG_CAP);
        if (b == NULL) b = spare_take();
        if (b != NULL && pthread_setspecific(g_key, b) != 0) {
            errmsg_release(b);
            b = NULL;
        }
    }
    tl_errmsg_lost = b == NULL;
    if (b != NULL) b[0] = '\0';
    tl_errmsg = b;
    return b;
}

void pa_set_errmsg_raw(const char *msg) {
    if (msg == NULL || msg[0] == '\0') {
        if (tl_errmsg != NULL) tl_errmsg[0] = '\0';
        tl_errmsg_lost = false;
        return;
    }
    char *b = errmsg_buf();
    if (b != NULL) snprintf(b, PA_ERRMSG_CAP, "%s", msg);
}

static void set_errmsg_v(const char *fmt, va_list ap) {
    char *b = errmsg_buf();
    if (b != NULL) vsnprintf(b, PA_ERRMSG_CAP, fmt, ap);
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

int pa_fail_oom(int code, const char *api, const char *what) {
    return pa_fail(code, "%s: out of host memory for %s", api, what);
}

const char *pa_get_errmsg(void) {
    if (tl_errmsg != NULL) return tl_errmsg;
    return tl_errmsg_lost ? g_no_room : "";
}

FILE *pa_open_sys_file(const char *path, bool *transient) {
    *transient = false;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        switch (errno) {
        case ENOENT: case ENOTDIR: case EACCES: case EPERM: case ENODEV: case ENXIO: case EISDIR: break;
        default: *transient = true; /* ENOMEM, EMFILE, ENFILE, EINTR, ... */
        }
    }
    return f;
}

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
