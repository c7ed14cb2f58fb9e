/* Events. An event counts the records issued on it (record_seq) and the
 * highest record whose stream task has run (done_seq); it is complete when
 * done_seq >= record_seq. aclrtRecordEvent queues a task that stamps
 * CLOCK_MONOTONIC and advances done_seq; recording again makes the event
 * not-ready until the new record runs. aclrtStreamWaitEvent captures
 * record_seq at call time and queues a task that blocks its stream's worker
 * until done_seq reaches it.
 *
 * A record becomes visible (record_seq) only once its task is queued, so an
 * aclrtRecordEvent that fails leaves the event as it was. A queued record
 * task that is dropped (forced stream destruction) completes its record
 * without a time stamp, so no waiter can hang and no elapsed time is made up.
 *
 * Handles are checked against a registry and reference counted like streams.
 * An event belongs to the device current at its creation; resetting that
 * device releases it (a teardown hook). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "runtime/pa_device.h"
#include "runtime/pa_stream.h"

#define PA_EVENT_MAGIC 0x45766e74u /* "Evnt" */

typedef struct pa_event {
    uint32_t magic;
    uint32_t flags;
    int device;
    int refs;              /* guarded by pa_rt_lock */
    struct pa_event *next; /* registry link, guarded by pa_rt_lock */

    pthread_mutex_t mu;
    pthread_cond_t cv; /* done_seq advanced */
    uint64_t issued;     /* records handed out (their tasks may not be queued yet) */
    uint64_t record_seq; /* the highest record whose task was queued */
    uint64_t done_seq;
    uint64_t reset_seq; /* record_seq at the last aclrtResetEvent */
    uint64_t stamp_ns;
    bool stamp_valid;
} pa_event;

static pa_event *g_events; /* guarded by pa_rt_lock */

static aclError event_acquire(aclrtEvent handle, const char *api, const char *param, pa_event **out) {
    if (handle == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: %s must not be NULL", api, param);
    pa_rt_lock();
    pa_event *e = g_events;
    while (e != NULL && e != handle) e = e->next;
    if (e != NULL) e->refs++;
    pa_rt_unlock();
    if (e == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: %s %p is not a live event (destroyed, or never created)", api,
                          param, handle);
    }
    *out = e;
    return ACL_SUCCESS;
}

static void event_release(pa_event *e) {
    pa_rt_lock();
    bool last = --e->refs == 0;
    pa_rt_unlock();
    if (last) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        e->magic = 0;
        free(e);
    }
}

/* Teardown hook: releases every event of `device`. */
static void events_teardown(int device) {
    pa_rt_lock();
    pa_event *list = NULL;
    for (pa_event **pp = &g_events; *pp != NULL;) {
        pa_event *e = *pp;
        if (e->device == device) {
            *pp = e->next;
            e->next = list;
            list = e;
        } else {
            pp = &e->next;
        }
    }
    pa_rt_unlock();
    while (list != NULL) {
        pa_event *n = list->next;
        list->next = NULL;
        event_release(list);
        list = n;
    }
}

__attribute__((constructor)) static void events_register_teardown(void) {
    pa_device_on_teardown(PA_TEARDOWN_EVENTS, events_teardown);
}

static aclError create_event(const char *api, aclrtEvent *event, uint32_t flag) {
    if (event == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: event must not be NULL", api);
    int device = -1;
    aclError rc = pa_device_require(api, &device);
    if (rc != ACL_SUCCESS) return rc;
    pa_event *e = calloc(1, sizeof *e);
    if (e == NULL) return pa_rt_fail_oom(api, "the event");
    e->magic = PA_EVENT_MAGIC;
    e->flags = flag;
    e->device = device;
    e->refs = 1; /* the registry's reference */
    rc = pa_rt_sync_init(api, &e->mu, &e->cv, NULL);
    if (rc != ACL_SUCCESS) {
        free(e);
        return rc;
    }
    pa_rt_lock();
    e->next = g_events;
    g_events = e;
    pa_rt_unlock();
    *event = e;
    return ACL_SUCCESS;
}

/* Every flag (sync, time line, IPC, ...) behaves alike: all events keep time. */
PA_API aclError aclrtCreateEvent(aclrtEvent *event) { return create_event("aclrtCreateEvent", event, 0); }

PA_API aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_event("aclrtCreateEventWithFlag", event, flag);
}

PA_API aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_event("aclrtCreateEventExWithFlag", event, flag);
}

