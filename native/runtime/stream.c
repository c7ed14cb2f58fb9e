/* Streams: each stream is a FIFO of tasks served by its own worker thread
 * (started when the stream is created). A launch returns at once; synchronising
 * waits until the FIFO is empty and the worker idle, then reports the first
 * error a task recorded since the previous synchronise (tasks after a failed
 * one still run).
 *
 * Handles are checked against a registry of live streams, so a destroyed
 * handle is reported instead of dereferenced. Streams are reference counted
 * (the registry holds one reference; every API call in flight holds one), so a
 * stream destroyed by one thread while another synchronises on it stays valid
 * memory until the last user lets go, and the synchroniser simply sees an
 * empty queue.
 *
 * Hand-offs between the caller and the worker spin briefly before sleeping on a
 * condition variable (only when the process has more than one CPU), so a small
 * launch + synchronise costs a few microseconds instead of two futex wake-ups.
 *
 * Every stream belongs to a device; the worker thread runs its tasks with that
 * device current. Resetting a device drains and destroys its streams (a
 * teardown hook registered with the device layer).
 *
 * Task tickets (for memory.c's deferred aclrtFree): every task gets a ticket
 * from one process-wide counter when it is queued, under its stream's mutex,
 * and each stream keeps the lowest ticket it has not finished (`low`). A list
 * of every stream object, from creation until freed (draining and leaked
 * streams too), lets pa_stream_unfinished_low() find the lowest unfinished
 * ticket of the process. After each task (and after dropping tasks) the
 * worker runs the task-finished hook before it reports the stream idle.
 * Locks: g_all_mu -> stream mutex; pa_rt_lock -> g_all_mu (a default stream is
 * created under pa_rt_lock).
 *
 * A task queued on a created stream does not start before the tasks queued on
 * its device's default (NULL) stream before it have finished (the ticket of the
 * default stream's last task is noted at enqueue; see wait_for_default). The
 * default stream does not wait for the others. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pa_device.h"
#include "runtime/pa_stream.h"

#define PA_STREAM_MAGIC 0x5374726du /* "Strm" */
#define PA_MSG_CAP 1024
#define PA_SPIN_NS 50000 /* how long a hand-off spins before sleeping */

typedef struct pa_task {
    pa_task_fn fn;
    pa_task_free_fn free_fn;
    void *arg;
    uint64_t ticket;
    uint64_t after; /* on a created stream: runs once the default stream's tasks up to this ticket are done */
    struct pa_task *next;
} pa_task;

struct pa_stream {
    uint32_t magic;
    bool is_default;
    int device;
    int refs;               /* guarded by pa_rt_lock */
    struct pa_stream *next; /* registry link, guarded by pa_rt_lock */

    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* worker: a task arrived or stop requested */
    pthread_cond_t cv_idle; /* synchronisers: queue drained and worker idle */
    pthread_cond_t cv_done; /* a default stream: a task finished (tasks of other streams wait for it) */
    int done_waiters;       /* workers of other streams waiting on cv_done */
    pa_task *head, *tail;
    bool busy;    /* the worker is running a task */
    bool closing; /* being destroyed: no more submissions */
    bool stop;    /* the worker exits once the queue is empty */
    bool started;
    pthread_t thread;
    int first_err;
    char first_msg[PA_MSG_CAP];
    uint64_t low; /* lowest ticket of a task queued or running here; PA_NO_TICKET if none */
    struct pa_stream *all_next, *all_prev; /* g_all list, guarded by g_all_mu */
    /* Lock-free views for the spinning hand-off (also updated under mu). */
    _Atomic uint64_t submitted;  /* tasks ever queued */
    _Atomic int64_t outstanding; /* queued or running */
};

/* Spins until done(s) holds or PA_SPIN_NS pass; false if spinning is pointless
 * (a single usable CPU). */
static bool spin_until(pa_stream *s, bool (*done)(pa_stream *, uint64_t), uint64_t arg) {
    if (pa_rt_usable_cpus() < 2) return false;
    uint64_t t0 = pa_rt_now_ns();
    for (unsigned i = 1;; i++) {
        if (done(s, arg)) return true;
        pa_rt_cpu_relax();
        if ((i & 63) == 0 && pa_rt_now_ns() - t0 > PA_SPIN_NS) return false;
    }
}

