/* The emulated devices (pa_device.h): count, per-thread current device,
 * reference counts, contexts, peer access, capabilities and system parameters. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/pa_device.h"
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

/* ---------------------------------------------------------------------------
 * Device count
 * ------------------------------------------------------------------------- */

static pthread_once_t g_device_count_once = PTHREAD_ONCE_INIT;
static int g_device_count = 1;

static void device_count_init(void) {
    const char *s = getenv("PYACLNN_DEVICE_COUNT");
    if (s == NULL || s[0] == '\0') return;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end != s && *end == '\0' && v >= 1 && v <= PA_MAX_DEVICES) {
        g_device_count = (int)v;
        return;
    }
    fprintf(stderr, "pyaclnn: warning: ignoring PYACLNN_DEVICE_COUNT=\"%s\" (expected 1..%d); using 1 device\n", s,
            PA_MAX_DEVICES);
}

int pa_device_count(void) {
    pthread_once(&g_device_count_once, device_count_init);
    return g_device_count;
}

aclError pa_device_check_id(const char *api, int32_t deviceId) {
    const int n = pa_device_count();
    if (deviceId >= 0 && deviceId < n) return ACL_SUCCESS;
    if (n == 1) {
        return pa_rt_fail(ACL_ERROR_RT_INVALID_DEVICEID,
                          "%s: deviceId %d is invalid: the CPU emulation has exactly one device (0); set "
                          "PYACLNN_DEVICE_COUNT for more",
                          api, (int)deviceId);
    }
    return pa_rt_fail(ACL_ERROR_RT_INVALID_DEVICEID,
                      "%s: deviceId %d is invalid: the CPU emulation has %d devices (0..%d, PYACLNN_DEVICE_COUNT)",
                      api, (int)deviceId, n, n - 1);
}

/* ---------------------------------------------------------------------------
 * Device state. All guarded by pa_rt_lock except the peer masks (atomics,
 * read on every launch).
 * ------------------------------------------------------------------------- */

static int g_refs[PA_MAX_DEVICES];
static pa_context g_default_ctx[PA_MAX_DEVICES];
static pa_context *g_contexts; /* user-created contexts */
static int64_t g_sysopt[PA_NUM_SYSOPT];
/* Bit p of g_peer[d]: work on device d may touch device p's memory. */
static _Atomic uint32_t g_peer[PA_MAX_DEVICES];

/* This thread's choice: a user context (tl_ctx), else a device (tl_device1 =
 * device + 1; 0 when it never chose one: then device 0 while it is set). */
static PA_THREAD_LOCAL pa_context *tl_ctx;
static PA_THREAD_LOCAL int tl_device1;

static pa_teardown_fn _Atomic g_hooks[PA_TEARDOWN_PHASES];

void pa_device_on_teardown(pa_teardown_phase phase, pa_teardown_fn fn) {
    if ((int)phase >= 0 && phase < PA_TEARDOWN_PHASES) atomic_store(&g_hooks[phase], fn);
}

/* Caller holds pa_rt_lock. */
static bool ctx_is_default(const pa_context *c) {
    const uintptr_t p = (uintptr_t)c, lo = (uintptr_t)&g_default_ctx[0];
    return p >= lo && p < (uintptr_t)&g_default_ctx[PA_MAX_DEVICES] && (p - lo) % sizeof *c == 0;
}

/* Caller holds pa_rt_lock. */
static bool ctx_is_live(const pa_context *c) {
    if (ctx_is_default(c)) return true;
    for (const pa_context *p = g_contexts; p != NULL; p = p->next) {
        if (p == c) return true;
    }
    return false;
}

/* The calling thread's device (-1 if none). Caller holds pa_rt_lock. */
static int current_locked(void) {
    if (tl_ctx != NULL) {
        if (ctx_is_live(tl_ctx)) return g_refs[tl_ctx->device] > 0 ? tl_ctx->device : -1;
        tl_ctx = NULL; /* destroyed */
    }
    const int d = tl_device1 > 0 ? tl_device1 - 1 : 0;
    return g_refs[d] > 0 ? d : -1;
}

