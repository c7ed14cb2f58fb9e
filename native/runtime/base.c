/* The runtime's shared helpers (pa_rt_base.h): errors with the thread's last
 * error, the process-wide lock, time and condition variables. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/pa_rt_base.h"

static pthread_mutex_t g_rt_mu = PTHREAD_MUTEX_INITIALIZER;

void pa_rt_lock(void) { pthread_mutex_lock(&g_rt_mu); }
void pa_rt_unlock(void) { pthread_mutex_unlock(&g_rt_mu); }

/* Last runtime error of this thread, for aclrtPeekAtLastError / aclrtGetLastError. */
static PA_THREAD_LOCAL int tl_last_error;

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

int pa_rt_fail_oom(const char *api, const char *what) {
    pa_fail_oom(ACL_ERROR_BAD_ALLOC, api, what);
    pa_rt_note_error(ACL_ERROR_BAD_ALLOC);
    return ACL_ERROR_BAD_ALLOC;
}

int pa_rt_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    int e = pthread_condattr_init(&attr);
    if (e != 0) return e;
    e = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (e == 0) e = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return e;
}

aclError pa_rt_sync_init(const char *api, pthread_mutex_t *mu, pthread_cond_t *cv1, pthread_cond_t *cv2) {
    int e = pthread_mutex_init(mu, NULL);
    const char *what = "mutex";
    if (e == 0) {
        what = "condition variable";
        e = pa_rt_cond_init(cv1);
        if (e == 0 && cv2 != NULL) {
            e = pa_rt_cond_init(cv2);
            if (e != 0) pthread_cond_destroy(cv1);
        }
        if (e != 0) pthread_mutex_destroy(mu);
    }
    if (e == 0) return ACL_SUCCESS;
    return pa_rt_fail(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "%s: cannot create a %s (%s)", api, what, strerror(e));
}

void pa_rt_sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cv1, pthread_cond_t *cv2) {
    pthread_mutex_destroy(mu);
    pthread_cond_destroy(cv1);
    if (cv2 != NULL) pthread_cond_destroy(cv2);
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