static bool new_work_since(pa_stream *s, uint64_t seen) { return atomic_load(&s->submitted) != seen; }
static bool drained(pa_stream *s, uint64_t unused) {
    PA_UNUSED(unused);
    return atomic_load(&s->outstanding) == 0;
}

/* Guarded by pa_rt_lock. */
static pa_stream *g_streams;                        /* all live streams, including the default ones */
static pa_stream *g_default_stream[PA_MAX_DEVICES]; /* each device's NULL stream */

/* The device of the task running on this thread (set by the stream worker). */
static PA_THREAD_LOCAL int tl_task_device = -1;
/* The ticket of the task running on this thread (PA_NO_TICKET outside tasks). */
static PA_THREAD_LOCAL uint64_t tl_task_ticket = PA_NO_TICKET;

int pa_stream_task_device(void) { return tl_task_device; }

uint64_t pa_stream_task_ticket(void) { return tl_task_ticket; }

/* ---- tickets ---- */

static _Atomic uint64_t g_next_ticket;
static pthread_mutex_t g_all_mu = PTHREAD_MUTEX_INITIALIZER;
static pa_stream *g_all; /* every stream object from stream_new until stream_free */
static void (*_Atomic g_task_done_hook)(void);

uint64_t pa_stream_next_ticket(void) { return atomic_load(&g_next_ticket); }

uint64_t pa_stream_unfinished_low(void) {
    uint64_t low = PA_NO_TICKET;
    pthread_mutex_lock(&g_all_mu);
    for (pa_stream *s = g_all; s != NULL; s = s->all_next) {
        pthread_mutex_lock(&s->mu);
        if (s->low < low) low = s->low;
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&g_all_mu);
    return low;
}

void pa_stream_on_task_done(void (*fn)(void)) { atomic_store(&g_task_done_hook, fn); }

static void run_task_done_hook(void) {
    void (*fn)(void) = atomic_load(&g_task_done_hook);
    if (fn != NULL) fn();
}

static void all_link(pa_stream *s) {
    pthread_mutex_lock(&g_all_mu);
    s->all_prev = NULL;
    s->all_next = g_all;
    if (g_all != NULL) g_all->all_prev = s;
    g_all = s;
    pthread_mutex_unlock(&g_all_mu);
}

static void all_unlink(pa_stream *s) {
    pthread_mutex_lock(&g_all_mu);
    if (s->all_prev != NULL) s->all_prev->all_next = s->all_next;
    else if (g_all == s) g_all = s->all_next;
    if (s->all_next != NULL) s->all_next->all_prev = s->all_prev;
    s->all_next = s->all_prev = NULL;
    pthread_mutex_unlock(&g_all_mu);
}

int pa_stream_device(const pa_stream *s) { return s->device; }

static void *stream_worker(void *p);

/* A new stream of `device` with its worker thread running, as CANN's streams
 * exist in hardware from creation: every resource is made here, so a stream
 * that was created can take work, and a failure is the create call's. */
static aclError stream_new(const char *api, bool is_default, int device, pa_stream **out) {
    pa_stream *s = calloc(1, sizeof *s);
    if (s == NULL) return pa_rt_fail_oom(api, "the stream");
    s->magic = PA_STREAM_MAGIC;
    s->is_default = is_default;
    s->device = device;
    s->refs = 1; /* the registry's reference */
    s->low = PA_NO_TICKET;
    aclError rc = pa_rt_sync_init(api, &s->mu, &s->cv_work, &s->cv_idle);
    if (rc != ACL_SUCCESS) {
        free(s);
        return rc;
    }
    if (pthread_cond_init(&s->cv_done, NULL) != 0) {
        pa_rt_sync_destroy(&s->mu, &s->cv_work, &s->cv_idle);
        free(s);
        return pa_rt_fail(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "%s: cannot create the stream's condition variable", api);
    }
    pthread_mutex_lock(&s->mu);
    int e = pthread_create(&s->thread, NULL, stream_worker, s);
    s->started = e == 0;
    pthread_mutex_unlock(&s->mu);
    if (e != 0) {
        pa_rt_sync_destroy(&s->mu, &s->cv_work, &s->cv_idle);
        pthread_cond_destroy(&s->cv_done);
        free(s);
        return pa_rt_fail(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "%s: cannot start the stream's worker thread (%s)", api,
                          strerror(e));
    }
    all_link(s);
    *out = s;
    return ACL_SUCCESS;
}

