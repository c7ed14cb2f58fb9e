/* The single emulated device (id 0), contexts and system parameters.
 *
 * Device state is process-wide (not per thread): aclrtSetDevice and
 * aclrtCreateContext take a reference, aclrtResetDevice and aclrtDestroyContext
 * drop one, and when the count reaches zero (or on aclrtResetDeviceForce /
 * aclFinalize) every stream is drained and destroyed and every event released.
 * Device memory survives a reset; it lives until aclrtFree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/pa_capacity.h"
#include "runtime/pa_runtime_internal.h"
#include "runtime/pa_threadpool.h"

#define PA_CTX_MAGIC 0x43747874u /* "Ctxt" */
#define PA_NUM_SYSOPT 4

struct pa_context {
    uint32_t magic;
    int32_t device;
    int64_t opt_value[PA_NUM_SYSOPT];
    struct pa_context *next; /* registry link */
};
typedef struct pa_context pa_context;

/* All guarded by pa_rt_lock. */
static int g_device_refs;
static pa_context g_default_ctx = {PA_CTX_MAGIC, 0, {0, 0, 0, 0}, NULL};
static pa_context *g_contexts; /* user-created contexts */
static int64_t g_sysopt[PA_NUM_SYSOPT];

/* Current context of this thread (NULL = the device's default context). */
static PA_THREAD_LOCAL pa_context *tl_ctx;

bool pa_rt_device_active(void) {
    pa_rt_lock();
    bool on = g_device_refs > 0;
    pa_rt_unlock();
    return on;
}

aclError pa_rt_require_device(const char *api) {
    if (pa_rt_device_active()) return ACL_SUCCESS;
    return pa_rt_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no device set: call aclrtSetDevice first", api);
}

static void device_teardown(void) {
    pa_streams_teardown();
    pa_events_teardown();
    pa_rt_lock();
    memset(g_default_ctx.opt_value, 0, sizeof g_default_ctx.opt_value);
    pa_rt_unlock();
}

void pa_rt_device_teardown_all(void) {
    pa_rt_lock();
    g_device_refs = 0;
    pa_rt_unlock();
    device_teardown();
    pa_contexts_teardown();
}