/* The calling thread's context (user context, or its device's default one);
 * NULL if none. Caller holds pa_rt_lock. */
static pa_context *current_ctx_locked(void) {
    const int d = current_locked();
    if (d < 0) return NULL;
    if (tl_ctx != NULL) return tl_ctx;
    pa_context *c = &g_default_ctx[d];
    c->magic = PA_CTX_MAGIC;
    c->device = d;
    return c;
}

int pa_device_current(void) {
    pa_rt_lock();
    int d = current_locked();
    pa_rt_unlock();
    return d;
}

aclError pa_device_require(const char *api, int *device) {
    int d = pa_device_current();
    if (device != NULL) *device = d;
    if (d >= 0) return ACL_SUCCESS;
    return pa_rt_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no device set: call aclrtSetDevice first", api);
}

bool pa_device_active(int device) {
    if (device < 0 || device >= PA_MAX_DEVICES) return false;
    pa_rt_lock();
    bool on = g_refs[device] > 0;
    pa_rt_unlock();
    return on;
}

bool pa_device_can_reach(int dev, int owner) {
    if (dev == owner || owner < 0) return true;
    if (dev < 0 || dev >= PA_MAX_DEVICES || owner >= PA_MAX_DEVICES) return false;
    return (atomic_load(&g_peer[dev]) >> owner) & 1u;
}

void pa_device_bind_thread(int device) {
    tl_ctx = NULL;
    tl_device1 = device + 1;
}

/* Runs the hooks of the layers above for `device`, then clears its state. */
static void device_teardown(int device) {
    for (int p = 0; p < PA_TEARDOWN_PHASES; p++) {
        pa_teardown_fn fn = atomic_load(&g_hooks[p]);
        if (fn != NULL) fn(device);
    }
    pa_rt_lock();
    memset(g_default_ctx[device].opt_value, 0, sizeof g_default_ctx[device].opt_value);
    pa_rt_unlock();
    atomic_store(&g_peer[device], 0);
}