static void stream_free(pa_stream *s) {
    all_unlink(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_idle);
    pthread_cond_destroy(&s->cv_done);
    s->magic = 0;
    free(s);
}

/* Caller holds pa_rt_lock. */
static pa_stream *registry_find(const void *handle) {
    for (pa_stream *s = g_streams; s != NULL; s = s->next) {
        if (s == handle) return s;
    }
    return NULL;
}

/* Caller holds pa_rt_lock. */
static void registry_unlink(pa_stream *s) {
    pa_stream **pp = &g_streams;
    while (*pp != NULL && *pp != s) pp = &(*pp)->next;
    if (*pp == s) *pp = s->next;
    s->next = NULL;
    if (g_default_stream[s->device] == s) g_default_stream[s->device] = NULL;
}

aclError pa_stream_acquire(aclrtStream handle, const char *api, pa_stream **out) {
    if (handle == NULL) {
        int d = -1;
        aclError rc = pa_device_require(api, &d);
        if (rc != ACL_SUCCESS) return rc;
        pa_rt_lock();
        if (g_default_stream[d] == NULL) {
            pa_stream *s = NULL;
            rc = stream_new(api, true, d, &s);
            if (rc != ACL_SUCCESS) {
                pa_rt_unlock();
                return rc;
            }
            s->next = g_streams;
            g_streams = s;
            g_default_stream[d] = s;
        }
        pa_stream *s = g_default_stream[d];
        s->refs++;
        pa_rt_unlock();
        *out = s;
        return ACL_SUCCESS;
    }
    pa_rt_lock();
    pa_stream *s = registry_find(handle);
    if (s != NULL) s->refs++;
    pa_rt_unlock();
    if (s == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p is not a live stream (destroyed, or never created)",
                          api, handle);
    }
    *out = s;
    return ACL_SUCCESS;
}

void pa_stream_release(pa_stream *s) {
    pa_rt_lock();
    bool last = --s->refs == 0;
    pa_rt_unlock();
    if (last) stream_free(s);
}

/* The default stream of `device` with a reference, or NULL. */
static pa_stream *default_stream_ref(int device) {
    pa_rt_lock();
    pa_stream *d = g_default_stream[device];
    if (d != NULL) d->refs++;
    pa_rt_unlock();
    return d;
}

/* Work queued on a created stream runs after the work queued on its device's
 * default stream before it (a one-way implicit dependency, as the legacy default
 * stream of CUDA orders work): ggml-cann converts weights in place with
 * aclnnTransMatmulWeight on the default stream and then reads them from its own
 * stream with no event in between. Waits until the default stream has finished
 * every task with a ticket <= after. */
static void wait_for_default(int device, uint64_t after) {
    pa_stream *d = default_stream_ref(device);
    if (d == NULL) return; /* reset since: its tasks are gone */
    pthread_mutex_lock(&d->mu);
    while (d->low != PA_NO_TICKET && d->low <= after) {
        d->done_waiters++;
        pthread_cond_wait(&d->cv_done, &d->mu);
        d->done_waiters--;
    }
    pthread_mutex_unlock(&d->mu);
    pa_stream_release(d);
}