PA_API aclError aclrtDestroyEvent(aclrtEvent event) {
    if (event == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: event must not be NULL");
    pa_rt_lock();
    pa_event **pp = &g_events;
    while (*pp != NULL && *pp != (pa_event *)event) pp = &(*pp)->next;
    pa_event *e = *pp;
    if (e != NULL) *pp = e->next;
    pa_rt_unlock();
    if (e == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtDestroyEvent: event %p is not a live event (destroyed already?)", event);
    }
    e->next = NULL;
    event_release(e); /* queued tasks that use it hold their own references */
    return ACL_SUCCESS;
}

/* ---- record ---- */

/* Two owners: aclrtRecordEvent (until it has published the record) and the
 * stream (until the task ran or was dropped); the last one finishes it. */
typedef struct {
    pa_event *ev;
    uint64_t seq;
    atomic_int owners;
    bool ran; /* written by the worker before it lets go */
} record_task;

/* seq ran (stamp) or was dropped (no stamp): waiters for it may go. */
static void record_complete(pa_event *e, uint64_t seq, bool stamp) {
    uint64_t now = pa_rt_now_ns();
    pthread_mutex_lock(&e->mu);
    if (seq > e->done_seq) {
        e->done_seq = seq;
        e->stamp_ns = now;
        e->stamp_valid = stamp;
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Takes a reference on both handles (released with event_release / pa_stream_release),
 * or on neither when one of them is not live. */
static aclError acquire_event_and_stream(aclrtEvent event, aclrtStream stream, const char *api, pa_event **e,
                                         pa_stream **s) {
    aclError rc = event_acquire(event, api, "event", e);
    if (rc != ACL_SUCCESS) return rc;
    rc = pa_stream_acquire(stream, api, s);
    if (rc != ACL_SUCCESS) event_release(*e);
    return rc;
}

static void record_task_let_go(record_task *t) {
    if (atomic_fetch_sub(&t->owners, 1) != 1) return;
    if (!t->ran) record_complete(t->ev, t->seq, false); /* dropped after it was published */
    event_release(t->ev);
    free(t);
}

static int record_task_run(void *p) {
    record_task *t = p;
    record_complete(t->ev, t->seq, true);
    t->ran = true;
    return 0;
}

static void record_task_free(void *p) { record_task_let_go(p); }

PA_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    const char *api = "aclrtRecordEvent";
    pa_event *e = NULL;
    pa_stream *s = NULL;
    aclError rc = acquire_event_and_stream(event, stream, api, &e, &s);
    if (rc != ACL_SUCCESS) return rc;
    record_task *t = malloc(sizeof *t);
    if (t == NULL) {
        pa_stream_release(s);
        event_release(e);
        return pa_rt_fail_oom(api, "the record task");
    }
    pthread_mutex_lock(&e->mu);
    t->seq = ++e->issued;
    pthread_mutex_unlock(&e->mu);
    t->ev = e; /* the task owns this reference */
    t->ran = false;
    atomic_init(&t->owners, 2);
    rc = pa_stream_enqueue(s, record_task_run, record_task_free, t, api);
    pa_stream_release(s);
    if (rc != ACL_SUCCESS) {
        /* Not queued (the stream let go of t already): the event stays as it was. */
        event_release(e);
        free(t);
        return rc;
    }
    pthread_mutex_lock(&e->mu);
    if (t->seq > e->record_seq) e->record_seq = t->seq;
    pthread_mutex_unlock(&e->mu);
    record_task_let_go(t);
    return ACL_SUCCESS;
}

/* Takes effect immediately (not in stream order): the event returns to the
 * never-recorded state and anyone waiting on an earlier record is released. */
PA_API aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    const char *api = "aclrtResetEvent";
    pa_event *e = NULL;
    aclError rc = event_acquire(event, api, "event", &e);
    if (rc != ACL_SUCCESS) return rc;
    pa_stream *s = NULL;
    rc = pa_stream_acquire(stream, api, &s);
    if (rc != ACL_SUCCESS) {
        event_release(e);
        return rc;
    }
    pa_stream_release(s);
    pthread_mutex_lock(&e->mu);
    e->reset_seq = e->record_seq;
    if (e->done_seq < e->record_seq) e->done_seq = e->record_seq; /* a record not yet published may have run */
    e->stamp_valid = false;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    event_release(e);
    return ACL_SUCCESS;
}

/* ---- queries ---- */

/* Caller holds e->mu. A record is outstanding. */
static bool ev_pending(const pa_event *e) { return e->done_seq < e->record_seq; }
/* Caller holds e->mu. Recorded (since the last reset) and that record ran. */
static bool ev_recorded_complete(const pa_event *e) {
    return e->record_seq > e->reset_seq && !ev_pending(e) && e->stamp_valid;
}

/* Evaluates pred on a live event under its lock. */
static aclError event_test(const char *api, aclrtEvent event, const void *status,
                           bool (*pred)(const pa_event *), bool *out) {
    if (status == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: status must not be NULL", api);
    pa_event *e = NULL;
    aclError rc = event_acquire(event, api, "event", &e);
    if (rc != ACL_SUCCESS) return rc;
    pthread_mutex_lock(&e->mu);
    *out = pred(e);
    pthread_mutex_unlock(&e->mu);
    event_release(e);
    return ACL_SUCCESS;
}

PA_API aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
    bool pending = false;
    aclError rc = event_test("aclrtQueryEvent", event, status, ev_pending, &pending);
    if (rc == ACL_SUCCESS) *status = pending ? ACL_EVENT_STATUS_NOT_READY : ACL_EVENT_STATUS_COMPLETE;
    return rc;
}

PA_API aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    bool done = false;
    aclError rc = event_test("aclrtQueryEventStatus", event, status, ev_recorded_complete, &done);
    if (rc == ACL_SUCCESS) *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return rc;
}

