/* Internal stream API used by ops and by the memcpy/memset/event entry points. */
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

#endif