static void *stream_worker(void *p) {
    pa_stream *s = p;
    pa_device_bind_thread(s->device);
    tl_task_device = s->device;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->head == NULL && !s->stop) {
            uint64_t seen = atomic_load(&s->submitted);
            pthread_mutex_unlock(&s->mu);
            spin_until(s, new_work_since, seen);
            pthread_mutex_lock(&s->mu);
        }
        while (s->head == NULL && !s->stop) pthread_cond_wait(&s->cv_work, &s->mu);
        pa_task *t = s->head;
        if (t == NULL) break; /* stop requested and nothing left */
        s->head = t->next;
        if (s->head == NULL) s->tail = NULL;
        s->busy = true;
        s->low = t->ticket; /* the lowest: tickets grow along the queue */
        pthread_mutex_unlock(&s->mu);

        if (t->after != PA_NO_TICKET) wait_for_default(s->device, t->after);
        pa_set_errmsg_raw(NULL);
        tl_task_ticket = t->ticket;
        int rc = t->fn(t->arg);
        if (t->free_fn != NULL) t->free_fn(t->arg);
        tl_task_ticket = PA_NO_TICKET;
        free(t);

        /* Finished: its error recorded and its ticket out of the unfinished
         * ones, then the hook (memory freed while this task could use it is
         * released), then idle. */
        pthread_mutex_lock(&s->mu);
        if (rc != 0 && s->first_err == 0) {
            s->first_err = rc;
            const char *m = pa_get_errmsg();
            if (m != NULL && m[0] != '\0') {
                snprintf(s->first_msg, sizeof s->first_msg, "%s", m);
            } else {
                snprintf(s->first_msg, sizeof s->first_msg, "a task on stream %p failed with error %d (no message)",
                         (void *)s, rc);
            }
        }
        s->low = s->head != NULL ? s->head->ticket : PA_NO_TICKET;
        if (s->done_waiters > 0) pthread_cond_broadcast(&s->cv_done);
        pthread_mutex_unlock(&s->mu);
        run_task_done_hook();
        pthread_mutex_lock(&s->mu);
        s->busy = false;
        atomic_fetch_sub(&s->outstanding, 1);
        if (s->head == NULL) pthread_cond_broadcast(&s->cv_idle);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static bool on_worker_thread(pa_stream *s) {
    pthread_mutex_lock(&s->mu);
    bool self = s->started && pthread_equal(s->thread, pthread_self());
    pthread_mutex_unlock(&s->mu);
    return self;
}

aclError pa_stream_enqueue(pa_stream *s, pa_task_fn fn, pa_task_free_fn free_fn, void *arg, const char *api) {
    pa_task *t = malloc(sizeof *t);
    if (t == NULL) {
        if (free_fn != NULL) free_fn(arg);
        return pa_rt_fail_oom(api, "the stream's task queue");
    }
    t->fn = fn;
    t->free_fn = free_fn;
    t->arg = arg;
    t->next = NULL;
    t->after = PA_NO_TICKET;
    if (!s->is_default) {
        /* the last task queued (or running) on the device's default stream */
        pa_stream *d = default_stream_ref(s->device);
        if (d != NULL) {
            pthread_mutex_lock(&d->mu);
            if (d->tail != NULL) t->after = d->tail->ticket;
            else if (d->busy) t->after = d->low;
            pthread_mutex_unlock(&d->mu);
            pa_stream_release(d);
        }
    }
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        free(t);
        if (free_fn != NULL) free_fn(arg);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p is being destroyed", api, (void *)s);
    }
    t->ticket = atomic_fetch_add(&g_next_ticket, 1); /* under s->mu: in queue order */
    if (s->low == PA_NO_TICKET) s->low = t->ticket;
    if (s->tail != NULL) s->tail->next = t;
    else s->head = t;
    s->tail = t;
    atomic_fetch_add(&s->outstanding, 1);
    atomic_fetch_add(&s->submitted, 1);
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return ACL_SUCCESS;
}

aclError pa_stream_submit(aclrtStream stream, pa_task_fn fn, pa_task_free_fn free_fn, void *arg) {
    if (fn == NULL) {
        if (free_fn != NULL) free_fn(arg);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "pa_stream_submit: fn must not be NULL");
    }
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, "stream launch", &s);
    if (rc != ACL_SUCCESS) {
        if (free_fn != NULL) free_fn(arg);
        return rc;
    }
    rc = pa_stream_enqueue(s, fn, free_fn, arg, "stream launch");
    pa_stream_release(s);
    return rc;
}