static aclError event_sync(const char *api, aclrtEvent event, int32_t timeout) {
    if (!pa_rt_timeout_ok(timeout)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: timeout must be -1 (forever) or >= 0 ms, got %d", api,
                          (int)timeout);
    }
    pa_event *e = NULL;
    aclError rc = event_acquire(event, api, "event", &e);
    if (rc != ACL_SUCCESS) return rc;
    struct timespec dl;
    if (timeout >= 0) dl = pa_rt_deadline_ms(timeout);
    bool timed_out = false;
    pthread_mutex_lock(&e->mu);
    uint64_t target = e->record_seq;
    while (e->done_seq < target) {
        if (pa_rt_cond_wait(&e->cv, &e->mu, timeout >= 0 ? &dl : NULL) == ETIMEDOUT) {
            timed_out = e->done_seq < target;
            break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    event_release(e);
    if (timed_out) {
        return pa_rt_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "%s: event %p not complete after %d ms", api, event,
                          (int)timeout);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtSynchronizeEvent(aclrtEvent event) { return event_sync("aclrtSynchronizeEvent", event, -1); }

PA_API aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
    return event_sync("aclrtSynchronizeEventWithTimeout", event, timeout);
}

PA_API aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    const char *api = "aclrtEventElapsedTime";
    if (ms == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: ms must not be NULL", api);
    pa_event *a = NULL, *b = NULL;
    aclError rc = event_acquire(startEvent, api, "startEvent", &a);
    if (rc != ACL_SUCCESS) return rc;
    rc = event_acquire(endEvent, api, "endEvent", &b);
    if (rc != ACL_SUCCESS) {
        event_release(a);
        return rc;
    }
    pthread_mutex_lock(&a->mu);
    bool a_ok = ev_recorded_complete(a);
    uint64_t ta = a->stamp_ns;
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_lock(&b->mu);
    bool b_ok = ev_recorded_complete(b);
    uint64_t tb = b->stamp_ns;
    pthread_mutex_unlock(&b->mu);
    event_release(a);
    event_release(b);
    if (!a_ok || !b_ok) {
        return pa_rt_fail(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                          "%s: %s %p has no completed record (record it and synchronise first)", api,
                          a_ok ? "endEvent" : "startEvent", a_ok ? endEvent : startEvent);
    }
    double d = tb >= ta ? (double)(tb - ta) : -(double)(ta - tb);
    *ms = (float)(d / 1e6);
    return ACL_SUCCESS;
}

/* ---- cross-stream wait ---- */

typedef struct {
    pa_event *ev;
    uint64_t target;
} wait_task;

static int wait_task_run(void *p) {
    wait_task *t = p;
    pa_event *e = t->ev;
    pthread_mutex_lock(&e->mu);
    while (e->done_seq < t->target) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

static void wait_task_free(void *p) {
    wait_task *t = p;
    event_release(t->ev);
    free(t);
}

PA_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    const char *api = "aclrtStreamWaitEvent";
    pa_event *e = NULL;
    pa_stream *s = NULL;
    aclError rc = acquire_event_and_stream(event, stream, api, &e, &s);
    if (rc != ACL_SUCCESS) return rc;
    pthread_mutex_lock(&e->mu);
    uint64_t target = e->record_seq;
    bool done = e->done_seq >= target; /* never recorded, or already complete */
    pthread_mutex_unlock(&e->mu);
    if (done) {
        pa_stream_release(s);
        event_release(e);
        return ACL_SUCCESS;
    }
    wait_task *t = malloc(sizeof *t);
    if (t == NULL) {
        pa_stream_release(s);
        event_release(e);
        return pa_rt_fail_oom(api, "the wait task");
    }
    t->ev = e; /* the task owns this reference */
    t->target = target;
    rc = pa_stream_enqueue(s, wait_task_run, wait_task_free, t, api);
    pa_stream_release(s);
    return rc;
}
