/* The device layer: which emulated devices exist, which one each thread is
 * using, their reference counts, contexts and peer access. It sits directly on
 * pa_rt_base.h; streams, events and memory sit on it. A device's resources are
 * released through teardown hooks that the layers above register, so nothing
 * here calls up into them.
 *
 * Rules (CANN's): aclrtSetDevice sets the calling thread's current device and
 * takes a reference on it; aclrtResetDevice drops one; when a device's count
 * reaches zero (or on aclrtResetDeviceForce / aclFinalize) the hooks drain and
 * destroy that device's streams and events. A thread that never chose a device
 * uses device 0 while device 0 is set in the process (the one-device behaviour
 * pyaclnn always had). Device memory survives a reset; it lives until aclrtFree. */
#ifndef PA_DEVICE_H
#define PA_DEVICE_H

#include <stdbool.h>

#include "runtime/pa_rt_base.h"

#define PA_MAX_DEVICES 16

/* PYACLNN_DEVICE_COUNT (1..16, default 1), read once. */
int pa_device_count(void);
/* ACL_SUCCESS, or ACL_ERROR_RT_INVALID_DEVICEID with a message naming `api`. */
aclError pa_device_check_id(const char *api, int32_t deviceId);
/* The calling thread's current device, or -1 when it has none. */
int pa_device_current(void);
/* Like pa_device_current; ACL_ERROR_RT_CONTEXT_NULL naming `api` when none. */
aclError pa_device_require(const char *api, int *device);
/* True while `device` is set (its reference count is above zero). */
bool pa_device_active(int device);
/* True when work running on device `dev` may touch memory owned by device
 * `owner`: the same device, or peer access enabled from dev to owner. */
bool pa_device_can_reach(int dev, int owner);
/* Makes `device` the calling thread's current device without taking a
 * reference (stream worker threads run their tasks on the stream's device). */
void pa_device_bind_thread(int device);

/* ---- teardown hooks (registered by the layers above, called in phase order) ---- */
typedef enum pa_teardown_phase {
    PA_TEARDOWN_STREAMS = 0, /* drain and destroy the device's streams */
    PA_TEARDOWN_EVENTS = 1,  /* then release its events */
    PA_TEARDOWN_PHASES
} pa_teardown_phase;
typedef void (*pa_teardown_fn)(int device);
void pa_device_on_teardown(pa_teardown_phase phase, pa_teardown_fn fn);
/* aclFinalize: every device is reset and every user context dropped. */
void pa_device_teardown_all(void);

#endif
