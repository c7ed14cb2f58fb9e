/* Streams: the internal API used by ops, HCCL, copies and events. A stream
 * belongs to the device that was current when it was created (the NULL handle
 * is the current device's default stream); its tasks run on that device. */
#ifndef PA_STREAM_H
#define PA_STREAM_H

#include "common/pa_common.h"

/* A unit of stream work. Returns 0 on success, or a status code (an ACL error or
 * an aclnn status) after recording a message with pa_fail(); the stream keeps the
 * first failure and reports it from aclrtSynchronizeStream (and WithTimeout). */
typedef int (*pa_task_fn)(void *arg);
/* Frees `arg`; called once after fn ran (or if the task is dropped). May be NULL. */
typedef void (*pa_task_free_fn)(void *arg);

/* Queues a task on `stream` (NULL = default stream) and returns at once.
 * On a submission error, free_fn(arg) is called and an ACL error returned. */
aclError pa_stream_submit(aclrtStream stream, pa_task_fn fn, pa_task_free_fn free_fn, void *arg);

/* The device of the stream task running on the calling thread (-1 outside
 * stream workers): kernels check addresses against it. */
int pa_stream_task_device(void);

/* ---- task tickets (memory.c's deferred aclrtFree) ----
 * Every queued task gets a ticket from one process-wide counter (increasing in
 * the order tasks are queued, on any stream of any device). */
#define PA_NO_TICKET UINT64_MAX
/* The ticket the next queued task will get: every task queued before this
 * call has a lower one. */
uint64_t pa_stream_next_ticket(void);
/* The lowest ticket of a task that is queued or running on any stream
 * (PA_NO_TICKET if none): every task with a lower ticket has finished. Takes
 * each stream's mutex briefly; never waits for work. */
uint64_t pa_stream_unfinished_low(void);
/* The ticket of the stream task running on the calling thread (PA_NO_TICKET
 * outside stream workers). */
uint64_t pa_stream_task_ticket(void);
/* fn runs on a stream's worker after each of its tasks finished (and on the
 * destroying thread after queued tasks were dropped), with no lock held and
 * before the stream reports idle, so a synchronise that returns saw it run.
 * One hook (memory.c's); it must be cheap when it has nothing to do. */
void pa_stream_on_task_done(void (*fn)(void));

typedef struct pa_stream pa_stream;
/* Looks up a live stream (NULL = the current device's default stream, created
 * on demand) and takes a reference. On failure records a message naming `api`. */
aclError pa_stream_acquire(aclrtStream handle, const char *api, pa_stream **out);
void pa_stream_release(pa_stream *s);
/* The device an acquired stream belongs to. */
int pa_stream_device(const pa_stream *s);
/* Queues fn on an acquired stream. */
aclError pa_stream_enqueue(pa_stream *s, pa_task_fn fn, pa_task_free_fn free_fn, void *arg, const char *api);

#endif