static aclError check_device_id(const char *api, int32_t deviceId) {
    if (deviceId != 0) {
        return pa_rt_fail(ACL_ERROR_RT_INVALID_DEVICEID,
                          "%s: deviceId %d is invalid: the CPU emulation has exactly one device (0)", api,
                          (int)deviceId);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtSetDevice(int32_t deviceId) {
    aclError rc = check_device_id("aclrtSetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    g_device_refs++;
    pa_rt_unlock();
    return ACL_SUCCESS;
}

/* Drops one reference; at zero the streams and events are torn down. */
static void device_unref(void) {
    pa_rt_lock();
    bool last = false;
    if (g_device_refs > 0) {
        g_device_refs--;
        last = g_device_refs == 0;
    }
    pa_rt_unlock();
    if (last) device_teardown();
}

PA_API aclError aclrtResetDevice(int32_t deviceId) {
    aclError rc = check_device_id("aclrtResetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    device_unref();
    return ACL_SUCCESS;
}

PA_API aclError aclrtResetDeviceForce(int32_t deviceId) {
    aclError rc = check_device_id("aclrtResetDeviceForce", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    bool was = g_device_refs > 0;
    g_device_refs = 0;
    pa_rt_unlock();
    if (was) device_teardown();
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetDevice(int32_t *deviceId) {
    if (deviceId == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId must not be NULL");
    aclError rc = pa_rt_require_device("aclrtGetDevice");
    if (rc != ACL_SUCCESS) return rc;
    *deviceId = 0;
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetDeviceCount(uint32_t *count) {
    if (count == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be NULL");
    *count = 1;
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (runMode == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode must not be NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

PA_API aclError aclrtSynchronizeDevice(void) {
    aclError rc = pa_rt_require_device("aclrtSynchronizeDevice");
    if (rc != ACL_SUCCESS) return rc;
    return pa_streams_sync_all(-1, "aclrtSynchronizeDevice");
}

PA_API aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    if (!pa_rt_timeout_ok(timeout)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtSynchronizeDeviceWithTimeout: timeout must be -1 (forever) or >= 0 ms, got %d",
                          (int)timeout);
    }
    aclError rc = pa_rt_require_device("aclrtSynchronizeDeviceWithTimeout");
    if (rc != ACL_SUCCESS) return rc;
    return pa_streams_sync_all(timeout, "aclrtSynchronizeDeviceWithTimeout");
}

PA_API aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
    if (canAccessPeer == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtDeviceCanAccessPeer: canAccessPeer must not be NULL");
    }
    aclError rc = check_device_id("aclrtDeviceCanAccessPeer", deviceId);
    if (rc == ACL_SUCCESS) rc = check_device_id("aclrtDeviceCanAccessPeer", peerDeviceId);
    if (rc != ACL_SUCCESS) return rc;
    *canAccessPeer = 0; /* one device: there is no peer */
    return ACL_SUCCESS;
}

PA_API aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
    aclError rc = check_device_id("aclrtDeviceEnablePeerAccess", peerDeviceId);
    if (rc != ACL_SUCCESS) return rc;
    if (flags != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtDeviceEnablePeerAccess: flags must be 0, got %u",
                          (unsigned)flags);
    }
    return ACL_SUCCESS;
}


static int64_t cache_size_bytes(void) {
    long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    v = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    if (v <= 0) v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (v <= 0) {
        /* sysconf may not know (e.g. non-glibc); try sysfs. */
        const char *paths[] = {"/sys/devices/system/cpu/cpu0/cache/index3/size",
                               "/sys/devices/system/cpu/cpu0/cache/index2/size"};
        for (size_t i = 0; i < 2 && v <= 0; i++) {
            FILE *f = fopen(paths[i], "r");
            if (f == NULL) continue;
            long n = 0;
            char unit = 0;
            if (fscanf(f, "%ld%c", &n, &unit) >= 1) {
                if (unit == 'K') n *= 1024;
                else if (unit == 'M') n *= 1024 * 1024;
                v = n;
            }
            fclose(f);
        }
    }
    return v > 0 ? (int64_t)v : 0;
}

PA_API aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value) {
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetDeviceCapability: value must not be NULL");
    if (deviceId != 0) {
        return pa_rt_fail(ACL_ERROR_RT_INVALID_DEVICEID,
                          "aclGetDeviceCapability: deviceId %u is invalid: the CPU emulation has exactly one "
                          "device (0)",
                          (unsigned)deviceId);
    }
    switch (deviceInfo) {
    case ACL_DEVICE_INFO_AI_CORE_NUM:
    case ACL_DEVICE_INFO_VECTOR_CORE_NUM:
        *value = pa_num_threads();
        return ACL_SUCCESS;
    case ACL_DEVICE_INFO_L2_SIZE:
        *value = cache_size_bytes();
        return ACL_SUCCESS;
    default:
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclGetDeviceCapability: deviceInfo must be AI_CORE_NUM (0), VECTOR_CORE_NUM (1) or "
                          "L2_SIZE (2), got %d",
                          (int)deviceInfo);
    }
}

PA_API aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    if (free == NULL || total == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: free and total must not be NULL");
    }
    if ((int)attr < (int)ACL_DDR_MEM || (int)attr > (int)ACL_MEM_P2P_HUGE1G) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr must be an aclrtMemAttr (0..17), got %d",
                          (int)attr);
    }
    aclError rc = pa_rt_require_device("aclrtGetMemInfo");
    if (rc != ACL_SUCCESS) return rc;
    /* One pool: every attr reports the emulated device memory. */
    *total = pa_capacity_total();
    size_t used = pa_capacity_used();
    *free = used < *total ? *total - used : 0;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Contexts
 * ------------------------------------------------------------------------- */

/* Caller holds pa_rt_lock. */
static bool ctx_is_live(const pa_context *c) {
    if (c == &g_default_ctx) return true;
    for (const pa_context *p = g_contexts; p != NULL; p = p->next) {
        if (p == c) return true;
    }
    return false;
}

void pa_contexts_teardown(void) {
    pa_rt_lock();
    pa_context *c = g_contexts;
    g_contexts = NULL;
    pa_rt_unlock();
    while (c != NULL) {
        pa_context *n = c->next;
        c->magic = 0;
        free(c);
        c = n;
    }
}

PA_API aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (context == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context must not be NULL");
    aclError rc = check_device_id("aclrtCreateContext", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_context *c = calloc(1, sizeof *c);
    if (c == NULL) return pa_rt_fail_oom("aclrtCreateContext", "the context");
    c->magic = PA_CTX_MAGIC;
    c->device = deviceId;
    pa_rt_lock();
    c->next = g_contexts;
    g_contexts = c;
    g_device_refs++; /* a context keeps its device set */
    pa_rt_unlock();
    tl_ctx = c; /* the new context becomes current on this thread */
    *context = c;
    return ACL_SUCCESS;
}

PA_API aclError aclrtDestroyContext(aclrtContext context) {
    if (context == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: context must not be NULL");
    pa_rt_lock();
    pa_context **pp = &g_contexts;
    while (*pp != NULL && *pp != (pa_context *)context) pp = &(*pp)->next;
    pa_context *c = *pp;
    if (c != NULL) *pp = c->next;
    pa_rt_unlock();
    if (c == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtDestroyContext: context %p is not a live context (destroyed already?)", context);
    }
    if (tl_ctx == c) tl_ctx = NULL;
    c->magic = 0;
    free(c);
    device_unref();
    return ACL_SUCCESS;
}

PA_API aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context must not be NULL");
    }
    pa_rt_lock();
    bool live = ctx_is_live((const pa_context *)context);
    pa_rt_unlock();
    if (!live) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtSetCurrentContext: context %p is not a live context (destroyed already?)", context);
    }
    tl_ctx = (context == &g_default_ctx) ? NULL : (pa_context *)context;
    return ACL_SUCCESS;
}

/* The calling thread's context (user context, or the default one while the
 * device is set); NULL if none. Caller holds pa_rt_lock. */
static pa_context *current_ctx_locked(void) {
    if (tl_ctx != NULL) {
        if (ctx_is_live(tl_ctx)) return tl_ctx;
        tl_ctx = NULL; /* destroyed by a reset */
    }
    return g_device_refs > 0 ? &g_default_ctx : NULL;
}

PA_API aclError aclrtGetCurrentContext(aclrtContext *context) {
    if (context == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context must not be NULL");
    }
    pa_rt_lock();
    pa_context *c = current_ctx_locked();
    pa_rt_unlock();
    if (c == NULL) {
        return pa_rt_fail(ACL_ERROR_RT_CONTEXT_NULL,
                          "aclrtGetCurrentContext: no current context: call aclrtSetDevice first");
    }
    *context = c;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * System parameters. Our kernels are always deterministic; the values are
 * stored and reported only. Reading an option never set returns 0.
 * ------------------------------------------------------------------------- */

static aclError check_sysopt(const char *api, aclSysParamOpt opt) {
    if ((int)opt < 0 || (int)opt >= PA_NUM_SYSOPT) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "%s: opt must be an aclSysParamOpt (0..%d), got %d", api, PA_NUM_SYSOPT - 1, (int)opt);
    }
    return ACL_SUCCESS;
}