static void contexts_teardown(void) {
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

void pa_device_teardown_all(void) {
    pa_rt_lock();
    memset(g_refs, 0, sizeof g_refs);
    pa_rt_unlock();
    for (int d = 0; d < pa_device_count(); d++) device_teardown(d);
    contexts_teardown();
}

/* Drops one reference; at zero the device's streams and events are torn down. */
static void device_unref(int device) {
    pa_rt_lock();
    bool last = false;
    if (g_refs[device] > 0) {
        g_refs[device]--;
        last = g_refs[device] == 0;
    }
    pa_rt_unlock();
    if (last) device_teardown(device);
}

/* ---------------------------------------------------------------------------
 * Public device API
 * ------------------------------------------------------------------------- */

PA_API aclError aclrtSetDevice(int32_t deviceId) {
    aclError rc = pa_device_check_id("aclrtSetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    g_refs[deviceId]++;
    pa_rt_unlock();
    pa_device_bind_thread(deviceId);
    return ACL_SUCCESS;
}

PA_API aclError aclrtResetDevice(int32_t deviceId) {
    aclError rc = pa_device_check_id("aclrtResetDevice", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    device_unref(deviceId);
    return ACL_SUCCESS;
}

PA_API aclError aclrtResetDeviceForce(int32_t deviceId) {
    aclError rc = pa_device_check_id("aclrtResetDeviceForce", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_rt_lock();
    bool was = g_refs[deviceId] > 0;
    g_refs[deviceId] = 0;
    pa_rt_unlock();
    if (was) device_teardown(deviceId);
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetDevice(int32_t *deviceId) {
    if (deviceId == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId must not be NULL");
    int d = -1;
    aclError rc = pa_device_require("aclrtGetDevice", &d);
    if (rc != ACL_SUCCESS) return rc;
    *deviceId = d;
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetDeviceCount(uint32_t *count) {
    if (count == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be NULL");
    *count = (uint32_t)pa_device_count();
    return ACL_SUCCESS;
}

PA_API aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (runMode == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode must not be NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Peer access. Every pair of emulated devices can reach each other (one
 * server's NPUs); access is enabled per direction, from the current device.
 * ------------------------------------------------------------------------- */

static aclError check_peer_pair(const char *api, int32_t deviceId, int32_t peerDeviceId) {
    if (deviceId == peerDeviceId) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: deviceId %d cannot be equal to peerDeviceId %d", api,
                          (int)deviceId, (int)peerDeviceId);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
    const char *api = "aclrtDeviceCanAccessPeer";
    if (canAccessPeer == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: canAccessPeer must not be NULL", api);
    aclError rc = pa_device_check_id(api, deviceId);
    if (rc == ACL_SUCCESS) rc = pa_device_check_id(api, peerDeviceId);
    if (rc == ACL_SUCCESS) rc = check_peer_pair(api, deviceId, peerDeviceId);
    if (rc != ACL_SUCCESS) return rc;
    *canAccessPeer = 1;
    return ACL_SUCCESS;
}

static aclError set_peer(const char *api, int32_t peerDeviceId, bool on) {
    int d = -1;
    aclError rc = pa_device_require(api, &d);
    if (rc == ACL_SUCCESS) rc = pa_device_check_id(api, peerDeviceId);
    if (rc == ACL_SUCCESS) rc = check_peer_pair(api, d, peerDeviceId);
    if (rc != ACL_SUCCESS) return rc;
    if (on) atomic_fetch_or(&g_peer[d], 1u << peerDeviceId);
    else atomic_fetch_and(&g_peer[d], ~(1u << peerDeviceId));
    return ACL_SUCCESS;
}

PA_API aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
    if (flags != 0) {
        return pa_rt_fail(ACL_ERROR_FEATURE_UNSUPPORTED, "aclrtDeviceEnablePeerAccess: flags must be 0, got %u",
                          (unsigned)flags);
    }
    return set_peer("aclrtDeviceEnablePeerAccess", peerDeviceId, true);
}

PA_API aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
    return set_peer("aclrtDeviceDisablePeerAccess", peerDeviceId, false);
}

/* ---------------------------------------------------------------------------
 * Capabilities
 * ------------------------------------------------------------------------- */

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
    aclError rc = pa_device_check_id("aclGetDeviceCapability", deviceId > INT32_MAX ? -1 : (int32_t)deviceId);
    if (rc != ACL_SUCCESS) return rc;
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

/* ---------------------------------------------------------------------------
 * Contexts
 * ------------------------------------------------------------------------- */

PA_API aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (context == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context must not be NULL");
    aclError rc = pa_device_check_id("aclrtCreateContext", deviceId);
    if (rc != ACL_SUCCESS) return rc;
    pa_context *c = calloc(1, sizeof *c);
    if (c == NULL) return pa_rt_fail_oom("aclrtCreateContext", "the context");
    c->magic = PA_CTX_MAGIC;
    c->device = deviceId;
    pa_rt_lock();
    c->next = g_contexts;
    g_contexts = c;
    g_refs[deviceId]++; /* a context keeps its device set */
    pa_rt_unlock();
    /* the new context becomes current on this thread */
    tl_ctx = c;
    tl_device1 = deviceId + 1;
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
    const int device = c->device;
    c->magic = 0;
    free(c);
    device_unref(device);
    return ACL_SUCCESS;
}

PA_API aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context must not be NULL");
    }
    pa_rt_lock();
    pa_context *c = (pa_context *)context;
    bool live = ctx_is_live(c);
    int device = live ? (ctx_is_default(c) ? (int)(((uintptr_t)c - (uintptr_t)g_default_ctx) / sizeof *c) : c->device) : -1;
    pa_rt_unlock();
    if (!live) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtSetCurrentContext: context %p is not a live context (destroyed already?)", context);
    }
    tl_ctx = ctx_is_default(c) ? NULL : c;
    tl_device1 = device + 1;
    return ACL_SUCCESS;
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
