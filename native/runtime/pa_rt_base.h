/* The bottom of the runtime: what every runtime file shares and nothing else.
 * Errors that also set the thread's "last error" (aclrtGetLastError), the
 * process-wide runtime lock, and monotonic-clock time and condition-variable
 * helpers. Depends only on common/.
 *
 * Locking: pa_rt_lock guards the device table (device.c) and the registries of
 * live streams, events and contexts (including their reference counts). Each
 * stream / event has its own mutex for its queue / state. Lock order is always
 * pa_rt_lock -> object mutex, and nobody waits for work while holding
 * pa_rt_lock (stream tasks may call back into the runtime). */
#ifndef PA_RT_BASE_H
#define PA_RT_BASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/pa_common.h"

/* pa_fail() that also remembers `code` as the calling thread's last runtime
 * error (aclrtPeekAtLastError / aclrtGetLastError). */
int pa_rt_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pa_rt_note_error(int code);
/* Host memory for the runtime's own bookkeeping (a stream, an event, a task,
 * a registry entry) ran out: ACL_ERROR_BAD_ALLOC with "<api>: out of host
 * memory for <what>". Memory a call was asked for (device memory, a physical
 * or pinned allocation) is ACL_ERROR_RT_MEMORY_ALLOCATION instead. */
int pa_rt_fail_oom(const char *api, const char *what);
/* The calling thread's last runtime error; clear = reset it to 0. */
int pa_rt_last_error(bool clear);

/* ---- process-wide runtime lock ---- */
void pa_rt_lock(void);
void pa_rt_unlock(void);

/* ---- time ---- */
uint64_t pa_rt_now_ns(void); /* CLOCK_MONOTONIC */
/* Initialises a condition variable that waits on CLOCK_MONOTONIC; 0 or an errno value. */
int pa_rt_cond_init(pthread_cond_t *cv) __attribute__((warn_unused_result));
/* Initialises a mutex and one or two such condition variables (cv2 may be
 * NULL). On failure none is left initialised and the call fails with
 * ACL_ERROR_RT_RESOURCE_ALLOC_FAIL and a message naming `api`. */
aclError pa_rt_sync_init(const char *api, pthread_mutex_t *mu, pthread_cond_t *cv1, pthread_cond_t *cv2)
    __attribute__((warn_unused_result));
void pa_rt_sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cv1, pthread_cond_t *cv2);
/* Absolute CLOCK_MONOTONIC deadline `ms` from now. */
struct timespec pa_rt_deadline_ms(int32_t ms);
/* Waits on cv; deadline NULL = forever. Returns 0, or ETIMEDOUT. */
int pa_rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline);
/* Validates a sync timeout: -1 forever, 0 poll, >0 ms. */
bool pa_rt_timeout_ok(int32_t timeout);

/* A spin-wait hint to the CPU. */
static inline void pa_rt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* CPUs this process may use (affinity mask and cgroup quota), >= 1 (threadpool.c). */
int pa_rt_usable_cpus(void);

#endif