/* Waits until s is idle or the deadline passes (NULL = forever). On success
 * returns (and clears) the first task error, copying its message into the
 * calling thread. */
static aclError stream_sync(pa_stream *s, const struct timespec *deadline, int32_t timeout, const char *api) {
    if (on_worker_thread(s)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "%s: a task running on stream %p cannot synchronise that same stream (deadlock)", api,
                          (void *)s);
    }
    bool timed_out = false;
    if (deadline == NULL || timeout > 0) spin_until(s, drained, 0);
    pthread_mutex_lock(&s->mu);
    while (s->head != NULL || s->busy) {
        if (pa_rt_cond_wait(&s->cv_idle, &s->mu, deadline) == ETIMEDOUT) {
            timed_out = s->head != NULL || s->busy;
            break;
        }
    }
    if (timed_out) {
        pthread_mutex_unlock(&s->mu);
        return pa_rt_fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "%s: stream %p still has work after %d ms", api,
                          (void *)s, (int)timeout);
    }
    int err = s->first_err;
    char msg[PA_MSG_CAP];
    msg[0] = '\0';
    if (err != 0) {
        memcpy(msg, s->first_msg, sizeof msg);
        s->first_err = 0;
        s->first_msg[0] = '\0';
    }
    pthread_mutex_unlock(&s->mu);
    if (err != 0) {
        pa_set_errmsg_raw(msg);
        pa_rt_note_error(err);
    }
    return err;
}

/* Stops accepting work, waits for (or, if force, drops) the queued tasks,
 * stops the worker and joins it. The stream is already out of the registry. */
static void stream_shutdown(pa_stream *s, bool force) {
    pa_task *dropped = NULL;
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    if (force) {
        dropped = s->head;
        s->head = s->tail = NULL;
        for (pa_task *t = dropped; t != NULL; t = t->next) atomic_fetch_sub(&s->outstanding, 1);
        if (!s->busy) s->low = PA_NO_TICKET; /* else the running task's */
        if (s->done_waiters > 0) pthread_cond_broadcast(&s->cv_done);
    }
    pthread_mutex_unlock(&s->mu);
    /* Dropped tasks never run; their resources are released. */
    const bool any_dropped = dropped != NULL;
    while (dropped != NULL) {
        pa_task *n = dropped->next;
        if (dropped->free_fn != NULL) dropped->free_fn(dropped->arg);
        free(dropped);
        dropped = n;
    }
    if (any_dropped) run_task_done_hook(); /* they count as finished */
    pthread_mutex_lock(&s->mu);
    while (s->head != NULL || s->busy) pthread_cond_wait(&s->cv_idle, &s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv_work);
    bool started = s->started;
    pthread_t th = s->thread;
    pthread_mutex_unlock(&s->mu);
    if (started) pthread_join(th, NULL);
    /* Wake anyone still synchronising (they see an empty queue). */
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv_idle);
    pthread_mutex_unlock(&s->mu);
}

/* Teardown hook: drains and destroys every stream of `device`. */
static void streams_teardown(int device) {
    pa_rt_lock();
    pa_stream *list = NULL;
    for (pa_stream **pp = &g_streams; *pp != NULL;) {
        pa_stream *s = *pp;
        if (s->device == device) {
            *pp = s->next;
            s->next = list;
            list = s;
        } else {
            pp = &s->next;
        }
    }
    g_default_stream[device] = NULL;
    pa_rt_unlock();
    while (list != NULL) {
        pa_stream *n = list->next;
        list->next = NULL;
        if (on_worker_thread(list)) {
            /* Reset from inside a task of this very stream: cannot join ourselves.
             * Let the worker finish on its own; the stream is leaked. */
            pthread_mutex_lock(&list->mu);
            list->closing = true;
            list->stop = true;
            pthread_mutex_unlock(&list->mu);
            pthread_detach(pthread_self());
        } else {
            stream_shutdown(list, false);
            pa_stream_release(list);
        }
        list = n;
    }
}

__attribute__((constructor)) static void streams_register_teardown(void) {
    pa_device_on_teardown(PA_TEARDOWN_STREAMS, streams_teardown);
}