static aclError check_sysopt_value(const char *api, aclSysParamOpt opt, int64_t value) {
    int64_t hi = (opt == ACL_OPT_DETERMINISTIC) ? 3 : 1;
    if (value < 0 || value > hi) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: value for option %d must be in [0, %lld], got %lld", api,
                          (int)opt, (long long)hi, (long long)value);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    aclError rc = check_sysopt("aclrtCtxSetSysParamOpt", opt);
    if (rc == ACL_SUCCESS) rc = check_sysopt_value("aclrtCtxSetSysParamOpt", opt, value);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    pa_context *c = current_ctx_locked();
    if (c != NULL) c->opt_value[opt] = value;
    pa_rt_unlock();
    if (c == NULL) {
        return pa_rt_fail(ACL_ERROR_RT_CONTEXT_NULL,
                          "aclrtCtxSetSysParamOpt: no current context: call aclrtSetDevice first");
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt: value must not be NULL");
    aclError rc = check_sysopt("aclrtCtxGetSysParamOpt", opt);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    pa_context *c = current_ctx_locked();
    if (c != NULL) *value = c->opt_value[opt];
    pa_rt_unlock();
    if (c == NULL) {
        return pa_rt_fail(ACL_ERROR_RT_CONTEXT_NULL,
                          "aclrtCtxGetSysParamOpt: no current context: call aclrtSetDevice first");
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    aclError rc = check_sysopt("aclrtSetSysParamOpt", opt);
    if (rc == ACL_SUCCESS) rc = check_sysopt_value("aclrtSetSysParamOpt", opt, value);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    g_sysopt[opt] = value;
    pa_rt_unlock();
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetSysParamOpt: value must not be NULL");
    aclError rc = check_sysopt("aclrtGetSysParamOpt", opt);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    *value = g_sysopt[opt];
    pa_rt_unlock();
    return ACL_SUCCESS;
}
