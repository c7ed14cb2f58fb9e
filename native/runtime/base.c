/* The runtime's shared helpers (pa_rt_base.h): errors with the thread's last
 * error, the process-wide lock, time and condition variables. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "runtime/pa_rt_base.h"

static pthread_mutex_t g_rt_mu = PTHREAD_MUTEX_INITIALIZER;

void pa_rt_lock(void) { pthread_mutex_lock(&g_rt_mu); }
void pa_rt_unlock(void) { pthread_mutex_unlock(&g_rt_mu); }

/* Last runtime error of this thread, for aclrtPeekAtLastError / aclrtGetLastError. */
static _Thread_local int tl_last_error;

void pa_rt_note_error(int code) {
    if (code != 0) tl_last_error = code;
}

int pa_rt_last_error(bool clear) {
    int e = tl_last_error;
    if (clear) tl_last_error = 0;
    return e;
}

int pa_rt_fail(int code, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pa_set_errmsg_raw(buf);
    pa_rt_note_error(code);
    return code;
}

uint64_t pa_rt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pa_rt_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

struct timespec pa_rt_deadline_ms(int32_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0) ms = 0;
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int pa_rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline) {
    if (deadline == NULL) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    int rc = pthread_cond_timedwait(cv, mu, deadline);
    return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

bool pa_rt_timeout_ok(int32_t timeout) { return timeout >= -1; }