/* Waits for every live stream of `device`; returns the first recorded task error. */
static aclError streams_sync_device(int device, int32_t timeout, const char *api) {
    pa_rt_lock();
    size_t n = 0;
    for (pa_stream *s = g_streams; s != NULL; s = s->next) n += s->device == device;
    pa_stream **snap = n ? malloc(n * sizeof *snap) : NULL;
    if (n != 0 && snap == NULL) {
        pa_rt_unlock();
        return pa_rt_fail_oom(api, "the list of streams");
    }
    size_t i = 0;
    for (pa_stream *s = g_streams; s != NULL; s = s->next) {
        if (s->device != device) continue;
        s->refs++;
        snap[i++] = s;
    }
    pa_rt_unlock();

    struct timespec dl;
    if (timeout >= 0) dl = pa_rt_deadline_ms(timeout);
    aclError first = ACL_SUCCESS;
    char msg[PA_MSG_CAP];
    msg[0] = '\0';
    for (i = 0; i < n; i++) {
        aclError rc = (first == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)
                          ? ACL_SUCCESS
                          : stream_sync(snap[i], timeout >= 0 ? &dl : NULL, timeout, api);
        if (rc != ACL_SUCCESS && first == ACL_SUCCESS) {
            first = rc;
            snprintf(msg, sizeof msg, "%s", pa_get_errmsg());
        }
        pa_stream_release(snap[i]);
    }
    free(snap);
    if (first != ACL_SUCCESS) {
        pa_set_errmsg_raw(msg);
        pa_rt_note_error(first);
    }
    return first;
}

/* ---------------------------------------------------------------------------
 * Public stream API
 * ------------------------------------------------------------------------- */

static aclError create_stream(const char *api, aclrtStream *stream) {
    if (stream == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: stream must not be NULL", api);
    int d = -1;
    aclError rc = pa_device_require(api, &d);
    if (rc != ACL_SUCCESS) return rc;
    pa_stream *s = NULL;
    rc = stream_new(api, false, d, &s);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    s->next = g_streams;
    g_streams = s;
    pa_rt_unlock();
    *stream = s;
    return ACL_SUCCESS;
}

PA_API aclError aclrtCreateStream(aclrtStream *stream) { return create_stream("aclrtCreateStream", stream); }

/* priority and flag (fast launch / sync, ...) change nothing on the host. */
PA_API aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
    PA_UNUSED(priority);
    PA_UNUSED(flag);
    return create_stream("aclrtCreateStreamWithConfig", stream);
}

static aclError destroy_stream(const char *api, aclrtStream stream, bool force) {
    if (stream == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: stream must not be NULL (the default stream is not destroyed)",
                          api);
    }
    pa_rt_lock();
    pa_stream *s = registry_find(stream);
    if (s != NULL && s->is_default) s = NULL;
    if (s != NULL) {
        pthread_mutex_lock(&s->mu);
        bool self = s->started && pthread_equal(s->thread, pthread_self());
        pthread_mutex_unlock(&s->mu);
        if (self) {
            pa_rt_unlock();
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: a task running on stream %p cannot destroy it", api,
                              stream);
        }
        registry_unlink(s);
    }
    pa_rt_unlock();
    if (s == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p is not a live stream (destroyed already?)", api,
                          stream);
    }
    stream_shutdown(s, force);
    pa_stream_release(s);
    return ACL_SUCCESS;
}

PA_API aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream("aclrtDestroyStream", stream, false); }

PA_API aclError aclrtDestroyStreamForce(aclrtStream stream) {
    return destroy_stream("aclrtDestroyStreamForce", stream, true);
}

PA_API aclError aclrtSynchronizeDevice(void) {
    int d = -1;
    aclError rc = pa_device_require("aclrtSynchronizeDevice", &d);
    if (rc != ACL_SUCCESS) return rc;
    return streams_sync_device(d, -1, "aclrtSynchronizeDevice");
}

PA_API aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    if (!pa_rt_timeout_ok(timeout)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtSynchronizeDeviceWithTimeout: timeout must be -1 (forever) or >= 0 ms, got %d",
                          (int)timeout);
    }
    int d = -1;
    aclError rc = pa_device_require("aclrtSynchronizeDeviceWithTimeout", &d);
    if (rc != ACL_SUCCESS) return rc;
    return streams_sync_device(d, timeout, "aclrtSynchronizeDeviceWithTimeout");
}

PA_API aclError aclrtSynchronizeStream(aclrtStream stream) {
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, "aclrtSynchronizeStream", &s);
    if (rc != ACL_SUCCESS) return rc;
    rc = stream_sync(s, NULL, -1, "aclrtSynchronizeStream");
    pa_stream_release(s);
    return rc;
}

PA_API aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    const char *api = "aclrtSynchronizeStreamWithTimeout";
    if (!pa_rt_timeout_ok(timeout)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: timeout must be -1 (forever) or >= 0 ms, got %d", api,
                          (int)timeout);
    }
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, api, &s);
    if (rc != ACL_SUCCESS) return rc;
    struct timespec dl;
    if (timeout >= 0) dl = pa_rt_deadline_ms(timeout);
    rc = stream_sync(s, timeout >= 0 ? &dl : NULL, timeout, api);
    pa_stream_release(s);
    return rc;
}

PA_API aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
    if (status == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery: status must not be NULL");
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, "aclrtStreamQuery", &s);
    if (rc != ACL_SUCCESS) return rc;
    pthread_mutex_lock(&s->mu);
    bool pending = s->head != NULL || s->busy;
    pthread_mutex_unlock(&s->mu);
    pa_stream_release(s);
    *status = pending ? ACL_STREAM_STATUS_NOT_READY : ACL_STREAM_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Host callbacks. In CANN, aclrtLaunchCallback's callback runs on a thread
 * registered with aclrtSubscribeReport that polls aclrtProcessReport. Here
 * every callback runs directly on the stream's worker thread, in stream order,
 * so subscribing and processing reports have nothing to do.
 * ------------------------------------------------------------------------- */

typedef struct {
    void (*fn)(void *);
    void *arg;
} host_call;

static int host_call_run(void *p) {
    host_call *h = p;
    h->fn(h->arg);
    return 0;
}

static aclError launch_host_call(const char *api, aclrtStream stream, void (*fn)(void *), void *arg) {
    if (fn == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: fn must not be NULL", api);
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, api, &s);
    if (rc != ACL_SUCCESS) return rc;
    host_call *h = malloc(sizeof *h);
    if (h == NULL) {
        pa_stream_release(s);
        return pa_rt_fail_oom(api, "the callback");
    }
    h->fn = fn;
    h->arg = arg;
    rc = pa_stream_enqueue(s, host_call_run, free, h, api);
    pa_stream_release(s);
    return rc;
}

PA_API aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                    aclrtStream stream) {
    if (blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtLaunchCallback: blockType must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK "
                          "(1), got %d",
                          (int)blockType);
    }
    /* Both block types behave alike: later tasks of the stream run after the callback. */
    return launch_host_call("aclrtLaunchCallback", stream, fn, userData);
}

PA_API aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
    return launch_host_call("aclrtLaunchHostFunc", stream, fn, args);
}

PA_API aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
    PA_UNUSED(threadId);
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, "aclrtSubscribeReport", &s);
    if (rc != ACL_SUCCESS) return rc;
    pa_stream_release(s);
    return ACL_SUCCESS;
}

PA_API aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
    PA_UNUSED(threadId);
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, "aclrtUnSubscribeReport", &s);
    if (rc != ACL_SUCCESS) return rc;
    pa_stream_release(s);
    return ACL_SUCCESS;
}

/* Callbacks never arrive here (they already ran on the stream worker). To keep
 * a caller's polling loop from spinning, wait out the timeout (capped at
 * 100 ms; -1 waits 100 ms), then report success. */
PA_API aclError aclrtProcessReport(int32_t timeout) {
    if (timeout < -1) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtProcessReport: timeout must be -1 or >= 0 ms, got %d",
                          (int)timeout);
    }
    int32_t ms = (timeout < 0 || timeout > 100) ? 100 : timeout;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return ACL_SUCCESS;
}
